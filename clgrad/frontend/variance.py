"""var and std over dims: their values from each row's deviations from its first element,
their gradients by PyTorch's var_backward and std_backward, step by step (derivations)."""
from __future__ import annotations

import math

from ..compiler import ir
from ..compiler.ops import Op
from .backward import record
from .operands import as_float, from_opmath, normalize_dims, opmath
from .reductions import _drop, mean_node, reduce_node


def var(x, dim, unbiased, keepdim, correction):
    axes, node, count, dof = _spread_operands("var", x, dim, unbiased, correction)
    given = as_float(x.node)
    if (dim is None or x.ndim == 0) and dof <= 0 and count:
        out, derivation = _var_without_freedom(node, axes, count, keepdim), None
    else:
        out = _drop(_variance(_shifted(node, axes, count), axes, count, dof), axes, keepdim)
        derivation = _drop(_var_derivation(given, axes, dof), axes, keepdim)
    return record("var", from_opmath(out, given), x.device, [x], derivation=derivation)


def std(x, dim, unbiased, keepdim, correction):
    """sqrt of the variance of the deviations divided by the row's largest one, times that:
    the squares of elements beyond 1.8e19 overflow float32 where their std does not (PyTorch
    sums them in float64; fuzz seed 500959). The scale is detached (std(x / s) * s does not
    depend on s); a row whose largest deviation is 0, inf or NaN is not scaled."""
    axes, node, count, dof = _spread_operands("std", x, dim, unbiased, correction)
    given = as_float(x.node)
    if (dim is None or x.ndim == 0) and dof <= 0 and count:
        out = from_opmath(_var_without_freedom(node, axes, count, keepdim).sqrt(), given)
        return record("std", out, x.device, [x])
    node = _shifted(node, axes, count)
    scale = reduce_node(Op.RMAX, node.abs(), axes).detach()
    scale = ((scale > 0) & (scale < math.inf)).where(scale, 1)
    v = _variance(node / scale.expand(node.shape), axes, count, dof)
    value = from_opmath(v.sqrt() * scale, given)
    # PyTorch's std_backward: g / (2 std), 0 where the std is 0, then var's rule
    result = value.detach()
    derivation = result.eq(0).where(0, _var_derivation(given, axes, dof)) / (result * 2)
    return record("std", _drop(value, axes, keepdim), x.device, [x],
                  derivation=_drop(derivation, axes, keepdim))


def _spread_operands(name: str, x, dim, unbiased, correction) -> tuple:
    """(axes, x's float node in opmath (a 16-bit float's in float32, rounded once as
    PyTorch's), elements per row, the degrees of freedom n - correction) of var or std."""
    axes = normalize_dims(name, dim, x.ndim)
    count = math.prod(x.shape[a] for a in axes)
    correction = (1 if unbiased else 0) if correction is None else correction
    return axes, opmath(as_float(x.node)), count, count - correction


def _var_without_freedom(node: ir.Node, axes: tuple, count: int, keepdim: bool) -> ir.Node:
    """NaN, whose gradient is PyTorch's for var() (or a 0-d tensor's var(dim)) without
    degrees of freedom: g * inf where x is not the mean (a NaN is not), NaN where it is (its
    2 / 0 * (x - mean) reads so)."""
    mean = (reduce_node(Op.SUM, node, axes) * (1 / count)).detach()
    slope = node.eq(mean.expand(node.shape)).where(math.nan, node.const_like(math.inf))
    return _drop(reduce_node(Op.SUM, node * slope, axes) + math.nan, axes, keepdim)


def row_first(node: ir.Node, axes) -> ir.Node:
    """Each row's first element (the rows along axes, kept as size 1)."""
    return node.shrink(tuple((0, 1) if a in axes else (0, s) for a, s in enumerate(node.shape)))


def _shifted(node: ir.Node, axes: tuple, count: int) -> ir.Node:
    """Deviations from each row's first element, whose variance is the row's: a row of equal
    values then deviates by exactly 0 (a mean computed as sum / n need not equal them: a std
    of 1e-7 where PyTorch's is 0; seed 101675). An infinite or NaN first element shifts
    nothing: inf - inf would make every deviation NaN, where PyTorch's x - mean leaves -inf
    at the finite ones (200779)."""
    if not count:
        return node
    first = row_first(node, axes)
    first = (first - first).eq(0).where(first, 0)
    return node - first.expand(node.shape)


def _variance(node: ir.Node, axes: tuple, count: int, dof: int) -> ir.Node:
    """Each row's sum of squared deviations from its mean over the degrees of freedom (axes
    kept as size 1), over 0 where there are none or fewer, as PyTorch's: inf, or NaN for a
    sum of 0 (NaN was every such row's)."""
    mean = reduce_node(Op.SUM, node, axes) * (1 / count if count else math.nan)
    centered = node - mean.expand(node.shape)
    squares = reduce_node(Op.SUM, centered * centered, axes)
    return squares * (1 / dof if dof > 0 else math.inf)


def _var_derivation(x: ir.Node, axes: tuple, dof: int) -> ir.Node:
    """A graph (axes kept as size 1) whose gradient is PyTorch's var_backward, in its order:
    (2 / dof * g) * (x - mean(x)), the mean as PyTorch's (so where its x - mean is exactly 0,
    an infinite g gives NaN, elsewhere +-inf; clgrad's deviations from the first element were
    exactly 0 in every row of equal values), in a 16-bit float's type, each step rounded."""
    mean = mean_node(x, axes).detach().expand(x.shape)
    factor = 2 / dof if dof else math.inf
    # g times the number whole, in float32 for a 16-bit float, rounded once (PyTorch's
    # tensor * scalar), then times x - mean
    wide = opmath(ir.sloped(x, x - mean))
    return from_opmath(ir.sloped(wide, wide.const_like(factor)), x).sum(axes)
