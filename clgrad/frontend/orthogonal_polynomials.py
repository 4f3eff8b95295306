"""The orthogonal polynomials of torch.special, as PyTorch's CPU kernels compute them: the
Chebyshev polynomials T, U, V, W (and the shifted ones, of 2x - 1), Hermite's H and He,
Laguerre's L and Legendre's P, each by its three-term recurrence from P_0 and P_1, with
PyTorch's special cases (0 for n < 0, the values at |x| = 1, and for |x| < 1 and n past a
few the trigonometric forms cos(n acos x), ... of the Chebyshev ones). n, a tensor or a
Python number, is truncated to an integer as PyTorch casts it (NaN, ±inf and values beyond
int64's range count as negative).

The recurrence is unrolled into the kernel: n steps for a Python n; for a tensor n, as many
steps as its largest value, read once from the data (the only host read), each element
taking the step its own n names. At most _MAX_STEPS steps are unrolled: past them the
Chebyshev polynomials at |x| > 1 take their hyperbolic forms (cosh(n acosh x), ...), NaN where
the recurrence would have overflowed two steps before, as PyTorch's inf - inf; Hermite's are
NaN past n = 128 (float32) or 512 (float64) in PyTorch itself; Laguerre's and Legendre's have
no closed form and raise NotImplementedError past _MAX_STEPS. PyTorch gives these functions
no gradient: their results never require grad."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from ..compiler.ops import Op
from . import special_arguments
from .operands import is_tensor
from .tensor import Tensor

_MAX_STEPS = 512
_HERMITE_LIMIT = {dt.float32: 128, dt.float64: 512}
_INT64_RANGE = 2.0 ** 63


def _truncated(n: Node) -> Node:
    """n as PyTorch's cast to int64 leaves it, as a float node: toward zero, and -1 (any
    negative) for NaN, ±inf and magnitudes past int64's."""
    whole = (n < 0).where(n.ceil(), n.floor())
    return (n.abs() < _INT64_RANGE).where(whole, -1)


def _steps(n, node: Node, limit: int | None) -> int:
    """How many steps of the recurrence to unroll: n's largest value (read once from a
    tensor n, truncated: node), at most limit."""
    if is_tensor(n):
        if not node.numel:
            return 0
        axes = tuple(range(len(node.shape)))
        largest = int(Tensor(node.max(axes) if axes else node, n.device).item())
    else:
        value = float(n)
        largest = int(value) if math.isfinite(value) and abs(value) < _INT64_RANGE else -1
    return max(0, largest if limit is None else min(largest, limit))


def _recurrence(n: Node, first: Node, step, steps: int, select: bool) -> Node:
    """P_n from P_0 = 1, P_1 = first and P_j = step(j, P_{j-2}, P_{j-1}), unrolled to P_steps;
    each element of n taking its own (select), or P_steps itself."""
    p, q = first.const_like(1), first
    if not select and steps == 0:
        return p
    result = (n < 1).where(p, first) if select else first
    for j in range(2, steps + 1):
        p, q = q, step(j, p, q)
        if select:
            result = n.eq(j).where(q, result)
    return result if select else q


def _even(n: Node) -> Node:
    return (n % 2).eq(0)


# ---- the Chebyshev polynomials ----

def _chebyshev_edges(kind: str, n: Node, shifted: bool, x: Node, y: Node):
    """PyTorch's values at y = 1 and y = -1 (x = 1 and x = 0 when shifted), its threshold of
    n for the trigonometric form, and that form of |y| < 1."""
    top, bottom = x.eq(1), (x.eq(0) if shifted else x.eq(-1))
    sign = _even(n).where(1, y.const_like(-1))
    one = y.const_like(1)
    twice = n + n + 1
    at_top = {"t": one, "u": n + 1, "v": one, "w": twice}[kind]
    at_bottom = {"t": sign, "u": sign * (n + 1), "v": sign * twice, "w": sign}[kind]
    threshold = {"t": 6, "u": 6 if shifted else 8, "v": 6 if shifted else 8,
                 "w": 4 if shifted else 8}[kind]
    theta = ir.unary(Op.ACOS, (y.abs() < 1).where(y, 0.5))
    half = theta / 2
    if kind == "t":
        trig = (n * theta).cos()
    elif kind == "u":
        s = theta.sin()
        trig = s.ne(0).where(((n + 1) * theta).sin() / s, (n + 1) * ((n + 1) * theta).cos() / y)
    elif kind == "v":
        trig = half.sin().ne(1).where(((n + 0.5) * theta).cos() / half.cos(), sign * twice)
    else:
        ends = sign if shifted else (x > 0).where(twice, sign)
        trig = half.cos().ne(1).where(((n + 0.5) * theta).sin() / half.sin(), ends)
    return top, at_top, bottom, at_bottom, threshold, trig


def _hyperbolic(kind: str, n: Node, y: Node) -> Node:
    """The Chebyshev polynomials at |y| > 1 in closed form, NaN where the form two steps
    before overflows (where the recurrence meets inf - inf)."""
    theta = ir.unary(Op.ACOSH, y.abs())
    sign = _even(n).where(1, y.const_like(-1))
    negative = y < 0
    cosh = lambda v: ir.unary(Op.COSH, v)  # noqa: E731
    sinh = lambda v: ir.unary(Op.SINH, v)  # noqa: E731

    def form(m: Node) -> Node:
        v = cosh((m + 0.5) * theta) / cosh(theta / 2)
        w = sinh((m + 0.5) * theta) / sinh(theta / 2)
        if kind == "t":
            value = cosh(m * theta)
        elif kind == "u":
            value = sinh((m + 1) * theta) / sinh(theta)
        else:
            mine, other = (v, w) if kind == "v" else (w, v)
            value = negative.where(other, mine)
        return negative.where(sign * value, value)
    before = form(n - 2)
    return before.abs().eq(math.inf).where(math.nan, form(n))


def _chebyshev(kind: str, shifted: bool):
    name = f"{'shifted_' if shifted else ''}chebyshev_polynomial_{kind}"

    def function(input, n):
        tensors, device, x, given_n = special_arguments.binary(name, input, n, ("x", "n"),
                                                               half=False)
        n_node = _truncated(given_n)
        y = x + x - 1 if shifted else x
        first = {"t": y, "u": y + y, "v": y + y - 1, "w": y + y + 1}[kind]
        steps = _steps(n, n_node, None)
        if steps > _MAX_STEPS and not is_tensor(n):
            recurrence = _hyperbolic(kind, n_node, y)
        else:
            recurrence = _recurrence(n_node, first, lambda j, p, q: (y + y) * q - p,
                                     min(steps, _MAX_STEPS), is_tensor(n))
        if steps > _MAX_STEPS and is_tensor(n):
            recurrence = (n_node > _MAX_STEPS).where(_hyperbolic(kind, n_node, y), recurrence)
        top, at_top, bottom, at_bottom, threshold, trig = _chebyshev_edges(kind, n_node,
                                                                           shifted, x, y)
        value = ((n_node > threshold) & (y.abs() < 1)).where(trig, recurrence)
        value = top.where(at_top, bottom.where(at_bottom, value))
        return Tensor((n_node < 0).where(0, value).detach(), device)
    return special_arguments.named(function, name, f"torch.special.{name}(input, n): no "
                                   "gradient, as PyTorch's.")


chebyshev_polynomial_t = _chebyshev("t", False)
chebyshev_polynomial_u = _chebyshev("u", False)
chebyshev_polynomial_v = _chebyshev("v", False)
chebyshev_polynomial_w = _chebyshev("w", False)
shifted_chebyshev_polynomial_t = _chebyshev("t", True)
shifted_chebyshev_polynomial_u = _chebyshev("u", True)
shifted_chebyshev_polynomial_v = _chebyshev("v", True)
shifted_chebyshev_polynomial_w = _chebyshev("w", True)


# ---- Hermite, Laguerre and Legendre ----

def _hermite_h(x: Node):
    return x + x, lambda j, p, q: (x + x) * q - (2 * (j - 1)) * p


def _hermite_he(x: Node):
    return x, lambda j, p, q: x * q - (j - 1) * p


def _laguerre(x: Node):
    return 1 - x, lambda j, p, q: ((2 * (j - 1) + (1 - x)) * q - (j - 1) * p) / j


def _legendre(x: Node):
    return x, lambda j, p, q: ((2 * (j - 1) + 1) * x * q - (j - 1) * p) / j


def _three_term(name: str, start, hermite: bool):
    """A polynomial of the recurrence start(x) gives (P_1 and the step); Hermite's are NaN
    past PyTorch's limit, Laguerre's 1 at x = 0, Legendre's ±1 at |x| = 1."""
    def function(input, n):
        tensors, device, x, given_n = special_arguments.binary(name, input, n, ("x", "n"),
                                                               half=False)
        n_node = _truncated(given_n)
        limit = _HERMITE_LIMIT[x.dtype] if hermite else None
        steps = _steps(n, n_node, limit)
        if steps > _MAX_STEPS:
            raise NotImplementedError(
                f"{name}: n = {steps} is past the {_MAX_STEPS} steps of the recurrence "
                "clgrad unrolls into a kernel (this polynomial has no closed form)")
        first, step = start(x)
        value = _recurrence(n_node, first, step, steps, is_tensor(n))
        if hermite:
            value = (n_node > limit).where(math.nan, value)
        elif name.startswith("laguerre"):
            value = x.eq(0).where(1, value)
        else:
            edge = (x > 0) | _even(n_node)
            value = x.abs().eq(1).where(edge.where(1, x.const_like(-1)), value)
        return Tensor((n_node < 0).where(0, value).detach(), device)
    return special_arguments.named(function, name, f"torch.special.{name}(input, n): no "
                                   "gradient, as PyTorch's.")


hermite_polynomial_h = _three_term("hermite_polynomial_h", _hermite_h, True)
hermite_polynomial_he = _three_term("hermite_polynomial_he", _hermite_he, True)
laguerre_polynomial_l = _three_term("laguerre_polynomial_l", _laguerre, False)
legendre_polynomial_p = _three_term("legendre_polynomial_p", _legendre, False)
