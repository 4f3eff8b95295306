"""Special functions written with primitives as PyTorch's CPU kernels compute them (Cephes'
series and recurrences): i0, polygamma (digamma, trigamma, and the Hurwitz zeta function
beyond) and mvlgamma. Their gradients come from the primitives. Installed on Tensor by
tensor.py from METHODS."""
from __future__ import annotations

import math

from ..compiler import ir, special
from ..compiler.ir import Node
from .backward import record
from .composite_methods import _in_place
from .operands import as_float

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


def _chebyshev(coefficients, t: Node) -> Node:
    """Cephes' chbevl: the Chebyshev series at t by Clenshaw's recurrence."""
    b0, b1, b2 = t.const_like(coefficients[0]), t.const_like(0), t.const_like(0)
    for c in coefficients[1:]:
        b0, b1, b2 = t * b0 - b1 + c, b0, b1
    return 0.5 * (b0 - b2)


def i0(self):
    """The modified Bessel function of the first kind, of order 0."""
    x = as_float(self.node).abs()
    near = x <= 8
    safe = near.where(8, x)         # the far branch's division stays finite where not taken
    inner = _chebyshev(_I0_NEAR, x * 0.5 - 2)
    outer = _chebyshev(_I0_FAR, 32 / safe - 2) / safe.sqrt()
    return record("i0", x.exp() * near.where(inner, outer), self.device, [self])


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
_ZETA_TERMS = 32    # terms summed before the tail; Cephes sums until q + i > 9 (q > -23 here)


def _zeta(s: int, q: Node) -> Node:
    """The Hurwitz zeta function ζ(s, q) for an integer s >= 2, as Cephes: the sum of
    (q + i)^-s over i = 0..n (n = 9, or more until q + n > 9), then Euler-Maclaurin's tail
    from w = q + n. A pole (q a non-positive integer) is inf."""
    last = (9 - q).floor() + 1
    last = (last < 9).where(9, (last > _ZETA_TERMS).where(_ZETA_TERMS, last))
    total = _power(q, s).recip()
    for i in range(1, _ZETA_TERMS + 1):
        total = (last < i).where(total, total + _power(q + i, s).recip())
    w = q + last
    b = _power(w, s).recip()
    total = total + b * w / (s - 1) - 0.5 * b
    a, k = 1.0, 0.0
    for coefficient in _ZETA_TAIL:
        a *= s + k
        b = b / w
        total = total + b * (a / coefficient)
        k += 1
        a *= s + k
        b = b / w
        k += 1
    pole = (q <= 0) & q.eq(q.floor())
    return pole.where(math.inf, total)


def polygamma(self, n: int):
    """The n-th derivative of digamma: digamma, trigamma, then (-1)^(n+1) n! ζ(n + 1, x)."""
    if n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n, got n = {n}")
    if n == 0:
        return self.digamma()
    x = as_float(self.node)
    if n == 1:
        node = special.trigamma(x)
    else:
        node = _zeta(n + 1, x) * ((1 if n % 2 else -1) * float(math.factorial(n)))
    return record("polygamma", node, self.device, [self])


def mvlgamma(self, p: int):
    """The multivariate log-gamma of dimension p: the sum of lgamma(x - j/2) over j < p plus
    p (p - 1) / 4 log(pi)."""
    if p < 1:
        raise RuntimeError(f"p has to be greater than or equal to 1, got {p}")
    x = self.float() if not self.dtype.is_float else self
    offsets = x.new_tensor([(j - p + 1) / 2 for j in range(p)])
    summed = (x.unsqueeze(-1) + offsets).lgamma().sum(-1)
    return summed + p * (p - 1) / 4 * math.log(math.pi)


def polygamma_function(n: int, input):
    """torch.polygamma takes n first."""
    return polygamma(input, n)


FUNCTIONS = {"polygamma": polygamma_function}

METHODS = [("i0", i0), ("i0_", _in_place("i0")),
           ("polygamma", polygamma), ("polygamma_", _in_place("polygamma")),
           ("mvlgamma", mvlgamma), ("mvlgamma_", _in_place("mvlgamma"))]
