"""NaN and inf as PyTorch treats them (issue 13, item 4): comparisons with NaN are false,
max/min/relu/clamp propagate NaN, and logsumexp, softmax and cross_entropy handle infinities.
Values and gradients are checked against PyTorch with helpers.check, in vector (long rows) and
scalar code."""
import math

import numpy as np
import pytest

from helpers import check, library, make


def F(t):
    """clgrad.nn.functional or torch.nn.functional, whichever t belongs to."""
    return library(t).nn.functional

nan, inf = math.nan, math.inf


def with_nonfinite(shape, seed=0, nans=True, infs=False) -> np.ndarray:
    """Random floats with NaNs (and infinities) sprinkled in, several per row."""
    x = make(shape, seed=seed)
    rng = np.random.default_rng(seed)
    flat = x.reshape(-1)
    picks = rng.permutation(flat.size)
    k = max(1, flat.size // 8)
    if nans:
        flat[picks[:k]] = nan
    if infs:
        flat[picks[k:2 * k]] = inf
        flat[picks[2 * k:3 * k]] = -inf
    return x


# long rows run the vector loops, (3, 5) the scalar ones
SHAPES = [(3, 5), (4, 37)]


# ---- comparisons ----

COMPARISONS = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


@pytest.mark.parametrize("name", COMPARISONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_comparison_with_nan_is_false(name, shape):
    a = with_nonfinite(shape, seed=1, infs=True)
    b = with_nonfinite(shape, seed=2, infs=True)
    b[0, :3] = a[0, :3]            # some ties, and NaN against NaN
    check(COMPARISONS[name], a, b, grad=False)
    check(lambda x: COMPARISONS[name](x, nan), a, grad=False)
    check(lambda x: COMPARISONS[name](x, 0.5), a, grad=False)
    check(lambda x: COMPARISONS[name](1.0, x), a, grad=False)


def test_where_on_ge_takes_the_else_branch_for_nan():
    a = np.array([1.0, nan, 3.0, 2.0], np.float32)
    check(lambda x: library(x).where(x >= 2, x, x * 0 - 1), a)
    check(lambda x: library(x).where(x <= 2, x * 3, x * 0 + 7), a)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_comparisons_of_ints_and_bools(dtype):
    a, b = make((4, 37), dtype, -3, 3, seed=1), make((4, 37), dtype, -3, 3, seed=2)
    for fn in COMPARISONS.values():
        check(fn, a, b, grad=False)


# ---- NaN propagation: elementwise ----

ACTIVATIONS = {
    "relu": lambda x: x.relu(),
    "clamp": lambda x: x.clamp(-0.5, 1.0),
    "clamp_min": lambda x: x.clamp(min=0.0),
    "clamp_max": lambda x: x.clamp(max=0.5),
    "maximum": lambda x: x.maximum(x * 0 + 0.25),
    "minimum": lambda x: x.minimum(x * 0 + 0.25),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_nan_propagates(name, shape):
    check(ACTIVATIONS[name], with_nonfinite(shape, infs=True))


def test_relu_and_clamp_at_their_kinks():
    x = np.array([-1.0, -0.0, 0.0, 0.5, 1.0, nan], np.float32)
    check(lambda t: t.relu(), x)
    check(lambda t: t.clamp(0.0, 1.0), x)


@pytest.mark.parametrize("op", ["maximum", "minimum"])
@pytest.mark.parametrize("shape", SHAPES)
def test_maximum_minimum_of_two_with_nan_and_ties(op, shape):
    a = with_nonfinite(shape, seed=3, infs=True)
    b = with_nonfinite(shape, seed=4, infs=True)
    b[:, :2] = a[:, :2]
    check(lambda x, y: getattr(x, op)(y), a, b)


@pytest.mark.parametrize("dtype", [np.float64])
def test_maximum_float64(dtype):
    a = with_nonfinite((4, 37), seed=3).astype(dtype)
    check(lambda x: x.maximum(x * 0 + 0.5).minimum(x * 0 + 1.0), a, dtype=dtype)


# ---- NaN propagation: reductions ----

REDUCTIONS = {
    "max": lambda x: x.max(),
    "min": lambda x: x.min(),
    "amax1": lambda x: x.amax(1),
    "amin0": lambda x: x.amin(0),
    "max_dim": lambda x: x.max(1),
    "min_dim": lambda x: x.min(0),
    "argmax": lambda x: x.argmax(1),
    "argmin": lambda x: x.argmin(0),
    "argmax_flat": lambda x: x.argmax(),
    "argmin_flat": lambda x: x.argmin(),
}


@pytest.mark.parametrize("name", REDUCTIONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_reductions_propagate_nan(name, shape):
    x = make(shape)
    x[1, 2] = nan                  # one row with a NaN: that row's result is NaN
    x[2, 3] = nan
    x[2, 1] = nan                  # two NaNs: the first one's index
    # amax's gradient is NaN for every element of a NaN row (its tie count is 0), max()'s is
    # shared among the NaNs: PyTorch's two rules
    grad = not name.startswith("arg")
    check(REDUCTIONS[name], x, grad=grad)


@pytest.mark.parametrize("name", ["amax1", "amin0", "max_dim", "min_dim", "argmax", "argmin"])
def test_reductions_with_infinities(name):
    x = make((3, 37))
    x[0, :] = -inf
    x[1, 4] = inf
    x[2, 5:9] = -inf
    check(REDUCTIONS[name], x, grad=not name.startswith("arg"))


def test_max_gradient_shared_among_ties_and_nans():
    # PyTorch's max() shares the gradient among tied elements, or among the NaNs
    check(lambda x: x.max(), np.array([3.0, 1.0, 3.0, 3.0], np.float32))
    check(lambda x: x.max(), np.array([1.0, nan, 3.0, nan], np.float32))
    check(lambda x: x.min(), np.array([1.0, nan, -3.0, nan], np.float32))
    check(lambda x: x.amax(1), np.array([[3.0, 1.0, 3.0, 3.0], [1.0, 2.0, 2.0, 0.0]], np.float32))
    # max(dim) sends it to the first of the tied elements, or to the first NaN
    check(lambda x: x.max(1).values, np.array([[3.0, 1.0, 3.0, 3.0], [1, nan, 3, nan]],
                                              np.float32))


def test_max_gradient_with_a_nonfinite_incoming_gradient():
    # PyTorch's max() writes g / count into the extremes and exact zeros elsewhere even when g
    # is NaN or inf (fuzz seed 10014); amax's (g / count) * mask spreads a NaN g everywhere
    x, w = np.array([1.0, 3.0, 3.0, -1.0], np.float32), np.array([nan, inf], np.float32)
    check(lambda t, v: (t.max() * v[0], t.min() * v[1]), x, w)
    check(lambda t, v: t.amax() * v[0], x, w)


def test_max_pool_propagates_nan():
    x = make((1, 2, 6, 6))
    x[0, 0, 1, 1] = nan
    x[0, 1, 4, 5] = nan
    x[0, 0, 2, 2] = x[0, 0, 3, 3] = nan      # two in one window: PyTorch takes the last
    check(lambda t: F(t).max_pool2d(t, 2), x)
    check(lambda t: F(t).max_pool2d(t, 3, stride=1), x)
    check(lambda t: F(t).max_pool2d(t, 5, stride=1), x)     # past 16 elements: a reduction
    x = make((1, 1, 6, 6))
    x[0, 0, :5, :5] = -inf
    check(lambda t: F(t).max_pool2d(t, 5, stride=1), x)


# ---- softmax family with infinities ----

def test_logsumexp_of_infinities():
    for row in ([-inf, -inf], [inf, 1.0], [inf, -inf], [inf, inf], [nan, 1.0], [-inf, 0.0],
                [-inf, 2.0, 1.0]):
        check(lambda x: x.logsumexp(0), np.array(row, np.float32))


def test_logsumexp_rows_with_infinities():
    x = make((4, 37))
    x[0, :] = -inf
    x[1, 3] = inf
    x[2, ::2] = -inf
    check(lambda t: t.logsumexp(1), x, grad=False)
    check(lambda t: t.logsumexp(1), x[2:])


@pytest.mark.parametrize("length", [5, 37])
def test_logsumexp_of_a_row_with_inf_has_zero_gradient_where_exp_overflows(length):
    # exp(x) overflows for x = 100 while x is finite: PyTorch's gradient, exp(x - inf), is 0
    # there; one shifted by 0 was exp(100) / inf = NaN (fuzz seed 19401444)
    x = make((3, length))
    x[:, 1] = [inf, inf, 100.0]
    x[:2, 2] = 100.0
    check(lambda t: t.logsumexp(1), x.astype(np.float64))
    check(lambda t: t.exp().abs().logsumexp(1), np.where(x == inf, 100.0, x / 8))


def test_infinities_after_a_matmul():
    # a matmul's kernel runs in 3 dims, and its epilogue's inf constant (the largest float's
    # bits plus get_work_dim()) was a NaN: logsumexp over one element took the inf max for
    # finite, and -inf - -inf made NaN (fuzz seeds 400440, 400463)
    a = make((1, 6, 3))
    a[0, 1, 0], a[0, 4, 2] = -inf, inf
    check(lambda x, w: (x @ w).logsumexp(0), a, (1, 3, 2))
    check(lambda x, w: library(x).where(x @ w > 1, x @ w, -inf), a, (1, 3, 2))


def test_cross_entropy_with_masked_logit_is_finite():
    logits = np.array([[-inf, 0.0, 1.0]], np.float32)
    target = np.array([1])
    out = check(lambda x, t: F(x).cross_entropy(x, t), logits, target)
    assert abs(out[0].item() - 1.3133) < 1e-4
    logits = make((4, 37))
    logits[:, ::3] = -inf
    check(lambda x, t: F(x).cross_entropy(x, t), logits, np.array([1, 2, 4, 5]))
    check(lambda x, t: F(x).cross_entropy(x, t, reduction="none"), logits,
          np.array([1, 2, 4, 5]))


@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
def test_softmax_of_masked_rows(fn):
    x = make((4, 37))
    x[0, :] = -inf                  # all masked: NaN, as in PyTorch
    x[1, ::2] = -inf
    check(lambda t: getattr(t, fn)(1), x, grad=False)
    check(lambda t: getattr(t, fn)(1), x[1:])
    check(lambda t: getattr(t, fn)(1), np.array([[-inf, -inf, -inf], [-inf, 0.0, 1.0]],
                                                np.float32), grad=False)


@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "logsumexp"])
def test_softmax_of_a_constant_masked_row(fn):
    # computed from constants only: PoCL folded exp(-inf - -inf) to 1, so softmax gave 1/n
    import torch

    import clgrad as cg
    for value in (-inf, inf, nan):
        ours = getattr(cg.full((2, 5), value), fn)(1).numpy()
        theirs = getattr(torch.full((2, 5), value), fn)(1).numpy()
        np.testing.assert_array_equal(ours, theirs)
    # an infinity the compiler computes from literals (the reciprocal of an empty product):
    # PoCL folded its exp(inf - inf) to garbage, 1 after the division (fuzz seed 5300659)
    empty = np.zeros((1, 0), np.float32)
    ours = getattr(1e-3 / (cg.tensor(empty) @ cg.tensor(empty).t()), fn)(-1).numpy()
    theirs = getattr(1e-3 / (torch.tensor(empty) @ torch.tensor(empty).t()), fn)(-1).numpy()
    np.testing.assert_array_equal(ours, theirs)


def test_rounding_and_tanh_of_a_nan_computed_from_literals():
    # PoCL folded floor, ceil, tanh and exp of such a NaN to garbage (fuzz seed 5300659)
    import torch

    import clgrad as cg
    empty = np.zeros((1, 0), np.float32)

    def results(fw):
        inf = 1e-3 / (fw.tensor(empty) @ fw.tensor(empty).t())
        return [f(inf - inf).numpy() for f in (fw.floor, fw.ceil, fw.tanh, fw.exp)]
    for ours, theirs in zip(results(cg), results(torch)):
        np.testing.assert_array_equal(ours, theirs)


def test_amax_over_dims_of_size_one():
    # nothing is reduced, but a NaN's gradient is still amax's (NaN) and max()'s (g)
    x = np.array([[1.0], [nan], [-inf]], np.float32)
    check(lambda t: t.amax(1), x)
    check(lambda t: t.amin(1, keepdim=True), x)
    check(lambda t: t[1, 0].amax(), x)
    check(lambda t: t[1, 0].max(), x)
    # a zero gradient from an empty selection still meets amax's NaN count (fuzz seed 10782)
    check(lambda t: t[1, 0].amax(0).expand(0), x)
    check(lambda t: t.amax(1).expand(0, 3), x)


def test_relu_keeps_negative_zero():
    x = np.array([-0.0, 0.0, -5.0, nan, 3.0, -inf, inf], np.float32)
    check(lambda t: 1 / t.relu(), x)             # relu(-0.0) is -0.0
    check(lambda t: t.relu(), x)


def test_var_gradient_with_an_infinite_element():
    # PyTorch's rule is 2 / (n - 1) * g * (x - mean): a row with one inf gives inf to its
    # finite elements and NaN to the inf itself; the mean's gradient would make it all NaN
    x = np.array([[1.0, 2.0, -inf, 0.5], [0.3, 0.1, 2.0, 4.0], [nan, 1.0, 2.0, 3.0]],
                 np.float32)
    check(lambda t: t.var(1), x)
    check(lambda t: t.var(1).max(), x)
    check(lambda t: t.std(0, correction=0), x)
    check(lambda t: t.var(), x[1:2])


@pytest.mark.parametrize("rows", [
    [[inf, 2.0, 3.0], [1.0, 0.0, 2.0]],         # a zero elsewhere: the product of the others
    [[inf, 2.0, 3.0], [1.0, 4.0, 2.0]],         # no zero at all: prod / x, inf / inf = NaN
    [[inf, 2.0, 0.0], [1.0, 0.0, 0.0]],
    [[nan, 2.0, 3.0], [1.0, 0.0, 2.0]],
    [[inf, 0.0, 3.0], [-inf, 5.0, -2.0]],
    [[-inf, -inf, 0.5], [0.0, -inf, 2.0]],
])
def test_prod_gradient_with_zeros_and_infinities(rows):
    # PyTorch divides the product by each element unless the input holds a zero anywhere;
    # then it multiplies out the product of the others
    x = np.array(rows, np.float32)
    check(lambda t: t.prod(1), x)
    check(lambda t: t.prod(0, keepdim=True), x)
    check(lambda t: t[0].prod(), x)
    check(lambda t: t.prod(1) * inf, x)


def test_prod_of_an_inf_and_tiny_values_is_inf():
    # no element is zero, so the product is inf however small the others: the 2 elements
    # past the vector lanes were multiplied first, underflowed to 0, and 0 * inf was NaN
    # (fuzz seeds 502066, 506711)
    x = make((2, 130), low=0.5, high=2.0)
    x[:, -2:] = 1e-30
    x[0, 0], x[1, 3] = inf, -inf
    check(lambda t: t.prod(1), x)
    check(lambda t: t[1].prod(), x)


def test_prod_gradient_over_dims_of_size_one():
    # one element per product, but the gradient is still prod / x: NaN at an inf, unless the
    # input holds a zero
    x = np.array([[inf], [inf], [-0.3], [nan], [1.5]], np.float32)
    check(lambda t: t.prod(1, keepdim=True), x)
    check(lambda t: t.prod(1), np.concatenate([x, [[0.0]]]).astype(np.float32))
    check(lambda t: t[:1].prod(), x)
    check(lambda t: t[0, 0].prod(), x)


def test_prod_of_everything_with_two_zeros_has_no_gradient():
    # PyTorch's prod() returns zeros for two zeros or more, where prod(dim) multiplies out
    # the others (NaN beside a NaN or inf)
    for row in ([0.0, nan, 0.0, 2.0], [inf, 0.0, -0.0], [0.0, 0.0], [0.0, inf, 3.0]):
        x = np.array(row, np.float32)
        check(lambda t: t.prod(), x)
        check(lambda t: t.prod(0), x)
        check(lambda t: t.reshape(2, -1).prod() * inf if t.shape[0] % 2 == 0 else t.prod(), x)


@pytest.mark.parametrize("scale", [1.0, inf])
def test_cumprod_gradient_past_a_zero(scale):
    # PyTorch masks each step of its rule to its part of the row: what lies past the first
    # zero (an inf or NaN, or an infinite g times the products of 0 there) does not reach the
    # elements before it, which got NaN
    x = np.array([[2, 0, 3, 4], [2, 3, 4, 0], [0, 0, 3, 4], [2, 0, 3, 0], [2, 0, inf, 4],
                  [2, 0, nan, 4], [0, 1.5, 0, inf], [1, 2, 3, 4]], np.float32)
    check(lambda t: t.cumprod(1) * scale, x)


@pytest.mark.parametrize("scale", [3.0, nan, inf])
def test_logcumsumexp_gradient_over_rows_of_one_element(scale):
    # PyTorch's rule for rows of any length, exp(log|g| - out + x) for g's positive and
    # negative parts: NaN at +-inf, 0 for a NaN g, and at a large x log|g| is lost to rounding
    # (+-1); clgrad's g * exp(x - x) gave g and NaN
    x = np.array([[inf], [-inf], [nan], [1e30], [-1e30], [0.5], [6e4], [-0.0]], np.float32)
    check(lambda t: t.logcumsumexp(1) * scale, x)
    check(lambda t: t.logcumsumexp(0) * scale, x.T.copy())
    check(lambda t: t[0, 0].logcumsumexp(0) * scale, x)     # a 0-d tensor's is g


@pytest.mark.parametrize("p", [0.5, 1.5, 2.0, 3.0, -1.0, inf])
def test_vector_norm_gradient_with_a_nonfinite_incoming_gradient(p):
    # PyTorch's norm_backward multiplies g into each element's factor, so an infinite or NaN
    # g gives NaN at a zero x (where clgrad's graph gave 0), except where orders above 1 mask
    # g / norm ** (p - 1) to 0 at a norm of 0 (order 2 gave 0 there, PyTorch NaN); a NaN in an
    # inf-norm's row takes the whole of g, times its sign 0. The order -1 norm of a row with a
    # zero is 0 (|0| ** -1 is inf), which clgrad's left out.
    x = np.array([[0, 1, -2], [0, 0, 0], [1, 2, 0], [nan, 1, 0], [3, -3, 1]], np.float32)
    for scale in (1.0, inf):
        check(lambda t: library(t).linalg.vector_norm(t, p, dim=1) * scale, x)
    check(lambda t: t.norm(p) * inf, x[:1])


@pytest.mark.parametrize("fn", ["var", "std"])
def test_var_and_std_gradients_of_equal_values_with_an_infinite_incoming_gradient(fn):
    # PyTorch's rule is 2 / (n - 1) * g * (x - mean), with mean sum / n: an infinite g gives
    # NaN where x - mean is exactly 0 (7 x 1.1), +-inf where the mean is not the value (7 x
    # 0.1); clgrad's deviations from the first element were 0 in both (std's g / (2 * 0) is
    # masked to 0 first). Without degrees of freedom along a dim, var is inf (NaN for 0).
    x = np.array([[0.1] * 7, [1.1] * 7, [0.3] * 6 + [2.0], [2.0] * 7, [7.7] * 7], np.float32)
    check(lambda t: getattr(t, fn)(1) * inf, x)
    check(lambda t: getattr(t, fn)(0, correction=0) * inf, x[:, :3].T.copy())
    with pytest.warns(UserWarning, match="degrees of freedom"):
        check(lambda t: getattr(t, fn)(1, correction=7), x[:3])


def test_sign_gradient_is_zeros_that_flow_on():
    # PyTorch's sign passes on zeros, not nothing: 0 * inf before it is NaN; sign(-0.0) is +0
    x = np.array([1.0, 0.0, -2.0, -0.0, nan, inf], np.float32)
    check(lambda t: (t * inf).sign(), x)
    check(lambda t: t.softmax(0).sign(), x)
    check(lambda t: 1 / t.sign(), x)
    check(lambda t: t.sign(), x)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_floor_division_takes_pythons_steps(dtype):
    """a // b is the quotient of a - fmod(a, b), not floor(a / b): 1 // 0.1 is 9 (a / b rounds
    up to 10), ±inf // 2 NaN, -5 // inf -1, -0.0 // 3 -0.0; its gradient is 0 (also for
    trunc division where a / b's is NaN)."""
    a = np.array([1.0, -1.0, inf, -inf, -5.0, 5.0, -0.0, 7.5, -7.5, 5.0, 0.0, nan, 3.0, 1e30],
                 dtype)
    b = np.array([0.1, 0.1, 2.0, 2.0, inf, -inf, 3.0, 2.0, 2.0, 0.0, 0.0, 1.0, nan, 1e-30],
                 dtype)
    check(lambda x, y: [x // y, x.floor_divide(y)], a, b, dtype=dtype, atol=0, rtol=0,
          grad=False)       # (neither has a derivative of floor_divide: test_autograd)
    check(lambda x, y: [x.div(y, rounding_mode="floor"), x.div(y, rounding_mode="trunc")],
          a, b, dtype=dtype, atol=0, rtol=0)


def test_square_root_powers_at_infinities():
    # PyTorch computes x ** 0.5 as sqrt and x ** -0.5 as rsqrt (NaN at -inf, where pow gives
    # inf and 0), and x ** 1.5's gradient with x ** 0.5
    x = np.array([-inf, -1.0, 0.0, 0.25, 4.0, inf, nan], np.float32)
    for exponent in (0.5, -0.5, 1.5, 2.5):
        check(lambda t: t ** exponent, x)
    check(lambda t: t.round() ** -0.5, np.array([-0.2, 0.2, -inf], np.float32))  # -0.0: -inf
    check(lambda t: (t.abs() + 1) ** 0.5, x)
    # a NaN gradient reaches -inf as NaN (g * -0.5 * 0 in PyTorch): the max of a row with a
    # NaN sends NaN to all of it (fuzz seed 4600882)
    check(lambda t: (t ** -0.5).amax(1), np.array([[-inf, 0.25], [1.0, 4.0]], np.float32))


def test_power_exponent_gradient_with_an_infinite_incoming_gradient():
    # PyTorch multiplies g into the exponent's masked factor (g * 0 is NaN for an inf g, fuzz
    # seed 10167: rsqrt of 0 ** e sends -inf back); the base's mask is a where (exact 0)
    b, e = np.array([-0.2, 0.0, 2.0, 0.0], np.float32), np.array([0.25, 0.0, 0.5, -1.0], np.float32)
    check(lambda s, t: ((s.ceil() ** t).rsqrt(), (0.0 ** t).rsqrt(), (s * 0) ** (t * 0)), b, e)


def test_var_of_everything_without_degrees_of_freedom():
    # PyTorch's var() gradient is g * inf where x is not the mean (a NaN), else NaN
    for x in ([nan], [1.5], [inf], [nan, 2.0]):
        check(lambda t: t.var(), np.array(x, np.float32))
        check(lambda t: t.var(correction=len(x)), np.array(x, np.float32))
        check(lambda t: t.std(correction=len(x)), np.array(x, np.float32))
    check(lambda t: t[0].var(), np.array([nan, 1.0], np.float32))
    check(lambda t: t.var(0), np.array([nan], np.float32))
    # an infinite first element of a row: x - mean stays -inf at the finite ones (seed 200779)
    check(lambda t: t.var(0), np.array([[inf, nan], [1.5, 2.0], [-1.2, 3.0]], np.float32))
    # a 0-d tensor's var(dim) takes var()'s rule (fuzz seeds 10706, 11470)
    check(lambda t: t.var(0), np.array(nan, np.float32))
    check(lambda t: t.var(0), np.array(1.5, np.float32))


def test_log1p_and_expm1_gradients_at_the_extremes():
    # PyTorch's formulas, 1 / (1 + x) and exp(x): finite below -1 (where the value is NaN),
    # inf at -1, 0 at inf; log1p of 3e38 is finite (x / (u - 1) before the product)
    x = np.array([-inf, -2.5, -1.0, -0.5, -1e-7, 0.0, 1e-7, 0.5, 80.0, 100.0, 3e38, inf, nan],
                 np.float32)
    check(lambda t: t.log1p(), x)
    check(lambda t: t.expm1(), x)


def test_fmod_and_remainder_at_infinities():
    # fmod is C's: fmod(1, -inf) is 1 (it was computed from the remainder: NaN), fmod(1, -3e38)
    # 1 (was 0); the divisor's gradient is -trunc(a / b) for fmod and -(a // b), Python's
    # floor division, for the remainder: -9 for 1 % 0.1 (a / b rounds up to 10), NaN where a
    # is infinite
    a = np.array([1.0, 1.0, -1.0, inf, -inf, 5.5, -5.5, 1.0, -7.0, nan, 0.0], np.float32)
    b = np.array([-inf, -3e38, inf, 2.0, 0.75, 2.0, 2.0, 0.1, -inf, 1.5, -2.0], np.float32)
    check(lambda x, y: [x.fmod(y), x % y], a, b)


def test_digamma_gradient_is_trigamma_at_the_poles():
    # PyTorch's ψ'(x): inf at 0, large near (not at) the negative integers in float32, NaN at
    # -inf (the series' own derivative was 0 there)
    x = np.array([-inf, -2.0, -1.0, -0.5, -0.0, 0.0, 0.25, 1.0, 7.5, 1e4, inf, nan], np.float32)
    check(lambda t: t.digamma(), x, rtol=1e-3)


def test_smooth_l1_and_huber_gradients_of_nan_are_nan():
    x = np.array([nan, inf, -inf, 0.5, -3.0, 1.0, nan], np.float32)
    y = np.array([0.0, 1.0, inf, nan, 0.0, 1.0, nan], np.float32)
    for name in ("smooth_l1_loss", "huber_loss"):
        check(lambda s, t: getattr(F(s), name)(s, t, reduction="none"), x, y)


def test_kl_div_target_gradient_where_the_target_is_zero():
    # PyTorch's target gradient is xlogy(t != 0, t) + t / t - x: NaN where t is 0
    x = np.array([[-1.0, -2.0, 0.0], [inf, -0.5, -1.5]], np.float32)
    t = np.array([[0.0, 0.25, 0.75], [0.0, 1.0, 0.0]], np.float32)
    for reduction in ("none", "sum", "batchmean"):
        check(lambda s, u: F(s).kl_div(s, u, reduction=reduction), x, t)


def test_nan_to_num_gradient_is_zero_times_what_flows_in():
    # PyTorch's g * isfinite(x): an inf or NaN g at a replaced element gives NaN
    x = np.array([nan, inf, -inf, 1.5, -2.0], np.float32)
    check(lambda t: t.nan_to_num().log().exp() * 0 + t.nan_to_num(1.0, 2.0, -2.0), x)
    inputs = np.array([[[0.5, -1.0, 2.0, 0.25, nan]], [[1.5, 0.0, -2.0, 1.0, 1.0]]], np.float32)
    check(lambda t, u: F(u).batch_norm(u.transpose(1, 2), None, None,
                                       weight=t.nan_to_num(0.0, 2.0, -2.0), training=True),
          x, inputs)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_running_extreme_gradient_keeps_each_sum_to_its_own_terms(op):
    # each element's gradient is the sum of g over the places that read it (PyTorch's
    # scatter_add); taken as a difference of suffix sums, a later inf made it NaN and a later
    # 1e8 wiped out a 1e-3
    x = np.array([[3.0, 1.0, 2.0, 5.0, 4.0, 7.0, 0.5, 9.0],
                  [-1.0, inf, 2.0, nan, 0.0, -inf, 1.0, 2.0]], np.float32)
    g = np.array([[1e-3, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 1e8],
                  [1.0, 2.0, inf, 4.0, 5.0, 6.0, -inf, 1.0]], np.float32)
    check(lambda t, h: getattr(t, op)(1).values * h, x, g)


def test_layer_norm_over_an_empty_shape():
    x = np.zeros((4, 3, 0, 5), np.float32)
    check(lambda t: F(t).layer_norm(t, (0, 5)), x)
    check(lambda t: F(t).group_norm(t.reshape(4, 3, 0), 3), x)


@pytest.mark.parametrize("name", ["gelu", "gelu_tanh", "silu", "mish", "softplus", "logsigmoid",
                                  "elu", "selu", "celu", "hardswish", "sinc"])
def test_activation_gradient_with_an_infinite_incoming_gradient(name):
    """PyTorch multiplies g into its derivative formula once, g * (cdf + x pdf) for gelu: an
    infinite g gives ±inf; the value's own derivative multiplies g into each term, inf - inf
    = NaN where x < 0 (elu's went through expm1's rounding correction; fuzz edge seed
    95100178). Where PyTorch selects a gradient of 0 (hardswish below -3, sinc at 0), an
    infinite g gives 0. Inputs past where the slope rounds to 0 or 1 are left out: there PyTorch's
    vector and scalar kernels disagree (test_nn_activations' edge rows)."""
    act = {"gelu": lambda t: F(t).gelu(t), "gelu_tanh": lambda t: F(t).gelu(t, approximate="tanh"),
           "silu": lambda t: F(t).silu(t), "mish": lambda t: F(t).mish(t),
           "softplus": lambda t: F(t).softplus(t), "logsigmoid": lambda t: F(t).logsigmoid(t),
           "elu": lambda t: F(t).elu(t), "selu": lambda t: F(t).selu(t),
           "celu": lambda t: F(t).celu(t, 0.5), "hardswish": lambda t: F(t).hardswish(t),
           "sinc": lambda t: t.sinc()}[name]
    x = np.array([-4.0, -1.0, -0.3, 0.0, 0.3, 1.0, 4.0, -1.0], np.float32)
    g = np.array([inf, inf, -inf, inf, inf, -inf, inf, nan], np.float32)
    check(lambda t, w: act(t) * w, x, g)


@pytest.mark.parametrize("name", ["logaddexp", "logaddexp2"])
def test_logaddexp_gradient_with_an_infinite_incoming_gradient(name):
    """PyTorch's g / (1 + exp(b - a)): ±inf, where the value's derivative (the larger plus
    log1p(exp(-|a - b|))) met an infinite g in terms of both signs (NaN)."""
    a = np.array([-4.0, -1.0, 0.3, inf, -inf, inf, nan, 2.0, 80.0, -80.0], np.float32)
    b = np.array([1.0, -0.5, 0.2, 1.0, 1.0, inf, 1.0, -inf, -80.0, 80.0], np.float32)
    g = np.array([inf, -inf, inf, inf, -inf, inf, inf, -inf, inf, inf], np.float32)
    check(lambda x, y, w: getattr(library(x), name)(x, y) * w, a, b, g)


@pytest.mark.parametrize("pos_weight", [False, True])
def test_bce_with_logits_gradient_with_an_infinite_incoming_gradient(pos_weight):
    """PyTorch's (sigmoid(x) - y) g to the input and -x g to the target (with pos_weight its
    forms of them): one product each, where the loss's own derivative met an infinite g in
    terms of both signs (NaN)."""
    x = np.array([-4.0, -1.0, 0.3, 2.0, 0.0, 30.0, -30.0], np.float32)
    y = np.array([0.2, 0.5, 0.7, 0.9, 1.0, 0.0, 0.3], np.float32)
    g = np.array([inf, -inf, inf, 1.0, inf, -inf, 1.0], np.float32)
    pw = np.array([2.0, 0.5, 1.0, 3.0, 1.5, 0.7, 2.0], np.float32)

    def loss(a, t, w):
        weight = library(a).tensor(pw) if pos_weight else None
        return F(a).binary_cross_entropy_with_logits(a, t, reduction="none",
                                                      pos_weight=weight) * w
    check(loss, x, y, g)
