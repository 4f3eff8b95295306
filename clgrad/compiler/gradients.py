"""Reverse-mode derivatives of IR graphs: one short rule per primitive op.

The gradient of a graph is itself a graph of ordinary nodes, so backward kernels fuse
exactly like forward ones. Composite ops need no rule of their own: their gradient comes
from the primitives they are made of.
"""
from __future__ import annotations

from . import ir
from .ir import Node
from .ops import Op


def _c(value, like: Node) -> Node:
    return ir.const(value, like.dtype, like.shape)


def _mul(a: Node, b: Node) -> Node:
    return ir.binary(Op.MUL, a, b)


def _neg(a: Node) -> Node:
    return ir.unary(Op.NEG, a)


def _mask(cond: Node, g: Node) -> Node:
    return ir.where(cond, g, _c(0, g))


def _trunc(x: Node) -> Node:
    """x rounded toward zero (fmod(a, b) = a - trunc(a / b) * b)."""
    return ir.where(ir.binary(Op.CMPLT, x, _c(0, x)), ir.unary(Op.CEIL, x), ir.unary(Op.FLOOR, x))


def _sum_to(g: Node, shape: tuple[int, ...]) -> Node:
    """Sums g over the axes where shape has size 1 (undoes an expand)."""
    axes = tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if a != b)
    return ir.reduce(Op.SUM, g, axes)


def _transpose_last(x: Node) -> Node:
    order = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return ir.permute(x, order)


def _unstride(g: Node, steps: tuple[int, ...], shape: tuple[int, ...]) -> Node:
    """Places g's elements back at every step-th position of shape, zeros between."""
    for axis, (step, n) in enumerate(zip(steps, shape)):
        if step < 0:
            g = ir.stride(g, tuple(-1 if i == axis else 1 for i in range(len(shape))))
            step = -step
        if step == 1:
            continue
        m = g.shape[axis]
        before, after = g.shape[:axis], g.shape[axis + 1:]
        g = ir.reshape(g, before + (m, 1) + after)
        pads = [(0, 0)] * len(g.shape)
        pads[axis + 1] = (0, step - 1)
        g = ir.reshape(ir.pad(g, tuple(pads)), before + (m * step,) + after)
        bounds = [(0, s) for s in g.shape]
        bounds[axis] = (0, n)
        g = ir.shrink(g, tuple(bounds))
    return g


def _window_rule(node: Node, g: Node):
    """Each element gets the sum of the window slots that read it: for every slot kk, the
    (o,) slice of g is spread with stride s and shifted by kk*d, and the k pieces add up
    (one kernel, no index division)."""
    axis, k, s, d = node.arg
    shape = node.src[0].shape
    if g.op is Op.CONTIGUOUS:
        # the other axis's window gradient: both sum their pieces in one kernel (a conv's
        # k*k shifted reads per element, with no intermediate written and read back)
        g = g.src[0]
    o = node.shape[axis]
    total = None
    for kk in range(k):
        bounds = tuple((kk, kk + 1) if a == axis + 1 else (0, n) for a, n in enumerate(g.shape))
        piece = ir.reshape(ir.shrink(g, bounds), shape[:axis] + (o,) + shape[axis + 1:])
        spread = shape[:axis] + ((o - 1) * s + 1,) + shape[axis + 1:]
        piece = _unstride(piece, tuple(s if a == axis else 1 for a in range(len(shape))), spread)
        lo = kk * d
        pads = tuple((lo, shape[axis] - lo - spread[axis]) if a == axis else (0, 0)
                     for a in range(len(shape)))
        piece = ir.pad(piece, pads)
        total = piece if total is None else ir.binary(Op.ADD, total, piece)
    # a kernel of its own: inlined into its consumers, the k shifted reads would be repeated
    # for every element of whatever comes next (a pooling or activation backward)
    return (ir.contiguous(total),)


def _max_rule(node: Node, g: Node):
    a, b = node.src
    tie_half = _mask(ir.binary(Op.CMPEQ, a, b), _mul(g, _c(0.5, g)))
    wins = ir.binary(Op.CMPLT, b, a) if node.op is Op.MAX else ir.binary(Op.CMPLT, a, b)
    loses = ir.binary(Op.CMPLT, a, b) if node.op is Op.MAX else ir.binary(Op.CMPLT, b, a)
    return (ir.binary(Op.ADD, _mask(wins, g), tie_half),
            ir.binary(Op.ADD, _mask(loses, g), tie_half))


def _rmax_rule(node: Node, g: Node):
    (x,) = node.src
    hit = ir.binary(Op.CMPEQ, x, ir.expand(node, x.shape))
    count = ir.reduce(Op.SUM, ir.cast(hit, g.dtype), node.arg)
    share = ir.binary(Op.DIV, g, count)
    return (_mask(hit, ir.expand(share, x.shape)),)


def _pow_rule(node: Node, g: Node):
    a, b = node.src
    da = _mul(g, _mul(b, ir.binary(Op.POW, a, ir.binary(Op.SUB, b, _c(1, b)))))
    db = _mul(g, _mul(node, ir.unary(Op.LOG, a)))
    return da, db


def _gather_rule(node: Node, g: Node):
    """Scatter-add as a one-hot matmul: grad_src[n, :] sums the rows of g picking row n."""
    src, index = node.src
    n_rows, row_len = src.shape
    n_idx = index.numel
    idx = ir.expand(ir.reshape(index, (n_idx, 1)), (n_idx, n_rows))
    rows = ir.expand(ir.reshape(ir.iota(n_rows, index.dtype), (1, n_rows)), (n_idx, n_rows))
    onehot_t = ir.permute(ir.cast(ir.binary(Op.CMPEQ, idx, rows), g.dtype), (1, 0))
    return ir.matmul(onehot_t, ir.reshape(g, (n_idx, row_len))), None


def _prod_rule(node: Node, g: Node):
    """d prod / d x_i is the product of the others; zeros are handled without dividing."""
    (x,) = node.src
    axes = node.arg
    zero = ir.binary(Op.CMPEQ, x, _c(0, x))
    nonzero_prod = ir.reduce(Op.PROD, ir.where(zero, _c(1, x), x), axes)
    zeros = ir.reduce(Op.SUM, ir.cast(zero, x.dtype), axes)
    full = lambda n: ir.expand(n, x.shape)
    no_zero = ir.binary(Op.DIV, full(node), x)
    only_this = _mask(ir.binary(Op.AND, zero, ir.binary(Op.CMPEQ, full(zeros), _c(1, x))),
                      full(nonzero_prod))
    none = ir.binary(Op.CMPEQ, full(zeros), _c(0, x))
    return (_mul(full(g), ir.where(none, no_zero, only_this)),)


RULES = {
    Op.ADD: lambda n, g: (g, g),
    Op.SUB: lambda n, g: (g, _neg(g)),
    Op.MUL: lambda n, g: (_mul(g, n.src[1]), _mul(g, n.src[0])),
    Op.DIV: lambda n, g: (ir.binary(Op.DIV, g, n.src[1]),
                          _neg(ir.binary(Op.DIV, _mul(g, n), n.src[1]))),
    Op.POW: _pow_rule,
    Op.MAX: _max_rule,
    Op.MIN: _max_rule,
    Op.MOD: lambda n, g: (g, _neg(_mul(g, _trunc(ir.binary(Op.DIV, *n.src))))),
    Op.NEG: lambda n, g: (_neg(g),),
    Op.RECIP: lambda n, g: (_neg(_mul(g, _mul(n, n))),),
    Op.SQRT: lambda n, g: (ir.binary(Op.DIV, _mul(g, _c(0.5, g)), n),),
    Op.EXP: lambda n, g: (_mul(g, n),),
    Op.LOG: lambda n, g: (ir.binary(Op.DIV, g, n.src[0]),),
    Op.SIN: lambda n, g: (_mul(g, ir.unary(Op.COS, n.src[0])),),
    Op.COS: lambda n, g: (_neg(_mul(g, ir.unary(Op.SIN, n.src[0]))),),
    Op.TANH: lambda n, g: (_mul(g, ir.binary(Op.SUB, _c(1, n), _mul(n, n))),),
    Op.ABS: lambda n, g: (_mul(g, ir.binary(
        Op.SUB, ir.cast(ir.binary(Op.CMPLT, _c(0, n), n.src[0]), g.dtype),
        ir.cast(ir.binary(Op.CMPLT, n.src[0], _c(0, n)), g.dtype))),),
    Op.FLOOR: lambda n, g: (_c(0, g),),
    Op.CEIL: lambda n, g: (_c(0, g),),
    Op.ROUND: lambda n, g: (_c(0, g),),
    Op.CAST: lambda n, g: (ir.cast(g, n.src[0].dtype) if n.src[0].dtype.is_float else None,),
    Op.WHERE: lambda n, g: (None, _mask(n.src[0], g), ir.where(n.src[0], _c(0, g), g)),
    Op.SUM: lambda n, g: (ir.expand(g, n.src[0].shape),),
    Op.RMAX: _rmax_rule,
    Op.PROD: _prod_rule,
    Op.RESHAPE: lambda n, g: (ir.reshape(g, n.src[0].shape),),
    Op.PERMUTE: lambda n, g: (ir.permute(g, tuple(sorted(range(len(n.arg)), key=n.arg.__getitem__))),),
    Op.EXPAND: lambda n, g: (_sum_to(g, n.src[0].shape),),
    Op.PAD: lambda n, g: (ir.shrink(g, tuple((b, b + s) for (b, _), s in zip(n.arg[0], n.src[0].shape))),),
    Op.SHRINK: lambda n, g: (ir.pad(g, tuple((b, s - e) for (b, e), s in zip(n.arg, n.src[0].shape))),),
    Op.STRIDE: lambda n, g: (_unstride(g, n.arg, n.src[0].shape),),
    Op.WINDOW: _window_rule,
    Op.MATMUL: lambda n, g: (ir.matmul(g, _transpose_last(n.src[1])),
                             ir.matmul(_transpose_last(n.src[0]), g)),
    Op.CONTIGUOUS: lambda n, g: (g,),
    Op.GATHER: _gather_rule,
}

NO_GRADIENT = frozenset({Op.CMPLT, Op.CMPEQ, Op.AND, Op.OR, Op.NOT, Op.DETACH})


def _folded(wrt, seen, targets) -> dict[Node, Node]:
    """Inputs that out's graph skips because a constructor folded a reshape of a reshape (or a
    permute of a permute) into one op over their source: {source: input}."""
    return {w.src[0]: w for w in wrt if w not in seen and w.op in (Op.RESHAPE, Op.PERMUTE)
            and w.src[0] not in targets}


def derive(out: Node, wrt: tuple[Node, ...], grad: Node, given=()) -> list[Node | None]:
    """d out / d wrt[i], contracted with grad (out's shape), for each i; None where out
    does not depend on wrt[i] differentiably. A node listed twice gets its gradient once.
    given: inputs that need no gradient; the walk stops at them as at wrt, and no gradient is
    built for them (a first layer's input gradient would be built and thrown away)."""
    targets = set(wrt)
    stops = targets.union(given) if given else targets
    order = ir.toposort([out], stop=stops.__contains__)
    folded = _folded(wrt, set(order), stops)
    if folded:
        targets |= set(folded)
        stops = stops | set(folded)
        order = ir.toposort([out], stop=stops.__contains__)
    reaches = set()
    for node in order:     # a plain loop: a generator per node costs more than the test
        if node in targets:
            reaches.add(node)
        elif node not in stops:
            for s in node.src:
                if s in reaches:
                    reaches.add(node)
                    break
    grads: dict[Node, Node] = {out: grad} if out in reaches else {}
    for node in reversed(order):
        g = grads.get(node)
        if g is None or node in targets or node.op in NO_GRADIENT or not node.dtype.is_float:
            continue
        for src, sg in zip(node.src, RULES[node.op](node, g)):
            if sg is None or src not in reaches or not src.dtype.is_float:
                continue
            grads[src] = ir.binary(Op.ADD, grads[src], sg) if src in grads else sg
    for src, w in folded.items():
        if src in grads:
            view = ir.reshape if w.op is Op.RESHAPE else ir.permute
            grads[w] = view(grads[src], w.arg)
    result, given = [], set()
    for w in wrt:
        result.append(None if w in given else grads.get(w))
        given.add(w)
    return result
