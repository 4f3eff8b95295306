"""cg.testing (assert_close's verdicts, tolerances and messages, make_tensor) and cg.random
(default_generator, fork_rng), against PyTorch's."""
import math
import re

import numpy as np
import pytest

import clgrad as cg

torch = pytest.importorskip("torch")

nan, inf = math.nan, math.inf

# (actual, expected, keywords): built in each library by `lib.tensor`
CASES = {
    "equal": (lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1.0, 2.0]), {}),
    "within float32's": (lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1.0, 2.000001]), {}),
    "one off": (lambda L: L.tensor([1.0, 2.0, 3.0]), lambda L: L.tensor([1.0, 2.5, 3.0]), {}),
    "2-d with a NaN": (lambda L: L.tensor([[1.0, nan], [3.0, 4.0]]),
                       lambda L: L.tensor([[1.0, nan], [3.0, 4.0]]), {}),
    "NaN equal_nan": (lambda L: L.tensor([1.0, nan]), lambda L: L.tensor([1.0, nan]),
                      {"equal_nan": True}),
    "infinities": (lambda L: L.tensor([inf, 2.0, -inf]), lambda L: L.tensor([-inf, 2.0, -inf]), {}),
    "zero expected": (lambda L: L.tensor([0.0, 1.0]), lambda L: L.tensor([0.0, 1.5]), {}),
    "0-d": (lambda L: L.tensor(1.0), lambda L: L.tensor(1.1), {}),
    "ints": (lambda L: L.tensor([1, 2, 3]), lambda L: L.tensor([1, 2, 4]), {}),
    "int extremes": (lambda L: L.tensor([2**63 - 1, 0]), lambda L: L.tensor([-2**63, 0]), {}),
    "bools": (lambda L: L.tensor(True), lambda L: L.tensor(False), {}),
    "exact by tolerance": (lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1.0, 2.5]),
                           {"rtol": 0, "atol": 0}),
    "loose tolerance": (lambda L: L.tensor([1.0, 2.0]), lambda L: L.tensor([1.0, 2.1]),
                        {"rtol": 0.1, "atol": 0}),
    "half": (lambda L: L.tensor([1.0, 2.0]).half(), lambda L: L.tensor([1.0, 2.001]).half(), {}),
    "bfloat16": (lambda L: L.tensor([1.0, 2.0]).bfloat16(),
                 lambda L: L.tensor([1.0, 2.1]).bfloat16(), {}),
    "float64": (lambda L: L.tensor([1.0], dtype=L.float64),
                lambda L: L.tensor([1.0 + 1e-6], dtype=L.float64), {}),
    "dtypes": (lambda L: L.tensor([1.0]), lambda L: L.tensor([1.0], dtype=L.float64), {}),
    "dtypes unchecked": (lambda L: L.tensor([1, 2]), lambda L: L.tensor([1.0, 2.5]),
                         {"check_dtype": False}),
    "shapes": (lambda L: L.tensor([1.0, 2.0, 3.0]), lambda L: L.tensor([1.0, 2.0]), {}),
    "strides": (lambda L: L.ones(2, 3) * 2, lambda L: L.full((2, 3), 2.0), {"check_stride": True}),
    "list": (lambda L: [L.tensor([1.0]), [L.tensor([2.0])]],
             lambda L: [L.tensor([1.0]), [L.tensor([3.0])]], {}),
    "lengths": (lambda L: [1.0, 2.0], lambda L: [1.0], {}),
    "mapping": (lambda L: {"a": L.tensor([1.0])}, lambda L: {"a": L.tensor([1.1])}, {}),
    "keys": (lambda L: {"a": 1.0}, lambda L: {"b": 1.0}, {}),
    "numbers": (lambda L: 1.0, lambda L: 1.1, {}),
    "int and float": (lambda L: 1, lambda L: 1.0, {}),
    "booleans": (lambda L: True, lambda L: False, {}),
    "None": (lambda L: None, lambda L: 1, {}),
    "arrays": (lambda L: np.array([1.0]), lambda L: np.array([1.5]), {}),
    "custom message": (lambda L: L.tensor([1.0]), lambda L: L.tensor([2.0]), {"msg": "custom"}),
    "message callable": (lambda L: L.tensor([1.0]), lambda L: L.tensor([2.0]),
                         {"msg": lambda m: "X" + m[:12]}),
    "empty": (lambda L: L.zeros(0, 3), lambda L: L.zeros(0, 3), {}),
}


def _outcome(lib, case):
    actual, expected, keywords = CASES[case]
    try:
        lib.testing.assert_close(actual(lib), expected(lib), **keywords)
    except (AssertionError, TypeError, ValueError) as error:
        message = re.sub(r"\b(torch|clgrad)\.", "", str(error))
        return type(error).__name__, message
    return "ok", ""


@pytest.mark.parametrize("case", CASES)
def test_assert_close_verdicts_and_messages_are_pytorchs(case):
    assert _outcome(cg, case) == _outcome(torch, case)


def test_assert_close_refuses_mismatched_kinds_and_half_given_tolerances():
    for lib in (cg, torch):
        with pytest.raises(TypeError, match="No comparison pair was able to handle inputs"):
            lib.testing.assert_close(lib.tensor([1.0]), [1.0])
        with pytest.raises(ValueError, match="got no atol"):
            lib.testing.assert_close(lib.tensor([1.0]), lib.tensor([1.0]), rtol=0.1)


def test_assert_allclose_is_deprecated_and_ignores_dtypes():
    with pytest.warns(FutureWarning, match="assert_close"):
        cg.testing.assert_allclose(cg.tensor([1, 2]), cg.tensor([1.0, 2.0]))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64", "int64", "int32",
                                   "uint8", "int8", "bool"])
def test_make_tensor_draws_in_pytorchs_default_ranges(dtype):
    t = cg.testing.make_tensor(40, 50, dtype=getattr(cg, dtype if dtype != "bool" else "bool"))
    assert t.shape == (40, 50) and t.dtype == getattr(cg, dtype)
    values = t.float().numpy()
    low, high = {"uint8": (0, 9), "bool": (0, 1)}.get(dtype, (-9, 9))
    assert values.min() >= low and values.max() <= high
    assert values.min() < low + 1 and values.max() > high - 1     # the whole range is drawn


def test_make_tensor_options():
    t = cg.testing.make_tensor((3, 4), dtype=cg.float32, low=2, high=3, requires_grad=True,
                               noncontiguous=True, exclude_zero=True)
    assert t.requires_grad and t.shape == (3, 4)
    assert ((t >= 2) & (t <= 3)).all().item()
    z = cg.testing.make_tensor(200, dtype=cg.int64, low=-1, high=1, exclude_zero=True)
    assert set(z.tolist()) == {-1, 1}
    for lib in (cg, torch):
        with pytest.raises(ValueError, match="must be less than `high`, but got 3 >= 1"):
            lib.testing.make_tensor(2, dtype=lib.float32, device="cpu" if lib is torch else None,
                                    low=3, high=1)
        with pytest.raises(ValueError, match="not supported for boolean and integral"):
            lib.testing.make_tensor(2, dtype=lib.int64, device="cpu" if lib is torch else None,
                                    requires_grad=True)
        with pytest.raises(ValueError, match="only supports"):
            lib.testing.make_tensor(2, dtype=lib.uint8, device="cpu" if lib is torch else None,
                                    low=300, high=400)


def test_default_generator_is_the_global_stream():
    cg.default_generator.manual_seed(7)
    assert cg.initial_seed() == cg.default_generator.initial_seed() == 7
    first = cg.randn(4).tolist()
    cg.manual_seed(7)
    assert cg.randn(4, generator=cg.default_generator).tolist() == first
    state = cg.default_generator.get_state()
    drawn = cg.rand(3).tolist()
    cg.default_generator.set_state(state)
    assert cg.rand(3).tolist() == drawn


def test_fork_rng_restores_the_stream():
    cg.manual_seed(1)
    with cg.random.fork_rng():
        inside = cg.randn(5).tolist()
    assert cg.randn(5).tolist() == inside      # as if the fork had not drawn
    with cg.random.fork_rng(enabled=False):
        cg.randn(5)
    assert cg.randn(5).tolist() != inside
