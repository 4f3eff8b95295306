"""Elementwise math beyond the basics: the trigonometric and hyperbolic family and its
inverses (C builtins, primitives of the IR), and functions composed of primitives (logaddexp,
xlogy, sinc, logit, fmax, copysign, ...), a float's parts (frexp), the integers' gcd and lcm,
with PyTorch's numpy-style aliases (arcsin, ...) and in-place forms. Installed on Tensor by
tensor.py from METHODS."""
from __future__ import annotations

import math
from collections import namedtuple

from ..compiler import dtype as dt
from ..compiler import ir, special
from ..compiler.ops import Op
from . import elementwise as ew
from .backward import record
from .formula_steps import gradient_steps
from . import special_arguments
from .composite_methods import _in_place
from .no_derivative import record_without_derivative
from .operands import as_float, from_opmath, is_tensor, opmath

_LN2 = math.log(2.0)

# name: the C builtin it is; integer inputs are computed in float32, as in PyTorch
_BUILTINS = {"tan": Op.TAN, "asin": Op.ASIN, "acos": Op.ACOS, "atan": Op.ATAN, "sinh": Op.SINH,
             "cosh": Op.COSH, "atanh": Op.ATANH}


def _builtin(name: str, op: Op):
    return lambda self: ew.unary(name, op, self)


def erf_slope(x: ir.Node, sign: float = 1.0) -> ir.Node:
    """PyTorch's derivative of erf (of erfc with sign -1), ±2 / sqrt(pi) * exp(-(x²)), each
    step in x's dtype (the number whole: a 16-bit float's product by it rounded once)."""
    return from_opmath(opmath((-(x * x)).exp()) * (sign * 2 / math.sqrt(math.pi)), x)


# name: (the C builtin it is, PyTorch's derivative of it, each step in x's dtype)
_DIFFERENTIATED = {
    "erf": (Op.ERF, erf_slope), "erfc": (Op.ERFC, lambda x: erf_slope(x, -1.0)),
    "asinh": (Op.ASINH, lambda x: ew.rsqrt_node(x * x + 1)),
    "acosh": (Op.ACOSH, lambda x: ew.rsqrt_node(x * x - 1)),
    "lgamma": (Op.LGAMMA, lambda x: from_opmath(special.digamma(opmath(x)), x)),
}


def _differentiated(name: str, op: Op, slope):
    """A C builtin whose gradient is PyTorch's formula, g times slope(x), which a 16-bit float
    computes step by step in its type (the builtin's rule would round elsewhere)."""
    def method(self):
        given = as_float(self.node)
        return record(name, ir.unary(op, given), self.device, [self],
                      derivation=gradient_steps(given, [(Op.MUL, slope(given))], given.dtype))
    method.__name__ = name
    return method


def _require_float(name: str, *values) -> None:
    """PyTorch's CPU kernels of some float functions take no integer tensors."""
    for v in values:
        if is_tensor(v) and not v.dtype.is_float:
            raise NotImplementedError(f'"{name}" not implemented for {v.dtype.name} '
                                      f"(a tensor of shape {v.shape}); pass a float tensor")


def atan2(self, other):
    """The angle of the point (other, self), in (-pi, pi]."""
    return ew.binary("atan2", Op.ATAN2, self, other, float_only=True, derive=_atan2_formula)


def _atan2_formula(y, x, ny: ir.Node, nx: ir.Node) -> ir.Node | None:
    """PyTorch's gradient of atan2 where a 16-bit input meets a wider one: g * x * recip and
    g * -y * recip, recip = 1 / (y * y + x * x) with each input squared in its own type (its
    saved tensor's), so rounded to a 16-bit one. The IR's rule squares both in the op's type:
    a bfloat16 ulp of the square, which shows where the two gradients nearly cancel (edge
    seed 101301390: atan2(x, x.bfloat16())). None where both share the op's type."""
    owns = [v.dtype if is_tensor(v) else ny.dtype for v in (y, x)]
    if not any(own.is_16_bit_float and own != ny.dtype for own in owns):
        return None
    # (a 16-bit float's square is exact in float32, then rounded to its type as PyTorch's)
    squares = [(v * v).cast(own).cast(v.dtype) for v, own in zip((ny, nx), owns)]
    total = squares[0] + squares[1]
    recip = total.eq(0).where(0, total.recip())
    return (gradient_steps(ny, [(Op.MUL, nx), (Op.MUL, recip)], ny.dtype)
            + gradient_steps(nx, [(Op.MUL, -ny), (Op.MUL, recip)], nx.dtype))


def hypot(self, other):
    """sqrt(self² + other²) without overflow or underflow in between."""
    _require_float("hypot", self, other)
    return ew.binary("hypot", Op.HYPOT, self, other)


def copysign(self, other):
    """|self| with the sign bit of other (-0.0 and -nan count as negative)."""
    return ew.binary("copysign", Op.COPYSIGN, self, other, float_only=True)


def nextafter(self, other):
    """The next float after self toward other. Its gradient is PyTorch's: g to self, zeros
    to other."""
    _require_float("nextafter", self, other)
    tensors, device, x, y = ew.operands("nextafter", self, other)
    return record("nextafter", ir.binary(Op.NEXTAFTER, x, y), device, tensors,
                  derivation=ew.zero_gradient(x, y))


def signbit(self):
    """Whether the sign bit is set: true for -0.0, as C's signbit."""
    from .tensor import Tensor
    node = self.node
    if node.dtype.is_float:
        negative = ir.binary(Op.COPYSIGN, node.const_like(1), node) < 0
    else:
        negative = node < node.const_like(0)
    return Tensor(negative, self.device)


def positive(self):
    if self.dtype == dt.bool_:
        raise RuntimeError("positive: the `+` operator, on a bool tensor is not supported")
    return self


def digamma(self):
    """ψ(x), its gradient PyTorch's g ψ'(x) (the series' own derivative is 0 at the poles); a
    16-bit float's in float32, ψ'(x) rounded to it and then its product, as PyTorch's."""
    given = as_float(self.node)
    x = opmath(given)
    slope = from_opmath(special.trigamma(x), given)
    return record("digamma", from_opmath(special.digamma(x), given), self.device, [self],
                  derivation=gradient_steps(given, [(Op.MUL, slope)], given.dtype))


# Giles' single-precision erfinv ("Approximating the erfinv function", 2010): polynomials in
# w = -log(1 - x²) - 2.5 (central) and sqrt(w) - 3 (tails, w >= 5), highest degree first
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAILS = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                 0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def erfinv(self):
    """The inverse of erf on [-1, 1] (±inf at ±1, NaN beyond), Giles' approximation; a 16-bit
    float's in float32, rounded once, as PyTorch's. The gradient is PyTorch's formula,
    sqrt(pi)/2 exp(r²) g of the result r (the polynomial's own derivative is less accurate),
    a 16-bit float's each step rounded: infinite at ±1."""
    given = as_float(self.node)
    x = opmath(given)
    w = -((1 - x) * (1 + x)).log()
    tails = w >= 5
    t = tails.where(w.sqrt() - 3, w - 2.5)
    y = tails.where(special.polynomial(_ERFINV_TAILS, t),
                    special.polynomial(_ERFINV_CENTRAL, t)) * x
    out = from_opmath(x.abs().eq(1).where(x * math.inf, y), given)
    slope = from_opmath(opmath((out * out).exp()) * (math.sqrt(math.pi) / 2), given)
    return record("erfinv", out, self.device, [self],
                  derivation=gradient_steps(given, [(Op.MUL, slope)], given.dtype))


def _scaled(name: str, factor: float):
    return lambda self: record(name, as_float(self.node) * factor, self.device, [self])


def sinc(self):
    """sin(pi x) / (pi x), 1 at 0 (gradient 0 there: the other branch divides by 1); a
    16-bit float's in float32, rounded once, as PyTorch's."""
    given = as_float(self.node)
    x = opmath(given)
    zero = x.eq(0)
    px = zero.where(1, x * math.pi)
    derivation = _sinc_steps(given) if given.dtype.is_16_bit_float else _sinc_derivation(x, px)
    return record("sinc", from_opmath(zero.where(1, px.sin() / px), given), self.device, [self],
                  derivation=derivation)


def _sinc_derivation(x: ir.Node, px: ir.Node) -> ir.Node:
    """sinc's derivation for a float32 or float64 x (px: pi x, 1 where x is 0): PyTorch's
    derivative, (πx cos πx - sin πx) / (πx²); below |πx| = 1e-3, where its difference
    cancels (to ±1e14 at 1e-30, the quotient's own derivative too), its series
    π (-πx/3 + (πx)³/30 - (πx)^5/840)."""
    tiny = px.abs() < 1e-3
    near = px * px
    series = math.pi * px * (-1 / 3 + near * (1 / 30 - near / 840))
    slope = tiny.where(series, (px * px.cos() - px.sin()) / (px * tiny.where(1, x)))
    # where π x² is 0, PyTorch selects a gradient of 0 (whatever flows in: inf too)
    flat = (x * x * math.pi).eq(0)
    return flat.where(x.const_like(0), ir.sloped(x, flat.where(0, slope)))


def _sinc_steps(x: ir.Node) -> ir.Node:
    """sinc's derivation for a 16-bit float: PyTorch's formula, its cancellation near 0
    and all, each step rounded to the type (πx, πx², the difference and the quotient, then
    times g), and 0 where πx² is."""
    px = from_opmath(opmath(x) * math.pi, x)
    squared = from_opmath(opmath(x * x) * math.pi, x)
    flat = squared.eq(0)
    slope = flat.where(0, (px * px.cos() - px.sin()) / squared)
    return flat.where(x.const_like(0), gradient_steps(x, [(Op.MUL, slope)], x.dtype))


def _log_add_exp(name: str, a, b, scale: float):
    """log(exp(a) + exp(b)) (in base 2 with scale ln 2): the larger plus log(1 + exp(-|a-b|)),
    which cannot overflow; equal infinities are themselves. The gradients are PyTorch's,
    g / (1 + exp(b - a)) to a, one product each (the value's own derivative meets an
    infinite g in terms of both signs: NaN)."""
    _require_float(name, a, b)
    tensors, device, na, nb = ew.operands(name, a, b, float_only=True)
    top = ir.binary(Op.MAX, na, nb)
    rest = (1 + (-(na - nb).abs() * scale).exp()).log() * (1 / scale)
    same_inf = na.eq(nb) & (na.abs().eq(math.inf))
    derivation = (ir.sloped(na, (1 + ((nb - na) * scale).exp()).recip())
                  + ir.sloped(nb, (1 + ((na - nb) * scale).exp()).recip()))
    return record(name, same_inf.where(na, top + rest), device, tensors, derivation=derivation)


def logaddexp(self, other):
    return _log_add_exp("logaddexp", self, other, 1.0)


def logaddexp2(self, other):
    return _log_add_exp("logaddexp2", self, other, _LN2)


def logit(self, eps: float | None = None):
    """log(p / (1 - p)), each step in p's dtype, as PyTorch's kernel; with eps, p is clamped
    to [eps, 1 - eps] first (eps and 1 - eps in p's dtype). Its gradient is PyTorch's
    formula, g / (p (1 - p)) each step in the dtype, and outside the bounds NaN without eps,
    0 with it. (A NaN p's is NaN, as PyTorch's scalar code gives it; its vector code's
    test selects 0 there with eps.)"""
    p = as_float(self.node)
    x = p
    lo, hi = p.const_like(0), p.const_like(1)
    if eps is not None:
        lo = p.const_like(eps)
        hi = 1 - lo
        x = (p < lo).where(lo, (hi < p).where(hi, p))
    outside = (p < lo) | (hi < p)
    # outside, g / NaN is NaN whatever g is; with eps, 0 is selected there, and g / 1 keeps
    # that 0 from being 0 / 0
    spread = outside.where(math.nan if eps is None else 1, p * (1 - p))
    derivation = gradient_steps(p, [(Op.DIV, spread)], p.dtype)
    if eps is not None:
        derivation = outside.where(p.const_like(0), derivation)
    return record("logit", (x / (1 - x)).log(), self.device, [self], derivation=derivation)


def _x_log(name: str, log, lowest: float, self, other):
    """self * log(other) (log or log1p), 0 where self is 0 and NaN where other is, as
    PyTorch's kernel computes it: a 16-bit float's log rounded to the type, then the
    product. Its gradients are PyTorch's formulas, each step in the type: xlogy(g, other)
    for self (0 where self is 0 and other is at or below the log's pole, lowest), and
    (g * self) / (other - lowest) for other."""
    tensors, device, x, y = ew.operands(name, self, other, float_only=True)
    logged = from_opmath(log(opmath(y)), y)
    value = y.ne(y).where(y, x.eq(0).where(0, x * logged))
    dropped = x.eq(0) & (y <= lowest)
    # (each product and quotient of g a node of the type, rounded: no float32 node where
    # the two gradients of xlogy(t, t) would meet and add before rounding)
    derivation = (ir.sloped(x, dropped.where(0, logged))
                  + ir.sloped(ir.sloped(y, y - lowest, divides=True), x))
    return record(special_arguments.variant(name, self, other), value, device, tensors,
                  derivation=derivation)


def xlogy(self, other):
    """self * log(other), 0 where self is 0 (unless other is NaN)."""
    return _x_log("xlogy", lambda y: y.log(), 0.0, self, other)


def xlog1py(self, other):
    """torch.special.xlog1py: self * log1p(other), 0 where self is 0 (unless other is NaN)."""
    special_arguments.binary("xlog1py", self, other)
    return _x_log("special_xlog1py", special.log1p, -1.0, self, other)


def entr(input):
    """torch.special.entr: -x log(x) for x > 0, 0 at 0, -inf below; the gradient is
    PyTorch's, -(1 + log(x))."""
    given = special_arguments.unary("entr", input, half=True)
    x = opmath(given)
    below = x.eq(0).where(x.const_like(0), -math.inf)
    value = x.ne(x).where(x, (x > 0).where(-x * x.log(), below))
    return record("special_entr", from_opmath(value, given), input.device, [input],
                  derivation=from_opmath(ir.sloped(x, -(1 + x.log())), given))


def fmax(self, other):
    """The larger, a NaN only where both are NaN; ties and NaNs give the gradient to self
    where it is chosen, as PyTorch."""
    return _nan_ignoring("fmax", self, other, lambda a, b: b <= a)


def fmin(self, other):
    return _nan_ignoring("fmin", self, other, lambda a, b: a <= b)


def _nan_ignoring(name: str, a, b, keeps_a):
    tensors, device, na, nb = ew.operands(name, a, b)
    keep = keeps_a(na, nb)
    if na.dtype.is_float:
        keep = keep | nb.ne(nb)
    return record(name, keep.where(na, nb), device, tensors)


def heaviside(self, values):
    """0 below 0, 1 above, values at 0. PyTorch has no derivative for it: backward raises."""
    if is_tensor(values) and values.dtype != self.dtype:
        raise RuntimeError(f"heaviside is not yet implemented for tensors with different dtypes "
                           f"({self.dtype.name} and {values.dtype.name})")
    tensors, device, x, v = ew.operands("heaviside", self, values)
    return record_without_derivative("heaviside", x.eq(0).where(v, (x > 0).cast(x.dtype)),
                                     device, tensors)


def float_power(self, exponent):
    """pow computed in float64."""
    base = ew.cast(self, dt.float64) if is_tensor(self) else float(self)
    if is_tensor(exponent):
        exponent = ew.cast(exponent, dt.float64)
    return ew.power(base, exponent if is_tensor(exponent) else float(exponent))


def float_power_(self, exponent):
    """In place, which needs self to be float64 already, as in PyTorch."""
    if self.dtype != dt.float64:
        raise RuntimeError(f"float_power_: the base given to float_power_ has dtype "
                           f"{self.dtype.name} but the operation's result requires dtype float64")
    return _in_place("float_power")(self, exponent)


def ldexp(self, other):
    """self * 2 ** other."""
    tensors, device, x, n = ew.operands("ldexp", self, other, float_only=True)
    return record("ldexp", x * (n.const_like(2) ** n), device, tensors)


FrexpResult = namedtuple("frexp", ["mantissa", "exponent"])

# per float dtype: the integer of its size, its mantissa bits and its exponent bias
_FLOAT_BITS = {dt.float32: (dt.int32, 23, 127), dt.float64: (dt.int64, 52, 1023)}


def frexp(self):
    """(mantissa, exponent) with self = mantissa * 2 ** exponent, 0.5 <= |mantissa| < 1
    (0, inf and NaN keep their value with exponent 0). The exponent is read from the bits;
    the mantissa is self times two exact powers of two, so its gradient is 2 ** -exponent,
    PyTorch's. 16-bit floats are taken apart in float32, which holds them exactly."""
    if not self.dtype.is_float:
        raise RuntimeError(f"torch.frexp() only supports floating-point dtypes, got "
                           f"{self.dtype.name}")
    from .tensor import Tensor
    x = self.node if self.dtype in _FLOAT_BITS else self.node.cast(dt.float32)
    ints, mantissa_bits, bias = _FLOAT_BITS[x.dtype]
    unit = 2 ** mantissa_bits
    a = x.detach().abs()
    subnormal = a.bitcast(ints) < unit
    scaled = subnormal.where(a * float(2 * unit), a)        # subnormals made normal, exactly
    field = scaled.bitcast(ints) / unit
    exponent = field - (bias - 1) - subnormal.where(field.const_like(mantissa_bits + 1), 0)
    exponent = (a.eq(0) | field.eq(2 * bias + 1)).where(0, exponent)    # 0, inf, NaN
    half = -exponent / 2

    def power_of_two(k: ir.Node) -> ir.Node:
        return ((k + bias) * unit).bitcast(x.dtype)
    mantissa = (x * power_of_two(half) * power_of_two(-exponent - half)).cast(self.dtype)
    return FrexpResult(record("frexp", mantissa, self.device, [self]),
                       Tensor(exponent.cast(dt.int32), self.device))


def _integers_only(name: str, tensors) -> None:
    for t in tensors:
        if t.dtype.is_float or t.dtype == dt.bool_:
            raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                      f"'{t.dtype.name.title()}' (gcd and lcm take integers)")


def _gcd_nodes(a: ir.Node, b: ir.Node) -> ir.Node:
    """Euclid's algorithm on |a| and |b|, unrolled for the longest run of the dtype (two
    consecutive Fibonacci numbers take the most steps)."""
    largest = 2 ** (8 * a.dtype.itemsize - (a.dtype.kind == "i"))
    steps, fib = 1, (1, 2)
    while fib[1] < largest:
        steps, fib = steps + 1, (fib[1], fib[0] + fib[1])
    a, b = a.abs(), b.abs()
    for _ in range(steps):
        nonzero = a.ne(0)
        a, b = b % nonzero.where(a, 1), nonzero.where(a, b)
    return b


def gcd(self, other):
    tensors, device, a, b = ew.operands("gcd", self, other)
    _integers_only("gcd", tensors)
    return record("gcd", _gcd_nodes(a, b), device, tensors)


def lcm(self, other):
    tensors, device, a, b = ew.operands("lcm", self, other)
    _integers_only("lcm", tensors)
    g = _gcd_nodes(a, b)
    return record("lcm", g.eq(0).where(0, (a / g.eq(0).where(1, g) * b).abs()), device, tensors)


_ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
            "arccosh": "acosh", "arctanh": "atanh", "arctan2": "atan2", "sgn": "sign"}

_FUNCTIONS = {
    "atan2": atan2, "hypot": hypot, "copysign": copysign, "nextafter": nextafter,
    "signbit": signbit, "positive": positive, "digamma": digamma, "erfinv": erfinv,
    "deg2rad": _scaled("deg2rad", math.pi / 180), "rad2deg": _scaled("rad2deg", 180 / math.pi),
    "sinc": sinc, "logaddexp": logaddexp, "logaddexp2": logaddexp2, "logit": logit,
    "xlogy": xlogy, "fmax": fmax, "fmin": fmin, "heaviside": heaviside,
    "float_power": float_power, "ldexp": ldexp, "frexp": frexp, "gcd": gcd, "lcm": lcm,
}

IN_PLACE = (*_BUILTINS, *_DIFFERENTIATED, *_ALIASES, "atan2", "hypot", "copysign", "deg2rad",
            "rad2deg", "sinc", "logit", "xlogy", "heaviside", "ldexp", "digamma", "erfinv",
            "nextafter", "gcd", "lcm")

METHODS = ([(name, _builtin(name, op)) for name, op in _BUILTINS.items()]
           + [(name, _differentiated(name, op, slope))
              for name, (op, slope) in _DIFFERENTIATED.items()]
           + list(_FUNCTIONS.items())
           + [(alias, lambda self, *a, _to=to, **k: getattr(self, _to)(*a, **k))
              for alias, to in _ALIASES.items()]
           + [(f"{name}_", _in_place(name)) for name in IN_PLACE]
           + [("float_power_", float_power_)])
