"""Reverse-mode derivatives of IR graphs: one short rule per primitive op.

The gradient of a graph is itself a graph of ordinary nodes, so backward kernels fuse
exactly like forward ones. Composite ops need no rule of their own: their gradient comes
from the primitives they are made of.
"""
from __future__ import annotations

import math

from . import convolutions, factorizations, ir, special
from . import dtype as dtypes
from .ir import Node
from .ops import Op
from .scans import scan_rule
from .sorting import sort_rule


def _trunc(x: Node) -> Node:
    """x rounded toward zero (fmod(a, b) = a - trunc(a / b) * b)."""
    return (x < 0).where(x.ceil(), x.floor())


def _sum_to(g: Node, shape: tuple[int, ...]) -> Node:
    """Sums g over the axes where shape has size 1 (undoes an expand); zeros when g has no
    elements (an expand to a size-0 dim: no kernel loops over nothing)."""
    if g.numel == 0:
        return ir.const(0, g.dtype, shape)
    return g.sum(tuple(i for i, (a, b) in enumerate(zip(g.shape, shape)) if a != b))


def _transpose_last_order(ndim: int) -> tuple[int, ...]:
    return tuple(range(ndim - 2)) + (ndim - 1, ndim - 2)


def _transpose_last(x: Node) -> Node:
    return x.permute(_transpose_last_order(len(x.shape)))


def _unstride(g: Node, steps: tuple[int, ...], shape: tuple[int, ...]) -> Node:
    """Places g's elements back at every step-th position of shape, zeros between."""
    for axis, (step, n) in enumerate(zip(steps, shape)):
        if step < 0:
            g = g.stride(tuple(-1 if i == axis else 1 for i in range(len(shape))))
            step = -step
        if step == 1:
            continue
        m = g.shape[axis]
        before, after = g.shape[:axis], g.shape[axis + 1:]
        g = g.reshape(before + (m, 1) + after)
        pads = [(0, 0)] * len(g.shape)
        pads[axis + 1] = (0, step - 1)
        g = g.pad(tuple(pads)).reshape(before + (m * step,) + after)
        bounds = [(0, s) for s in g.shape]
        bounds[axis] = (0, n)
        g = g.shrink(tuple(bounds))
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
        piece = g.shrink(bounds).reshape(shape[:axis] + (o,) + shape[axis + 1:])
        spread = shape[:axis] + ((o - 1) * s + 1,) + shape[axis + 1:]
        piece = _unstride(piece, tuple(s if a == axis else 1 for a in range(len(shape))), spread)
        lo = kk * d
        pads = tuple((lo, shape[axis] - lo - spread[axis]) if a == axis else (0, 0)
                     for a in range(len(shape)))
        piece = piece.pad(pads)
        total = piece if total is None else total + piece
    # a kernel of its own: inlined into its consumers, the k shifted reads would be repeated
    # for every element of whatever comes next (a pooling or activation backward)
    return (total.contiguous(),)


def _max_rule(node: Node, g: Node):
    """maximum/minimum as PyTorch's: a tie shares g, a NaN on either side passes g to both
    (neither loses a comparison with it)."""
    a, b = node.src
    a_loses, b_loses = (a < b, b < a) if node.op is Op.MAX else (b < a, a < b)
    # a.eq(b) for one, b.eq(a) for the other: two graphs sharing every node that reads g made
    # the engine's buffer donation give g's buffer to the first while the second still read it
    return (a_loses.where(0, a.eq(b).where(g * 0.5, g)),
            b_loses.where(0, b.eq(a).where(g * 0.5, g)))


def _rmax_rule(node: Node, g: Node):
    """PyTorch's amax rule: g shared evenly among the elements equal to the max, as
    (g / count) * hit, so a row whose max is NaN (count 0) gets NaN everywhere, as there.
    (max() over all dims shares g among the NaNs instead: reductions.max_all builds that.)"""
    (x,) = node.src
    hit = x.eq(node.expand(x.shape))
    count = hit.cast(g.dtype).sum(node.arg)
    return ((g / count).expand(x.shape) * hit.cast(g.dtype),)


def _pow_rule(node: Node, g: Node):
    """PyTorch's masks: no gradient to the base where the exponent is 0 (0 * 0**-1 would be
    NaN), none to the exponent where the base is 0 and the exponent >= 0 (0 * log 0). A
    constant side is decided here, not in the kernel."""
    a, b = node.src
    # PyTorch's x ** 0.5 is sqrt (NaN at -inf, where pow gives inf), in x ** 1.5's rule too
    lower = a.sqrt() if b.op is Op.CONST and b.arg == 1.5 else a ** (b - 1)
    to_base = g * (b * lower)
    if b.op is not Op.CONST:
        to_base = b.eq(0).where(0, to_base)
    elif b.arg == 0:
        to_base = g.const_like(0)
    to_exponent = node * a.log()
    if a.op is not Op.CONST:
        to_exponent = (a.eq(0) & (b >= 0)).where(0, to_exponent)
    elif a.arg == 0:
        to_exponent = (b >= 0).where(0, to_exponent)
    # g times the masked factor, not masked after (PyTorch's pow_backward_exponent): an inf
    # or NaN g gives NaN at a masked 0, where the base's mask gives an exact 0
    return to_base, g * to_exponent


def _tanh_rule(node: Node, g: Node):
    """g (1 - r²), which PyTorch's tanh_backward computes of a 16-bit float's rounded result
    in float32 and rounds once (each step rounded to the type was an ulp off in 2/3)."""
    if not node.dtype.is_16_bit_float:
        return (g * (1 - node * node),)
    r = node.cast(dtypes.float32)
    return ((g.cast(dtypes.float32) * (1 - r * r)).cast(node.dtype),)


def _matmul(a: Node, b: Node) -> Node:
    """a @ b; zeros when the contracted dim is 0 (a product of (M, 0) and (0, N)), which no
    kernel computes: the gradients of a matmul with an empty output."""
    if a.shape[-1] == 0:
        return ir.const(0, a.dtype, a.shape[:-1] + b.shape[-1:])
    return a @ b


def _gather_rule(node: Node, g: Node):
    """grad_src[n, :] sums the rows of g that picked row n: a scatter-add, linear in the
    number of indices. One row's (x[i] read at an index from a buffer) is g where n is the
    index, elementwise: it fuses, as a view's padded gradient does."""
    src, index = node.src
    if index.numel != 1:
        return ir.scatter(index, g, src.shape[0], "add", partials_in_type=bool(node.arg)), None
    rows, length = src.shape
    row = ir.iota(rows, index.dtype).reshape((rows, 1)).expand(src.shape)
    picked = row.eq(index.reshape((1, 1)).expand(src.shape))
    return picked.where(g.reshape((1, length)).expand(src.shape), 0), None


def _scatter_rule(node: Node, g: Node):
    """Each source value of an add (add_to) or replace gets the gradient where it lands; every
    one of duplicates does (PyTorch's scatter and index_put give it to the values that lost too).
    The other modes' gradients are composed where they are recorded (frontend/scatter.py)."""
    if node.arg not in ("add", "add_to", "replace"):
        raise NotImplementedError(f"no gradient rule for a scatter with mode {node.arg!r}")
    return None, g.gather(node.src[0])


def _prod_rule(node: Node, g: Node):
    """PyTorch's: g * prod / x where x has no zero at all, else g times the product of the
    others, which it multiplies out (an inf is not inf / inf = NaN there, and a zero or a NaN
    among the others makes it 0 or NaN). Built here without a division by a special value:
    the product of the others' finite nonzero values times what their zeros, infinities
    and NaNs make of it."""
    (x,) = node.src
    axes = node.arg

    def others(mask: Node) -> Node:
        """How many of the others in x's row hold mask."""
        count = mask.cast(x.dtype)
        return count.sum(axes).expand(x.shape) - count

    zero, nan, inf = x.eq(0), x.ne(x), x.abs().eq(math.inf)
    finite = (zero | nan | inf).where(1, x)
    rest = finite.prod(axes).expand(x.shape) / finite
    zeros, nans, infs = others(zero), others(nan), others(inf)
    one, nan_ = x.const_like(1), x.const_like(math.nan)
    infinity = (others(x.eq(-math.inf)) % 2).eq(1).where(-math.inf, x.const_like(math.inf))
    special = (nans > 0).where(nan_, (zeros > 0).where((infs > 0).where(nan_, 0),
                                                       (infs > 0).where(infinity, one)))
    any_zero = zero.cast(x.dtype).sum(tuple(range(len(x.shape)))).expand(x.shape) > 0
    return (g.expand(x.shape) * any_zero.where(rest * special, node.expand(x.shape) / x),)


def _abs_rule(node: Node, g: Node):
    (x,) = node.src
    return (g * ((0 < x).cast(g.dtype) - (x < 0).cast(g.dtype)),)


def _atan2_rule(node: Node, g: Node):
    """d/dy atan2(y, x) = x / (x² + y²), d/dx = -y / (x² + y²); 0 where x² + y² is 0 (as
    PyTorch's, also where the squares underflow)."""
    y, x = node.src
    squares = y * y + x * x
    recip = squares.eq(0).where(0, squares.recip())
    return (g * x * recip, g * -y * recip)


def _copysign_rule(node: Node, g: Node):
    """±g (the sign copysign gave x), 0 where x is 0; none for the sign's source."""
    x = node.src[0]
    zero = x.eq(0)
    return (g * zero.where(0, node / zero.where(1, x)), None)


def _zero_rule(node: Node, g: Node):
    return (g.const_like(0),)


def _unpad(g: Node, pads, shape: tuple[int, ...]) -> Node:
    """g with the padding cut off: the part the padded source fills."""
    return g.shrink(tuple((b, b + s) for (b, _), s in zip(pads, shape)))


def _permute_rule(n: Node, g: Node):
    """g permuted back. A product's gradient seen transposed (the weight's of x @ w.T, as
    nn.Linear computes) is the product of the transposed operands in the other order: the
    gradient is then computed in the weight's own layout, where an optimizer's update of the
    weight, reading it at its own index, joins the product's kernel."""
    order = ir.inverse_order(n.arg)
    if g.op is Op.MATMUL and order == _transpose_last_order(len(order)):
        a, b = g.src
        return (_transpose_last(b) @ _transpose_last(a),)
    return (g.permute(order),)


RULES = {
    Op.ADD: lambda n, g: (g, g),
    Op.SUB: lambda n, g: (g, -g),
    Op.MUL: lambda n, g: (g * n.src[1], g * n.src[0]),
    # PyTorch's -g * ((a / b) / b): a 16-bit quotient's two steps round as its do
    Op.DIV: lambda n, g: (g / n.src[1], -(g * (n / n.src[1]))),
    Op.POW: _pow_rule,
    Op.MAX: _max_rule,
    Op.MIN: _max_rule,
    Op.MOD: lambda n, g: (g, -(g * _trunc(n.src[0] / n.src[1]))),
    Op.SLOPED: lambda n, g: (g / n.src[1] if n.arg else g * n.src[1], None),
    Op.NEG: lambda n, g: (-g,),
    Op.RECIP: lambda n, g: (-(g * (n * n)),),
    Op.SQRT: lambda n, g: (g * 0.5 / n,),
    Op.EXP: lambda n, g: (g * n,),
    Op.LOG: lambda n, g: (g / n.src[0],),
    Op.SIN: lambda n, g: (g * n.src[0].cos(),),
    Op.COS: lambda n, g: (-(g * n.src[0].sin()),),
    Op.TANH: _tanh_rule,
    Op.ERF: lambda n, g: (g * (2 / math.sqrt(math.pi)) * (-(n.src[0] * n.src[0])).exp(),),
    Op.ERFC: lambda n, g: (-(g * (2 / math.sqrt(math.pi)) * (-(n.src[0] * n.src[0])).exp()),),
    Op.TAN: lambda n, g: (g * (1 + n * n),),
    Op.ASIN: lambda n, g: (g * (1 - n.src[0] * n.src[0]).sqrt().recip(),),
    Op.ACOS: lambda n, g: (-(g * (1 - n.src[0] * n.src[0]).sqrt().recip()),),
    Op.ATAN: lambda n, g: (g / (n.src[0] * n.src[0] + 1),),
    Op.SINH: lambda n, g: (g * ir.unary(Op.COSH, n.src[0]),),
    Op.COSH: lambda n, g: (g * ir.unary(Op.SINH, n.src[0]),),
    Op.ASINH: lambda n, g: (g * (n.src[0] * n.src[0] + 1).sqrt().recip(),),
    Op.ACOSH: lambda n, g: (g * (n.src[0] * n.src[0] - 1).sqrt().recip(),),
    Op.ATANH: lambda n, g: (g / (1 - n.src[0] * n.src[0]),),
    Op.LGAMMA: lambda n, g: (g * special.digamma(n.src[0]),),
    Op.ATAN2: _atan2_rule,
    Op.HYPOT: lambda n, g: (g * n.src[0] / n, g * n.src[1] / n),
    Op.COPYSIGN: _copysign_rule,
    Op.ABS: _abs_rule,
    Op.FLOOR: _zero_rule,
    Op.CEIL: _zero_rule,
    Op.ROUND: _zero_rule,
    Op.CAST: lambda n, g: (g.cast(n.src[0].dtype) if n.src[0].dtype.is_float else None,),
    Op.BITCAST: lambda n, g: (None,),       # reinterpreted bits carry no gradient (PyTorch's)
    Op.WHERE: lambda n, g: (None, n.src[0].where(g, 0), n.src[0].where(0, g)),
    Op.SUM: lambda n, g: (g.expand(n.src[0].shape),),
    Op.RMAX: _rmax_rule,
    Op.PROD: _prod_rule,
    Op.RESHAPE: lambda n, g: (g.reshape(n.src[0].shape),),
    Op.PERMUTE: _permute_rule,
    Op.EXPAND: lambda n, g: (_sum_to(g, n.src[0].shape),),
    Op.PAD: lambda n, g: (_unpad(g, n.arg[0], n.src[0].shape),),
    Op.SHRINK: lambda n, g: (g.pad(tuple((b, s - e) for (b, e), s in zip(n.arg, n.src[0].shape))),),
    Op.STRIDE: lambda n, g: (_unstride(g, n.arg, n.src[0].shape),),
    Op.WINDOW: _window_rule,
    Op.MATMUL: lambda n, g: (_matmul(g, _transpose_last(n.src[1])),
                             _matmul(_transpose_last(n.src[0]), g)),
    # a value kept in a buffer keeps its gradient in one too (a step loop's state: step_slices)
    Op.CONTIGUOUS: lambda n, g: (g.contiguous(),),
    Op.GATHER: _gather_rule,
    Op.SCAN: scan_rule,
    Op.SORT: sort_rule,
    Op.SCATTER: _scatter_rule,
    **factorizations.RULES,
}

NO_GRADIENT = frozenset({Op.CMPLT, Op.CMPEQ, Op.AND, Op.OR, Op.NOT, Op.DETACH})


def _folded(wrt, seen, targets) -> dict[Node, list[tuple[Node, list[Node]]]]:
    """Inputs that out's graph skips because constructors folded views of them into views of
    their sources (a reshape of a reshape is one reshape; a permute undoing a permute is none):
    {the node of out's graph they are views of: [(input, its chain of views down to it)]}."""
    found: dict[Node, list[tuple[Node, list[Node]]]] = {}
    # each input once: where(c, s, s) lists s twice, and its folded reads are one gradient
    for w in dict.fromkeys(wrt):    # w itself may be in the graph too, and read folded elsewhere
        chain, node = [], w
        while node.op in (Op.RESHAPE, Op.PERMUTE) and (node is w or node not in seen):
            chain.append(node)
            node = node.src[0]
        if chain and node in seen and node not in targets:
            found.setdefault(node, []).append((w, chain))
    return found


def _replay_views(g: Node, chain: list[Node]) -> Node:
    """g seen through chain's views, from the innermost out."""
    for view in reversed(chain):
        g = g.reshape(view.arg) if view.op is Op.RESHAPE else g.permute(view.arg)
    return g


def _gradients(node: Node, g: Node, reaches: set):
    """(source, its gradient) pairs by node's rule, or a convolution's (_convolution)."""
    if node.op is Op.MATMUL:
        conv = convolutions.product_of_windows(node)
        if conv is not None:
            return _convolution(conv, g, reaches)
    return zip(node.src, RULES[node.op](node, g))


def _convolution(conv: convolutions.Convolution, g: Node, reaches: set):
    """A convolution's product of windows gives its input gradient straight to the input
    beneath them, as a convolution of g (no product per window slot summed back into place),
    where it can, and its weight gradient with the padding absent (convolutions.py)."""
    cols, weights = conv.product.src
    to_input = conv.input_gradient(g) if cols in reaches else None
    return (to_input or (cols, _matmul(g, _transpose_last(weights))),
            (weights, _matmul(_transpose_last(conv.weight_columns()), g)))


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
        for src, sg in _gradients(node, g, reaches):
            if sg is None or src not in reaches or not src.dtype.is_float:
                continue
            if src.numel == 0:      # no elements, no graph: nothing computes it
                sg = ir.const(0, sg.dtype, src.shape)
            grads[src] = grads[src] + sg if src in grads else sg
    for base, inputs in folded.items():
        # the base's gradient goes to one of the inputs viewing it: which input each read came
        # through is lost with the fold, and views of one value meet again in the frontend's
        # graph (y and y.reshape(3, 1), both of a sum's keepdim node, each given the base's
        # whole gradient counted it twice: fuzz edge seed 7300250)
        if base in grads:
            w, chain = inputs[0]
            g = _replay_views(grads[base], chain)
            grads[w] = grads[w] + g if w in grads else g
    result, given = [], set()
    for w in wrt:
        result.append(None if w in given else grads.get(w))
        given.add(w)
    return result
