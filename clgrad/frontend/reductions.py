"""Reductions over dims (int or tuple) with keepdim, and the row ops built from them."""
from __future__ import annotations

import math
from collections import namedtuple
from functools import partial

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..compiler.scans import reverse_scan
from .backward import record
from .formula_steps import gradient_steps
from .operands import as_float, from_opmath, normalize_dim, normalize_dims, opmath
from .type_info import finfo

MaxResult = namedtuple("max", ["values", "indices"])
MinResult = namedtuple("min", ["values", "indices"])


def _drop(node: ir.Node, axes, keepdim: bool) -> ir.Node:
    if keepdim:
        return node
    if len(axes) == len(node.shape):    # (axes are distinct) all of them: a 0-d result
        return node.reshape(())
    return node.reshape(tuple(s for i, s in enumerate(node.shape) if i not in axes))


_IDENTITY = {Op.SUM: 0, Op.PROD: 1, Op.RMAX: 0}     # RMAX never pads: an empty max raises


def collapse(node: ir.Node, axes: tuple[int, ...], fill=0) -> ir.Node:
    """node with each of axes made size 1 without a reduction: an empty axis is padded with
    one fill, any other is cut to its first element. For a node with no elements this is a
    reduction with identity fill (a sum over nothing is 0): there is nothing to loop over, and
    a kernel of no rows is not one the scheduler makes. Its gradient is the input's shape."""
    bounds = tuple((0, 1) if a in axes and n else (0, n) for a, n in enumerate(node.shape))
    pads = tuple((0, 1) if a in axes and not n else (0, 0) for a, n in enumerate(node.shape))
    return node.shrink(bounds).pad(pads, fill)


def reduce_node(op: Op, node: ir.Node, axes: tuple[int, ...]) -> ir.Node:
    """op over axes (kept as size 1); over an empty axis, op's identity (collapse). A long
    reduction into few rows runs in two passes: the scheduler splits it."""
    if 0 in node.shape:
        return collapse(node, axes, _IDENTITY[op])
    return ir.reduce(op, node, axes)


def _sum_node(node: ir.Node, axes: tuple[int, ...]) -> ir.Node:
    """The sum over axes, started at +0.0 as PyTorch's: a sum of one element (axes of size 1,
    which no reduction loops over) is that element plus +0.0, so -0.0 becomes +0.0."""
    total = reduce_node(Op.SUM, node, axes)
    return total + 0.0 if total is node and node.dtype.is_float else total


def sum_(x, dim, keepdim, dtype=None):
    axes = normalize_dims("sum", dim, x.ndim)
    target = dtype or (dt.int64 if not x.dtype.is_float else x.dtype)
    out = _drop(_sum_node(x.node.cast(target), axes), axes, keepdim)
    return record("sum" if dim is None else "sum_dim", out, x.device, [x])


def mean(x, dim, keepdim):
    if not x.dtype.is_float:
        raise RuntimeError(f"mean(): could not infer output dtype. Input dtype must be either a "
                           f"floating point or complex dtype. Got: {x.dtype.name}")
    axes = normalize_dims("mean", dim, x.ndim)
    out = _drop(mean_node(x.node, axes), axes, keepdim)
    return record("mean" if dim is None else "mean_dim", out, x.device, [x])


def mean_node(node: ir.Node, axes: tuple[int, ...]) -> ir.Node:
    """PyTorch's mean of a float node over axes (kept as size 1): the sum divided by the
    count (times 1 / count was an ulp off in a third of the rows); a 16-bit float's sum in
    float32, times 1 / count as a float, rounded once, as PyTorch's (1 / 100,000 as a
    float16 is 0.14% off, and a rounded sum is a second rounding)."""
    count = math.prod(node.shape[a] for a in axes)
    total = _sum_node(opmath(node), axes)
    if not count:
        return from_opmath(total * math.nan, node)
    if node.dtype.is_16_bit_float:
        return from_opmath(total * (1 / count), node)
    return total / count


# Ops whose float results two compilations of one expression may round differently (the
# runtimes' vector and scalar sin, exp or division are not the same code)
_INEXACT = frozenset({Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.POW, Op.SQRT, Op.RECIP,
                      Op.DIV, Op.ERF})


def _compared(node: ir.Node) -> ir.Node:
    """The node a max compares its elements with, stored when it computes an inexact op: a
    max's gradient and its indices compare each element with the max, and an element
    recomputed in another loop or kernel may not equal itself (Intel's sin of x.amin()'s
    backward found no element at the min: a NaN gradient)."""
    if not node.dtype.is_float:
        return node
    stack, seen = [node], set()
    while stack and len(seen) < 256:
        n = stack.pop()
        if n in seen or n.buffer is not None:
            continue
        seen.add(n)
        if n.op in _INEXACT:
            return node.contiguous()
        stack.extend(n.src)
    return node


def amax(x, dim, keepdim, op="amax"):
    axes = normalize_dims(op, dim, x.ndim)
    _check_nonempty(op, x, axes, dim is None)
    reduce = partial(max_all, routed=x.requires_grad) if op == "max" else _amax_node
    return record(op, _drop(reduce(_compared(x.node), axes), axes, keepdim), x.device, [x])


def amin(x, dim, keepdim, op="amin"):
    axes = normalize_dims(op, dim, x.ndim)
    _check_nonempty(op, x, axes, dim is None)
    reduce = partial(max_all, routed=x.requires_grad) if op == "min" else _amax_node
    out = _reversed(_drop(reduce(_reversed(_compared(x.node)), axes), axes, keepdim))
    return record(op, out, x.device, [x])


def _amax_node(node: ir.Node, axes) -> ir.Node:
    out = reduce_node(Op.RMAX, node, axes)
    if out is node and node.dtype.is_float:
        # nothing to reduce (dims of size 1): the node itself, but with amax's gradient,
        # which is NaN at a NaN (its tie count is 0) as in PyTorch: x * (c / c), c = (x == x).
        # Not x * c / c: Intel's compiler folds its gradient (g / c) * c to 0 when g is a
        # constant 0, the gradient of an empty selection (fuzz seed 10782)
        same = node.eq(node).cast(node.dtype)
        out = node * (same / same)
    return out


def max_all(node: ir.Node, axes, routed: bool) -> ir.Node:
    """The max over axes with PyTorch's max() gradient (evenly_distribute_backward, CPU): g /
    count written into the elements equal to the max and exact zeros elsewhere, even where g
    is NaN (amax's (g / count) * hit spreads a NaN g to every element); where the max is NaN,
    among the NaNs. NaN rows take a second path: the NaNs' mean (NaN, its gradient 1/k to each
    NaN); the max itself is taken with NaNs as -inf, so the path below sees no NaN row.
    routed: whether a gradient may come (the routing costs two more passes over node)."""
    if not node.dtype.is_float or node.numel == 0:
        return reduce_node(Op.RMAX, node, axes)
    is_nan = node.ne(node)
    nans = reduce_node(Op.SUM, is_nan.cast(node.dtype), axes)
    nan_mean = reduce_node(Op.SUM, is_nan.where(node, 0), axes) / nans
    largest = reduce_node(Op.RMAX, is_nan.where(-math.inf, node), axes)
    if routed:
        largest = _routed_to_hits(node, ir.detach(largest), axes)
    return (nans > 0).where(nan_mean, largest)


def _routed_to_hits(node: ir.Node, largest: ir.Node, axes) -> ir.Node:
    """largest's value, with g / count reaching the elements equal to it through where alone
    (no g * 0): largest - mean(largest - x over the hits), the mean exactly +0 for a finite
    max (subtracting +0 keeps a -0.0 max) and -/+inf for an infinite one (then added to 0)."""
    hit = node.eq(largest.expand(node.shape))
    finite = (largest - largest).eq(0).where(largest, 0)
    gap = hit.where(finite.expand(node.shape) - node, 0)
    count = reduce_node(Op.SUM, hit.cast(node.dtype), axes)
    return finite - reduce_node(Op.SUM, gap, axes) / count


def _reversed(node: ir.Node) -> ir.Node:
    """An exact order-reversing map, its own inverse, so a min is a max: -x for floats, ~x for
    integers and bools (-x would overflow at the most negative int and leave bools as they
    are)."""
    return -node if node.dtype.is_float else ~node


def _check_nonempty(op: str, x, axes, all_dims: bool, error=RuntimeError) -> None:
    """PyTorch's errors for a max, min or arg of nothing: over all dims of an empty tensor
    (error: RuntimeError, IndexError for argmax/argmin), or over a dim of size 0 (IndexError).
    A dim of size 0 that is not reduced is fine: the result is empty."""
    if all_dims and x.numel() == 0:
        raise error(f"{op}(): Expected reduction dim to be specified for input.numel() == 0 "
                    f"(input of shape {x.shape}). Specify the reduction dim with the 'dim' "
                    "argument.")
    for a in axes:
        if x.shape[a] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {a} to have non-zero size "
                             f"(input of shape {x.shape}).")


def _as_1d(node: ir.Node) -> ir.Node:
    """A 0-d node as shape (1,), for ops over one dim (PyTorch treats a 0-d tensor's dim 0 or
    -1 as its only element); any other node as it is."""
    return node.reshape((1,)) if not node.shape else node


def max_(x, dim, keepdim, negate=False):
    """max(dim) -> (values, indices). The gradient of values goes to the first largest element
    of each row alone (PyTorch routes it by the indices), not shared among ties as amax's."""
    name = "min" if negate else "max"
    if dim is None:
        return (amin if negate else amax)(x, None, False, name)
    axis = _one_dim(name, dim, x)
    node = _as_1d(_reversed(_compared(x.node)) if negate else _compared(x.node))
    if node.numel == 0:     # a dim of size 0 not reduced: empty values and indices
        first = ir.const(0, dt.int64, collapse(node, (axis,)).shape)
        values = collapse(node, (axis,))
    else:
        first, hit = _first_largest(node, axis)
        values = _read_at(node, hit, axis) if node.dtype.is_float else node.max((axis,))
    values = _reversed(values) if negate else values
    keep = keepdim and x.ndim > 0
    values = record("min_dim" if negate else "max_dim", _drop(values, (axis,), keep),
                    x.device, [x])
    return (MinResult if negate else MaxResult)(values, _indices(first, axis, keep, x.device))


def _one_dim(op: str, dim, x) -> int:
    """The dim a max, min or arg reduces, checked: not of size 0."""
    axis = _axis(op, dim, x.ndim)
    _check_nonempty(op, x, (axis,) if x.ndim else (), False)
    return axis


def min_(x, dim, keepdim):
    return max_(x, dim, keepdim, negate=True)


def argmax(x, dim, keepdim, negate=False):
    """The first index of the largest value along dim (of the flattened tensor if dim is None)."""
    name = "argmin" if negate else "argmax"
    if x.dtype == dt.bool_:
        raise RuntimeError(f"{name}(): does not support bool input")
    if dim is None:
        _check_nonempty(name, x, (), True, IndexError)
        flat = x.reshape(-1)
        return argmax(flat, 0, False, negate) if not keepdim else \
            argmax(flat, 0, False, negate).reshape((1,) * x.ndim)
    axis = _one_dim(name, dim, x)
    node = _as_1d(_reversed(_compared(x.node)) if negate else _compared(x.node))
    if node.numel == 0:
        first = ir.const(0, dt.int64, collapse(node, (axis,)).shape)
    else:
        first = _first_largest(node, axis)[0]
    return _indices(first, axis, keepdim and x.ndim > 0, x.device)


def _first_largest(node: ir.Node, axis: int, nan_last: bool = False,
                   candidates: ir.Node | None = None) -> tuple[ir.Node, ir.Node]:
    """Per row along axis: the position of the first largest element (int64, the axis kept
    as size 1), and a mask true at that element only. A NaN is the largest: the first NaN of
    the row, or with nan_last its last (PyTorch's max pooling keeps the last it meets). With
    candidates (a bool mask), only those are picked; the others must be -inf (padding)."""
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
    if candidates is not None:
        hit = hit & candidates
    first = n - hit.where(n - position, 0).max((axis,))
    if nan_last and is_nan is not None:
        last_nan = is_nan.where(position + 1, 0).max((axis,))     # 0: no NaN
        first = (last_nan > 0).where(last_nan - 1, first)
    return first, position.eq(first.expand(node.shape))


def _read_at(node: ir.Node, hit: ir.Node, axis: int) -> ir.Node:
    """The row's max again, read where hit is true only (a sum of one element and zeros):
    its derived gradient goes there, also in a row of -inf or of ties."""
    return hit.where(node, 0).sum((axis,))


def max_at_first(node: ir.Node, axis: int,
                 candidates: ir.Node | None = None) -> tuple[ir.Node, ir.Node]:
    """The max of each row of a float node along axis (kept as size 1), whose gradient goes to
    the row's first largest element alone (max pooling's, as in PyTorch; a row with NaNs
    gives its last NaN, as PyTorch's pooling does), and that element's position (int64).
    candidates: _first_largest's (a pooling's elements inside its input)."""
    position, hit = _first_largest(node, axis, nan_last=True, candidates=candidates)
    return _read_at(node, hit, axis), position


def _indices(first: ir.Node, axis: int, keepdim: bool, device):
    from .tensor import Tensor
    return Tensor(_drop(first, (axis,), keepdim), device)


def argmin(x, dim, keepdim):
    return argmax(x, dim, keepdim, negate=True)


def prod(x, dim, keepdim):
    axes = normalize_dims("prod", dim, x.ndim)
    node = x.node.cast(x.dtype if x.dtype.is_float else dt.int64)
    if axes and node.dtype.is_float and math.prod(node.shape[a] for a in axes) == 1:
        # one element per product, no product to build, but PyTorch's gradient is still
        # prod / x where x holds no zero (NaN at an inf): reduced beside a 1, so that it is
        node = node.pad(tuple((0, 1) if a == axes[0] else (0, 0)
                              for a in range(len(node.shape))), fill=1.0)
    if dim is None and x.ndim and x.requires_grad and node.dtype.is_float:
        # PyTorch's prod() (not prod(dim)) has a zero gradient where two elements or more are
        # zero, even beside a NaN or inf: its backward returns zeros, no product. The product
        # reads a detached x there, so that its rule's 0 * NaN never reaches x.
        zeros = reduce_node(Op.SUM, node.eq(0).cast(node.dtype), axes).expand(node.shape)
        node = (zeros > 1).where(node.detach(), node)
    out = reduce_node(Op.PROD, node, axes)
    derivation = None
    if node.dtype.is_16_bit_float and axes and node.numel:
        derivation = _drop(_product_steps(node, out, axes, dim is None), axes, keepdim)
    return record("prod" if dim is None else "prod_dim", _drop(out, axes, keepdim), x.device,
                  [x], derivation)


def _product_steps(node: ir.Node, out: ir.Node, axes: tuple[int, ...],
                   flattened: bool) -> ir.Node:
    """prod's derivation for a 16-bit float: PyTorch's prod_backward step by step in the
    type, g * (prod / x) where the tensor holds no zero, else g times the product of the
    others, its exclusive running products from either end (each accumulated in float32 and
    rounded, as its cumprod's) multiplied; prod() takes the flattened tensor's."""
    row = node.reshape((node.numel,)) if flattened else node
    axis = 0 if flattened else axes[0]
    n = row.shape[axis]

    def span(lo: int, hi: int) -> tuple:
        return tuple((lo, hi) if a == axis else (0, s) for a, s in enumerate(row.shape))

    def ends(lo: int, hi: int) -> tuple:
        return tuple((lo, hi) if a == axis else (0, 0) for a in range(len(row.shape)))
    before = ir.scan(row.shrink(span(0, n - 1)).pad(ends(1, 0), fill=1.0), axis, "mul")
    after = reverse_scan(row.shrink(span(1, n)).pad(ends(0, 1), fill=1.0), axis, "mul")
    others = (before * after).reshape(node.shape)
    every = tuple(range(len(node.shape)))
    any_zero = reduce_node(Op.RMAX, node.eq(0).cast(node.dtype), every).expand(node.shape) > 0
    slope = any_zero.where(others, out.expand(node.shape) / node)
    return gradient_steps(node, [(Op.MUL, slope)], node.dtype).sum(axes)


def _row_max(node: ir.Node, axis: int) -> ir.Node:
    """The row's max as a shift, detached: softmax is shift-invariant, so the max's gradient
    is zero up to rounding, and building it would compare recomputed elements with the max
    (Intel's compiler rounds cos in one loop and sincos in another differently: no element
    equalled the max, a tie count of 0 and a NaN gradient; fuzz seed 52688)."""
    return node.max((axis,)).detach().expand(node.shape)


def logsumexp_node(node: ir.Node, axes: tuple[int, ...]) -> ir.Node:
    """log(sum(exp(x))) over axes, kept as size 1, stable for large x. The shift by the max
    m cancels, so its gradient is zero up to rounding: detached, m's rule (a tie count and
    its division) is not built, walked or run, and the gradient is g * softmax as PyTorch's.
    An infinite m would give inf - inf: a row of -inf shifts by 0 (it gives -inf), a row with
    +inf by the dtype's largest finite value (it gives +inf), so that the gradient, exp(x - m)
    / sum, is 0 for its finite elements, as PyTorch's exp(x - logsumexp) (shifted by 0, an
    element whose exp overflowed gave inf / inf: fuzz seed 19401444). Over nothing: -inf."""
    if node.numel == 0:
        return reduce_node(Op.SUM, node.exp(), axes).log()
    m = node.max(axes).detach()
    m = m.eq(math.inf).where(finfo(node.dtype).max, m.eq(-math.inf).where(0, m))
    shifted = (node - m.expand(node.shape)).exp()
    return m + shifted.sum(axes).log()


def log_softmax_node(node: ir.Node, axis: int, sums_in: dt.DType | None = None) -> ir.Node:
    """x - logsumexp(x) along axis, as PyTorch computes it: (x - m) - log(sum(exp(x - m)))
    with m the row's max unmasked, so a row of -inf, or with +inf, is NaN; a -inf among
    finite values gives -inf. sums_in: the 16-bit float whose values PyTorch's kernel of the
    last dim keeps the sum and its log in (each rounded to it, their gradients not)."""
    if node.numel == 0:
        return node
    m = node.max((axis,)).detach().expand(node.shape)
    shifted = node - m
    total = _held_in(shifted.exp().sum((axis,)), sums_in)
    return shifted - _held_in(total.log(), sums_in).expand(node.shape)


def _held_in(node: ir.Node, dtype: dt.DType | None) -> ir.Node:
    """node's value rounded to dtype (None: itself), its gradient node's own."""
    if dtype is None:
        return node
    return node + (node.cast(dtype).cast(node.dtype) - node).detach()


def _axis(op: str, dim, ndim: int) -> int:
    """The one dim an op over one dim works along; 0 (or -1) for a 0-d tensor (see _as_1d)."""
    if not ndim:
        return normalize_dim(op, dim, 0)
    (axis,) = normalize_dims(op, dim, ndim)
    return axis


def logsumexp(x, dim, keepdim):
    """Over one dim or several, as PyTorch's (no dims: all of them, as sum's). A 16-bit
    float's is PyTorch's composite's steps, each rounded to it (the max, x - max, exp, the
    sum, log and the max added back; rounded once, 15-30% of the rows were an ulp off), and
    its gradient PyTorch's formula, g * exp(x - r), each step rounded, from the result r."""
    # a 0-d tensor's dim is its one element (_as_1d)
    axes = normalize_dims("logsumexp", dim, x.ndim) or tuple(range(max(x.ndim, 1)))
    node = _as_1d(as_float(x.node))
    out = logsumexp_node(node, axes)
    derivation = None
    if node.dtype.is_16_bit_float:
        slope = (node - out.expand(node.shape)).exp()
        derivation = _shaped_as(gradient_steps(node, [(Op.MUL, slope)], node.dtype).sum(axes),
                                x, axes, keepdim)
    return record("logsumexp", _shaped_as(out, x, axes, keepdim), x.device, [x], derivation)


def _shaped_as(node: ir.Node, x, axes: tuple, keepdim: bool) -> ir.Node:
    """A reduction of x's (axes kept as size 1) in the result's shape."""
    return node.reshape(()) if not x.ndim else _drop(node, axes, keepdim)


def softmax(x, dim):
    """A 16-bit float's in float32, rounded once; its gradient is PyTorch's, y (g - sum(g y))
    in float32 from the rounded result y, rounded once."""
    axis = _axis("softmax", dim, x.ndim)
    node = _as_1d(as_float(x.node))
    out, derivation = node, None        # (an empty input's softmax is itself)
    if node.numel:
        h = opmath(node)
        e = (h - _row_max(h, axis)).exp()
        out = from_opmath(e * e.sum((axis,)).expand(h.shape).recip(), node)
        if node.dtype.is_16_bit_float:
            derivation = _softmax_derivation(node, out, axis).reshape(x.shape)
    return record("softmax", out.reshape(x.shape), x.device, [x], derivation)


def log_softmax(x, dim):
    """A 16-bit float's gradient is PyTorch's, g - exp(y) sum(g) in float32 from the rounded
    result y, rounded once."""
    axis = _axis("log_softmax", dim, x.ndim)
    node = _as_1d(as_float(x.node))
    out = log_softmax_in_type(node, axis)
    derivation = None
    if node.dtype.is_16_bit_float and node.numel:
        derivation = log_softmax_derivation(node, out, axis).reshape(x.shape)
    return record("log_softmax", out.reshape(x.shape), x.device, [x], derivation)


def _softmax_derivation(node: ir.Node, y: ir.Node, axis: int) -> ir.Node:
    """A derivation of node (backward.record) whose gradient is PyTorch's softmax backward
    of a 16-bit float, y (g - sum(g y)) in float32 from the rounded result y, rounded once:
    g meets the row sum's -sum(g y) at c before c's slope y."""
    w = opmath(y)
    c = ir.sloped(opmath(node), w)
    return (c - ir.sloped(reduce_node(Op.SUM, c, (axis,)).expand(c.shape), w)).cast(node.dtype)


def log_softmax_derivation(node: ir.Node, y: ir.Node, axis: int) -> ir.Node:
    """As _softmax_derivation, for log_softmax's backward: g - exp(y) sum(g)."""
    c = opmath(node)
    spread = ir.sloped(c, opmath(y).exp())
    return (c - reduce_node(Op.SUM, spread, (axis,)).expand(c.shape)).cast(node.dtype)


def log_softmax_in_type(node: ir.Node, axis: int) -> ir.Node:
    """log_softmax of a float node, as PyTorch's kernels compute it: a 16-bit float's in
    float32, rounded once; along the last dim, also keeping the row's sum of exponentials
    and its log in the 16-bit type."""
    last = node.dtype.is_16_bit_float and axis == len(node.shape) - 1
    return from_opmath(log_softmax_node(opmath(node), axis, node.dtype if last else None), node)


def _any_node(flags: ir.Node, dim, keepdim: bool, op: str) -> ir.Node:
    """Whether some element of a bool node over dim is true (False over none)."""
    ndim = len(flags.shape)
    axes = normalize_dims(op, dim, ndim) if ndim else ()
    if not ndim and dim is not None:
        normalize_dim(op, dim, 0)       # a 0-d tensor's dim 0 or -1 is fine, and reduces nothing
    ints = flags.cast(dt.int32)
    return _drop(reduce_node(Op.RMAX, ints, axes), axes, keepdim).cast(dt.bool_)


def all_(x, dim=None, keepdim: bool = False):
    from .tensor import Tensor
    return Tensor(~_any_node(~x.node.cast(dt.bool_), dim, keepdim, "all"), x.device)


def any_(x, dim=None, keepdim: bool = False):
    from .tensor import Tensor
    return Tensor(_any_node(x.node.cast(dt.bool_), dim, keepdim, "any"), x.device)
