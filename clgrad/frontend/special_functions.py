"""Special functions written with primitives as PyTorch's CPU kernels compute them (Cephes'
series and recurrences): the modified Bessel functions i0, i0e, i1, i1e, the Hurwitz zeta
function, polygamma (digamma, trigamma, then zeta) and mvlgamma. Their gradients are
PyTorch's formulas (ir.sloped), zeta's in its second argument only. Installed on Tensor by
tensor.py from METHODS (i0, polygamma, mvlgamma: the others are torch.special's alone)."""
from __future__ import annotations

import math

from ..compiler import ir, special
from ..compiler.ir import Node
from ..compiler.ops import Op
from .backward import record
from .formula_steps import gradient_steps
from .composite_methods import _in_place
from ..compiler import dtype as dt
from . import special_arguments
from .no_derivative import OneSidedBackward
from .operands import as_float, from_opmath, is_tensor, opmath

# Chebyshev coefficients of exp(-x) I0(x) on [0, 8] and of exp(-x) sqrt(x) I0(x) on (8, inf)
_I0_NEAR = (-4.4153416464793395e-18, 3.3307945188222384e-17, -2.431279846547955e-16,
            1.715391285555133e-15, -1.1685332877993451e-14, 7.676185498604936e-14,
            -4.856446783111929e-13, 2.95505266312964e-12, -1.726826291441556e-11,
            9.675809035373237e-11, -5.189795601635263e-10, 2.6598237246823866e-09,
            -1.300025009986248e-08, 6.046995022541919e-08, -2.670793853940612e-07,
            1.1173875391201037e-06, -4.4167383584587505e-06, 1.6448448070728896e-05,
            -5.754195010082104e-05, 0.00018850288509584165, -0.0005763755745385824,
            0.0016394756169413357, -0.004324309995050576, 0.010546460394594998,
            -0.02373741480589947, 0.04930528423967071, -0.09490109704804764,
            0.17162090152220877, -0.3046826723431984, 0.6767952744094761)
_I0_FAR = (-7.233180487874754e-18, -4.830504485944182e-18, 4.46562142029676e-17,
           3.461222867697461e-17, -2.8276239805165836e-16, -3.425485619677219e-16,
           1.7725601330565263e-15, 3.8116806693526224e-15, -9.554846698828307e-15,
           -4.150569347287222e-14, 1.54008621752141e-14, 3.8527783827421426e-13,
           7.180124451383666e-13, -1.7941785315068062e-12, -1.3215811840447713e-11,
           -3.1499165279632416e-11, 1.1889147107846439e-11, 4.94060238822497e-10,
           3.3962320257083865e-09, 2.266668990498178e-08, 2.0489185894690638e-07,
           2.8913705208347567e-06, 6.889758346916825e-05, 0.0033691164782556943,
           0.8044904110141088)


# exp(-x) I1(x) / x on [0, 8] and exp(-x) sqrt(x) I1(x) on (8, inf); float's kernels take the
# last 17 and 7 (_FLOAT_TERMS)
_I1_NEAR = (2.7779141127610464e-18, -2.111421214358166e-17, 1.5536319577362005e-16,
            -1.1055969477353862e-15, 7.600684294735408e-15, -5.042185504727912e-14,
            3.223793365945575e-13, -1.9839743977649436e-12, 1.1736186298890901e-11,
            -6.663489723502027e-11, 3.625590281552117e-10, -1.8872497517228294e-09,
            9.381537386495773e-09, -4.445059128796328e-08, 2.0032947535521353e-07,
            -8.568720264695455e-07, 3.4702513081376785e-06, -1.3273163656039436e-05,
            4.781565107550054e-05, -0.00016176081582589674, 0.0005122859561685758,
            -0.0015135724506312532, 0.004156422944312888, -0.010564084894626197,
            0.024726449030626516, -0.05294598120809499, 0.1026436586898471, -0.17641651835783406,
            0.25258718644363365)
_I1_FAR = (7.517296310842105e-18, 4.414348323071708e-18, -4.6503053684893586e-17,
           -3.209525921993424e-17, 2.96262899764595e-16, 3.3082023109209285e-16,
           -1.8803547755107825e-15, -3.8144030724370075e-15, 1.0420276984128802e-14,
           4.272440016711951e-14, -2.1015418427726643e-14, -4.0835511110921974e-13,
           -7.198551776245908e-13, 2.0356285441470896e-12, 1.4125807436613782e-11,
           3.2526035830154884e-11, -1.8974958123505413e-11, -5.589743462196584e-10,
           -3.835380385964237e-09, -2.6314688468895196e-08, -2.512236237870209e-07,
           -3.882564808877691e-06, -0.00011058893876262371, -0.009761097491361469,
           0.7785762350182801)
_FLOAT_TERMS = (17, 7)


def _bessel_i(node: Node, order: int, scaled: bool) -> Node:
    """I0 or I1 of a float node (exp(-|x|) times it when scaled), as Cephes: Chebyshev series
    of exp(-x) I(x) on [0, 8] and of exp(-x) sqrt(x) I(x) beyond, odd in x for I1."""
    x = node.abs()
    near = x <= 8
    safe = near.where(8, x)         # the far branch's division stays finite where not taken
    inner_terms, outer_terms = (_I0_NEAR, _I0_FAR) if order == 0 else (_I1_NEAR, _I1_FAR)
    if order == 1 and node.dtype != dt.float64:
        inner_terms, outer_terms = (inner_terms[-_FLOAT_TERMS[0]:],
                                    outer_terms[-_FLOAT_TERMS[1]:])
    inner = special.chebyshev(inner_terms, x * 0.5 - 2)
    outer = special.chebyshev(outer_terms, 32 / safe - 2)
    if scaled:
        value = near.where(inner if order == 0 else inner * x, outer / safe.sqrt())
    else:
        grown = x.exp() if order == 0 else x.exp() * x
        value = near.where(grown * inner, x.exp() * outer / safe.sqrt())
    return value if order == 0 else (node < 0).where(-value, value)


def _bessel_function(name: str, order: int, scaled: bool, slope):
    """A Tensor function of _bessel_i, computed in float32 for 16-bit floats as PyTorch's
    kernels upcast them; slope(given, x, out) is PyTorch's derivative of the input given
    (x: in float32 for a 16-bit float) and the result out, in given's dtype: g times it."""
    def function(self):
        given = as_float(self.node)
        x = opmath(given)
        out = from_opmath(_bessel_i(x, order, scaled), given)
        derivation = gradient_steps(given, [(Op.MUL, slope(given, x, out))], given.dtype)
        return record(name, out, self.device, [self], derivation)
    function.__name__ = function.__qualname__ = name.replace("special_", "")
    return function


def _i1_slope(scaled: bool):
    """PyTorch's i1_backward and i1e_backward: I0(x) - I1(x) / x (I0e(x) - I1e(x) (sgn x +
    1 / x) when scaled), and 0.5 where |x| is within epsilon of 0 (NaN too). (PyTorch has
    none for 16-bit floats; clgrad's computes it in float32, rounded once.)"""
    def slope(given: Node, x: Node, out: Node) -> Node:
        value = opmath(out)
        eps = _EPSILON[x.dtype]
        wide = x.abs() > eps
        safe = wide.where(x, eps)
        if scaled:
            rest = value * (_sign(safe) + safe.recip())
        else:
            rest = value * safe.recip()
        return from_opmath(wide.where(_bessel_i(safe, 0, scaled) - rest, 0.5), given)
    return slope


def _sign(x: Node) -> Node:
    return (x > 0).cast(x.dtype) - (x < 0).cast(x.dtype)


_EPSILON = {dt.float32: 2.0 ** -23, dt.float64: 2.0 ** -52}

# PyTorch's i0 and i0e backward: g * I1(x), g * (I1e(x) - sgn(x) r), each step in the
# input's dtype (I1 and I1e of a 16-bit float rounded to it)
i0 = _bessel_function("i0", 0, False,
                      lambda given, x, out: from_opmath(_bessel_i(x, 1, False), given))
i0e = _bessel_function("special_i0e", 0, True, lambda given, x, out: from_opmath(
    _bessel_i(x, 1, True), given) - _sign(given) * out)
i1 = _bessel_function("special_i1", 1, False, _i1_slope(False))
i1e = _bessel_function("special_i1e", 1, True, _i1_slope(True))
i0.__doc__ = "The modified Bessel function of the first kind, of order 0."


def _power(x: Node, k: int) -> Node:
    """x ** k for a positive int k, by squaring (exact where the products are)."""
    result, base = None, x
    while k:
        if k & 1:
            result = base if result is None else result * base
        k >>= 1
        if k:
            base = base * base
    return result


# (2k)! / B_2k: the Euler-Maclaurin tail's coefficients of the Hurwitz zeta function
_ZETA_TAIL = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
              7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
              -4.5979787224074726105e15, 1.8152105401943546773e17,
              -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16    # Cephes stops where a term is below this of the sum


def _inverse_power(v: Node, s) -> Node:
    return _power(v, s).recip() if isinstance(s, int) else v ** -s


def _zeta_series(s, q: Node) -> Node:
    """Cephes' ζ(s, q) for q > 0: (q + i)^-s for i = 0..9, then Euler-Maclaurin's tail from
    w = q + 9, with its early returns (where a term is below _MACHEP of the sum, the sum so
    far is the value: of a huge s, a tail that would make 0 * inf = NaN is never added)."""
    done = ir.const(False, dt.bool_, q.shape)
    total = result = _inverse_power(q, s)

    def stop(when: Node) -> None:
        nonlocal done, result
        now = ~done & when
        result, done = now.where(total, result), done | now
    for i in range(1, 10):
        b = _inverse_power(q + i, s)
        total = total + b
        stop((-_MACHEP * total < b) & (b < _MACHEP * total))
    w = q + 9
    total = total + b * w / (s - 1) - 0.5 * b
    a, k = 1.0, 0.0
    for coefficient in _ZETA_TAIL:
        a = a * (s + k)
        b = b / w
        t = b * a / coefficient if isinstance(a, float) else a * b / coefficient
        total = total + t
        stop((t / total).abs() < _MACHEP)
        k += 1
        a = a * (s + k)
        b = b / w
        k += 1
    return done.where(result, total)


def _zeta(s, q: Node) -> Node:
    """The Hurwitz zeta function ζ(s, q) of a float s (an int, or a node of q's dtype), with
    PyTorch's edges: inf at s = 1 and at the poles (q a non-positive integer), NaN for s < 1
    and for q < 0 with s not an integer. Below 0 (where Cephes sums |q| + 9 terms) it is
    ζ(s, f) + (-1)^s (ζ(s, 1 - f) - ζ(s, 1 - q)) with f = q - floor(q): the terms at negative
    q + i are (-1)^s (j - f)^-s, j = 1..-floor(q)."""
    negative = q < 0
    f = negative.where(q - q.floor(), 0.5)
    below = _zeta_series(s, 1 - f) - _zeta_series(s, negative.where(1 - q, 1))
    if isinstance(s, int):
        below = -below if s % 2 else below
    else:
        below = (s % 2).abs().eq(1).where(-below, below)
    value = negative.where(_zeta_series(s, f) + below, _zeta_series(s, negative.where(1, q)))
    pole = (q <= 0) & q.eq(q.floor())
    if not isinstance(s, int):
        value = (negative & s.ne(s.floor())).where(math.nan, value)
    value = pole.where(math.inf, value)
    if not isinstance(s, int):
        value = (s < 1).where(math.nan, s.eq(1).where(math.inf, value))
    return value


def _accumulator(dtype: dt.DType, device) -> dt.DType:
    """The type PyTorch's CPU zeta accumulates in: double for float, float for 16-bit floats
    (float where the device has no double)."""
    if dtype == dt.float32 and device.has_fp64:
        return dt.float64
    return dt.float32 if dtype.is_16_bit_float else dtype


def _polygamma(n: int, given: Node, device) -> Node:
    if n == 0:
        return special.digamma(given)
    if n == 1:
        return special.trigamma(given)
    x = given.cast(_accumulator(given.dtype, device))
    sign = 1 if n % 2 else -1
    return (_zeta(n + 1, x) * (sign * float(math.factorial(n)))).cast(given.dtype)


def polygamma(self, n: int):
    """The n-th derivative of digamma: digamma, trigamma, then (-1)^(n+1) n! ζ(n + 1, x);
    the gradient is PyTorch's, polygamma(n + 1, x)."""
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    x = as_float(self.node)
    return record("polygamma", _polygamma(n, x, self.device), self.device, [self],
                  derivation=ir.sloped(x, _polygamma(n + 1, x, self.device)))


def mvlgamma(self, p: int):
    """The multivariate log-gamma of dimension p: the sum of lgamma(x - j/2) over j < p plus
    p (p - 1) / 4 log(pi)."""
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = as_float(self.node)
    shape, ndim = x.shape + (p,), len(x.shape)
    offsets = (ir.iota(p, dt.int32).cast(x.dtype) - (p - 1)) * 0.5
    offsets = offsets.reshape((1,) * ndim + (p,)).expand(shape)
    shifted = x.reshape(x.shape + (1,)).expand(shape) + offsets
    summed = ir.unary(Op.LGAMMA, shifted).sum((ndim,))
    node = summed.reshape(x.shape) + p * (p - 1) / 4 * math.log(math.pi)
    return record("mvlgamma", node, self.device, [self])


def polygamma_function(n: int, input, name: str = "polygamma"):
    """torch.polygamma takes n first."""
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{name}(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    return polygamma(input, n)


def zeta(input, other):
    """torch.special.zeta: the Hurwitz zeta function ζ(input, other), as PyTorch's CPU kernel
    computes it (Cephes' series, accumulated in double for float32). other's gradient is
    PyTorch's, -input ζ(input + 1, other); input's is refused when backward reaches it."""
    tensors, device, x, q = special_arguments.binary("zeta", input, other, half=False)
    acc = _accumulator(x.dtype, device)
    node = _zeta(x.cast(acc).detach(), q.cast(acc).detach()).cast(x.dtype)
    out = record(special_arguments.variant("special_zeta", input, other), node, device, tensors)
    if out.grad_fn is not None:
        out.grad_fn = OneSidedBackward(out.grad_fn.name(), tensors, node,
                                       0 if is_tensor(input) else None, "zeta",
                                       lambda: -input * zeta(input + 1, other))
    return out


FUNCTIONS = {"polygamma": polygamma_function}

METHODS = [("i0", i0), ("i0_", _in_place("i0")),
           ("polygamma", polygamma), ("polygamma_", _in_place("polygamma")),
           ("mvlgamma", mvlgamma), ("mvlgamma_", _in_place("mvlgamma"))]
