"""torch.* products (frontend/products.py) against PyTorch, forward and backward."""
import pytest

from helpers import check, library

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


def test_add_product_errors():
    with pytest.raises(RuntimeError, match="addmv: expected vec to be a 1-D"):
        cg.zeros(3).addmv(cg.zeros(3, 4), cg.zeros(4, 1))
    with pytest.raises(RuntimeError, match="baddbmm: expected batch1 to be a 3-D"):
        cg.zeros(3).baddbmm(cg.zeros(3, 4), cg.zeros(4, 1))


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
