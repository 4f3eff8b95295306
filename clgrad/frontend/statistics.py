"""Reductions composed of others: norms, NaN-ignoring sums and means, counts, (min, max) and
(var, mean) pairs, all/any over dims, differences and the cumulative trapezoid rule. Their
gradients come from their parts. Installed on Tensor by tensor.py from METHODS; FUNCTIONS are
the torch.* functions that are no Tensor methods."""
from __future__ import annotations

import math
from collections import namedtuple

from ..compiler import dtype as dt
from ..compiler import ir
from .backward import record
from .matrices import torch_name
from .operands import from_opmath, normalize_dim, normalize_dims, opmath

AminmaxResult = namedtuple("aminmax", ["min", "max"])


def vector_norm_node(v: ir.Node, p: float, axes: tuple[int, ...]) -> ir.Node:
    """The p-norm of v over axes (kept as size 1); its gradient is 0 where the norm is 0, as
    PyTorch's (not sqrt's inf times 0). A 16-bit float's in float32, rounded once, as
    PyTorch's (not each of its squares rounded)."""
    return from_opmath(_norm_node(opmath(v), p, axes), v)


def _norm_node(v: ir.Node, p: float, axes: tuple[int, ...]) -> ir.Node:
    a = v.abs()
    if p == 1:
        return a.sum(axes)
    if p == math.inf:
        return a.max(axes)
    if p == -math.inf:
        return -((-a).max(axes))
    if p == 0:
        return a.ne(0).cast(v.dtype).sum(axes)
    if p < 0:       # a zero's |x| ** p is inf, which makes the norm 0
        return (a ** p).sum(axes) ** (1 / p)
    if p == 2:
        powered = (v * v).sum(axes)
    else:
        nonzero = a.ne(0)
        powered = nonzero.where(nonzero.where(a, 1) ** p, 0).sum(axes)
    zero = powered.eq(0)
    safe = zero.where(1, powered)
    root = safe.sqrt() if p == 2 else safe ** (1 / p)
    return zero.where(0, root)


def norm_dtype(op: str, dtype, input_dtype) -> None:
    """PyTorch's checks of a norm's dtype argument: a float that holds the input's dtype."""
    if dtype is None:
        return
    if not dtype.is_float:
        raise RuntimeError(f"{op}: dtype should be floating point or complex, but got "
                           f"{torch_name(dtype)}")
    if dt.promote(input_dtype, dtype) != dtype:
        raise RuntimeError(f"{op}: the dtype of the input ({torch_name(input_dtype)}) should be "
                           f"convertible without narrowing to the specified dtype "
                           f"({torch_name(dtype)})")


def order_text(ord) -> str:
    """A norm's order as PyTorch's messages print it (-1, 0.5, inf)."""
    return f"{float(ord):g}"


def vector_norm(x, ord=2, dim=None, keepdim: bool = False, *, dtype=None):
    """The ord-norm over dim (all dims for None or ()), in dtype when given."""
    if not x.dtype.is_float:
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as "
                           f"input. Got {torch_name(x.dtype)}")
    whole = dim is None or (not isinstance(dim, int) and len(dim) == 0)
    axes = normalize_dims("linalg.vector_norm", None if whole else dim, x.ndim)
    if x.numel() == 0 and (ord < 0 or ord == math.inf):
        _refuse_empty(x, ord, None if whole else axes)
    norm_dtype("linalg.vector_norm", dtype, x.dtype)
    node = x.node.cast(dtype) if dtype is not None else x.node
    kept = tuple(1 if a in axes else n for a, n in enumerate(x.shape))
    out = vector_norm_node(node, float(ord), axes) if node.numel else ir.const(0, node.dtype, kept)
    derivation = _norm_derivation(node, float(ord), out, axes) if node.numel else None
    if not keepdim:
        shape = tuple(n for a, n in enumerate(x.shape) if a not in axes)
        out = out.reshape(shape)
        derivation = None if derivation is None else derivation.reshape(shape)
    return record("linalg_vector_norm", out, x.device, [x], derivation=derivation)


def _norm_derivation(v: ir.Node, p: float, norm: ir.Node, axes: tuple[int, ...]):
    """A graph whose gradient is PyTorch's norm_backward, its steps in its order (so an
    infinite or NaN g makes NaN where it multiplies a zero, and a 16-bit float's steps round
    as PyTorch's do, reading the rounded norm), or None where the norm's own graph gives it
    (orders 0 and 1). The gradient reaches each element through the sloped nodes innermost
    last: the outermost op of the graph is the first applied to g."""
    if p in (0, 1):
        return None
    n = norm.detach().expand(v.shape)
    sign = _sign(v)
    if math.isinf(p):
        hit = v.abs().eq(n) | v.ne(v)
        count = hit.cast(v.dtype).sum(axes).expand(v.shape)
        # sgn * ((g / count) * hit)
        return (ir.sloped(ir.sloped(v, sign), hit.cast(v.dtype)) / count).sum(axes)
    zero_norm = n.eq(0)
    if p == 2:      # g * (x / norm), 0 where the norm is 0
        return ir.sloped(v, zero_norm.where(0, v / n)).sum(axes)
    if p < 1:       # (scaled * g) * norm ** (1 - p), scaled 0 at a zero x
        scaled = sign * v.eq(0).where(0, v.abs() ** (p - 1))
        return ir.sloped(ir.sloped(v, n ** (1 - p)), scaled).sum(axes)
    # scaled * (g / norm ** (p - 1), 0 where the norm is 0)
    scaled = sign * v.abs() ** (p - 1) if p < 2 else v * v.abs() ** (p - 2)
    return (zero_norm.where(0, ir.sloped(v, scaled)) / n ** (p - 1)).sum(axes)


def _sign(v: ir.Node) -> ir.Node:
    """PyTorch's sgn of a real x: -1, 0 or 1, and 0 for a NaN."""
    zero = v.const_like(0)
    return (v < zero).where(-1, (zero < v).where(1, zero))


def _refuse_empty(x, ord, axes) -> None:
    """A norm of no identity (a negative or infinite order) over nothing, as PyTorch refuses
    it: over the whole empty tensor, or over an empty dim."""
    shape = f" (an input of shape {tuple(x.shape)})"
    if axes is None:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {order_text(ord)} norm on an "
                           f"empty tensor because the operation does not have an identity{shape}")
    for axis in axes:
        if x.shape[axis] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {order_text(ord)} norm on "
                               f"the dimension {axis}because this dimension is empty and the "
                               f"operation does not have an identity{shape}")


def norm(self, p="fro", dim=None, keepdim: bool = False, dtype=None):
    """Tensor.norm: a vector norm over dim (all elements by default); 'fro' is the 2-norm."""
    if p == "fro":
        p = 2
    if isinstance(p, str):
        raise RuntimeError(f"norm(): the {p!r} norm of a matrix is not supported; p must be a "
                           "number or 'fro'")
    return vector_norm(self, p, dim, keepdim, dtype=dtype)


def _without_nan(x):
    return x.masked_fill(x != x, 0) if x.dtype.is_float else x


def nansum(self, dim=None, keepdim: bool = False, *, dtype=None):
    return _without_nan(self).sum(dim, keepdim, dtype)


def nanmean(self, dim=None, keepdim: bool = False, *, dtype=None):
    if not (dtype or self.dtype).is_float:
        raise RuntimeError(f"nanmean(): expected input to have floating point dtype but got "
                           f"{self.dtype.name}")
    x = self if dtype is None else self.to(dtype)
    counted = (x == x).sum(dim, keepdim).to(x.dtype)
    return _without_nan(x).sum(dim, keepdim) / counted


def count_nonzero(self, dim=None):
    return (self != 0).sum(dim)


def aminmax(self, *, dim=None, keepdim: bool = False):
    if dim is None and keepdim:
        shape = (1,) * self.ndim
        return AminmaxResult(self.amin().reshape(shape), self.amax().reshape(shape))
    return AminmaxResult(self.amin(dim, keepdim), self.amax(dim, keepdim))


def diff(self, n: int = 1, dim: int = -1, prepend=None, append=None):
    """The n-th forward difference along dim (for bools, whether neighbours differ)."""
    from .joining import cat
    axis = normalize_dim("diff", dim, self.ndim)
    if self.ndim == 0:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    x = cat([t for t in (prepend, self, append) if t is not None], axis) \
        if prepend is not None or append is not None else self
    for _ in range(n):
        length = x.shape[axis]
        if length == 0:
            break
        later, earlier = x.narrow(axis, 1, length - 1), x.narrow(axis, 0, length - 1)
        x = later != earlier if x.dtype == dt.bool_ else later - earlier
    return x


def cumulative_trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The running integral of y along dim by the trapezoid rule, spacing dx or the
    differences of the sample points x."""
    axis = normalize_dim("cumulative_trapezoid", dim, y.ndim)
    length = y.shape[axis]
    if length == 0:
        return y.narrow(axis, 0, 0).to(dt.float32 if not y.dtype.is_float else y.dtype)
    pairs = y.narrow(axis, 1, length - 1) + y.narrow(axis, 0, length - 1)
    spacing = diff(x, dim=dim) if x is not None else (1.0 if dx is None else dx)
    return (pairs * spacing / 2).cumsum(axis)


def var_mean(input, dim=None, unbiased: bool = True, keepdim: bool = False, *, correction=None):
    return (input.var(dim, unbiased, keepdim, correction), input.mean(dim, keepdim))


def std_mean(input, dim=None, unbiased: bool = True, keepdim: bool = False, *, correction=None):
    return (input.std(dim, unbiased, keepdim, correction), input.mean(dim, keepdim))


METHODS = [
    ("norm", norm), ("nansum", nansum), ("nanmean", nanmean), ("count_nonzero", count_nonzero),
    ("aminmax", aminmax), ("diff", diff),
]
FUNCTIONS = {"var_mean": var_mean, "std_mean": std_mean,
             "cumulative_trapezoid": cumulative_trapezoid}
