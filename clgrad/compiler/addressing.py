"""Movement ops as index arithmetic: each maps an index into its output to an index into
its source, so views never copy data."""
from __future__ import annotations

from dataclasses import dataclass

from . import symbolic as sym
from .ir import Node
from .ops import Op

Shape = tuple[int, ...]
# lo <= expr < hi must hold for a padded element to come from the source
Bound = tuple[sym.Lin, int, int]


@dataclass(frozen=True)
class Index:
    """A position in a tensor of `shape`, held as a flat row-major index or per-dimension
    indices, whichever the last transform produced (reshapes keep the flat form), or as both
    where the writer knows both (a reduction row's flat index is contiguous along its lanes
    where linearising its dimensions back cannot show it)."""
    shape: Shape
    flat: sym.Lin | None = None
    dims: tuple[sym.Lin, ...] | None = None

    def as_dims(self) -> tuple[sym.Lin, ...]:
        if self.dims is not None:
            return self.dims
        return tuple(sym.delinearize(self.flat, self.shape))

    def as_flat(self) -> sym.Lin:
        if self.flat is not None:
            return self.flat
        return sym.linearize(list(self.dims), self.shape)

    def key(self):
        return (self.shape, self.as_flat())

    def substitute(self, values: dict) -> "Index":
        flat = None if self.flat is None else sym.substitute(self.flat, values)
        dims = None if self.dims is None else tuple(sym.substitute(d, values) for d in self.dims)
        return Index(self.shape, flat=flat, dims=dims)


def source_index(node: Node, index: Index) -> tuple[Index, list[Bound]]:
    """Where `index` into movement node `node` reads its source, and the bounds that decide
    whether it reads it at all (PAD: outside them the value is the fill)."""
    src_shape = node.src[0].shape
    if node.op is Op.RESHAPE:
        if index.dims is not None and 0 not in src_shape:
            return Index(src_shape, dims=_reshape_dims(index.dims, index.shape, src_shape)), []
        return Index(src_shape, flat=index.as_flat()), []
    dims = index.as_dims()
    if node.op is Op.PERMUTE:
        inverse = [0] * len(dims)
        for out_axis, in_axis in enumerate(node.arg):
            inverse[in_axis] = dims[out_axis]
        return Index(src_shape, dims=tuple(inverse)), []
    if node.op is Op.EXPAND:
        return Index(src_shape, dims=tuple(
            sym.num(0) if n == 1 else d for d, n in zip(dims, src_shape))), []
    if node.op is Op.SHRINK:
        return Index(src_shape, dims=tuple(d + b for d, (b, _) in zip(dims, node.arg))), []
    if node.op is Op.STRIDE:
        return Index(src_shape, dims=tuple(
            d * s if s > 0 else sym.num(n - 1) + d * s
            for d, s, n in zip(dims, node.arg, src_shape))), []
    if node.op is Op.WINDOW:
        axis, _, s, d = node.arg
        at = dims[axis] * s + dims[axis + 1] * d
        return Index(src_shape, dims=dims[:axis] + (at,) + dims[axis + 2:]), []
    if node.op is Op.PAD:
        pads, _ = node.arg
        shifted = tuple(d + (-b) for d, (b, _) in zip(dims, pads))
        bounds = [(d, 0, n) for d, n in zip(shifted, src_shape)]
        return Index(src_shape, dims=shifted), [b for b in bounds if not always_true(b)]
    raise ValueError(f"{node.op} is not a movement op")


def _reshape_dims(dims, shape: Shape, src_shape: Shape) -> tuple[sym.Lin, ...]:
    """Source dims of a reshape, group by group: axes split or merged only among themselves
    (where the running sizes of both shapes meet), so (h, w) -> (h//2, h%2, w//2, w%2) keeps
    each division to its own small axis instead of dividing one flat index of everything."""
    out = [(d, n) for d, n in zip(dims, shape) if n != 1]
    src = [n for n in src_shape if n != 1]
    mapped, i, j = [], 0, 0
    while i < len(out):
        took, size, j0, src_size = [out[i]], out[i][1], j, src[j]
        while size != src_size:
            if size < src_size:
                i += 1
                took.append(out[i])
                size *= out[i][1]
            else:
                j += 1
                src_size *= src[j]
        flat = sym.linearize([d for d, _ in took], tuple(n for _, n in took))
        mapped += sym.delinearize(flat, tuple(src[j0:j + 1]))
        i, j = i + 1, j + 1
    kept = iter(mapped)
    return tuple(next(kept) if n != 1 else sym.num(0) for n in src_shape)


def always_true(bound: Bound) -> bool:
    expr, lo, hi = bound
    return expr.lo >= lo and expr.hi < hi


def never_true(bound: Bound) -> bool:
    expr, lo, hi = bound
    return expr.hi < lo or expr.lo >= hi
