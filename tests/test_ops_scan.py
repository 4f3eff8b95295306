"""Scans (cumsum, cumprod, cummax, cummin, logcumsumexp): forward and backward against
PyTorch, edge rows (empty, one element, ties, zeros, NaN and inf), integer dtypes, long rows,
and that each is one O(n) scan kernel."""
import dataclasses

import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import ir
from clgrad.compiler.schedule import schedule
from clgrad.compiler.target import Target

from helpers import check, library, make, torch

SCANS = ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin"]
SHAPES_DIMS = [((7,), 0), ((3, 5), 0), ((3, 5), 1), ((3, 5), -1), ((2, 3, 4), 1),
               ((4, 1, 6), 1), ((2, 3, 4), -3), ((1,), 0), ((), 0), ((), -1),
               ((0, 3), 0), ((3, 0), 1), ((0, 3), 1)]


@pytest.mark.parametrize("op", SCANS)
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=[f"{s}d{d}" for s, d in SHAPES_DIMS])
def test_scan_shapes_and_dims(op, shape, dim):
    check(lambda x: getattr(x, op)(dim), shape, low=0.5, high=1.5)


@pytest.mark.parametrize("op", SCANS)
def test_scan_as_function_and_keyword_dim(op):
    check(lambda x: getattr(library(x), op)(x, dim=1), (3, 6))


def test_cummax_cummin_ties_take_the_last_index_and_its_gradient():
    ties = np.array([[1, 3, 3, 2, 3, 3], [0, 0, 0, 0, 0, 0], [5, 4, 4, 5, 1, 5]], np.float32)
    for op in ("cummax", "cummin"):
        for dim in (0, 1):
            check(lambda x: getattr(x, op)(dim), ties)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_nan_and_inf(op):
    nan, inf = np.nan, np.inf
    rows = np.array([[1, nan, 3, nan, 0], [-inf, -inf, 2, inf, inf], [nan, 1, 2, 3, 4],
                     [inf, 1, -inf, inf, nan]], np.float32)
    check(lambda x: getattr(x, op)(1), rows)
    check(lambda x: getattr(x, op)(0), rows)


@pytest.mark.parametrize("row", [[2, 0, 3, 4], [0, 2, 3, 4], [2, 3, 4, 0], [2, 0, 3, 0, 5],
                                 [0, 0, 1, 2], [1, 2, 3, 4]])
def test_cumprod_gradient_with_zeros(row):
    x = np.array([row, row[::-1]], np.float32)
    check(lambda t: t.cumprod(1), x)
    check(lambda t: t.cumprod(0), x.T.copy())


def test_logcumsumexp_large_values_and_infinities():
    big = np.array([[100.0, -100.0, 80.0, 100.0], [-50.0, -60.0, -70.0, -40.0]], np.float32)
    check(lambda x: x.logcumsumexp(1), big)
    nan, inf = np.nan, np.inf
    edges = np.array([[-inf, -inf, 1, -inf], [inf, 1, inf, 2], [1, nan, 2, 3],
                      [-inf, inf, -inf, 0]], np.float32)
    check(lambda x: x.logcumsumexp(1), edges, grad=False)


def test_cumsum_cumprod_nan_and_inf():
    nan, inf = np.nan, np.inf
    x = np.array([[1, inf, 2, -inf, 3], [1, nan, 2, 3, 4], [-0.0, -0.0, 1, 2, 3],
                  [3e38, 3e38, -1, 2, 0.5]], np.float32)
    check(lambda t: t.cumsum(1), x)
    # (PyTorch's CPU accumulates in double: an overflowed product times 0 is 0 there, NaN here)
    check(lambda t: t.cumprod(1), x, grad=False)


# rows of signed zeros, NaN and inf, and one-element rows: PyTorch's sums start at +0.0 (a row
# of -0.0 sums to +0.0), its products at 1 (keeping -0.0), and its running max and min take an
# element equal to them (+0.0 then -0.0 gives -0.0) or a NaN
_SIGNED_ZEROS = np.array([[-0.0, -0.0, -0.0], [-0.0, 0.0, -0.0], [0.0, -0.0, -0.0],
                          [-0.0, 1.0, -1.0], [np.nan, -0.0, 1.0], [-np.inf, -0.0, np.inf],
                          [np.inf, -np.inf, -0.0], [-0.0, np.nan, -np.inf]], np.float32)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"])
@pytest.mark.parametrize("x,dim", [(_SIGNED_ZEROS, 0), (_SIGNED_ZEROS, 1),
                                   (_SIGNED_ZEROS[:, :1], 1)])
def test_signed_zeros_nan_and_inf_as_pytorch(op, x, dim):
    def values(t):
        out = getattr(t, op)(dim)
        return out[0] if op in ("cummax", "cummin") else out
    ours = check(values, x, grad=False)[0].numpy()
    theirs = values(torch.tensor(x)).numpy()
    np.testing.assert_array_equal(np.signbit(ours) & ~np.isnan(ours),
                                  np.signbit(theirs) & ~np.isnan(theirs))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
def test_scan_integer_dtypes(op, dtype):
    """cumsum and cumprod of integers and bools give int64, as PyTorch's."""
    if op == "cumprod":
        x = make((3, 9), dtype, low=-3, high=4)
    else:
        x = make((3, 9), dtype, low=-100, high=100)
    check(lambda t: getattr(t, op)(1), x)
    check(lambda t: getattr(t, op)(0), x)


def test_integer_extremes_wrap_as_pytorch():
    big = np.array([2 ** 62, 2 ** 62, -2 ** 63, 5], np.int64)
    check(lambda t: t.cumsum(0), big)
    check(lambda t: t.cummax(0), big)
    check(lambda t: t.cummin(0), np.array([2 ** 31 - 1, -2 ** 31, 0], np.int32))


def test_cumsum_dtype_argument():
    check(lambda t: t.cumsum(1, dtype=library(t).float64), (3, 4))
    check(lambda t: t.cumprod(0, dtype=library(t).float64), make((3, 4), np.int32, low=-3, high=4))


@pytest.mark.parametrize("dim", [0, -1])
def test_long_cumsum_is_accurate(dim):
    """100,000 floats: within float32 rounding of the float64 prefix sums (a plain running sum
    drifts by ~1e-4 relative over this length), and its gradient, the reversed cumsum."""
    n = 100_000
    values = make((n,), np.float32, low=0.0, high=1.0)
    x = values.reshape((n, 1)) if dim == 0 else values.reshape((1, n))
    t = cg.tensor(x, requires_grad=True)
    out = t.cumsum(dim)
    exact = np.cumsum(x.astype(np.float64), axis=dim)
    np.testing.assert_allclose(out.detach().numpy(), exact, rtol=2e-7)
    g = make(x.shape, np.float32, seed=5)
    out.backward(cg.tensor(g))
    reversed_exact = np.flip(np.cumsum(np.flip(g.astype(np.float64), dim), axis=dim), dim)
    np.testing.assert_allclose(t.grad.numpy(), reversed_exact, rtol=1e-5, atol=1e-3)


def edge_magnitudes(shape, seed):
    """Floats from 1e-30 to 1e30 in size, with infinities, zeros and NaNs among them."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-30, 31, shape)
    pick = rng.random(shape)
    x[pick < 0.02] = np.inf
    x[(pick >= 0.02) & (pick < 0.04)] = -np.inf
    x[(pick >= 0.04) & (pick < 0.05)] = 0.0
    x[(pick >= 0.05) & (pick < 0.06)] = np.nan
    return x.astype(np.float32)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_float32_scans_accumulate_in_double_as_pytorch(op):
    """PyTorch's CPU scans of float32 run in double and round each prefix: its bits, where
    float32's range differs (1e-30 * 1e-30 * -inf is -inf in double, 0 * -inf = NaN in
    float32: edge seed 100100456)."""
    for shape, dim in [((1000, 4), 0), ((7, 513), 1), ((3, 40, 5), 1)]:
        x = edge_magnitudes(shape, seed=len(shape) + dim)
        ours = getattr(cg.tensor(x), op)(dim).numpy()
        theirs = getattr(torch.tensor(x), op)(dim).numpy()
        np.testing.assert_array_equal(ours, theirs)


def test_without_doubles_a_float32_cumsum_carries_its_rounding_error(codegen_for):
    """A device that computes no doubles runs a compensated float32 sum instead: still
    within float32 rounding of the float64 prefix sums over 20,000 floats."""
    from clgrad.engine.targets import codegen_target
    codegen_for(dataclasses.replace(codegen_target(cg.device()), fp64=False))
    x = make((20_000, 1), np.float32, low=0.0, high=1.0)
    np.testing.assert_allclose(cg.tensor(x).cumsum(0).numpy(),
                               np.cumsum(x.astype(np.float64), axis=0), rtol=2e-7)
    plain = np.cumsum(x, axis=0)        # a float32 running sum drifts past that
    assert not np.allclose(plain, np.cumsum(x.astype(np.float64), axis=0), rtol=2e-7)


@pytest.mark.parametrize("op", SCANS)
def test_long_rows_forward_and_backward(op):
    check(lambda x: getattr(x, op)(1), (2, 3001), low=0.999, high=1.001,
          atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_few_long_rows_scan_in_blocks(op):
    """Rows of 40,000 and more are scanned in blocks, the blocks' totals, then combined: the
    same values and gradients, ragged last block included."""
    check(lambda x: getattr(x, op)(1), (2, 40_001), low=0.9999, high=1.0001, atol=1e-4,
          grad_atol=1e-3, grad_rtol=1e-5)
    check(lambda x: getattr(x, op)(0), (40_000, 3), low=0.9999, high=1.0001, atol=1e-4)
    check(lambda x: getattr(x, op)(0), make((50_000,), np.int32, low=-1, high=2))
    x = cg.tensor(make((1, 50_000), np.float32))
    specs, _ = schedule([x.cumsum(1).node], x.device)
    assert [s.kind for s in specs].count("scan") == 2


def test_long_cummax_ties_gradient():
    x = make((2, 5000), np.int32, low=0, high=50).astype(np.float32)
    check(lambda t: t.cummax(1), x)
    check(lambda t: t.cummin(0), x.T.copy())


def test_in_place_forms():
    check(lambda t: (t * 1).cumsum_(1), (3, 4))
    check(lambda t: (t * 1).cumprod_(0), (3, 4))
    check(lambda t: t.clone().cumsum_(0), make((4,), np.int32, low=-9, high=9))


def test_scan_of_expression():
    check(lambda x: (x.sin() * 2).cumsum(1).exp().cummax(1).values, (3, 8))


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_double_backward_matches_finite_differences(op):
    """The gradient rules are differentiable graphs: d/dx of sum(d op(x).sum() / dx)."""
    def first_grad_sum(a):
        x = cg.tensor(a, requires_grad=True)
        (g,) = cg.autograd.grad(getattr(x, op)(1).pow(2).sum(), x, create_graph=True)
        return x, g.sum()
    a = make((2, 5), np.float64, low=0.5, high=1.5)
    x, total = first_grad_sum(a)
    (second,) = cg.autograd.grad(total, x)
    h, numeric = 1e-6, np.zeros_like(a)
    for i in np.ndindex(a.shape):
        step = np.zeros_like(a)
        step[i] = h
        ahead, behind = first_grad_sum(a + step)[1].item(), first_grad_sum(a - step)[1].item()
        numeric[i] = (ahead - behind) / (2 * h)
    np.testing.assert_allclose(second.numpy(), numeric, rtol=1e-5, atol=1e-6)


def test_errors():
    x = cg.ones(3)
    with pytest.raises(IndexError, match="out of range"):
        x.cumsum(1)
    with pytest.raises(TypeError):
        x.cumsum()
    with pytest.raises(NotImplementedError, match="logcumsumexp"):
        cg.arange(3).logcumsumexp(0)


def test_one_scan_kernel_per_cumsum():
    x = cg.tensor(make((4, 1000), np.float32))
    node = (x * 2).cumsum(1).node
    specs, _ = schedule([node], x.device)
    assert [s.kind for s in specs] == ["scan"]
    assert ir.base_of(node).op is ir.Op.SCAN


def test_rows_scanned_along_their_last_axis_are_not_widened_across_work_items(codegen_for):
    """Intel's compiler widens work-items into vectors; work-items that each walk a row of
    their own would read and write through gathers and scatters (10x slower), so the kernel
    says it is vectorised already. Scans down columns, neighbours in memory, keep widening."""
    from clgrad.engine.targets import codegen_target
    device = cg.device()
    target = codegen_target(device) if device.kind == "cpu" else \
        Target(width=8, cores=device.compute_units)     # (a GPU's one lane has no hint)
    codegen_for(dataclasses.replace(target, vector_hint=True))
    x = make((64, 33), np.float32)
    t = cg.tensor(x)
    (rows,), (columns,) = cg.compile(t.cumsum(1)), cg.compile(t.cumsum(0))
    assert "vec_type_hint" in rows.source and "vec_type_hint" not in columns.source
    (trailing,) = cg.compile(t.reshape(64, 33, 1).cumsum(1))     # past it only a 1
    assert "vec_type_hint" in trailing.source
    np.testing.assert_allclose(t.cumsum(1).numpy(), np.cumsum(x, 1), rtol=1e-5, atol=1e-5)
