"""PyTorch's second names for ops (multiply, divide, clip, greater, fix, ...), its complex-
number API as it answers for real tensors (conj, real, imag, angle, H, mH, adjoint), and
nonzero_static, each against the reference, forward and backward, edges and errors included."""
import math
import re
import warnings

import numpy as np
import pytest

import clgrad as cg
from clgrad.frontend.composite_methods import SECOND_NAMES
from helpers import check, library, make

EDGES = np.array([-math.inf, -3.5, -1.0, -0.0, 0.0, 0.5, 2.5, math.inf, math.nan], np.float32)


def _operands(name: str):
    """A second name's arguments after the tensor (comparisons and products take another)."""
    if name in ("multiply", "divide", "subtract", "greater", "greater_equal", "less",
                "less_equal", "not_equal"):
        return (make((3, 4), seed=9) + 2.5,)    # (away from 0: divide's denominators)
    return (-1.0, 1.5) if name == "clip" else ()


@pytest.mark.parametrize("name", sorted(SECOND_NAMES))
def test_second_names_are_their_first_as_method_function_and_in_place(name):
    extra = _operands(name)
    bools = name in ("greater", "greater_equal", "less", "less_equal", "not_equal")

    def method(x, *rest):
        return getattr(x, name)(*rest, *extra[len(rest):])

    out = check(method, make((3, 4)), *[a for a in extra if isinstance(a, np.ndarray)],
                grad=not bools)
    first = getattr(cg.tensor(make((3, 4))), SECOND_NAMES[name])(
        *[cg.tensor(a) if isinstance(a, np.ndarray) else a for a in extra])
    assert np.array_equal(out[0].detach().numpy(), first.numpy(), equal_nan=True)
    if not bools:
        assert out[0].grad_fn is not None
    check(lambda x, *rest: getattr(library(x), name)(x, *rest, *extra[len(rest):]),
          make((3, 4)), *[a for a in extra if isinstance(a, np.ndarray)], grad=False)
    # in place: the tensor itself, changed (comparisons keep the float dtype, as PyTorch's)
    check(lambda x, *rest: getattr(x.clone(), name + "_")(*rest, *extra[len(rest):]),
          make((3, 4)), *[a for a in extra if isinstance(a, np.ndarray)])


def test_second_names_keep_keywords_and_edges():
    check(lambda x, y: [x.divide(y, rounding_mode="floor"), x.divide(y, rounding_mode="trunc"),
                        library(x).subtract(x, y, alpha=3), x.clip(min=0.5),
                        library(x).clip(x, max=-0.5), x.absolute(), x.negative(), x.fix()],
          EDGES, np.full(EDGES.shape, -2.0, np.float32))
    check(lambda x: [x.fix(), x.absolute(), x.negative(), x.clip(-3, 3)],
          np.array([-7, 0, 5], np.int64))
    x = cg.tensor([1.0, -5.0, 9.0])
    assert x.clip_(0, 3) is x and x.numpy().tolist() == [1.0, 0.0, 3.0]
    assert cg.clip_(x, max=2) is x and x.numpy().tolist() == [1.0, 0.0, 2.0]
    with pytest.raises(RuntimeError, match="can't be cast"):
        cg.tensor([1, 2]).divide_(2)


def test_conjugates_and_real_parts_of_real_tensors_are_the_tensor_itself():
    x = cg.tensor(make((2, 3)), requires_grad=True)
    for same in (x.conj(), x.conj_physical(), x.conj_physical_(), x.resolve_conj(),
                 x.resolve_neg(), x.real, cg.conj(x), cg.conj_physical(x), cg.real(x),
                 cg.resolve_conj(x)):
        assert same is x
    assert not any((x.is_complex(), cg.is_complex(x), x.is_conj(), x.is_neg(), cg.is_conj(x)))
    check(lambda t: library(t).isreal(t), make((2, 3)), grad=False)
    for imaginary in (lambda: x.imag, lambda: cg.imag(x)):
        with pytest.raises(RuntimeError, match="imag is not implemented for tensors with "
                                               "non-complex dtypes"):
            imaginary()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_angle_is_pi_below_zero_with_a_zero_gradient(dtype):
    check(lambda x: x.angle(), EDGES.astype(dtype), dtype=dtype)
    check(lambda x: library(x).angle(x), (4, 5), dtype=dtype)
    x = cg.tensor(EDGES, requires_grad=True)
    (cg.angle(x) * math.inf).sum().backward()       # zeros whatever flows in, as PyTorch's
    assert x.grad is not None and not x.grad.numpy().any()
    assert cg.angle(x).grad_fn.name() == "AngleBackward0"


def test_angle_of_integers_and_bools_is_float():
    check(lambda x: x.angle(), np.array([3, -2, 0], np.int64))
    check(lambda x: x.angle(), np.array([True, False]))


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 4)])
def test_transposes_of_matrices(shape):
    check(lambda x: [x.mT, x.mH, x.adjoint(), library(x).adjoint(x)], shape)
    if len(shape) == 2:
        check(lambda x: x.H, shape)
    else:
        with pytest.raises(RuntimeError, match=r"tensor.H is only supported on matrices "
                                               r"\(2-D tensors\). Got 3-D tensor. For batches"):
            cg.ones(*shape).H


@pytest.mark.parametrize("name", ["mT", "mH", "H", "adjoint"])
def test_transposes_of_vectors_raise_and_of_scalars_are_themselves(name):
    def transpose(t):
        return t.adjoint() if name == "adjoint" else getattr(t, name)
    called = "adjoint()" if name == "adjoint" else name
    with pytest.raises(RuntimeError, match=rf"tensor.{re.escape(called)} is only supported on "
                                           r"matrices.*Got 1-D tensor.$"):
        transpose(cg.ones(3))
    scalar = cg.tensor(2.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert transpose(scalar) is scalar
    assert any("deprecated on 0-D tensors" in str(w.message) for w in caught)


@pytest.mark.parametrize("values, kwargs", [
    (np.array([0, 3, 0, -1, 7], np.int64), dict(size=2)),                   # fewer rows
    (np.array([0, 3, 0, -1, 7], np.int64), dict(size=5, fill_value=9)),     # padded
    (np.array([[0.0, math.nan], [-0.0, 2.0]], np.float32), dict(size=3)),    # NaN counts
    (make((3, 4, 5), np.bool_), dict(size=40, fill_value=-5)),
    (make((3, 4, 5), np.bool_), dict(size=0)),
    (np.zeros((0, 3), np.float32), dict(size=2)),
    (np.array(5.0, np.float32), dict(size=2)),                              # 0-D: no columns
])
def test_nonzero_static_is_nonzero_cut_or_padded_to_size(values, kwargs):
    out = check(lambda x: library(x).nonzero_static(x, **kwargs), values, grad=False)
    assert out[0].dtype == cg.int64
    method = cg.tensor(values).nonzero_static(**kwargs).numpy()
    assert np.array_equal(method, out[0].numpy())


def test_nonzero_static_is_computed_on_the_device_and_replays_under_jit():
    @cg.jit
    def rows(x):
        return cg.nonzero_static(x > 0, size=4)

    for seed in range(4):
        values = make((3, 5), seed=seed)
        want = np.argwhere(values > 0)[:4]
        want = np.concatenate([want, np.full((4 - len(want), 2), -1)]) if len(want) < 4 \
            else want
        assert np.array_equal(rows(cg.tensor(values)).numpy(), want)


def test_nonzero_static_checks_its_size():
    with pytest.raises(TypeError, match="argument 'size' must be int, not float"):
        cg.nonzero_static(cg.ones(2), size=2.0)
    with pytest.raises(RuntimeError, match="'size' must be an non-negative integer"):
        cg.ones(2).nonzero_static(size=-1)
