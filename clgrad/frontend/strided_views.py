"""as_strided and its kin: the elements at offset + sum(i_d * stride_d) of a tensor's storage.

A clgrad tensor is a lazy value with no storage of its own, so the storage these functions
index is the tensor's own elements in row-major order: what PyTorch reads for a contiguous
tensor (a slice that is contiguous too: there PyTorch starts at the slice's first element, as
clgrad does). A view that is not contiguous (a transpose, a strided slice) is read in its own
row-major order, as PyTorch reads `x.contiguous()`, where PyTorch would read the memory it
shares with its base; storage_offset counts from the tensor's first element, and the bounds
are its numel, not its base's storage size.

Each is a gather over the flattened tensor (its gradient a scatter-add), at flat indices built
from iotas, so nothing is read on the host; as_strided_scatter writes src at those indices.
"""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir
from . import inplace, views
from .backward import record
from .scatter import _replaced


def _checked(input, size, stride, storage_offset) -> tuple[tuple, tuple, int]:
    """size, stride and offset as ints, once PyTorch's checks of them passed."""
    size, stride = tuple(int(s) for s in size), tuple(int(s) for s in stride)
    offset = 0 if storage_offset is None else int(storage_offset)
    if len(size) != len(stride):
        raise RuntimeError("mismatch in length of strides and shape")
    if any(s < 0 for s in stride):
        raise RuntimeError(f"as_strided: Negative strides are not supported at the moment, got "
                           f"strides: {list(stride)}")
    if any(n < 0 for n in size):
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(size)} and "
                           f"strides={list(stride)}")
    if offset < 0:
        raise RuntimeError(f"Tensor: invalid storage offset {offset}")
    if math.prod(size):
        needed = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        if needed > input.numel():
            item = input.dtype.itemsize
            raise RuntimeError(f"setStorage: sizes {list(size)}, strides {list(stride)}, storage "
                               f"offset {offset}, and itemsize {item} requiring a storage size "
                               f"of {needed * item} are out of bounds for storage of size "
                               f"{input.numel() * item}")
    return size, stride, offset


def _flat_index(size: tuple, stride: tuple, offset: int) -> ir.Node:
    """The storage index of each element of the strided view, as a (numel,) int64 node."""
    index = ir.const(offset, dt.int64, size)
    for axis, (n, step) in enumerate(zip(size, stride)):
        if n > 1 and step:
            along = tuple(n if d == axis else 1 for d in range(len(size)))
            index = index + ir.iota(n, dt.int64).reshape(along).expand(size) * step
    return index.reshape((math.prod(size),))


def _strided(input, size: tuple, stride: tuple, offset: int, op: str):
    numel = math.prod(size)
    if numel == 0:
        return record(op, ir.const(0, input.dtype, size), input.device, [input])
    rows = input.node.reshape((input.numel(), 1))
    node = rows.gather(_flat_index(size, stride, offset)).reshape(size)
    return record(op, node, input.device, [input])


def as_strided(input, size, stride, storage_offset=None):
    """A view of input's elements (in row-major order) at the given sizes and strides: writes
    to it reach input, and it reads input again after input changes, as PyTorch's view."""
    size, stride, offset = _checked(input, size, stride, storage_offset)
    out = _strided(input, size, stride, offset, "as_strided")

    def write(base, value):
        scattered = as_strided_scatter(inplace.snapshot(base), value, size, stride, offset)
        inplace.assign_result(base, scattered, "as_strided")

    out._view = views.View(input, lambda b: _strided(b, size, stride, offset, "as_strided"),
                           write)
    return out


def as_strided_(self, size, stride, storage_offset=None):
    """self becomes its strided view in place; views of self made before see their elements
    of it written back where the strided view covers them."""
    size, stride, offset = _checked(self, size, stride, storage_offset)
    old = inplace.snapshot(self)
    return inplace.relayout(
        self, "as_strided_", lambda x: _strided(x, size, stride, offset, "as_strided_"),
        lambda x: as_strided_scatter(old, x, size, stride, offset))


def as_strided_scatter(input, src, size, stride, storage_offset=None):
    """input with the elements its strided view covers replaced by src's."""
    size, stride, offset = _checked(input, size, stride, storage_offset)
    if tuple(src.shape) != size:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(size)}")
    if src.dtype != input.dtype:
        raise RuntimeError(f"as_strided_scatter: expected src to have the dtype of input "
                           f"({input.dtype.name}), got {src.dtype.name}")
    numel = math.prod(size)
    if numel == 0:
        return record("as_strided_scatter", input.node, input.device, [input, src])
    flat = input.node.reshape((input.numel(),))
    placed = _replaced(flat, _flat_index(size, stride, offset), src.node.reshape((numel,)))
    return record("as_strided_scatter", placed.reshape(input.shape), input.device, [input, src])


METHODS = [("as_strided", as_strided), ("as_strided_", as_strided_),
           ("as_strided_scatter", as_strided_scatter)]

FUNCTIONS = {name: fn for name, fn in METHODS}
