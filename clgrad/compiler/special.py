"""Special functions composed of primitives, for the gradient rules and the frontend alike."""
from __future__ import annotations

import math

from . import ir
from .ir import Node
from .ops import Op


def lerp(a: Node, b: Node, weight: Node) -> Node:
    """a + weight (b - a) as PyTorch's kernel: from b where |weight| >= 0.5, so that both
    ends are exact (weight 1 gives b)."""
    return (weight.abs() < 0.5).where(a + weight * (b - a), b - (b - a) * (1 - weight))


def polynomial(coefficients, t: Node) -> Node:
    """Σ c_k t^k by Horner's rule, the coefficients highest degree first (Cephes' polevl)."""
    p = t.const_like(coefficients[0])
    for c in coefficients[1:]:
        p = p * t + c
    return p


def chebyshev(coefficients, t: Node) -> Node:
    """Cephes' chbevl: the Chebyshev series at t by Clenshaw's recurrence, the coefficients
    highest order first."""
    b0, b1, b2 = t.const_like(coefficients[0]), t.const_like(0), t.const_like(0)
    for c in coefficients[1:]:
        b0, b1, b2 = t * b0 - b1 + c, b0, b1
    return 0.5 * (b0 - b2)


def log1p(x: Node) -> Node:
    """log(1 + x), accurate near 0: log(u) * (x / (u - 1)) with u = 1 + x corrects u's
    rounding (the branch not taken divides by 1)."""
    u = x + 1
    exact = u.eq(1) | u.eq(math.inf)        # log1p(x) is x itself there
    return exact.where(x, u.log() * (x / exact.where(1.0, u - 1)))


def digamma(x: Node) -> Node:
    """ψ(x) of a float node, as PyTorch's: the asymptotic series at y + 6 less the six steps
    of the recurrence ψ(y + 1) = ψ(y) + 1/y; below 0 the reflection ψ(1 - x) - π / tan(πx),
    with tan taken of x's fractional part (exact, unlike πx for large x). ψ(±0) is ∓inf, ψ of
    a negative integer or -inf NaN."""
    negative = x < 0
    whole = negative.where(x.ceil(), x.floor())
    pole = x.eq(whole) & (x <= 0)
    y = pole.where(1, negative.where(1 - x, x))     # the branches not taken stay finite
    shift = y.recip()
    for k in range(1, 6):
        shift = shift + (y + k).recip()
    z = y + 6
    iz = z.recip()
    iz2 = iz * iz
    series = z.log() - 0.5 * iz - iz2 * (1 / 12 - iz2 * (1 / 120 - iz2 * (1 / 252)))
    tan = ir.unary(Op.TAN, (pole | ~negative).where(0.25, x - whole) * math.pi)
    reflected = negative.where(math.pi / tan, 0)
    at_pole = x.eq(0).where(ir.binary(Op.COPYSIGN, x.const_like(math.inf), -x),
                            x.const_like(math.nan))
    return pole.where(at_pole, series - shift - reflected)


def trigamma(x: Node) -> Node:
    """ψ'(x): reflected below 0.5, six steps of ψ'(x) = ψ'(x + 1) + 1/x², then the asymptotic
    series."""
    reflect = x < 0.5
    sin = (reflect.where(x, 0.5) * math.pi).sin()  # (not 0 where not taken: its gradient)
    result = reflect.where(-(math.pi ** 2) / (sin * sin), 0)
    y = reflect.where(1 - x, x)
    for _ in range(6):
        result = result + (y * y).recip()
        y = y + 1
    iyy = (y * y).recip()
    series = (1 + (2 * y).recip() + iyy * (1 / 6 - iyy * (1 / 30 - iyy * (1 / 42)))) / y
    total = result + series
    return reflect.where(-total, total)
