"""Reductions over dims (int or tuple) with keepdim, and the row ops built from them."""
from __future__ import annotations

import math
from collections import namedtuple

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from .backward import record
from .operands import as_float, normalize_dims

MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])
# Reductions this long into few outputs are split in two passes, so both cores work.
_SPLIT_MIN_LENGTH = 1 << 15


def _drop(node: ir.Node, axes, keepdim: bool) -> ir.Node:
    if keepdim:
        return node
    return node.reshape(tuple(s for i, s in enumerate(node.shape) if i not in axes))


def reduce_node(op: Op, node: ir.Node, axes: tuple[int, ...]) -> ir.Node:
    """op over axes (kept as size 1); a long reduction into few rows goes in two passes."""
    length = math.prod(node.shape[a] for a in axes)
    rows = node.numel // max(length, 1)
    trailing = axes == tuple(range(len(node.shape) - len(axes), len(node.shape)))
    if trailing and length >= _SPLIT_MIN_LENGTH and rows < 64:
        chunk = next((c for c in (4096, 2048, 1024, 512) if length % c == 0), None)
        if chunk is not None:
            outer = node.shape[:len(node.shape) - len(axes)]
            split = node.reshape(outer + (length // chunk, chunk))
            partial = ir.reduce(op, split, (len(outer) + 1,))
            total = ir.reduce(op, partial, (len(outer),))
            return total.reshape(outer + (1,) * len(axes))
    return ir.reduce(op, node, axes)


def sum_(x, dim, keepdim, dtype=None):
    axes = normalize_dims("sum", dim, x.ndim)
    target = dtype or (dt.int64 if not x.dtype.is_float else x.dtype)
    out = _drop(reduce_node(Op.SUM, x.node.cast(target), axes), axes, keepdim)
    return record("sum" if dim is None else "sum_dim", out, x.device, [x])


def mean(x, dim, keepdim):
    if not x.dtype.is_float:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {x.dtype.name}")
    axes = normalize_dims("mean", dim, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    total = _drop(reduce_node(Op.SUM, x.node, axes), axes, keepdim)
    out = total * (1 / count if count else math.nan)
    return record("mean" if dim is None else "mean_dim", out, x.device, [x])


def amax(x, dim, keepdim, op="amax"):
    axes = normalize_dims("amax", dim, x.ndim)
    _check_nonempty("max", x, axes)
    return record(op, _drop(reduce_node(Op.RMAX, x.node, axes), axes, keepdim), x.device, [x])


def amin(x, dim, keepdim, op="amin"):
    axes = normalize_dims("amin", dim, x.ndim)
    _check_nonempty("min", x, axes)
    out = _reversed(_drop(reduce_node(Op.RMAX, _reversed(x.node), axes), axes, keepdim))
    return record(op, out, x.device, [x])


def _reversed(node: ir.Node) -> ir.Node:
    """An exact order-reversing map, its own inverse, so a min is a max: -x for floats, ~x for
    integers and bools (-x would overflow at the most negative int and leave bools as they
    are)."""
    return -node if node.dtype.is_float else ~node


def _check_nonempty(op: str, x, axes) -> None:
    if any(x.shape[a] == 0 for a in axes) or x.numel() == 0:
        raise RuntimeError(f"{op}(): expected a non-empty tensor, got shape {x.shape}")


def max_(x, dim, keepdim, negate=False):
    """max(dim) -> (values, indices). The gradient of values goes to the first largest element
    of each row alone (PyTorch routes it by the indices), not shared among ties as amax's."""
    name = "min" if negate else "max"
    if dim is None:
        return (amin if negate else amax)(x, None, False, name)
    (axis,) = normalize_dims(name, dim, x.ndim)
    _check_nonempty(name, x, (axis,))
    node = _reversed(x.node) if negate else x.node
    first, hit = _first_largest(node, axis)
    values = _read_at(node, hit, axis) if node.dtype.is_float else node.max((axis,))
    values = _reversed(values) if negate else values
    values = record("min_dim" if negate else "max_dim", _drop(values, (axis,), keepdim),
                    x.device, [x])
    return (MinResult if negate else MaxResult)(values, _indices(first, axis, keepdim, x.device))


def min_(x, dim, keepdim):
    return max_(x, dim, keepdim, negate=True)


def argmax(x, dim, keepdim, negate=False):
    """The first index of the largest value along dim (of the flattened tensor if dim is None)."""
    if x.dtype == dt.bool_:
        raise RuntimeError(f"{'argmin' if negate else 'argmax'}(): does not support bool input")
    if dim is None:
        flat = x.reshape(-1)
        return argmax(flat, 0, False, negate) if not keepdim else \
            argmax(flat, 0, False, negate).reshape((1,) * x.ndim)
    (axis,) = normalize_dims("argmax", dim, x.ndim)
    _check_nonempty("argmax", x, (axis,))
    node = _reversed(x.node) if negate else x.node
    return _indices(_first_largest(node, axis)[0], axis, keepdim, x.device)


def _first_largest(node: ir.Node, axis: int, nan_last: bool = False) -> tuple[ir.Node, ir.Node]:
    """Per row along axis: the position of the first largest element (int64, the axis kept
    as size 1), and a mask true at that element only. A NaN is the largest: the first NaN of
    the row, or with nan_last its last (PyTorch's max pooling keeps the last it meets)."""
    best = node.max((axis,)).expand(node.shape)
    n = node.shape[axis]
    shape_1d = tuple(n if i == axis else 1 for i in range(len(node.shape)))
    position = ir.iota(n, dt.int64).reshape(shape_1d).expand(node.shape)
    # the first hit wins: count down from n so the largest is the earliest. In a row with a
    # NaN the max is NaN, and the hits are the NaNs. (`& best.ne(best)` changes nothing but
    # the code's shape, with which Intel's compiler computes sin(x) alike in the max's loop
    # and this one: max(dim) of x.sin() found no hit otherwise, tests/test_runtime_quirks.)
    is_nan = node.ne(node) if node.dtype.is_float else None
    hit = node.eq(best)
    if is_nan is not None:
        hit = hit | (is_nan & best.ne(best))
    first = n - hit.where(n - position, 0).max((axis,))
    if nan_last and is_nan is not None:
        last_nan = is_nan.where(position + 1, 0).max((axis,))     # 0: no NaN
        first = (last_nan > 0).where(last_nan - 1, first)
    return first, position.eq(first.expand(node.shape))


def _read_at(node: ir.Node, hit: ir.Node, axis: int) -> ir.Node:
    """The row's max again, read where hit is true only (a sum of one element and zeros):
    its derived gradient goes there, also in a row of -inf or of ties."""
    return hit.where(node, 0).sum((axis,))


def max_at_first(node: ir.Node, axis: int) -> ir.Node:
    """The max of each row of a float node along axis (kept as size 1), whose gradient goes to
    the row's first largest element alone (max pooling's, as in PyTorch; a row with NaNs
    gives its last NaN, as PyTorch's pooling does)."""
    return _read_at(node, _first_largest(node, axis, nan_last=True)[1], axis)


def _indices(first: ir.Node, axis: int, keepdim: bool, device):
    from .tensor import Tensor
    return Tensor(_drop(first, (axis,), keepdim), device)


def argmin(x, dim, keepdim):
    return argmax(x, dim, keepdim, negate=True)


def prod(x, dim, keepdim):
    axes = normalize_dims("prod", dim, x.ndim)
    node = x.node.cast(x.dtype if x.dtype.is_float else dt.int64)
    out = _drop(reduce_node(Op.PROD, node, axes), axes, keepdim)
    return record("prod" if dim is None else "prod_dim", out, x.device, [x])


def var(x, dim, unbiased, keepdim, correction):
    axes = normalize_dims("var", dim, x.ndim)
    node = as_float(x.node)
    count = math.prod(x.shape[a] for a in axes)
    correction = (1 if unbiased else 0) if correction is None else correction
    centered = node - (reduce_node(Op.SUM, node, axes) * (1 / count)).expand(node.shape)
    squares = reduce_node(Op.SUM, centered * centered, axes)
    denom = max(count - correction, 0)
    out = _drop(squares * (1 / denom if denom else math.nan), axes, keepdim)
    return record("var", out, x.device, [x])


def std(x, dim, unbiased, keepdim, correction):
    v = var(x, dim, unbiased, keepdim, correction)
    return record("std", v.node.sqrt(), x.device, [x])


def _row_max(node: ir.Node, axis: int) -> ir.Node:
    return node.max((axis,)).expand(node.shape)


def logsumexp_node(node: ir.Node, axis: int) -> ir.Node:
    """log(sum(exp(x))) along axis, kept as size 1, stable for large x. The shift by the max
    m cancels, so its gradient is zero up to rounding: detached, m's rule (a tie count and
    its division) is not built, walked or run, and the gradient is g * softmax as PyTorch's.
    An infinite m shifts by 0 instead, as in PyTorch (x - m would be inf - inf): a row of
    -inf gives -inf, a row with +inf gives +inf."""
    m = node.max((axis,)).detach()
    m = m.abs().eq(math.inf).where(0, m)
    shifted = (node - m.expand(node.shape)).exp()
    return m + shifted.sum((axis,)).log()


def log_softmax_node(node: ir.Node, axis: int) -> ir.Node:
    """x - logsumexp(x) along axis, as PyTorch computes it: (x - m) - log(sum(exp(x - m)))
    with m the row's max unmasked, so a row of -inf, or with +inf, is NaN; a -inf among
    finite values gives -inf."""
    m = node.max((axis,)).detach().expand(node.shape)
    shifted = node - m
    return shifted - shifted.exp().sum((axis,)).log().expand(node.shape)


def logsumexp(x, dim, keepdim):
    (axis,) = normalize_dims("logsumexp", dim, x.ndim)
    out = _drop(logsumexp_node(as_float(x.node), axis), (axis,), keepdim)
    return record("logsumexp", out, x.device, [x])


def softmax(x, dim):
    (axis,) = normalize_dims("softmax", dim, x.ndim)
    node = as_float(x.node)
    e = (node - _row_max(node, axis)).exp()
    total = e.sum((axis,)).expand(node.shape)
    return record("softmax", e * total.recip(), x.device, [x])


def log_softmax(x, dim):
    (axis,) = normalize_dims("log_softmax", dim, x.ndim)
    return record("log_softmax", log_softmax_node(as_float(x.node), axis), x.device, [x])


def _any_set(flags: ir.Node) -> ir.Node:
    """Whether any element of a bool node is true, as a bool node of shape (1,)."""
    ints = flags.cast(dt.int32)
    flat = ints.reshape((ints.numel,)) if ints.numel else ir.const(0, dt.int32, (1,))
    return reduce_node(Op.RMAX, flat, (0,)).cast(dt.bool_)


def all_(x):
    from .tensor import Tensor
    return Tensor((~_any_set(~x.node.cast(dt.bool_))).reshape(()), x.device)


def any_(x):
    from .tensor import Tensor
    return Tensor(_any_set(x.node.cast(dt.bool_)).reshape(()), x.device)
