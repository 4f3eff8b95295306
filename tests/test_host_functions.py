"""Value-dependent-size functions (frontend/host_functions.py) and the comparison-count ones
(isin, searchsorted, bucketize) against PyTorch."""
import numpy as np
import pytest

from helpers import check, library

import clgrad as cg

INTS = np.array([[3, 0, 1, 3], [0, 2, 2, 5]], np.int64)
FLOATS = np.array([[1.5, 0.0, -2.0], [0.0, 0.0, 7.0]], np.float32)


def _lib(x):
    return library(x)


@pytest.mark.parametrize("array", [FLOATS, INTS, np.zeros((0, 3), np.float32),
                                   np.array(2.0, np.float32), np.array(0, np.int64),
                                   np.array([True, False, True])])
def test_nonzero_and_argwhere(array):
    check(lambda x: x.nonzero(), array, grad=False)
    check(lambda x: _lib(x).nonzero(x, as_tuple=True), array, grad=False)
    check(lambda x: x.argwhere(), array, grad=False)
    check(lambda x: _lib(x).argwhere(x), array, grad=False)


@pytest.mark.parametrize("mask", [FLOATS > 0, np.array([True, False, True]),
                                  np.zeros((2, 3), bool), np.array(True)])
def test_masked_select(mask):
    check(lambda x: x.masked_select(_lib(x).tensor(mask)), (2, 3))
    check(lambda x: _lib(x).masked_select(x, _lib(x).tensor(mask)), (2, 3))


def test_masked_select_needs_bool_mask():
    with pytest.raises(RuntimeError, match="BoolTensor"):
        cg.zeros(3).masked_select(cg.ones(3))


@pytest.mark.parametrize("array", [INTS, FLOATS, np.zeros(0, np.float32)])
@pytest.mark.parametrize("inverse,counts", [(False, False), (True, False), (True, True),
                                            (False, True)])
def test_unique(array, inverse, counts):
    check(lambda x: x.unique(return_inverse=inverse, return_counts=counts), array, grad=False)
    check(lambda x: _lib(x).unique(x, sorted=False, return_inverse=inverse,
                                   return_counts=counts), array, grad=False)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_unique_along_dim(dim):
    rows = np.array([[1, 2], [0, 5], [1, 2]], np.int64)
    check(lambda x: x.unique(dim=dim, return_inverse=True, return_counts=True), rows, grad=False)


@pytest.mark.parametrize("array", [np.array([1, 1, 2, 2, 3, 1, 1, 2], np.int64), INTS,
                                   np.zeros(0, np.float32), FLOATS])
@pytest.mark.parametrize("inverse,counts", [(False, False), (True, True)])
def test_unique_consecutive(array, inverse, counts):
    check(lambda x: x.unique_consecutive(return_inverse=inverse, return_counts=counts), array,
          grad=False)


def test_unique_consecutive_along_dim():
    rows = np.array([[1, 2], [1, 2], [0, 5], [1, 2]], np.int64)
    check(lambda x: _lib(x).unique_consecutive(x, return_counts=True, dim=0), rows, grad=False)


@pytest.mark.parametrize("values", [np.array([0, 3, 1, 3, 3], np.int64), np.zeros(0, np.int64),
                                    np.array([2], np.int32)])
@pytest.mark.parametrize("minlength", [0, 6])
def test_bincount(values, minlength):
    check(lambda x: x.bincount(minlength=minlength), values, grad=False)
    weights = np.linspace(-1, 1, len(values)).astype(np.float32)
    check(lambda x, w: _lib(x).bincount(x, w, minlength), values, weights, grad=False)


def test_bincount_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        cg.tensor([1, -1]).bincount()
    with pytest.raises(RuntimeError, match="1-d"):
        cg.tensor([[1]]).bincount()


@pytest.mark.parametrize("bins,low,high", [(4, 0, 0), (5, -1, 1), (3, 0.5, 10), (1, 0, 0)])
@pytest.mark.parametrize("array", [FLOATS, np.zeros(0, np.float32), np.array([1.0], np.float32)])
def test_histc(bins, low, high, array):
    check(lambda x: x.histc(bins, low, high), array, grad=False)
    check(lambda x: _lib(x).histc(x, bins=bins, min=low, max=high), array, grad=False)


def test_histc_skips_nan():
    array = np.array([0.0, 1.0, 2.0, 3.0, np.nan, np.inf], np.float32)
    check(lambda x: x.histc(3, 0, 3), array, grad=False)


def test_histc_errors():
    with pytest.raises(RuntimeError, match="max must be larger than min"):
        cg.zeros(3).histc(3, 2, 1)
    with pytest.raises(RuntimeError, match="bins must be > 0"):
        cg.zeros(3).histc(0)


@pytest.mark.parametrize("test_values", [[0, 3], [7], [], [[2, 2], [5, 9]]])
@pytest.mark.parametrize("invert", [False, True])
def test_isin(test_values, invert):
    check(lambda x: _lib(x).isin(x, _lib(x).tensor(test_values, dtype=x.dtype), invert=invert),
          INTS, grad=False)
    check(lambda x: _lib(x).isin(x, _lib(x).tensor(test_values, dtype=x.dtype)), FLOATS,
          grad=False)


BOUNDARIES = np.array([-1.0, 0.0, 0.0, 1.5, 3.0], np.float32)


@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_bucketize_and_searchsorted(right, out_int32):
    bounds = lambda x: _lib(x).tensor(BOUNDARIES)  # noqa: E731
    check(lambda x: _lib(x).bucketize(x, bounds(x), right=right, out_int32=out_int32), FLOATS,
          grad=False)
    check(lambda x: _lib(x).searchsorted(bounds(x), x, right=right, out_int32=out_int32),
          FLOATS, grad=False)
    rows = np.sort(np.random.default_rng(0).uniform(-2, 2, (2, 6)).astype(np.float32), 1)
    check(lambda s, x: _lib(s).searchsorted(s, x, side="right" if right else "left"), rows,
          FLOATS, grad=False)
    check(lambda x: _lib(x).searchsorted(bounds(x), x.reshape(-1)[:0], right=right),
          FLOATS, grad=False)


def test_searchsorted_with_sorter():
    unsorted = np.array([3.0, -1.0, 0.5], np.float32)
    check(lambda s, x: _lib(s).searchsorted(s, x, sorter=_lib(s).tensor([1, 2, 0])), unsorted,
          FLOATS, grad=False)


def test_searchsorted_errors():
    with pytest.raises(RuntimeError, match="side can only be"):
        cg.searchsorted(cg.zeros(3), cg.zeros(2), side="middle")
    with pytest.raises(RuntimeError, match="first N-1 dimensions"):
        cg.searchsorted(cg.zeros(2, 3), cg.zeros(3, 2))
    with pytest.raises(RuntimeError, match="1 dimension"):
        cg.bucketize(cg.zeros(3), cg.zeros(2, 2))
