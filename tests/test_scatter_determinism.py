"""Float scatters combine their values in index order: which index axes lower_scatter.py's
ordered kernel walks in parallel (scatter_order.walk)."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import dtype as dt
from clgrad.compiler import ir
from clgrad.compiler.scatter_order import walk


def _iota(shape, axis):
    ones = tuple(n if a == axis else 1 for a, n in enumerate(shape))
    return ir.iota(shape[axis], dt.int64).reshape(ones).expand(shape)


def _data(shape):
    return cg.tensor(np.zeros(shape, np.int64)).node


def _walk(index):
    return walk(index, lambda node: node.op is ir.Op.BUFFER)


@pytest.mark.parametrize("shape, terms, parallel", [
    ((4, 6), [(None, 6), (1, 1)], (1,)),            # scatter along dim 0 of (n, 6)
    ((4, 5, 6), [(0, 30), (None, 6), (2, 1)], (2,)),    # along the middle dim
    ((4, 6), [(0, 6), (None, 1)], ()),              # along the last: the data's range unknown
    ((4, 6), [(None, 1)], ()),                      # data alone: a work-item a column
    ((4, 6), [(None, 6), (1, 2)], ()),              # iota values past the data's stride
    ((4, 6), [(0, 6), (1, 1), ((), 1)], (0, 1)),    # a slice at an offset read from a buffer
    ((4, 6), [(0, 2), (1, 1)], ()),                 # overlapping windows: (0, 2) meets (1, 0)
])
def test_walk_gives_work_items_the_axes_that_never_meet(shape, terms, parallel):
    """terms: (axis, stride) for an iota along axis, (None, stride) for data of the index's
    shape, ((), stride) for one datum at every position; their sum is the index, as
    frontend/scatter.py and frontend/index_inputs.py lay out destinations."""
    index = None
    for axis, stride in terms:
        if axis is None:
            term = _data(shape)
        elif axis == ():
            term = _data((1, 1)).expand(shape)
        else:
            term = _iota(shape, axis)
        term = term * stride if stride != 1 else term
        index = term if index is None else index + term
    assert _walk(index).parallel == parallel


def test_walk_finds_the_shape_a_flat_index_was_made_in():
    # an index computed in (5, 7) and flattened: along its columns, in that shape only
    rows = _iota((5, 7), 1) + _data((5, 7)) * 7
    order = _walk(rows.reshape((35,)))
    assert (order.shape, order.parallel) == ((5, 7), (1,))
