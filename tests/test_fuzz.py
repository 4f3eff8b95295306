"""Random op graphs on clgrad against PyTorch (tests/fuzzing.py): forward values and the
gradients of every float input. `--fuzz-budget N` sets how many graphs, `--fuzz-edges` adds
NaN, inf, empty and size-1 dims and int32 extremes."""
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

pytest.importorskip("torch")

import clgrad as cg  # noqa: E402
import fuzz_replay  # noqa: E402
import fuzzing  # noqa: E402
from fuzz_gen import Choices, SeededChoices  # noqa: E402
from fuzz_harness import Result, judge, reference, references  # noqa: E402


class DrawnChoices(Choices):
    """Decisions drawn by hypothesis, so that a failing program shrinks."""

    def __init__(self, draw):
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(st.integers(lo, hi))


@st.composite
def programs(draw, edges: bool) -> str:
    return fuzzing.generate(DrawnChoices(draw), edges)


# edge graphs every run, beside --fuzz-budget ordinary ones (--fuzz-edges gives those edges too)
EDGE_BUDGET = 30


def test_random_graphs_match_torch(pytestconfig, tmp_path):
    _match_torch(pytestconfig.getoption("--fuzz-budget"), pytestconfig.getoption("--fuzz-edges"),
                 tmp_path)


def test_random_graphs_with_edges_match_torch(tmp_path):
    _match_torch(EDGE_BUDGET, True, tmp_path)


@pytest.mark.parametrize("at_start", [True, False], ids=["from-start", "at-end"])
def test_random_graphs_with_an_early_backward_match_torch(at_start, tmp_path):
    """Each backward() launched as a large one is on Intel's runtime: one whose forward fits
    in cache (its forward as it begins, storing the values its gradients read, its gradients
    with the step's end), or a larger one (its loss and gradients as it ends). The graphs are
    too small to be launched so otherwise."""
    _match_torch(EDGE_BUDGET, True, tmp_path, early=True, at_start=at_start)


def _match_torch(budget: int, edges: bool, tmp_path, early: bool = False,
                 at_start: bool = True):
    # derandomized: the same graphs every run, so their kernels come from the disk cache
    @settings(max_examples=budget, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(edges))
    def graph(source):
        status, detail = fuzzing.check(source, early, at_start)
        assume(status != "skipped")
        if status != "ok":
            path = fuzzing.write_reproducer(str(tmp_path), source, "-hypothesis",
                                            cg.device().spec, status, detail)
            pytest.fail(f"{status}: {detail}\n\n{source}\nreproducer: {path}")

    graph()


# random programs as training steps, under cg.jit and eagerly (tests/fuzz_replay.py)
REPLAY_BUDGET = 30


@pytest.mark.parametrize("edges", [False, True], ids=["plain", "edges"])
def test_random_steps_replay_as_they_run_eagerly(edges, tmp_path):
    @settings(max_examples=REPLAY_BUDGET, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(programs(edges))
    def step(source):
        status, detail = fuzz_replay.check_replay(source)
        assume(status != "skipped")
        if status != "ok":
            path = fuzzing.write_reproducer(str(tmp_path), source, "-hypothesis",
                                            cg.device().spec, status, detail, replay=True)
            pytest.fail(f"{status}: {detail}\n\n{source}\nreproducer: {path}")

    step()


def test_replay_check_finds_a_value_that_differs():
    def pairs(*got):
        return [(f"input {k}", w, g) for k, (w, g) in enumerate(zip(
            [cg.tensor([1.0, np.nan]), cg.tensor([3, 4])], got))]
    assert fuzz_replay.first_difference(4, pairs(cg.tensor([1.0, np.nan]),
                                                 cg.tensor([3, 4]))) is None
    assert fuzz_replay.first_difference(4, pairs(cg.tensor([1.0, np.nan]), cg.tensor([3, 5]))) \
        == "after call 4 (replay): input 1 differs"
    assert fuzz_replay.first_difference(0, pairs(cg.tensor([1.0, 0.0]), cg.tensor([3, 4]))) \
        == "after call 0 (eager): input 0 differs"
    assert fuzz_replay.first_difference(1, pairs(cg.tensor([1.0, np.nan]),
                                                 cg.tensor([3.0, 4.0]))) \
        == "after call 1 (capture): input 1 differs"


@pytest.mark.parametrize("edges", [False, True])
def test_generator_always_writes_a_program(edges):
    for seed in range(300):
        assert "def program(fw" in fuzzing.generate(SeededChoices(seed), edges)


def test_generation_is_deterministic():
    assert fuzzing.generate(SeededChoices(7)) == fuzzing.generate(SeededChoices(7))
    assert fuzzing.generate(SeededChoices(7)) != fuzzing.generate(SeededChoices(8))


def _result(outputs, grads):
    return Result([np.array(o) for o in outputs],
                  [None if g is None else np.array(g) for g in grads],
                  [0.0] * len(outputs), [0.0] * len(grads))


def test_judge_finds_wrong_values_and_gradients():
    ref = _result([[1.0, 2.0], [3, 4]], [[0.5, -0.5], None])
    assert judge(ref, ref, ref, edges=False) == ("ok", "")
    off_value = _result([[1.0, 2.001], [3, 4]], [[0.5, -0.5], None])
    assert judge(off_value, ref, ref, edges=False)[0] == "wrong forward"
    off_index = _result([[1.0, 2.0], [3, 5]], [[0.5, -0.5], None])
    assert judge(off_index, ref, ref, edges=False)[0] == "wrong forward"
    off_grad = _result([[1.0, 2.0], [3, 4]], [[0.5, -0.4], None])
    assert judge(off_grad, ref, ref, edges=False)[0] == "wrong gradient"
    extra_grad = _result([[1.0, 2.0], [3, 4]], [[0.5, -0.5], [1.0]])
    assert judge(extra_grad, ref, _result([[1.0, 2.0], [3, 4]], [[0.5, -0.5], None]),
                 edges=False)[0] == "wrong gradient"


def test_judge_skips_what_float32_cannot_answer():
    ref = _result([[1.0, 2.0]], [])
    far = _result([[1.0, 2.5]], [])
    assert judge(ref, ref, far, edges=False)[0] == "skipped"
    nan = _result([[1.0, np.nan]], [])
    assert judge(nan, nan, nan, edges=False)[0] == "skipped"
    assert judge(nan, nan, nan, edges=True) == ("ok", "")
    assert judge(ref, nan, nan, edges=True)[0] == "wrong forward"
    # a value without a reliable answer is left out, the others are still compared
    two = _result([[1.0, 2.0], [5.0]], [])
    assert judge(_result([[1.0, 2.0], [5.5]], []), two, _result([[1.0, 2.5], [5.0]], []),
                 edges=False)[0] == "wrong forward"
    # a selection whose size the precision decides (x[x > 0.3]; edge seed 12001362 crashed
    # the judge)
    assert judge(ref, ref, _result([[1.0]], []), edges=True)[0] == "skipped"


def test_reference_is_what_pytorch_gives_a_user():
    # the reach tracker's dispatch mode sends PyTorch's prod backward down its zero-safe path
    # (the product of the others: 6 for the inf), not the inf / inf = NaN a user gets
    import torch

    def program(fw, x):
        return [x.prod()]
    ref = reference(torch, program, [np.array([np.inf, 2.0, 3.0], np.float32)], [True])
    np.testing.assert_array_equal(ref.grads[0], [np.nan, np.inf, np.inf])
    assert ref.output_reach == [3.0]


def test_float64_estimate_computes_what_the_program_makes_float32_in_float64():
    # `.float()` and a Python float with an int tensor make float32 values; the float64 run
    # once mixed them with float64 ones (conv and matmul refuse that: no estimate, and edge
    # seeds 10300112 and 10300951 were reported wrong where float32 itself is unreliable)
    import torch

    def program(fw, x, w, n):
        return [(x.float() @ w) + (0.5 - n)]
    arrays = [np.array([[1.0, 2.0]], np.float32), np.array([[1.0], [1e-8]], np.float32),
              np.array([3], np.int64)]
    ref, ref64, refused = references(torch, program, arrays, [True, True, False])
    assert refused is None
    small = float(np.float32(1e-8))         # lost in float32's 1 + 2 * small, kept in float64's
    assert ref64.outputs[0].dtype == np.float64 and ref64.outputs[0][0, 0] == 1 + 2 * small - 2.5
    assert ref.outputs[0].dtype == np.float32 and ref.outputs[0][0, 0] == -1.5
    assert torch.get_default_dtype() == torch.float32 and torch.Tensor.float is not \
        torch.Tensor.double


def test_a_cancelling_sum_divided_by_is_judged_by_how_rounding_moves_it():
    # seven values of about 1 that sum to 2.6e-4, then 1 / that: an order of summation other
    # than PyTorch's is 4.5e-4 off in float32, as its own float32 answer happens not to be
    # (fuzz edge seed 72001144). Inputs moved by float32's rounding move the float64 answer
    # as far: within the tolerance, as a value 10% off is not.
    import torch

    def program(fw, x):
        return [1 / x.sum()]
    x = np.array([-1.4016489, 1.9025922, -0.8775516, 0.91803354, -0.57390594, 0.5047612,
                  -0.47201836], np.float32)
    ref, ref64, _ = references(torch, program, [x], [True])
    reordered = np.float32(0)
    for v in np.sort(x):
        reordered += v
    assert abs(1 / reordered - ref.outputs[0]) > 4e-4 * abs(ref.outputs[0])
    scaled = (ref.outputs[0] * reordered) ** -2    # the gradient is -cotangent / sum^2
    got = _result([1 / reordered], [ref.grads[0] * scaled])
    assert judge(got, ref, ref64, edges=False) == ("ok", "")
    assert judge(_result([1.1 * ref.outputs[0]], [ref.grads[0]]), ref, ref64,
                 edges=False)[0] == "wrong forward"


def test_runner_records_a_hung_child_and_goes_on(tmp_path):
    opts = fuzzing.Options(cg.device().spec, edges=False, out=str(tmp_path), batch=5,
                           timeout=0.01)
    results = fuzzing.run_seeds([0, 1], opts, log=io.StringIO())
    assert [results[s]["status"] for s in (0, 1)] == ["timeout", "timeout"]
    assert all(open(results[s]["path"]).read().startswith("# clgrad fuzz seed") for s in (0, 1))


def test_generator_keeps_no_product_whose_order_decides_inf_or_nan():
    # an inf times values whose product underflows is inf or NaN by the order of the
    # multiplications (fuzz seed 1102031 --edges: PyTorch's order gave NaN); a 0 times values
    # whose product overflows likewise 0 or NaN; finite values whose large ones overflow and
    # whose product does not are inf or finite by the order (edge seed 100300536: float16).
    # With a NaN, or within range, every order agrees.
    import torch
    from fuzz_gen import Value
    from fuzz_ops import _order_decides_product
    inf, nan = float("inf"), float("nan")
    rows = [([1e-30, 1e-30, 2.0, inf], True), ([0.0, 1e30, 1e30, 2.0], True),
            ([1e-30, 0.5, 2.0, -inf], False), ([nan, 1e-30, 1e-30, inf], False),
            ([0.0, 1e-30, 1e-30, inf], False), ([1.5, 1e-30, 1e-30, 1e-30], False),
            ([1e20, 1e20, 1e-10], True), ([1e20, 1e20, 1e20], False),
            ([1e-20, 1e-20, 1e10], True), ([1e30, 1e30, 1e-30, 1e-30], True)]
    for row, decided in rows:
        x = Value("x", torch.tensor([row]))
        assert _order_decides_product(x, (1,)) == decided, row
        assert not _order_decides_product(x, (0,))     # rows of one element
    half = Value("h", torch.tensor([[300.0, 300.0, 1e-3]], dtype=torch.float16))
    assert _order_decides_product(half, (1,))      # past 65504 first, 90 in the end


@pytest.mark.parametrize("seed", [19401444, 19410532])
def test_graphs_the_fuzz_once_found_wrong_are_right(seed, tmp_path):
    # 19401444: logsumexp's gradient over a row holding +inf; 19410532: a sin computed with
    # its gradient's cos as one sincos, beside an inf lane on PoCL
    opts = fuzzing.Options(cg.device().spec, edges=True, out=str(tmp_path), batch=1,
                           timeout=120)
    results = fuzzing.run_seeds([seed], opts, log=io.StringIO())
    assert results[seed]["status"] == "ok", results[seed]


def _rounded(values, dtype: str, toward_zero: bool = False) -> np.ndarray:
    """float32 values rounded to a 16-bit type (to nearest even, or toward zero), as float32."""
    import torch
    t = torch.tensor(np.asarray(values, np.float32))
    r = t.to(getattr(torch, dtype)).float()
    if toward_zero:     # a step back toward zero where nearest rounded away from it
        down = torch.nextafter(r.to(getattr(torch, dtype)), torch.zeros((), dtype=getattr(
            torch, dtype))).float()
        r = torch.where(r.abs() > t.abs(), down, r)
    return r.numpy()


def test_16_bit_values_are_judged_by_pytorch_s_16_bit_run():
    # PyTorch's float16 run is the answer; the exp may round the other way where it is
    # near a tie, but a missing rounding, a rounding toward zero or bfloat16's is found
    import torch
    from fuzz_harness import run
    from fuzz_rounding import tracker

    def program(fw, x):
        h = x.half()
        return [(h.exp() * 3 - h).float()]
    x = np.linspace(-2, 2, 1000, dtype=np.float32)
    ref, ref64, _ = references(torch, program, [x], [False])

    def judged(value) -> str:
        got = Result([np.asarray(value, np.float32)], [None], [0.0], [0.0], dtypes=("float32",))
        return judge(got, ref, ref64, edges=False)[0]
    h = _rounded(x, "float16")
    e = np.exp(h.astype(np.float64)).astype(np.float32)

    def steps(dtype="float16", round_exp=True, toward_zero=False):
        r = lambda v: _rounded(v, dtype, toward_zero)   # noqa: E731
        return r(r((r(e) if round_exp else e) * 3) - h)
    assert judged(steps()) == "ok"
    assert judged(run(torch, program, [x], [False], np.float32, tracker(torch, 1)).outputs[0]) \
        == "ok"                                         # every near tie of exp rounded up
    assert judged(steps(round_exp=False)) == "wrong forward"
    assert judged(steps(toward_zero=True)) == "wrong forward"
    assert judged(steps("bfloat16")) == "wrong forward"
    assert judged(e * 3 - h) == "wrong forward"         # all in float32
    assert judge(Result([steps()], [None], [0.0], [0.0], dtypes=("float16",)), ref, ref64,
                 edges=False)[0] == "wrong forward"     # (its dtype)


def test_16_bit_casts_of_a_difference_may_round_as_its_float32_terms_do():
    # a difference of neighbours cancels: float32 terms an ulp apart from PyTorch's move it to
    # the other side of a 16-bit tie, which moving every term up, or down, cannot show (the
    # moves cancel; fuzz seed 99503883: a diff of layer_norm results, then half()); an ulp
    # up and down in turn is within the model (a cancelling difference: 2 ulps of float16),
    # the difference rounded to bfloat16 is not
    import torch

    def program(fw, x):
        return [x.exp().diff(dim=0).half().float()]
    x = np.linspace(0, 1, 2000, dtype=np.float32)
    ref, ref64, _ = references(torch, program, [x], [False])
    exp = np.exp(x.astype(np.float64)).astype(np.float32)
    apart = np.where(np.arange(2000) % 2, np.nextafter(exp, 0), np.nextafter(exp, 9))

    def judged(terms, dtype="float16") -> str:
        value = _rounded(np.diff(terms), dtype)
        return judge(Result([value], [None], [0.0], [0.0], dtypes=("float32",)), ref, ref64,
                     edges=False)[0]
    assert judged(exp) == "ok"
    assert judged(apart) == "ok"
    assert judged(exp, "bfloat16") == "wrong forward"


def test_16_bit_gradients_may_round_their_formula_otherwise():
    # PyTorch's sigmoid gradient is g (1 - y) y in float32 from its float16 output y, rounded
    # once. Rounded after each product instead, it is a rounding or two apart, as the flips
    # of each backward op allow; computed in bfloat16, or from y before its rounding (5 ulps
    # off where 1 - y keeps few bits), it is found.
    import torch
    from fuzz_harness import cotangent

    def program(fw, x):
        return [x.half().sigmoid()]
    x = np.linspace(-3, 3, 1000, dtype=np.float32)
    ref, ref64, _ = references(torch, program, [x], [True])
    g = cotangent(torch, torch.zeros(1000, dtype=torch.float16), 0).float().numpy()
    exact = 1 / (1 + np.exp(-_rounded(x, "float16").astype(np.float64)))
    y = _rounded(exact, "float16")

    def judged(grad) -> str:
        return judge(Result(ref.outputs, [grad], [0.0], [0.0], dtypes=("float16",)), ref,
                     ref64, edges=False)[0]
    assert judge(ref, ref, ref64, edges=False)[0] == "ok"
    assert judged(_rounded(_rounded(g * y, "float16") * (1 - y), "float16")) == "ok"
    assert judged(_rounded(g * y * (1 - y), "bfloat16")) == "wrong gradient"
    assert judged(_rounded(g * exact * (1 - exact), "float16")) == "wrong gradient"


def test_16_bit_transposed_convolutions_may_round_each_tap():
    # PyTorch's bfloat16 conv_transpose2d rounds once where oneDNN takes it (a CPU of AVX-512)
    # and rounds each kernel tap's products and their sum in the type elsewhere (its col2im,
    # clgrad's steps): either is its answer, as the CPU decides; four times that apart is not
    import torch
    from fuzz_rounding import _ulp

    def program(fw, x, w):
        return [fw.nn.functional.conv_transpose2d(x.bfloat16(), w.bfloat16()).float()]
    rng = np.random.default_rng(0)
    x, w = rng.uniform(0.5, 2, (4, 3, 5, 16)), rng.uniform(0.5, 2, (3, 1, 3, 3))
    x, w = x.astype(np.float32), w.astype(np.float32)
    ref, ref64, _ = references(torch, program, [x, w], [False, False])
    h = [torch.tensor(a).bfloat16() for a in (x, w)]
    once = torch.nn.functional.conv_transpose2d(*(t.double() for t in h)).bfloat16().float()
    with torch.backends.mkldnn.flags(enabled=False):
        per_tap = torch.nn.functional.conv_transpose2d(*h).float()
    assert not torch.equal(once, per_tap)

    def judged(value) -> str:
        got = Result([value.numpy()], [None, None], [0.0], [0.0], dtypes=("float32",))
        return judge(got, ref, ref64, edges=False)[0]
    assert judged(once) == "ok" and judged(per_tap) == "ok"
    off = once + 4 * 9 * _ulp(torch, once.double(), torch.bfloat16).float()
    assert judged(off) == "wrong forward"


def test_16_bit_softmax_over_a_leading_dim_may_round_its_exps_first():
    # PyTorch's bfloat16 softmax over a dim with others after it rounds each exp(x - max)
    # to the type before dividing, or not, as its vector loop leaves off (its threads and
    # vector width decide); clgrad rounds once: either is its answer, two ulps off is not
    import torch
    from fuzz_rounding import _ulp

    def program(fw, x):
        return [x.bfloat16().softmax(dim=0).float()]
    x = np.random.default_rng(1).standard_normal((64, 45)).astype(np.float32)
    ref, ref64, _ = references(torch, program, [x], [False])
    h = torch.tensor(x).bfloat16().float()
    e = (h - h.amax(0)).exp()
    once = (e / e.sum(0)).bfloat16().float()
    twice = (e.bfloat16().float() / e.sum(0)).bfloat16().float()
    assert not torch.equal(once, twice)

    def judged(value) -> str:
        got = Result([value.numpy()], [None], [0.0], [0.0], dtypes=("float32",))
        return judge(got, ref, ref64, edges=False)[0]
    assert judged(once) == "ok" and judged(twice) == "ok"
    off = once + 2 * _ulp(torch, once.double(), torch.bfloat16).float()
    assert judged(off) == "wrong forward"
