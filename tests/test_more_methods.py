"""PyTorch's less common Tensor methods and torch.* functions: the in-place shape changes,
the scatters into slices and diagonals, quantiles, integer and special functions, and the
process-wide settings, forward and backward against PyTorch."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, library, make


# ---- in-place shape changes: the tensor itself takes the new shape ----

@pytest.mark.parametrize("change", [
    lambda x: x.squeeze_(), lambda x: x.squeeze_(1), lambda x: x.squeeze_((0, 1)),
    lambda x: x.unsqueeze_(-1), lambda x: x.transpose_(0, 2), lambda x: x.swapaxes_(0, 2),
    lambda x: x.swapdims_(-1, 0), lambda x: x[0].t_(), lambda x: x[0, 0].t_(),
    lambda x: x[0, 0, 0].transpose_(0, -1),
])
def test_in_place_shape_changes(change):
    def fn(x):
        y = x * 1
        out = change(y)
        return out, y.grad_fn.name(), y._version     # (a tuple: check compares the tensor)
    check(lambda x: fn(x)[0], (2, 1, 3))
    ours, theirs = fn(cg.ones(2, 1, 3, requires_grad=True)), fn(_torch_ones((2, 1, 3)))
    assert (tuple(ours[0].shape), ours[1:]) == (tuple(theirs[0].shape), theirs[1:])


def _torch_ones(shape):
    import torch
    return torch.ones(shape, requires_grad=True)


def test_in_place_shape_change_keeps_views_in_their_layout():
    x = cg.tensor(np.arange(6.0).reshape(2, 3))
    row = x[0]
    x.t_()
    assert x.shape == (3, 2) and x._version == 1
    row.mul_(10)                     # the view made before writes where it did
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3).T * [[10, 1]])
    x.zero_()
    np.testing.assert_array_equal(row.numpy(), [0, 0, 0])
    # a view that changes shape stays a view of its base
    w = cg.tensor(np.arange(6.0).reshape(2, 3))
    u = w.view(3, 2)
    u.t_()
    u.mul_(2)
    np.testing.assert_array_equal(u.numpy(), np.arange(6.0).reshape(3, 2).T * 2)
    np.testing.assert_array_equal(w.numpy(), np.arange(6.0).reshape(2, 3) * 2)
    d = w.detach()
    d.unsqueeze_(0)
    assert w.shape == (2, 3) and d.shape == (1, 2, 3)


@pytest.mark.usefixtures("cpu_device")
def test_in_place_shape_change_keeps_numpy_memory_in_its_layout():
    array = np.arange(6.0).reshape(2, 3)
    shared = cg.from_numpy(array)
    shared.t_()
    np.testing.assert_array_equal(array, np.arange(6.0).reshape(2, 3))
    shared.mul_(2)          # reaches the array, in the array's layout, as PyTorch's strides do
    np.testing.assert_array_equal(array, np.arange(6.0).reshape(2, 3) * 2)
    np.testing.assert_array_equal(shared.numpy(), array.T)


def test_in_place_shape_change_errors():
    with pytest.raises(RuntimeError, match="unsqueeze_.*leaf Variable"):
        cg.ones(2, requires_grad=True).unsqueeze_(0)
    with pytest.raises(RuntimeError, match="t_.*3D"):
        cg.ones(2, 2, 2).t_()
    with pytest.raises(IndexError, match="transpose_"):
        cg.ones(2, 2).transpose_(0, 5)
    with cg.no_grad():
        leaf = cg.ones(2, requires_grad=True)
        assert leaf.unsqueeze_(0).shape == (1, 2) and leaf.is_leaf


# ---- writing a part at once ----

def test_select_slice_and_diagonal_scatter():
    check(lambda x, s: x.select_scatter(s, 1, -1), (3, 4), (3,))
    check(lambda x, s: library(x).select_scatter(x, s, 0, 2), (3, 4), (4,))
    check(lambda x, s: x.slice_scatter(s, 1, 0, 4, 2), (3, 4), (3, 2))
    check(lambda x, s: library(x).slice_scatter(x, s, dim=1, start=-3), (3, 4), (3, 3))
    check(lambda x, s: x.slice_scatter(s, 0, 5), (3, 4), (0, 4))
    check(lambda x, s: x.diagonal_scatter(s), (3, 4), (3,))
    check(lambda x, s: x.diagonal_scatter(s, -1), (3, 4), (2,))
    check(lambda x, s: library(x).diagonal_scatter(x, s, -1, 2, 0), (2, 3, 4), (3, 2))


def test_masked_scatter():
    mask = make((3, 4), np.bool_)
    check(lambda x, m, s: x.masked_scatter(m, s), (3, 4), mask, (13,))
    check(lambda x, m, s: library(x).masked_scatter(x, m, s), (4,), mask, (12,))   # broadcast
    check(lambda x, m, s: (x * 1).masked_scatter_(m, s), (3, 4), np.zeros((3, 4), bool), (0,))
    check(lambda x, m, s: x.masked_scatter(m, s), np.arange(4), mask[0], np.arange(5) * 3)


def test_fill_diagonal_and_renorm_():
    for shape, wrap in (((3, 4), False), ((7, 3), True), ((7, 3), False), ((3, 3, 3), False)):
        check(lambda x: (x * 1).fill_diagonal_(-5.0, wrap=wrap), shape)
    check(lambda x: (x * 1).renorm_(2, 0, 1.0), (3, 4))


@pytest.mark.filterwarnings("ignore:index_reduce")
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
def test_index_reduce(reduce):
    index = np.array([2, 0, 2, 2])
    for include_self in (True, False):
        check(lambda x, i, s: x.index_reduce(0, i, s, reduce, include_self=include_self),
              (3, 2), index, (4, 2))
    check(lambda x, i, s: library(x).index_reduce((x * 1).index_reduce_(1, i, s, reduce), 1,
                                                 i, s, reduce),
          np.arange(6).reshape(2, 3), index[:2], np.arange(4).reshape(2, 2) - 1)


def test_scatter_errors():
    x = cg.zeros(3, 4)
    with pytest.raises(RuntimeError, match=r"src size = \[4\], slice size = \[3\]"):
        x.select_scatter(cg.zeros(4), 1, 2)
    with pytest.raises(IndexError, match="index 5 out of range"):
        x.select_scatter(cg.zeros(3), 1, 5)
    with pytest.raises(IndexError, match="0-dim"):
        cg.tensor(1.0).slice_scatter(cg.tensor(2.0))
    with pytest.raises(RuntimeError, match="slice step must be positive"):
        x.slice_scatter(cg.zeros(3, 4), 1, 0, 4, 0)
    with pytest.raises(RuntimeError, match="boolean masks"):
        x.masked_scatter(cg.ones(3, 4), cg.zeros(12))
    with pytest.raises(RuntimeError, match="Number of elements of source"):
        x.masked_scatter(cg.ones(3, 4).bool(), cg.zeros(5))
    with pytest.raises(RuntimeError, match="equal length"):
        cg.zeros(3, 4, 3).fill_diagonal_(1)
    with pytest.raises(RuntimeError, match="Expected reduce to be one of"):
        x.index_reduce(0, cg.tensor([0]), cg.zeros(1, 4), "sum")
    with pytest.raises(IndexError, match="out of bounds"):
        x.index_reduce(0, cg.tensor([5]), cg.zeros(1, 4), "amax")


# ---- quantiles ----

@pytest.mark.parametrize("interpolation", ["linear", "lower", "higher", "midpoint", "nearest"])
def test_quantile(interpolation):
    check(lambda x: x.quantile(0.3, dim=1, interpolation=interpolation), (3, 5))
    check(lambda x, q: library(x).quantile(x, q, keepdim=True, interpolation=interpolation),
          (3, 5), np.array([0.0, 0.25, 0.5, 1.0], np.float32))
    with_nans = make((3, 4))
    with_nans[0, 1] = with_nans[2, :] = np.nan
    check(lambda x: x.nanquantile(0.6, dim=-1, keepdim=True, interpolation=interpolation),
          with_nans)
    check(lambda x: x.quantile(0.6, dim=0, interpolation=interpolation), with_nans)


def test_quantile_edges_and_errors():
    check(lambda x: x.quantile(0.5), (1,))
    check(lambda x: x.quantile(0.5, dim=0, keepdim=True), np.array(2.0, np.float32))
    check(lambda x, q: library(x).nanquantile(x, q), (2, 3), np.array(0.7), dtype=np.float64)
    with pytest.raises(RuntimeError, match=r"q must be in the range \[0, 1\] but got 1.3"):
        cg.zeros(3).quantile(1.3)
    with pytest.raises(RuntimeError, match="q values must be in the range"):
        cg.zeros(3).quantile(cg.tensor([0.3, 1.5]))
    with pytest.raises(RuntimeError, match="same dtype"):
        cg.zeros(3).quantile(cg.tensor([0.3], dtype=cg.float64))
    with pytest.raises(RuntimeError, match="float or double"):
        cg.arange(3).quantile(0.5)
    with pytest.raises(RuntimeError, match="non-empty"):
        cg.zeros(0).nanquantile(0.5)
    with pytest.raises(RuntimeError, match="interpolation must be one of"):
        cg.zeros(3).quantile(0.5, interpolation="cubic")


# ---- integer and special functions ----

def test_gcd_and_lcm():
    a = np.array([-4, 0, 0, 7, 12, 2**62, -9, 1071], np.int64)
    b = np.array([6, 0, -5, 3, 18, 2**61 + 2**40, 15, 462], np.int64)
    check(lambda a, b: a.gcd(b), a, b)
    check(lambda a, b: library(a).lcm(a, b), a[:5], b[:5])
    check(lambda a, b: a.gcd(b), a[:5].astype(np.int32), b[:5])
    check(lambda a, b: a.clone().lcm_(b), np.array([4, 250], np.uint8), np.array([6, 5], np.uint8))
    with pytest.raises(NotImplementedError, match="gcd"):
        cg.ones(2).gcd(cg.ones(2))


def test_frexp():
    x = np.array([0.0, -0.0, 1.0, -3.0, np.inf, -np.inf, np.nan, 1e-40, 3e38, 0.1], np.float32)
    check(lambda x: library(x).frexp(x), x)
    check(lambda x: x.frexp(), np.array([1e-310, -5e300, 0.75, 2.0 ** -1074]), dtype=np.float64)
    check(lambda x: x.frexp(), np.array([6e-8, -3.0, 65504.0], np.float16))
    with pytest.raises(RuntimeError, match="floating-point"):
        cg.arange(3).frexp()


def test_i0_polygamma_mvlgamma():
    check(lambda x: x.i0(), np.array([0.0, 0.5, -3.0, 7.9, 8.1, 20.0, 60.0, -np.inf], np.float32))
    check(lambda x: library(x).i0(x), np.arange(4), grad=False)
    check(lambda x: (x * 1).i0_(), (3,))
    points = np.array([-2.5, -0.3, 0.3, 1e-3, 1.0, 4.5, 30.0, 300.0], np.float32)
    for n in (1, 2, 3):
        check(lambda x: x.polygamma(n), points, rtol=3e-4, grad_rtol=3e-3)
    # (of high order, left of -1 float32's sum loses to cancellation what PyTorch's float64
    # sum keeps, and near 0 the gradient's x^-14 overflows)
    check(lambda x: x.polygamma(6), points[[1, 2, 4, 5, 6, 7]], rtol=3e-4, grad_rtol=3e-3)
    check(lambda x: library(x).polygamma(3, x), np.array([0.0, -1.0, np.inf, np.nan], np.float32),
          grad=False)
    check(lambda x: library(x).polygamma(0, x), (4,), low=0.5, high=3.0)
    check(lambda x: (x * 1).polygamma_(2), (4,), low=0.5, high=3.0)
    check(lambda x: x.mvlgamma(3), (2, 3), low=1.5, high=4.0)
    check(lambda x: library(x).mvlgamma(x, 1), np.arange(1, 4), grad=False)
    check(lambda x: (x * 1).mvlgamma_(2), (3,), low=1.0, high=4.0, dtype=np.float64)
    with pytest.raises(RuntimeError, match="negative n"):
        cg.ones(2).polygamma(-1)
    with pytest.raises(RuntimeError, match="p has to be greater than or equal to 1"):
        cg.ones(2).mvlgamma(0)


def test_nn_functions_as_tensor_methods():
    check(lambda x, w: x.prelu(w), (2, 3, 4), np.array([0.25, -0.5, 2.0], np.float32))
    check(lambda x: x.hardshrink(), (3, 4))
    check(lambda x: x.hardshrink(lambd=1.0), (3, 4))
