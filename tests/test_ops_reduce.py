"""Reductions and the row ops built from them, forward and backward."""
import numpy as np
import pytest

import clgrad as cg

from helpers import check, make

A, B, C = (3, 5), (4, 1, 6), (2, 3, 4)

DIMS = [(None, False), (0, False), (1, True), (-1, False), ((0, 2), False), ((0, 2), True)]
DIM_IDS = ["all", "d0", "d1_keep", "last", "tuple", "tuple_keep"]


def _args(dim, keepdim):
    return {} if dim is None else dict(dim=dim, keepdim=keepdim)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "var", "std"])
@pytest.mark.parametrize("dim,keepdim", DIMS, ids=DIM_IDS)
def test_reduce_dims(op, dim, keepdim):
    check(lambda a: getattr(a, op)(**_args(dim, keepdim)), C)


@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod", "var", "std"])
def test_reduce_all_2d(op):
    check(lambda a: getattr(a, op)(), A, low=0.5, high=1.5)


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("dim,keepdim", [(0, False), (1, True), (-1, False)])
def test_max_min_with_dim(op, dim, keepdim):
    check(lambda a: getattr(a, op)(dim, keepdim), A)       # (values, indices)
    check(lambda a: getattr(a, op)(dim=dim, keepdim=keepdim).values, C)


def test_max_ties_share_gradient():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]], np.float32)
    check(lambda x: x.max(), a)
    check(lambda x: x.amax(1), a)
    check(lambda x: x.min(), a)


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_with_dim_give_ties_gradient_at_their_index(op):
    """As PyTorch's: the row's first largest (smallest) element gets the whole gradient."""
    ties = np.array([[0.0, 0.0, 0.0, 0.0], [1.0, 3.0, 3.0, 1.0], [-2.0, -2.0, 5.0, -2.0]],
                    np.float32)
    for dim in (0, 1):
        check(lambda x: getattr(x, op)(dim).values, ties)
        check(lambda x: getattr(x, op)(dim=dim, keepdim=True), ties)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_argmax_argmin(op):
    ties = np.array([[1.0, 3.0, 3.0, 0.0], [2.0, 2.0, 2.0, 2.0], [-1.0, -5.0, 4.0, -5.0]],
                    np.float32)
    for kw in ({}, dict(dim=0), dict(dim=1), dict(dim=-1, keepdim=True), dict(keepdim=True)):
        check(lambda a: getattr(a, op)(**kw), ties)
    check(lambda a: getattr(a, op)(1), C)
    check(lambda a: getattr(a, op)(), make(A, np.int64, -5, 5))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (-1, True)])
def test_prod(dim, keepdim):
    check(lambda a: a.prod(**_args(dim, keepdim)), C, low=0.5, high=1.5)


def test_prod_with_zeros():
    a = np.array([[1.5, 0.0, 2.0], [0.0, 0.0, 3.0], [1.0, 2.0, -1.0]], np.float32)
    check(lambda x: x.prod(1), a)
    check(lambda x: x.prod(), np.array([2.0, 0.0, 3.0], np.float32))


@pytest.mark.parametrize("op", ["sum", "mean", "nansum"])
def test_sum_of_one_element_starts_at_plus_zero(op):
    # a sum over dims of size 1 runs no loop, but is its element plus +0.0, as PyTorch's
    # sums are: -0.0 sums to +0.0 (1 / x.sum(1) is inf there, not -inf)
    x = np.array([[-0.0], [0.0], [-1.5]], np.float32)
    rows = check(lambda t: getattr(t, op)(1), x)[0].detach().numpy()
    whole = check(lambda t: getattr(t, op)(), x[:1])[0].detach().numpy()
    assert not np.signbit(rows[0]) and not np.signbit(whole)


def test_var_std_options():
    check(lambda a: a.var(1, unbiased=False), A)
    check(lambda a: a.std(0, correction=0, keepdim=True), A)
    check(lambda a: a.var((0, 1)), C)


def test_std_of_equal_values_is_zero_with_a_zero_gradient():
    # seven equal values whose float sum / 7 is not the value: the std is still exactly 0 and
    # PyTorch's gradient there 0 (fuzz seeds 101675, 103845)
    row = np.array([[0.1, 0.7, 1 / 3, 2.3, -1.9]], np.float32)
    check(lambda a: a.expand(7, 5).std(0), row)
    check(lambda a: a.expand(7, 5).var(0), row)


@pytest.mark.parametrize("op", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("shape,dim", [(A, 1), (A, 0), (C, -1), (B, 1), ((13,), 0)])
def test_row_ops(op, shape, dim):
    check(lambda a: getattr(a, op)(dim), shape)


def test_logsumexp_keepdim_and_large_values():
    check(lambda a: a.logsumexp(1, keepdim=True), A)
    check(lambda a: a.logsumexp((0, 2)), C)             # several dims, as PyTorch's
    check(lambda a: a.logsumexp((-1, 0), keepdim=True), C)
    check(lambda a: (a * 100).logsumexp(1), A, grad_rtol=1e-2)
    check(lambda a: (a * 100).softmax(-1), A)


def test_integer_reductions():
    a = make(C, np.int64, -5, 6)
    check(lambda x: x.sum(), a)
    check(lambda x: x.sum(1), a)
    check(lambda x: x.prod(-1), make(A, np.int32, -3, 4))
    check(lambda x: x.amax(0), a)
    check(lambda x: x.amin((1, 2)), a)
    check(lambda x: x.sum(0), make(A, np.bool_))
    check(lambda x: x.float().mean(), a)


def test_reduce_non_contiguous():
    check(lambda a: a.t().sum(1), A)
    check(lambda a: a[:, ::2].softmax(0), A)
    check(lambda a: a.permute(2, 0, 1).amax((1, 2)), C)


def test_reduce_0d():
    check(lambda a: a.sum(), ())
    check(lambda a: a.mean(), ())
    check(lambda a: a.sum(0), ())


def test_large_sum_goes_through_split():
    n = 1 << 20
    x = make((n,), low=0.0, high=1.0)
    check(lambda a: a.sum(), x, rtol=1e-4, atol=1e-2)
    check(lambda a: a.reshape(2, n // 2).sum(1), x, rtol=1e-4, atol=1e-2)
    check(lambda a: a.mean(), x, rtol=1e-4, atol=1e-6)


# Few long rows, and rows over outer axes and a contiguous inner run, go in two passes
# (compiler/schedule.py, _split_rows): partial reductions over slices, the slice axes leading
# the partials so that each row's total overwrites its own slice 0. Cases: the batch as
# slices (BatchNorm's statistics, of few channels and of many), a trailing row cut in
# chunks, a leading axis cut with columns kept, and a cut axis with a kept axis before it.
SPLIT_ROWS = [((64, 4, 16, 32), (0, 2, 3)), ((16, 64, 16, 16), (0, 2, 3)), ((8, 32768), 1),
              ((32768, 3), 0), ((3, 16384, 4), (1, 2))]
SPLIT_IDS = ["batch", "channels", "trailing", "leading", "cut"]


@pytest.mark.parametrize("shape,dim", SPLIT_ROWS, ids=SPLIT_IDS)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "var", "logsumexp"])
def test_few_long_rows_split_in_two_passes(shape, dim, op):
    check(lambda a: getattr(a, op)(dim, keepdim=True), shape, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("shape,dim", SPLIT_ROWS, ids=SPLIT_IDS)
def test_a_split_row_is_partial_rows_then_their_total(shape, dim):
    x = cg.randn(*shape)
    kernels = cg.compile(x.sum(dim)).kernels
    assert [k.name[0] for k in kernels] == ["R", "R"]
    slices, rows = kernels[0].name.split("_")[1].split("x")[:2]
    assert 2 <= int(slices) <= 64 and kernels[1].name.startswith(f"R_{slices}x")
    # an elementwise consumer of the rows' full shape is a kernel of its own, all rows wide
    centered = x - x.mean(dim, keepdim=True)
    assert [k.name[0] for k in cg.compile(centered).kernels] == ["R", "R", "E"]
    a = x.numpy().astype(np.float64)
    np.testing.assert_allclose(centered.numpy(), a - a.mean(dim, keepdims=True), atol=1e-5)


def test_split_rows_on_the_vectorless_gpu_path(codegen_for):
    # GPUs lower reductions with one lane per work-item: the slices and their totals hold there
    from clgrad.compiler.target import Target
    codegen_for(Target(width=1))
    x = cg.randn(16, 64, 16, 16)
    centered = x - x.mean((0, 2, 3), keepdim=True)
    assert [k.name[0] for k in cg.compile(centered).kernels] == ["R", "R", "E"]
    a = x.numpy().astype(np.float64)
    np.testing.assert_allclose(centered.numpy(), a - a.mean((0, 2, 3), keepdims=True), atol=1e-5)


def test_ties_in_different_slices_share_the_gradient_evenly():
    # the split is the scheduler's, after autograd: amax's rule counts the row's ties once
    # (split before it, as a max of slice maxima, the ties got 1/4, 1/4 and 1/2)
    row = np.zeros((2, 32768), np.float32)
    row[:, [5, 6, 20000]] = 1
    check(lambda a: a.amax(1), row)


def test_integer_and_product_rows_split_exactly():
    ints = np.arange(8 * 32768, dtype=np.int64).reshape(8, 32768) * (2 ** 20)   # sums near 2**53
    assert cg.from_numpy(ints).sum(1).numpy().tolist() == ints.sum(1).tolist()
    values = make((32768, 2), low=0.9999, high=1.0001)
    check(lambda a: a.prod(0), values, rtol=1e-3)


@pytest.mark.parametrize("op", ["amin", "min", "argmin"])
@pytest.mark.parametrize("values", [[[True, False], [True, True]],
                                    np.array([[0, -2**31], [2**31 - 1, 5]], np.int32)])
def test_min_of_bools_and_integer_extremes(op, values):
    # min is a max of an order-reversed copy: ~x for bools and ints (-x left bools as they
    # were and overflowed at the most negative int32)
    a = np.array(values)
    if op == "argmin" and a.dtype == bool:
        with pytest.raises(RuntimeError, match=r"argmin\(\): does not support bool input"):
            cg.tensor(a).argmin()
        return
    for dim in (0, 1):
        check(lambda x: getattr(x, op)(dim=dim), a, grad=False)
    check(lambda x: getattr(x, op)(), a, grad=False)
