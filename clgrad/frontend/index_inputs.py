"""Indices read by kernels from small device buffers rather than written into their sources:
x[i], x[:, i], x[i:i + k], x.narrow(d, i, k), x.select(d, i) and y[i] = v with a Python i.

A view's bounds written into a kernel make every new index a new graph structure, plan and
kernel: a loop over a tensor's rows (`for i in range(n): f(x[i])`) compiled a kernel per row,
70-100 ms each. Here an index is a number as in scalar_inputs (a kept 0-d int buffer), so
the loop's graphs keep one structure and its first step's kernels run at every step:

- reading: the rows of a tensor in a buffer are gathered at an offset the kernel reads (a
  fused GATHER, in vectors along the rows; a single row's gradient is elementwise). A slice
  of the last dim keeps its bounds in the source: its rows would be single elements;
- writing: the elements written are those whose coordinates equal the indices, a comparison
  with each index's buffer (elementwise, as the bounds written into a kernel were).
"""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from .scalar_inputs import number_node


def gathered(node: ir.Node, items: list, device) -> ir.Node | None:
    """node[items] (one int or slice per dim) read at an offset from a buffer; None where node
    is not in a buffer or no index would be compiled in (every bound of items is 0 or the
    dim's end). The dims after the last int or cut slice must be whole: they are the rows'
    elements."""
    shape = node.shape
    if node.buffer is None or not node.numel or len(items) != len(shape) or \
            not all(_is_int(item) or type(item) is slice for item in items):
        return None
    cut = [k for k, item in enumerate(items) if not _whole(item, shape[k])]
    if not any(_is_int(items[k]) or items[k].indices(shape[k])[0] for k in cut):
        return None
    last = cut[-1]
    if last == len(shape) - 1 and not _is_int(items[last]):
        return None     # rows of one element: lanes would load one by one, not a vector
    offset, kept = 0, []        # kept: (length, stride in rows) of each sliced dim up to last
    for k in range(last + 1):
        stride = math.prod(shape[k + 1:last + 1])
        if _is_int(items[k]):
            offset += int(items[k]) % shape[k] * stride
            continue
        start, stop, step = items[k].indices(shape[k])
        offset += start * stride
        kept.append((len(range(start, stop, step)), step * stride))
    lengths = tuple(length for length, _ in kept)
    count = math.prod(shape[:last + 1])
    index_type = _index_type(count)
    row = number_node(offset, index_type, lengths, device)
    for axis, (length, stride) in enumerate(kept):
        along = _coordinate(length, axis, lengths, index_type)
        row = row + (along if stride == 1 else along * stride)
    rows = node.reshape((count, math.prod(shape[last + 1:])))
    return rows.gather(row).reshape(lengths + shape[last + 1:])


def written_where(node: ir.Node, items: list, device) -> ir.Node | None:
    """Where node[items] lies in node: a bool node of node's shape comparing coordinates with
    each int index's buffer. None unless items are ints and whole slices, one int at least."""
    shape = node.shape
    if len(items) != len(shape) or not any(_is_int(item) for item in items) or not all(
            _is_int(item) or _whole(item, n) for item, n in zip(items, shape)):
        return None
    mask = None
    for axis, item in enumerate(items):
        if _is_int(item):
            index_type = _index_type(shape[axis])
            at = number_node(int(item) % shape[axis], index_type, shape, device)
            equal = _coordinate(shape[axis], axis, shape, index_type).eq(at)
            mask = equal if mask is None else mask & equal
    return mask


def _index_type(count: int) -> dt.DType:
    """int32 where count fits: an int64 operand would halve the kernel's vector width."""
    return dt.int32 if count < 2 ** 31 else dt.int64


def _coordinate(n: int, axis: int, shape: tuple[int, ...], dtype: dt.DType) -> ir.Node:
    """Each element's coordinate along axis, over shape."""
    along = tuple(n if k == axis else 1 for k in range(len(shape)))
    return ir.iota(n, dtype).reshape(along).expand(shape)


def _whole(item, n: int) -> bool:
    return type(item) is slice and item.indices(n) == (0, n, 1)


def _is_int(item) -> bool:
    return isinstance(item, (int, np.integer)) and not isinstance(item, bool)
