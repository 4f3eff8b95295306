"""Activation functions (torch.nn.functional's), written with node operators and recorded under
PyTorch's grad_fn names, so their gradients come from the primitive rules.

Stable at the extremes: where a formula has a branch that overflows (exp of a large x), the
branch that is not taken reads a safe value instead of x, so no inf reaches its gradient
(where's gradient of a branch not taken is zero, and 0 * inf would be NaN). NaN inputs give NaN
outputs, and the comparisons pick PyTorch's branch for them, so the gradients of NaN inputs
are PyTorch's too. log1p and expm1 are composed here: their series near 0, log(1 + y) and
exp(x) - 1 elsewhere.
"""
from __future__ import annotations

import warnings

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend.backward import record
from ..frontend.formula_steps import gradient_steps
from ..frontend.operands import as_float, common_device, from_opmath, normalize_dim, opmath

# ---- node helpers, shared with the losses -------------------------------------------------


def le(a: ir.Node, b) -> ir.Node:
    """a <= b, false where either is NaN (as C's <=)."""
    return (a < b) | a.eq(b)


def ge(a: ir.Node, b) -> ir.Node:
    return (a > b) | a.eq(b)


def is_nan(x: ir.Node) -> ir.Node:
    return x.ne(x)


def _series_cut(x: ir.Node) -> float:
    """Below this |x| the series of log1p and expm1 (six terms) are used: their truncation
    error is then under the dtype's rounding error, and above it log(1 + x) and exp(x) - 1 lose
    at most a few digits of float32's (float64's) seven (sixteen)."""
    return 1e-3 if x.dtype == dt.float64 else 0.05


def log1p(y: ir.Node) -> ir.Node:
    """log(1 + y), accurate near y = 0 (gradient 1 / (1 + y))."""
    small = y.abs() < _series_cut(y)
    s = small.where(y, 0)           # the series reads 0 where it is not used: no inf
    series = s * (1 - s * (1 / 2 - s * (1 / 3 - s * (1 / 4 - s * (1 / 5 - s * (1 / 6))))))
    return small.where(series, (1 + y).log())


def expm1(x: ir.Node) -> ir.Node:
    """exp(x) - 1, accurate near x = 0 (gradient exp(x))."""
    small = x.abs() < _series_cut(x)
    s = small.where(x, 0)
    series = s * (1 + s * (1 / 2 + s * (1 / 6 + s * (1 / 24 + s * (1 / 120 + s * (1 / 720))))))
    return small.where(series, x.exp() - 1)


def _neg_abs(x: ir.Node) -> ir.Node:
    """-|x| whose gradient at 0 is 1 (not abs's 0), so functions of it are smooth at 0."""
    return (x > 0).where(-x, x)


def sigmoid_node(x: ir.Node) -> ir.Node:
    """1 / (1 + exp(-x)) without overflow: exp(-|x|) <= 1 in both branches, so neither the
    value nor the gradient meets an inf (the frontend's sigmoid gives a NaN gradient below -88)."""
    e = _neg_abs(x).exp()
    r = (1 + e).recip()
    return (x > 0).where(r, e * r)


def softplus_node(x: ir.Node) -> ir.Node:
    """log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)), gradient sigmoid(x) (1/2 at 0)."""
    return (x > 0).where(x, 0) + log1p(_neg_abs(x).exp())


# ---- checks and recording -----------------------------------------------------------------

def check_float(op: str, input) -> None:
    if not input.dtype.is_float:
        raise NotImplementedError(f"{op}: not implemented for {input.dtype.name} input of shape "
                                  f"{tuple(input.shape)}; expected a floating point tensor")


def _pointwise(op: str, input, build, inplace: bool = False, float_only: bool = True,
               name: str | None = None, slope=None, flat=None):
    """build(input's node) recorded as op (grad_fn name `name or op`); inplace writes the
    result into input, as PyTorch's `op_` does. slope(x), when given, is PyTorch's derivative
    formula: the gradient is g * slope(x), one product, where the derivative of a value
    built of several terms would multiply g into each (an infinite g then meets terms of
    both signs: NaN, where PyTorch's is ±inf). flat(x), with slope, is where PyTorch selects a
    gradient of 0 rather than multiplying g by a slope of 0 (an infinite g gives 0 there,
    not NaN)."""
    if float_only:
        check_float(op, input)
    src = input._snapshot() if inplace else input
    node = src.node
    x = opmath(node)
    derivation = None if slope is None else ir.sloped(x, slope(x))
    if flat is not None:
        derivation = flat(x).where(x.const_like(0), derivation)
    derivation = None if derivation is None else from_opmath(derivation, node)
    out = record(name or op, from_opmath(build(x), node), src.device, [src],
                 derivation=derivation)
    return input._assign(out, op + "_") if inplace else out


def _plain_sigmoid(x: ir.Node) -> ir.Node:
    """1 / (1 + exp(-x)), as PyTorch's backward formulas take it: exactly 0 and 1 far out."""
    return (1 + (-x).exp()).recip()


# ---- activations --------------------------------------------------------------------------

def silu(input, inplace: bool = False):
    def slope(x):
        s = _plain_sigmoid(x)
        return s * (1 + x * (1 - s))
    return _pointwise("silu", input, lambda x: x * sigmoid_node(x), inplace, slope=slope)


def mish(input, inplace: bool = False):
    def tanh_softplus(x):
        # tanh is 1 in float32 above 9 (float64: 19); read no further, as a device whose tanh
        # is an ulp short of 1 at 1e4 would give a gradient of x * (1 - tanh^2), not 0 (inf
        # still reads inf: its gradient is NaN, as PyTorch's)
        sp = softplus_node(x)
        return (ge(sp, 20) & (sp < float("inf"))).where(sp.const_like(20), sp).tanh()

    def slope(x):
        t = tanh_softplus(x)
        return t + x * _plain_sigmoid(x) * (1 - t * t)
    return _pointwise("mish", input, lambda x: x * tanh_softplus(x), inplace, slope=slope)


def leaky_relu(input, negative_slope: float = 0.01, inplace: bool = False):
    return _pointwise("leaky_relu", input,
                      lambda x: (x > 0).where(x, x * negative_slope), inplace)


def _elu(op: str, input, alpha: float, scale: float, input_scale: float, inplace: bool, name):
    def build(x):
        neg = le(x, 0)
        xn = neg.where(x, 0)            # the exp branch never reads a large x
        return neg.where(expm1(xn * input_scale) * (alpha * scale), x * scale)

    def slope(x):
        neg = le(x, 0)
        return neg.where((neg.where(x, 0) * input_scale).exp() * (alpha * scale * input_scale),
                         x.const_like(scale))
    return _pointwise(op, input, build, inplace, name=name, slope=slope)


def elu(input, alpha: float = 1.0, inplace: bool = False):
    return _elu("elu", input, alpha, 1.0, 1.0, inplace, "elu")


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input, inplace: bool = False):
    return _elu("selu", input, _SELU_ALPHA, _SELU_SCALE, 1.0, inplace, "elu")


def celu(input, alpha: float = 1.0, inplace: bool = False):
    if alpha == 0:
        raise RuntimeError("celu: ZeroDivisionError: alpha cannot be 0 for CELU")
    return _elu("celu", input, alpha, 1.0, 1.0 / alpha, inplace, "celu")


def hardtanh(input, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False):
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val cannot be greater than max_val, got min_val="
                         f"{min_val} and max_val={max_val}")

    def build(x):
        # at the bounds the gradient is 0, as PyTorch's; a NaN passes (with gradient 1)
        return le(x, min_val).where(x.const_like(min_val),
                                    ge(x, max_val).where(x.const_like(max_val), x))
    return _pointwise("hardtanh", input, build, inplace, float_only=False)


def relu6(input, inplace: bool = False):
    return hardtanh(input, 0.0, 6.0, inplace)


def hardswish(input, inplace: bool = False):
    def build(x):
        # x * 0 below -3: -inf gives NaN as in PyTorch (x * relu6(x + 3) / 6); the middle
        # branch reads 0 outside (-3, 3), so an infinite x does not reach its gradient
        xm = ((x > -3) & (x < 3)).where(x, 0)
        return le(x, -3).where(x * 0, (x < 3).where(xm * (xm + 3) / 6, x))

    def slope(x):
        return le(x, -3).where(0, (x < 3).where(x / 3 + 0.5, 1))
    return _pointwise("hardswish", input, build, inplace, slope=slope,
                      flat=lambda x: le(x, -3))


def hardsigmoid(input, inplace: bool = False):
    def build(x):
        inside = (x > -3) & (x < 3)
        outside = le(x, -3).where(x.const_like(0), ge(x, 3).where(x.const_like(1), x))
        return inside.where((x + 3) / 6, outside.detach())   # NaN: NaN, gradient 0
    return _pointwise("hardsigmoid", input, build, inplace)


def softplus(input, beta: float = 1.0, threshold: float = 20.0):
    def build(x):
        bx = x * beta
        return (bx > threshold).where(x, softplus_node(bx) / beta)

    def slope(x):
        bx = x * beta
        z = bx.exp()
        return (bx > threshold).where(1, z / (z + 1))
    return _pointwise("softplus", input, build, slope=slope)


def softsign(input):
    """x / (|x| + 1), as PyTorch's composite: its gradient DivBackward0's, g / d to x and
    -g ((x / d) / d) through |x|, each step in x's dtype."""
    x = as_float(input.node)
    d = x.abs() + 1
    out = x / d
    derivation = (gradient_steps(x, [(Op.DIV, d)], x.dtype)
                  + gradient_steps(x.abs(), [(Op.MUL, -(out / d))], x.dtype))
    return record("div", out, input.device, [input], derivation=derivation)


def logsigmoid(input):
    def slope(x):
        negative = x < 0
        # PyTorch's backward reads exp(-|x|) from the buffer its forward wrote, in x's dtype
        z = (-x.abs()).exp().cast(input.dtype).cast(x.dtype)
        sign = negative.where(x.const_like(1), x.const_like(-1))
        return negative.cast(x.dtype) - sign * (z / (1 + z))
    return _pointwise("logsigmoid", input, lambda x: -softplus_node(-x), name="log_sigmoid",
                      slope=slope)


def tanhshrink(input):
    x = as_float(input.node)
    return record("sub", x - x.tanh(), input.device, [input])


def threshold(input, threshold: float, value: float, inplace: bool = False):
    return _pointwise("threshold", input,
                      lambda x: le(x, threshold).where(x.const_like(value), x), inplace,
                      float_only=False)


_threshold = threshold      # for threshold_, whose parameter takes the name


def hardshrink(input, lambd: float = 0.5):
    return _pointwise("hardshrink", input,
                      lambda x: (ge(x, -lambd) & le(x, lambd)).where(x.const_like(0), x))


def softshrink(input, lambd: float = 0.5):
    if lambd < 0:
        raise RuntimeError(f"softshrink: lambda must be greater or equal to 0, but found to be "
                           f"{lambd}")

    def build(x):
        middle = is_nan(x).where(x, 0)
        return (x > lambd).where(x - lambd, (x < -lambd).where(x + lambd, middle))
    return _pointwise("softshrink", input, build)


def prelu(input, weight):
    """x where x > 0, else weight * x; weight has one element or one per channel (dim 1)."""
    device = common_device("prelu", [input, weight])
    check_float("prelu", input)
    if weight.ndim > 1:
        raise RuntimeError(f"prelu: Expected `weight` to be a scalar or 1D tensor, but got: "
                           f"ndim = {weight.ndim}")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"prelu: Type promoting not supported. Got {input.dtype.name} input "
                           f"and {weight.dtype.name} weight")
    x = input.node
    if weight.numel() == 1:
        w = weight.node.reshape((1,) * input.ndim).expand(x.shape) if input.ndim else \
            weight.node.reshape(())
    else:
        channels = input.shape[1] if input.ndim > 1 else 1
        if input.ndim == 0 or channels != weight.numel():
            raise RuntimeError(f"prelu: Mismatch of parameter numbers and input channel size. "
                               f"Found parameter numbers = {weight.numel()} and channel size = "
                               f"{channels} (input of shape {tuple(input.shape)})")
        shape = (1, channels) + (1,) * (input.ndim - 2)
        w = weight.node.reshape(shape).expand(x.shape)
    return record("prelu", (x > 0).where(x, w * x), device, [input, weight])


def glu(input, dim: int = -1):
    check_float("glu", input)
    if input.ndim == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    axis = normalize_dim("glu", dim, input.ndim)
    size = input.shape[axis]
    if size % 2:
        raise RuntimeError(f"glu: Halving dimension must be even, but dimension {axis} is size "
                           f"{size} (input of shape {tuple(input.shape)})")
    x = input.node

    def half(k):
        return x.shrink(tuple((k * size // 2, (k + 1) * size // 2) if a == axis else (0, n)
                              for a, n in enumerate(x.shape)))
    a, b = half(0), half(1)
    # PyTorch's backward: sigmoid(b) into a buffer of the type, then g * s and, in float32 for
    # a 16-bit float, (1 - s) * s * a * g, each rounded once
    s = from_opmath(_plain_sigmoid(opmath(b)), b)
    wide_s = opmath(s)
    derivation = (gradient_steps(a, [(Op.MUL, s)], a.dtype)
                  + gradient_steps(b, [(Op.MUL, (1 - wide_s) * wide_s * opmath(a))], b.dtype))
    # (a 16-bit float's product in float32, rounded once, as PyTorch's)
    value = from_opmath(opmath(a) * sigmoid_node(opmath(b)), x)
    return record("glu", value, input.device, [input], derivation=derivation)


def softmin(input, dim=None, _stacklevel: int = 3, dtype=None):
    x = input if dtype is None else input.to(dtype)
    if dim is None:
        dim = 0 if input.ndim in (0, 1, 3) else 1
    return (-x).softmax(dim)


def rrelu(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False,
          inplace: bool = False):
    """leaky_relu whose negative slope is drawn uniformly from [lower, upper) per element in
    training, and is their mean otherwise."""
    def build(x):
        if not training:        # leaky_relu's branches, as PyTorch's
            return (x > 0).where(x, x * ((lower + upper) / 2))
        from ..frontend.creation import rand
        u = rand(*x.shape, device=input.device).node.cast(x.dtype)
        slope = (u * (upper - lower) + lower).detach()
        return le(x, 0).where(x * slope, x)
    return _pointwise("rrelu", input, build, inplace)


def gumbel_softmax(logits, tau: float = 1, hard: bool = False, eps: float = 1e-10,
                   dim: int = -1):
    """softmax((logits + g) / tau) for Gumbel(0, 1) noise g; hard: the one-hot of its argmax
    in the forward pass, the soft sample's gradient (straight through)."""
    if eps != 1e-10:
        warnings.warn("gumbel_softmax: `eps` parameter is deprecated and has no effect.",
                      UserWarning, stacklevel=2)
    from ..frontend.creation import arange, rand
    axis = normalize_dim("gumbel_softmax", dim, logits.ndim)
    u = rand(*logits.shape, device=logits.device)
    exponential = -(1 - u).log()                    # in [0, inf): 0 gives a -inf Gumbel
    gumbels = -(exponential.log())
    if logits.dtype.is_float and logits.dtype != gumbels.dtype:
        gumbels = gumbels.to(logits.dtype)
    y_soft = ((logits + gumbels) / tau).softmax(axis)
    if not hard:
        return y_soft
    index = y_soft.argmax(axis, keepdim=True)
    shape = tuple(logits.shape[axis] if a == axis else 1 for a in range(logits.ndim))
    positions = arange(logits.shape[axis], device=logits.device).reshape(*shape)
    y_hard = (positions == index).to(y_soft.dtype)
    return y_hard - y_soft.detach() + y_soft


# the in-place forms torch.nn.functional has

def elu_(input, alpha: float = 1.0):
    return elu(input, alpha, inplace=True)


def selu_(input):
    return selu(input, inplace=True)


def celu_(input, alpha: float = 1.0):
    return celu(input, alpha, inplace=True)


def leaky_relu_(input, negative_slope: float = 0.01):
    return leaky_relu(input, negative_slope, inplace=True)


def hardtanh_(input, min_val: float = -1.0, max_val: float = 1.0):
    return hardtanh(input, min_val, max_val, inplace=True)


def threshold_(input, threshold: float, value: float):
    return _threshold(input, threshold, value, inplace=True)


def rrelu_(input, lower: float = 1.0 / 8, upper: float = 1.0 / 3, training: bool = False):
    return rrelu(input, lower, upper, training, inplace=True)


__all__ = ["silu", "mish", "leaky_relu", "elu", "selu", "celu", "hardtanh", "relu6", "hardswish",
           "hardsigmoid", "softplus", "softsign", "logsigmoid", "tanhshrink", "threshold",
           "hardshrink", "softshrink", "prelu", "glu", "softmin", "rrelu", "gumbel_softmax",
           "elu_", "selu_", "celu_", "leaky_relu_", "hardtanh_", "threshold_", "rrelu_"]
