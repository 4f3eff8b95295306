"""vander, trapezoid, combinations, repeat_interleave, sum_to_size, unfold, cov, corrcoef and
renorm (frontend/array_functions.py) against PyTorch, forward and backward."""
import numpy as np
import pytest

from helpers import check, library

import clgrad as cg


def _lib(x):
    return library(x)


@pytest.mark.parametrize("N", [None, 0, 1, 4])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(N, increasing):
    # (PyTorch 2.13's vander backward fails on its own in-place cumprod: forward compared here,
    # the gradient against the power rule below)
    check(lambda x: _lib(x).vander(x, N, increasing), (3,), grad=False)
    check(lambda x: _lib(x).vander(x, N=N, increasing=increasing), (0,), grad=False)
    check(lambda x: _lib(x).vander(x, N), np.array([2, -3, 0], np.int64), grad=False)


def test_vander_gradient():
    check(lambda x: (_lib(x).vander(x, 4) * _lib(x).tensor([1.0, 2.0, 3.0, 4.0])).sum()
          if isinstance(x, cg.Tensor) else (x.unsqueeze(1) ** x.new_tensor([3.0, 2.0, 1.0, 0.0])
                                            * x.new_tensor([1.0, 2.0, 3.0, 4.0])).sum(), (3,))


@pytest.mark.parametrize("shape,dim", [((5,), -1), ((3, 4), 0), ((3, 4), 1), ((2, 1), 1),
                                       ((0, 3), -1), ((2, 0), 1)])
def test_trapezoid(shape, dim):
    grad = shape[dim] > 0       # (PyTorch's result from no samples is a constant zero)
    check(lambda y: _lib(y).trapezoid(y, dim=dim), shape, grad=grad)
    check(lambda y: _lib(y).trapezoid(y, dx=0.5, dim=dim), shape, grad=grad)
    check(lambda y: _lib(y).trapz(y, dim=dim), shape, grad=grad)
    check(lambda y, x: _lib(y).trapezoid(y, x, dim=dim), shape, (shape[dim],), grad=grad)
    check(lambda y, x: _lib(y).trapz(y, x, dim=dim), shape, shape, grad=grad)


@pytest.mark.parametrize("n,r", [(4, 2), (4, 3), (3, 1), (2, 3), (0, 2), (4, 0)])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(n, r, with_replacement):
    check(lambda x: _lib(x).combinations(x, r, with_replacement), (n,))


@pytest.mark.parametrize("repeats,dim", [(2, None), (3, 1), (0, 0), ([1, 0, 2], 1),
                                         ([2, 1], 0), ([2], -1)])
def test_repeat_interleave(repeats, dim):
    reps = lambda x: _lib(x).tensor(repeats) if isinstance(repeats, list) else repeats  # noqa: E731
    check(lambda x: x.repeat_interleave(reps(x), dim), (2, 3))
    check(lambda x: _lib(x).repeat_interleave(x, reps(x), dim=dim), (2, 3))


def test_repeat_interleave_of_counts():
    check(lambda r: _lib(r).repeat_interleave(r), np.array([2, 0, 3], np.int64), grad=False)
    with pytest.raises(RuntimeError, match="same size"):
        cg.zeros(2, 3).repeat_interleave(cg.tensor([1, 2]), 1)


@pytest.mark.parametrize("shape,size", [((2, 3), (1, 3)), ((2, 3), (3,)), ((2, 3), (1, 1)),
                                        ((2, 3), (2, 3)), ((4, 1, 3), (1, 3)), ((2, 0), (1, 0))])
def test_sum_to_size(shape, size):
    check(lambda x: x.sum_to_size(size), shape)
    check(lambda x: x.sum_to_size(*size), shape)


def test_sum_to_size_error():
    with pytest.raises(RuntimeError, match="not expandable"):
        cg.zeros(2, 3).sum_to_size(2, 2)


@pytest.mark.parametrize("dim,size,step", [(0, 2, 1), (1, 3, 2), (-1, 1, 1), (1, 5, 1),
                                           (0, 4, 3), (1, 0, 1)])
def test_unfold(dim, size, step):
    check(lambda x: x.unfold(dim, size, step), (4, 5))
    check(lambda x: x.unfold(0, 1, 1), ())


def test_unfold_errors():
    with pytest.raises(RuntimeError, match="maximum size"):
        cg.zeros(3).unfold(0, 4, 1)
    with pytest.raises(RuntimeError, match="step"):
        cg.zeros(3).unfold(0, 2, 0)


@pytest.mark.parametrize("shape", [(3, 5), (5,), (1, 4), (2, 1)])
@pytest.mark.parametrize("correction", [0, 1, 2])
def test_cov(shape, correction):
    check(lambda x: x.cov(correction=correction), shape, atol=1e-4)
    check(lambda x: _lib(x).cov(x), shape, atol=1e-4)


def test_cov_with_weights():
    f = np.array([1, 2, 0, 3, 1], np.int64)
    a = np.array([0.5, 1.0, 2.0, 0.1, 1.5], np.float32)
    check(lambda x: x.cov(fweights=_lib(x).tensor(f)), (3, 5), atol=1e-4)
    check(lambda x, w: x.cov(aweights=w), (3, 5), a, atol=1e-4)
    check(lambda x, w: x.cov(correction=0, fweights=_lib(x).tensor(f), aweights=w), (3, 5), a,
          atol=1e-4)
    check(lambda x: x.cov(), np.array([[1, 2, 4], [0, 3, 3]], np.int64), grad=False)


@pytest.mark.parametrize("shape", [(3, 5), (5,), (2, 2)])
def test_corrcoef(shape):
    check(lambda x: x.corrcoef(), shape, atol=1e-4, grad_atol=1e-3)
    check(lambda x: _lib(x).corrcoef(x), shape, atol=1e-4, grad_atol=1e-3)


@pytest.mark.parametrize("p,dim,maxnorm", [(2, 0, 1.0), (1, 1, 2.0), (3, -1, 0.5),
                                           (2, 0, 100.0), (2, 1, 0.0)])
def test_renorm(p, dim, maxnorm):
    check(lambda x: x.renorm(p, dim, maxnorm), (3, 4))
    check(lambda x: _lib(x).renorm(x, p, dim, maxnorm), (2, 3, 2))


def test_renorm_errors():
    with pytest.raises(RuntimeError, match="non-positive"):
        cg.zeros(2, 2).renorm(0, 0, 1.0)


@pytest.mark.parametrize("shapes", [((2, 3), (1, 2)), ((2, 2), (), (3,)), ((0, 2), (2, 0)),
                                    ((1, 1),)])
def test_block_diag(shapes):
    check(lambda *ts: _lib(ts[0]).block_diag(*ts), *shapes)


def test_block_diag_errors():
    with pytest.raises(RuntimeError, match="2 or fewer"):
        cg.block_diag(cg.zeros(2, 2, 2))


@pytest.mark.parametrize("indices,shape", [(np.array([0, 5, 11, 7], np.int64), (3, 4)),
                                           (np.array(13, np.int64), (2, 3, 4)),
                                           (np.array([[1, 2]], np.int64), 5),
                                           (np.zeros(0, np.int64), (2, 2))])
def test_unravel_index(indices, shape):
    check(lambda i: _lib(i).unravel_index(i, shape), indices, grad=False)


def test_unravel_index_errors():
    with pytest.raises(TypeError, match="integer"):
        cg.unravel_index(cg.zeros(2), (2, 2))
