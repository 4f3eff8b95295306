"""The regularized incomplete gamma functions igamma (P(a, x)) and igammac (Q(a, x) = 1 - P),
elementwise, as PyTorch's special cases and derivative have them.

Below x = a + 1, P is its power series; above, Q is Legendre's continued fraction. Both are
evaluated from a fixed depth back to the first term, so each is one chain of elementwise ops
that fuses into one kernel: 64 terms reach float32's precision (PyTorch's float32 accuracy)
for a up to about 100, where PyTorch switches to an asymptotic expansion. The gradient
with respect to x is PyTorch's closed form (no_derivative.OneSidedBackward); as in PyTorch,
there is none with respect to a: asking for it raises in backward."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from ..compiler.ops import Op
from . import elementwise as ew
from .backward import record
from .composite_methods import _in_place
from .no_derivative import OneSidedBackward
from .operands import is_tensor

_TERMS = 64


def _lgamma(x: Node) -> Node:
    return ir.unary(Op.LGAMMA, x)


def _series(a: Node, x: Node) -> Node:
    """P(a, x) = x^a e^-x / Γ(a + 1) (1 + x/(a+1) (1 + x/(a+2) (...)))."""
    total = x.const_like(1)
    for n in range(_TERMS, 0, -1):
        total = 1 + total * x / (a + n)
    return (a * x.log() - x - _lgamma(a + 1)).exp() * total


def _continued_fraction(a: Node, x: Node) -> Node:
    """Q(a, x) = x^a e^-x / Γ(a) / (x+1-a - 1(1-a)/(x+3-a - 2(2-a)/(x+5-a - ...)))."""
    shifted = x - a
    tail = shifted + (2 * _TERMS + 1)
    for n in range(_TERMS, 0, -1):
        tail = (shifted + (2 * n - 1)) - n * (n - a) / tail
    return (a * x.log() - x - _lgamma(a)).exp() / tail


def _regularized(a: Node, x: Node, upper: bool) -> Node:
    """P (Q when upper) with PyTorch's values at the edges: NaN for a negative a or x, or for
    a = x = 0; a = 0 is the limit (P = 1), x = 0 and x = inf are the ends, a = inf is P = 0."""
    series = x < a + 1
    lower = series.where(_series(a, x), 1 - _continued_fraction(a, x))
    lower = x.eq(0).where(0, (a.eq(0) | x.eq(math.inf)).where(1, lower))
    lower = a.eq(math.inf).where(0, lower)
    value = series.where(1 - lower, _continued_fraction(a, x)) if upper else lower
    value = x.eq(0).where(1, (a.eq(0) | x.eq(math.inf)).where(0, value)) if upper else value
    value = a.eq(math.inf).where(1, value) if upper else value
    undefined = (a < 0) | (x < 0) | (a.eq(0) & x.eq(0)) | (a.eq(math.inf) & x.eq(math.inf))
    return undefined.where(math.nan, value)


def _incomplete_gamma(name: str, a, x, upper: bool):
    if not (is_tensor(a) and is_tensor(x)):
        bad, position = (x, 2) if is_tensor(a) else (a, 1)
        raise TypeError(f"{name}(): argument '{'other' if position == 2 else 'input'}' "
                        f"(position {position}) must be Tensor, not {type(bad).__name__}")
    tensors, device, na, nx = ew.operands(name, a, x)
    if not na.dtype.is_float:
        raise NotImplementedError(f'"{name}_cpu" not implemented for {na.dtype.name} (shapes '
                                  f"{a.shape} and {x.shape}); pass a float tensor")
    dtype = na.dtype
    if dtype.itemsize < 4:          # 64 terms in half precision would lose it all
        na, nx = na.cast(dt.float32), nx.cast(dt.float32)
    node = _regularized(na.detach(), nx.detach(), upper).cast(dtype)
    out = record(name, node, device, tensors)
    if out.grad_fn is not None:
        # x's gradient is PyTorch's closed form, the density ±exp((a - 1) log x - x - lgamma(a))
        # (inf or NaN where it is, at x = 0); a's is refused in backward, as PyTorch's
        def slope():
            density = ((a - 1) * x.log() - x - a.lgamma()).exp()
            return density * (-1.0 if upper else 1.0)
        out.grad_fn = OneSidedBackward(out.grad_fn.name(), tensors, node, 0,
                                       f"{name}: input", slope)
    return out


def igamma(self, other):
    """The regularized lower incomplete gamma function P(self, other)."""
    return _incomplete_gamma("igamma", self, other, upper=False)


def igammac(self, other):
    """The regularized upper incomplete gamma function Q(self, other) = 1 - P(self, other)."""
    return _incomplete_gamma("igammac", self, other, upper=True)


METHODS = [("igamma", igamma), ("igamma_", _in_place("igamma")),
           ("igammac", igammac), ("igammac_", _in_place("igammac"))]
