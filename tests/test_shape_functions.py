"""torch.* shape functions (frontend/shape_functions.py) against PyTorch, forward and backward."""
import pytest

from helpers import check, library

import clgrad as cg


def _lib(x):
    return library(x)


@pytest.mark.parametrize("name", ["atleast_1d", "atleast_2d", "atleast_3d"])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3), (2, 0), (1, 2, 3, 1)])
def test_atleast(name, shape):
    check(lambda x: getattr(_lib(x), name)(x), shape)
    check(lambda x, y: getattr(_lib(x), name)(x, y), shape, (3,))
    check(lambda x, y: getattr(_lib(x), name)([x, y]), shape, ())


@pytest.mark.parametrize("name", ["hstack", "vstack", "row_stack", "dstack", "column_stack"])
@pytest.mark.parametrize("shapes", [((3,), (3,)), ((2, 3), (2, 3)), ((), ()), ((2, 3, 1), (2, 3, 1)),
                                    ((0,), (0,)), ((1, 3), (1, 3))])
def test_stacks(name, shapes):
    check(lambda a, b: getattr(_lib(a), name)([a, b]), *shapes)
    check(lambda a, b: getattr(_lib(a), name)((a, b, a)), *shapes)


def test_stacks_of_different_lengths():
    check(lambda a, b: _lib(a).hstack([a, b]), (2, 3), (2, 1))
    check(lambda a, b: _lib(a).vstack([a, b]), (3,), (2, 3))
    check(lambda a, b: _lib(a).column_stack([a, b]), (3,), (3, 2))
    check(lambda a, b: _lib(a).dstack([a, b]), (2, 3), (2, 3, 4))


@pytest.mark.parametrize("name", ["concat", "concatenate"])
def test_concat(name):
    check(lambda a, b: getattr(_lib(a), name)([a, b], dim=-1), (2, 3), (2, 0))
    check(lambda a, b: getattr(_lib(a), name)((a, b)), (1, 3), (2, 3))


@pytest.mark.parametrize("sections", [1, 2, 3, 5, [1, 3], [0, 0], [-2], [2, 1], [7], (1, 4, 10)])
@pytest.mark.parametrize("dim", [0, -1])
def test_tensor_split(sections, dim):
    check(lambda x: x.tensor_split(sections, dim), (5, 5))
    check(lambda x: _lib(x).tensor_split(x, sections, dim=dim), (5, 4))


def test_tensor_split_of_empty_and_errors():
    check(lambda x: x.tensor_split(3), (0, 2))
    with pytest.raises(RuntimeError, match="sections"):
        cg.zeros(4).tensor_split(0)
    with pytest.raises(IndexError):
        cg.zeros(4).tensor_split(2, 1)


@pytest.mark.parametrize("name,shape,arg", [
    ("hsplit", (6,), 3), ("hsplit", (2, 4), 2), ("hsplit", (2, 4), [1, 3]),
    ("vsplit", (4, 2), 2), ("vsplit", (4, 2), [3]), ("dsplit", (1, 2, 4), 4),
    ("dsplit", (1, 2, 4), [1, 1])])
def test_hvd_split(name, shape, arg):
    check(lambda x: getattr(x, name)(arg), shape)
    check(lambda x: getattr(_lib(x), name)(x, arg), shape)


@pytest.mark.parametrize("name,shape,arg", [("hsplit", (2, 5), 2), ("vsplit", (3,), 1),
                                            ("dsplit", (2, 2), 1), ("vsplit", (3, 2), 2)])
def test_hvd_split_errors(name, shape, arg):
    with pytest.raises(RuntimeError, match=name):
        getattr(cg.zeros(*shape), name)(arg)


def test_split_with_sizes():
    check(lambda x: x.split_with_sizes([1, 0, 3], dim=-1), (2, 4))
    check(lambda x: _lib(x).split_with_sizes(x, [2]), (2, 4))
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum"):
        cg.zeros(2, 4).split_with_sizes([1, 2], 1)


@pytest.mark.parametrize("dim,sizes", [(1, (2, 3)), (-1, (3, -1)), (0, (1, 2)), (1, (6,)),
                                       (1, (1, 6, 1))])
def test_unflatten(dim, sizes):
    check(lambda x: x.unflatten(dim, sizes), (2, 6))
    check(lambda x: _lib(x).unflatten(x, dim, sizes), (2, 6))


def test_unflatten_errors():
    with pytest.raises(RuntimeError, match="multiply up"):
        cg.zeros(2, 6).unflatten(1, (4, 2))


@pytest.mark.parametrize("shapes", [((2, 1), (3,)), ((), (2, 2)), ((1, 0), (3, 1)), ((4,),)])
def test_broadcast_tensors(shapes):
    check(lambda *ts: _lib(ts[0]).broadcast_tensors(*ts), *shapes)


def test_broadcast_shapes():
    import torch
    for shapes in [((2, 1), (3,)), (5, (1, 5)), ((0, 1), (1, 4)), ()]:
        assert cg.broadcast_shapes(*shapes) == tuple(torch.broadcast_shapes(*shapes))
    with pytest.raises(RuntimeError):
        cg.broadcast_shapes((2,), (3,))


@pytest.mark.parametrize("indexing", ["ij", "xy"])
@pytest.mark.parametrize("shapes", [((3,), (4,)), ((2,), (), (3,)), ((0,), (2,)), ((5,),)])
def test_meshgrid(indexing, shapes):
    check(lambda *ts: _lib(ts[0]).meshgrid(*ts, indexing=indexing), *shapes)
    check(lambda *ts: _lib(ts[0]).meshgrid(list(ts), indexing=indexing), *shapes)


def test_meshgrid_errors():
    with pytest.raises(RuntimeError, match="indexing"):
        cg.meshgrid(cg.zeros(2), indexing="yx")
    with pytest.raises(RuntimeError, match="0D or 1D"):
        cg.meshgrid(cg.zeros(2, 2))


@pytest.mark.parametrize("shapes", [((3,), (2,)), ((2,), (1,), (3,)), ((4,),), ((0,), (2,))])
def test_cartesian_prod(shapes):
    check(lambda *ts: _lib(ts[0]).cartesian_prod(*ts), *shapes)


@pytest.mark.parametrize("shape", [(2, 3), (1, 4, 2), (0, 3)])
def test_flips(shape):
    check(lambda x: x.fliplr(), shape)
    check(lambda x: _lib(x).flipud(x), shape)
    with pytest.raises(RuntimeError, match=">= 2-d"):
        cg.zeros(3).fliplr()


@pytest.mark.parametrize("k", [0, 1, 2, 3, 4, -1, 5])
@pytest.mark.parametrize("dims", [(0, 1), (1, 0), (-1, 0), (2, 1)])
def test_rot90(k, dims):
    check(lambda x: x.rot90(k, dims), (2, 3, 4))
    check(lambda x: _lib(x).rot90(x, k, dims), (2, 1, 0))


def test_rot90_errors():
    with pytest.raises(RuntimeError, match="rotation dims"):
        cg.zeros(2, 2).rot90(1, (0, 0))
    with pytest.raises(RuntimeError, match="total dims"):
        cg.zeros(2).rot90()


@pytest.mark.parametrize("offset", [0, 1, -2])
@pytest.mark.parametrize("dims", [(-2, -1), (0, 2), (2, 0), (1, -1)])
def test_diag_embed(offset, dims):
    check(lambda x: x.diag_embed(offset, *dims), (2, 3))
    check(lambda x: _lib(x).diag_embed(x, offset, *dims), (1, 0))


def test_diag_embed_keeps_infinities():
    check(lambda x: x.diag_embed(), __import__("numpy").array([1.0, float("inf"), float("nan")],
                                                             dtype="float32"), grad=False)


@pytest.mark.parametrize("shape", [(3,), (2, 2), (), (0,)])
@pytest.mark.parametrize("offset", [0, 2, -1])
def test_diagflat(shape, offset):
    check(lambda x: x.diagflat(offset), shape)
    check(lambda x: _lib(x).diagflat(x, offset), shape)
