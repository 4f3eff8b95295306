"""Reductions run as two kernels: partial results over slices, then their combination,
written in place over the partials (slice 0 lies where the result goes). A long product or
reduction into few results splits so that every core works; a reduction over outer axes and
a contiguous inner run splits so that a slice reads contiguous memory, in vectors. The
scheduler asks these helpers for the two nodes of a split; the nodes exist only in its
kernels."""
from __future__ import annotations

import math

from . import ir
from .ir import Node
from .ops import Op


# A product this long into this few outputs runs as partial products over slices of k, then
# their sum: else one or two work-items do all of it on one core (a convolution's weight
# gradient: 9 x 6 outputs, each a sum of 57,600 products). So does one of this few rows and
# up to _SPLIT_K_MAX_WIDE outputs: its rows are one or two blocks of work-items, each
# streaming panels of k longer than the cache (a 3x3 convolution's weight gradient of 64
# channels over 64 images of 16 x 16: 64 x 576 outputs, k 16,384, 18.6 ms whole in a ResNet's
# step, 8.9 split). With more rows the work-items are enough, and the partials' traffic
# costs: 128 x 128 outputs of k 4,096 took 0.75-1.37 ms split against 0.66 whole.
_SPLIT_K_MIN_LENGTH = 4096
_SPLIT_K_MAX_OUTPUTS = 4096
_SPLIT_K_MAX_ROWS = 64
_SPLIT_K_MAX_WIDE = 48 * 1024
_SPLIT_K_SLICE = 512


def split_k(mm: Node) -> tuple[Node, Node] | None:
    """(partial, total) for a matmul worth splitting: partial[s, ...] is the product over the
    s-th slice of k, total (mm's shape) their sum. The slice axis leads, so that slice 0 lies
    exactly where total goes: summing in place, each element overwrites only its own partial."""
    a, b = mm.src
    *batch, m, k = a.shape
    n = b.shape[-1]
    few = mm.numel <= _SPLIT_K_MAX_OUTPUTS or (
        mm.numel // n <= _SPLIT_K_MAX_ROWS and mm.numel <= _SPLIT_K_MAX_WIDE)
    # (a 16-bit product sums in float32 and rounds once, as PyTorch's: partials in its own
    # type would round each slice's sum too, 5 ulps off over 8 slices of 512: fuzz seed
    # 100600404; and in float32 they could not be summed in place)
    if k < _SPLIT_K_MIN_LENGTH or not mm.numel or not few or mm.dtype.is_16_bit_float:
        return None
    slices = next((s for s in (16, 8, 4, 2) if k % s == 0 and k // s >= _SPLIT_K_SLICE), None)
    if slices is None:
        return None
    batch, nb, part = tuple(batch), len(batch), k // slices
    kept = tuple(range(nb))
    # views built as nodes of their own: ir's constructors fold a view of a view into its
    # source, which may not be the operand the kernel loads
    shape = batch + (m, slices, part)
    a_split = _view(_view(a, Op.RESHAPE, shape, shape), Op.PERMUTE,
                    (slices,) + batch + (m, part), (nb + 1,) + kept + (nb, nb + 2))
    shape = batch + (slices, part, n)
    b_split = _view(_view(b, Op.RESHAPE, shape, shape), Op.PERMUTE,
                    (slices,) + batch + (part, n), (nb,) + kept + (nb + 1, nb + 2))
    partial = Node(Op.MATMUL, mm.dtype, (slices,) + mm.shape, (a_split, b_split))
    summed = Node(Op.SUM, mm.dtype, (1,) + mm.shape, (partial,), (0,))
    return partial, _view(summed, Op.RESHAPE, mm.shape, mm.shape)


# A reduction into fewer rows than this, each at least this long, runs as partial reductions
# over slices of its rows, then their combination: one work-item a row would leave cores
# idle.
_SPLIT_ROWS_MAX = 64
_SPLIT_ROWS_MIN_LENGTH = 1 << 15
# So does one over outer axes and a contiguous run of innermost ones this long, into any
# number of rows: a work-item a row reads its run a scalar at a time, lanes across rows far
# apart; a slice of the run is read in vectors. BatchNorm's statistics of an (N, C, H, W)
# batch: C rows over N, H and W, now N x C rows over H and W (forward and backward, 64 x 64
# x 16 x 16: 3.5 -> 1.1-1.7 ms; 16 x 64 x 32 x 32: 9.3 -> 0.5-0.7 ms; PyTorch 2.9 and 2.9).
# Runs of 16 gained nothing.
_SPLIT_STRIDED_MIN_RUN = 64
_SPLIT_STRIDED_MIN_LENGTH = 2048
_ROW_CHUNKS = (4096, 2048, 1024, 512)      # a slice's length, where an axis must be cut


def row_slices(red: Node) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
    """How red splits: (the shape its source is viewed as, the axes of that shape that index
    the slices, the axes each slice reduces), or None when it runs whole. A slice is the run
    of reduced axes that ends the shape, contiguous memory, where it is long enough: the
    other reduced axes index the slices, and where they give too few rows the run is cut in
    chunks too. Else the first reduced axis is cut, or indexes the slices itself. A 16-bit
    sum or product runs whole: it rounds once (as split_k's products)."""
    if red.op is not Op.RMAX and red.dtype.is_16_bit_float:
        return None
    shape, axes = red.src[0].shape, red.arg
    length = math.prod(shape[a] for a in axes)
    trailing = 0
    while trailing < len(axes) and axes[-1 - trailing] == len(shape) - 1 - trailing:
        trailing += 1
    run = math.prod(shape[len(shape) - trailing:])
    outer = axes[:len(axes) - trailing]
    strided = bool(outer) and run >= _SPLIT_STRIDED_MIN_RUN \
        and length >= _SPLIT_STRIDED_MIN_LENGTH
    if not strided and (red.numel >= _SPLIT_ROWS_MAX or length < _SPLIT_ROWS_MIN_LENGTH):
        return None
    if run >= _ROW_CHUNKS[-1] or strided:
        view = shape[:len(shape) - trailing] + (run,)
        if red.numel * math.prod(shape[a] for a in outer) >= _SPLIT_ROWS_MAX:
            return view, outer, (len(view) - 1,)
        chunk = next((c for c in _ROW_CHUNKS if run % c == 0 and c < run), None)
        if chunk is None:
            return (view, outer, (len(view) - 1,)) if outer else None
        view = view[:-1] + (run // chunk, chunk)
        return view, outer + (len(view) - 2,), (len(view) - 1,)
    first = axes[0]
    inner = length // shape[first]
    if inner >= _ROW_CHUNKS[-1]:
        return shape, (first,), axes[1:]
    chunk = next((c for c in _ROW_CHUNKS
                  if c % inner == 0 and shape[first] % (c // inner) == 0), None)
    if chunk is None:
        return None
    cut = shape[:first] + (length // chunk, chunk // inner) + shape[first + 1:]
    return cut, (first,), tuple(a + 1 for a in axes)


def split_rows(red: Node) -> tuple[Node, Node] | None:
    """(partial, total) for a reduction worth splitting (row_slices): partial[s..., ...] is
    red over slice s, total (red's shape) their combination. The slice axes lead, so that
    slice 0 lies exactly where total goes (as in split_k)."""
    slicing = row_slices(red)
    if slicing is None:
        return None
    shape, slices, each = slicing
    source = red.src[0]
    view = source if shape == source.shape else _view(source, Op.RESHAPE, shape, shape)
    order = slices + tuple(a for a in range(len(shape)) if a not in slices)
    if order != tuple(range(len(shape))):
        view = _view(view, Op.PERMUTE, tuple(shape[a] for a in order), order)
    partial = ir.reduce(red.op, view, tuple(order.index(a) for a in each))
    total = ir.reduce(red.op, partial, tuple(range(len(slices))))
    return partial, _view(total, Op.RESHAPE, red.shape, red.shape)


def _view(x: Node, op: Op, shape: tuple[int, ...], arg) -> Node:
    return Node(op, x.dtype, shape, (x,), arg)
