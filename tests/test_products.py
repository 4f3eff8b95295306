"""torch.* products (frontend/products.py, add_products.py) against PyTorch, forward and
backward."""
import numpy as np
import pytest

from helpers import check, library, make

import clgrad as cg


def _lib(x):
    return library(x)


@pytest.mark.parametrize("beta,alpha", [(1, 1), (0.5, -2.0)])
def test_add_products(beta, alpha):
    check(lambda i, m, v: i.addmv(m, v, beta=beta, alpha=alpha), (3,), (3, 4), (4,))
    check(lambda i, m, v: _lib(i).addmv(i, m, v, beta=beta, alpha=alpha), (3,), (3, 0), (0,))
    check(lambda i, a, b: i.addr(a, b, beta=beta, alpha=alpha), (3, 4), (3,), (4,))
    check(lambda i, a, b: _lib(i).addr(i, a, b, beta=beta, alpha=alpha), (4,), (1,), (4,))
    check(lambda i, a, b: i.baddbmm(a, b, beta=beta, alpha=alpha), (2, 3, 4), (2, 3, 5),
          (2, 5, 4))
    check(lambda i, a, b: _lib(i).addbmm(i, a, b, beta=beta, alpha=alpha), (3, 4), (2, 3, 5),
          (2, 5, 4))
    check(lambda i, a, b: i.addbmm(a, b, beta=beta, alpha=alpha), (3, 4), (0, 3, 5), (0, 5, 4))


def _nonfinite(shape):
    """Random values with NaN, inf and -inf among them."""
    a = make(shape)
    a.flat[::2] = np.resize([np.nan, np.inf, -np.inf], a.flat[::2].shape)
    return a


# beta = 0 reads nothing of input, as PyTorch's routines (its NaN and inf do not show), and
# BLAS's (addmm, addmv, addbmm, a baddbmm of 400 multiply-adds or more) nothing of the product
# at alpha = 0; addr's and a smaller baddbmm's own loops scale it by alpha whatever (0 * inf)
ZERO_FACTORS = [
    (lambda i, a, b: i.addmm(a, b, beta=0), [_nonfinite((2, 3)), (2, 4), (4, 3)]),
    (lambda i, a, b: i.clone().addmm_(a, b, beta=0, alpha=2),
     [_nonfinite((2, 3)), (2, 4), (4, 3)]),
    (lambda i, a, b: library(i).addmm(i, a, b, alpha=0), [(3,), _nonfinite((2, 4)), (4, 3)]),
    (lambda i, a, b: i.addmm(a, b, beta=0, alpha=0), [_nonfinite((2, 3)), (2, 4), (4, 3)]),
    (lambda i, m, v: i.addmv(m, v, beta=0), [_nonfinite((3,)), (3, 4), (4,)]),
    (lambda i, m, v: i.addmv(m, v, alpha=0), [(3,), _nonfinite((3, 4)), (4,)]),
    (lambda i, a, b: library(i).addr(i, a, b, beta=0), [_nonfinite((3, 4)), (3,), (4,)]),
    (lambda i, a, b: i.addr(a, b, alpha=0), [(3, 4), _nonfinite((3,)), (4,)]),
    (lambda i, a, b: i.baddbmm(a, b, beta=0), [_nonfinite((2, 3, 4)), (2, 3, 5), (2, 5, 4)]),
    (lambda i, a, b: i.baddbmm(a, b, alpha=0), [(2, 3, 4), _nonfinite((2, 3, 5)), (2, 5, 4)]),
    (lambda i, a, b: i.baddbmm(a, b, alpha=0), [(1, 20, 20), _nonfinite((1, 20, 2)),
                                                (1, 2, 20)]),
    (lambda i, a, b: i.addbmm(a, b, beta=0), [_nonfinite((3, 4)), (2, 3, 5), (2, 5, 4)]),
    (lambda i, a, b: i.addbmm(a, b, alpha=0), [(3, 4), _nonfinite((2, 3, 5)), (2, 5, 4)]),
]


@pytest.mark.parametrize("fn,inputs", ZERO_FACTORS)
def test_a_zero_factor_reads_what_pytorch_reads(fn, inputs):
    check(fn, *inputs, atol=1e-4)


def test_add_product_errors():
    with pytest.raises(RuntimeError, match="addmv: expected vec to be a 1-D"):
        cg.zeros(3).addmv(cg.zeros(3, 4), cg.zeros(4, 1))
    with pytest.raises(RuntimeError, match="baddbmm: expected batch1 to be a 3-D"):
        cg.zeros(3).baddbmm(cg.zeros(3, 4), cg.zeros(4, 1))
    # an input the result's shape cannot hold, or of another dtype, as PyTorch refuses
    with pytest.raises(RuntimeError, match=r"addmm: input of shape \(3, 2, 2\) cannot be"):
        cg.zeros(3, 2, 2).addmm(cg.zeros(2, 3), cg.zeros(3, 2))
    with pytest.raises(RuntimeError, match="baddbmm: input of shape"):
        cg.zeros(2, 2, 2).baddbmm(cg.zeros(1, 2, 3), cg.zeros(1, 3, 2))
    with pytest.raises(RuntimeError, match="addbmm: expected input and operands of one dtype"):
        cg.zeros(2, 2, dtype=cg.float64).addbmm(cg.zeros(1, 2, 3), cg.zeros(1, 3, 2))


@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (4, 3)), ((), (2, 3)),
                                    ((2, 1, 3), (3,)), ((0, 2), (3, 2)), ((2, 0), (1, 0))])
def test_inner(shapes):
    check(lambda a, b: a.inner(b), *shapes)
    check(lambda a, b: _lib(a).inner(a, b), *shapes)


def test_inner_error():
    with pytest.raises(RuntimeError, match="last dimension must match"):
        cg.zeros(2, 3).inner(cg.zeros(2))


def test_vdot_and_ger():
    check(lambda a, b: _lib(a).vdot(a, b), (5,), (5,))
    check(lambda a, b: a.ger(b), (3,), (0,))
    check(lambda a, b: _lib(a).ger(a, b), (3,), (2,))


@pytest.mark.parametrize("shapes", [((2, 3), (4, 1)), ((3,), (2,)), ((), (2, 3)), ((2, 1, 2), (3,)),
                                    ((0, 2), (3, 3)), ((1,), ())])
def test_kron(shapes):
    check(lambda a, b: a.kron(b), *shapes)
    check(lambda a, b: _lib(a).kron(a, b), *shapes)


@pytest.mark.parametrize("shapes,dims", [
    (((2, 3, 4), (3, 4, 5)), 2), (((2, 3), (3, 4)), 1), (((2, 3), (4, 5)), 0),
    (((2, 3, 4), (4, 3, 5)), ([1, 2], [1, 0])), (((2, 3), (3, 2)), ([-1], [0])),
    (((2, 0), (0, 3)), 1), (((4,), (4,)), ([0], [0]))])
def test_tensordot(shapes, dims):
    check(lambda a, b: _lib(a).tensordot(a, b, dims=dims), *shapes)


def test_tensordot_errors():
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        cg.tensordot(cg.zeros(2, 3), cg.zeros(2, 3), 1)
    with pytest.raises(RuntimeError, match="same length"):
        cg.tensordot(cg.zeros(2, 3), cg.zeros(3, 2), ([0, 1], [1]))


@pytest.mark.parametrize("shapes", [((2, 3),), ((2, 3), (3, 4)), ((2, 3), (3, 1), (1, 4)),
                                    ((2, 0), (0, 3))])
def test_chain_matmul(shapes):
    check(lambda *ms: _lib(ms[0]).chain_matmul(*ms), *shapes)


def test_chain_matmul_error():
    with pytest.raises(RuntimeError, match="expected 2"):
        cg.chain_matmul(cg.zeros(2, 2), cg.zeros(2))


@pytest.mark.parametrize("shapes,dim", [(((3,), (3,)), None), (((4, 3), (4, 3)), 1),
                                        (((3, 2), (3, 1)), 0), (((2, 3, 3), (2, 3, 3)), None),
                                        (((0, 3), (0, 3)), -1), (((2, 3), (1, 3)), -1)])
def test_cross(shapes, dim):
    check(lambda a, b: a.cross(b, dim=dim), *shapes)
    check(lambda a, b: _lib(a).cross(a, b, dim), *shapes)
    if dim is not None:
        check(lambda a, b: _lib(a).linalg.cross(a, b, dim=dim), *shapes)


def test_cross_errors():
    with pytest.raises(RuntimeError, match="must have length 3"):
        cg.linalg.cross(cg.zeros(2, 4), cg.zeros(2, 4))
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        cg.cross(cg.zeros(2, 3), cg.zeros(3))


@pytest.mark.parametrize("p", [2, 1, 3.5, 0, float("inf")])
def test_dist(p):
    # (PyTorch has no gradient for p=0: the count of nonzeros is piecewise constant)
    check(lambda a, b: a.dist(b, p), (3, 4), (4,), grad=p != 0)
    check(lambda a, b: _lib(a).dist(a, b, p=p), (2,), (), grad=p != 0)
