"""Reductions composed of others: norms, nansum, nanmean, count_nonzero, aminmax, var_mean,
std_mean, all/any over dims, diff, cumulative_trapezoid; forward and backward against PyTorch."""
import math

import numpy as np
import pytest

import clgrad as cg

from helpers import check, library, make

X = make((4, 7), np.float32)
WITH_NAN = X.copy()
WITH_NAN[1, 2] = WITH_NAN[0, 0] = WITH_NAN[3, :] = np.nan


@pytest.mark.parametrize("p", [2, "fro", 1, 3, 0.5, 0, math.inf, -math.inf])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 1), False)])
def test_norm(p, dim, keepdim):
    check(lambda t: t.norm(p, dim, keepdim), X)


@pytest.mark.parametrize("ord", [2, 1, math.inf, -math.inf, 0, 4])
def test_linalg_vector_norm(ord):
    check(lambda t: library(t).linalg.vector_norm(t, ord), X)
    check(lambda t: library(t).linalg.vector_norm(t, ord, dim=1, keepdim=True), X)


def test_norm_of_zeros_has_zero_gradient_and_of_empty_is_zero():
    check(lambda t: t.norm(dim=1), np.zeros((3, 4), np.float32))
    check(lambda t: t.norm(), np.zeros((0, 4), np.float32))
    with pytest.raises(RuntimeError, match="floating point"):
        cg.linalg.vector_norm(cg.arange(3))


@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 1), True)])
def test_nansum_nanmean(dim, keepdim):
    check(lambda t: t.nansum(dim, keepdim), WITH_NAN)
    # the all-NaN row's mean is NaN; its gradient is 0 here, NaN in PyTorch (inf * 0)
    check(lambda t: t.nanmean(dim, keepdim), WITH_NAN, grad=False)
    check(lambda t: t.nanmean(dim, keepdim), WITH_NAN[:3])
    check(lambda t: library(t).nansum(t, dim=dim, keepdim=keepdim), WITH_NAN)


def test_nansum_of_ints_and_nanmean_errors():
    ints = make((3, 4), np.int32, low=-5, high=5)
    check(lambda t: t.nansum(1), ints)
    with pytest.raises(RuntimeError, match="nanmean"):
        cg.tensor(ints).nanmean()


def test_count_nonzero():
    ints = make((4, 5), np.int32, low=-2, high=2)
    for dim in (None, 1, (0, 1)):
        check(lambda t: t.count_nonzero(dim), ints)
        check(lambda t: library(t).count_nonzero(t, dim), WITH_NAN.round())


@pytest.mark.parametrize("dim,keepdim", [(None, False), (None, True), (1, False), (0, True)])
def test_aminmax(dim, keepdim):
    check(lambda t: t.aminmax(dim=dim, keepdim=keepdim), X)
    check(lambda t: t.aminmax(dim=dim, keepdim=keepdim), np.array([[1, 3, 3], [2, 0, 0]],
                                                                  np.float32))
    check(lambda t: library(t).aminmax(t, dim=dim, keepdim=keepdim),
          make((3, 4), np.int64, low=-9, high=9))


@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_var_mean_std_mean(name):
    check(lambda t: getattr(library(t), name)(t), X)
    check(lambda t: getattr(library(t), name)(t, 1), X)
    check(lambda t: getattr(library(t), name)(t, (0, 1), keepdim=True, correction=0), X)
    check(lambda t: getattr(library(t), name)(t, 0, False), X)


@pytest.mark.parametrize("op", ["all", "any"])
@pytest.mark.parametrize("dim,keepdim", [(None, False), (1, False), (0, True), ((0, 1), False),
                                         (-1, True)])
def test_all_any_with_dims(op, dim, keepdim):
    args = {} if dim is None else dict(dim=dim, keepdim=keepdim)
    check(lambda t: getattr(t, op)(**args), make((3, 4), np.bool_))
    check(lambda t: getattr(t, op)(**args), make((3, 4), np.float32, low=-1, high=2).round())
    check(lambda t: getattr(t, op)(**args), make((3, 4), np.int64, low=0, high=2))
    check(lambda t: getattr(t, op)(**args), np.zeros((0, 4), np.float32))


def test_all_any_of_0d_and_empty_rows():
    check(lambda t: t.all(0), np.array(2.0, np.float32))
    check(lambda t: t.any(-1, True), np.array(0.0, np.float32))
    check(lambda t: t.any(1), np.zeros((3, 0), np.float32))
    check(lambda t: t.all(1), np.zeros((3, 0), np.float32))


def test_diff():
    check(lambda t: t.diff(), X)
    check(lambda t: t.diff(2, 0), X)
    check(lambda t: t.diff(3, dim=-1), X)
    check(lambda t: t.diff(dim=1, prepend=t[:, :2], append=t[:, :1]), X)
    check(lambda t: library(t).diff(t, n=1, dim=0), make((4, 3), np.int32, low=-9, high=9))
    check(lambda t: t.diff(), make((3, 5), np.bool_))
    check(lambda t: t.diff(), np.zeros((3, 1), np.float32))


def test_cumulative_trapezoid():
    check(lambda t: library(t).cumulative_trapezoid(t), X)
    check(lambda t: library(t).cumulative_trapezoid(t, dx=0.5, dim=0), X)
    check(lambda t: library(t).cumulative_trapezoid(t, t.abs().cumsum(1)), X)
    check(lambda t: library(t).cumulative_trapezoid(t), np.zeros((3, 1), np.float32))
