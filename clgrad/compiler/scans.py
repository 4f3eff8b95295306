"""Scans in IR: reversed scans, where a running max or min was found, and the gradient rule of
each SCAN combine. Everything here is built from SCAN, GATHER and SCATTER nodes and
elementwise or movement ops, so a gradient of a scan over n elements costs a few O(n) passes,
never an n x n sum."""
from __future__ import annotations

from . import dtype as dt
from . import ir
from .ir import Node
from .ops import Op


def flip(x: Node, axis: int) -> Node:
    return x.stride(tuple(-1 if a == axis else 1 for a in range(len(x.shape))))


def reverse_scan(x: Node, axis: int, combine: str) -> Node:
    """out[i] = combine of x[i], x[i+1], ..., x[n-1] along axis."""
    return flip(ir.scan(flip(x, axis), axis, combine), axis)


def kept_scan(x: Node, axis: int, combine: str) -> Node:
    """scan(x, axis, combine) as a SCAN node also where each row holds one element (ir.scan
    gives x itself there): a derivation (frontend backward.record) whose gradient is the
    combine's rule for rows of any length, as PyTorch's is."""
    return Node(Op.SCAN, x.dtype, x.shape, (x,), (axis, combine))


def positions(x: Node, axis: int) -> Node:
    """Each element's position along axis, int64, in x's shape."""
    n = x.shape[axis]
    line = tuple(n if a == axis else 1 for a in range(len(x.shape)))
    return ir.iota(n, dt.int64).reshape(line).expand(x.shape)


_IDENTITY = {"add": 0, "mul": 1}


def split_scan(x: Node, axis: int, combine: str, block: int) -> Node:
    """scan(x, axis, combine) for add or mul in two levels, so that a long row is many
    work-items' work, not one's: the row is cut into blocks, each block scanned, the blocks'
    totals scanned, and each block combined with the total of the blocks before it."""
    n = x.shape[axis]
    blocks = -(-n // block)
    pads = tuple((0, blocks * block - n) if a == axis else (0, 0) for a in range(len(x.shape)))
    padded = x.pad(pads, _IDENTITY[combine])
    shape = x.shape[:axis] + (blocks, block) + x.shape[axis + 1:]
    inner = ir.scan(padded.reshape(shape), axis + 1, combine)
    last = tuple((block - 1, block) if a == axis + 1 else (0, m) for a, m in enumerate(shape))
    totals = ir.scan(inner.shrink(last), axis, combine)
    shift = tuple((1, 0) if a == axis else (0, 0) for a in range(len(shape)))
    before = totals.pad(shift, _IDENTITY[combine]).shrink(
        tuple((0, blocks) if a == axis else (0, m) for a, m in enumerate(totals.shape)))
    before = before.expand(shape)
    out = (inner + before if combine == "add" else inner * before).reshape(padded.shape)
    return out.shrink(tuple((0, n) if a == axis else (0, m) for a, m in enumerate(x.shape)))


def extreme_positions(x: Node, running: Node, axis: int) -> Node:
    """Where each prefix's running max (or min), `running`, was found, as PyTorch's cummax
    reports it: the last element equal to it, or once a NaN has come, the last NaN."""
    hit = x.eq(running) | x.ne(x) if x.dtype.is_float else x.eq(running)
    return ir.scan(hit.where(positions(x, axis), 0), axis, "max")


def along(x: Node, axis: int, at: Node) -> Node:
    """x[..., at[..., i, ...], ...] along axis: each row of x read at run-time positions (a
    gather of the rows laid out one after another). at's rows may be shorter than x's."""
    order, rows_at, flat = _row_positions(at, axis, x.shape[axis])
    rows_x = x.permute(order)
    picked = ir.gather(rows_x.reshape((rows_x.numel, 1)), flat).reshape(rows_at.shape)
    return picked.unpermute(order)


def added_along(g: Node, axis: int, at: Node) -> Node:
    """along's inverse, PyTorch's scatter_add of g's rows: out[..., at[..., i, ...], ...]
    sums g[..., i, ...] along axis, zeros where no position lands. The gradient of a read at
    run-time positions: each sum holds its own terms only (an inf or a large term elsewhere in
    the row does not reach it)."""
    order, rows_at, flat = _row_positions(at, axis, at.shape[axis])
    rows_g = g.permute(order)
    added = ir.scatter(flat, rows_g.reshape((rows_g.numel, 1)), rows_g.numel, "add")
    return added.reshape(rows_g.shape).unpermute(order)


def _row_positions(at: Node, axis: int, length: int) -> tuple[tuple, Node, Node]:
    """The permutation that makes axis last, at permuted so, and its positions as flat indices
    into rows of `length` laid out one after another."""
    order = tuple(a for a in range(len(at.shape)) if a != axis) + (axis,)
    rows_at = at.permute(order)
    offsets = ir.iota(rows_at.numel // max(at.shape[axis], 1), dt.int64) * length
    offsets = offsets.reshape(rows_at.shape[:-1] + (1,)).expand(rows_at.shape)
    return order, rows_at, (rows_at + offsets).reshape((rows_at.numel,))


def _cumprod_rule(x: Node, out: Node, g: Node, axis: int) -> Node:
    """PyTorch's cumprod gradient with zeros, masked as its steps are: before a row's first
    zero z1, the reversed cumsum of g * out over the elements before z1 only, divided by the
    element; at z1, the sum of g times the products of the elements after z1 up to each one,
    over z1 to the second zero (g read as 0 elsewhere), times the product before z1; after
    z1, zero. So what lies past the zeros (an inf, a NaN, an infinite g meeting a product of
    0) does not reach the elements before them."""
    zero = x.eq(0)
    zeros_so_far = ir.scan(zero.cast(dt.int32), axis, "add")
    before, one_zero = zeros_so_far.eq(0), zeros_so_far.eq(1)
    first_zero = zero & one_zero
    no_zero = reverse_scan(before.where(g * out, 0), axis, "add") / before.where(x, 1)
    after_first = ir.scan(one_zero.where(first_zero.where(1, x), 1), axis, "mul")
    past_first = (after_first * one_zero.where(g, 0)).sum((axis,)).expand(x.shape)
    # the product before z1, as out holds it at z1 - 1 (1 where z1 is the first element): the
    # same multiplications in the same order, then by ones
    prefix = ir.scan(before.where(x, 1), axis, "mul")
    last = tuple((n - 1, n) if a == axis else (0, n) for a, n in enumerate(x.shape))
    at_zero = past_first * prefix.shrink(last).expand(x.shape)
    return before.where(no_zero, first_zero.where(at_zero, 0))


def _logcumsumexp_rule(x: Node, out: Node, g: Node, axis: int) -> Node:
    """PyTorch's: sum over i >= j of g[i] * exp(x[j] - out[i]), in log space with g's
    positive and negative parts apart, so that nothing overflows. The other part's
    elements are the lowest finite float, not -inf: -inf - -inf would make the rule's own
    gradient NaN (a double backward)."""
    log_abs = g.abs().log()
    lowest = -dt.largest_finite(g.dtype)
    parts = []
    for side in (g > 0, g < 0):
        log_part = side.where(log_abs, lowest)
        parts.append((reverse_scan(log_part - out, axis, "logaddexp") + x).exp())
    return parts[0] - parts[1]


def scan_rule(node: Node, g: Node):
    (x,) = node.src
    axis, combine = node.arg
    # a row of one element is itself (kept_scan's node is never computed)
    out = x if x.shape[axis] == 1 else node
    if combine == "add":
        return (reverse_scan(g, axis, "add"),)
    if combine == "mul":
        return (_cumprod_rule(x, out, g, axis),)
    if combine == "logaddexp":
        return (_logcumsumexp_rule(x, out, g, axis),)
    return (added_along(g, axis, extreme_positions(x, out, axis)),)
