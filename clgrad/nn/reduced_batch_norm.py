"""batch_norm of a float16 or bfloat16 input in training, as PyTorch's CPU kernels compute it.

They sum in float32 and keep the statistics in the parameters' dtype: float32 where any
parameter or running statistic is float32 (its mixed type), else the input's. Then:
- mean = sum / n and var_sum = sum((x - mean)^2), from the unrounded mean; the saved mean
  and invstd = 1 / sqrt(var_sum / n + eps) (computed in double) are rounded to the
  statistics' dtype; a bfloat16's var_sum and var_sum / n are rounded to it first (c10's
  BFloat16 arithmetic), a float16's are float32;
- the output is x * alpha + beta in float32, alpha = invstd * weight and beta = bias -
  mean * alpha, rounded once;
- the running statistics are momentum * batch + (1 - momentum) * running, in float32 and
  rounded once, except for bfloat16 statistics, whose every product and sum is rounded;
- the gradients are the backward kernel's: (g - sum(g) / n - (x - mean) k) invstd w with
  k = sum(g (x - mean)) invstd^2 / n in float32, rounded once; sum(g (x - mean)) invstd to
  the weight and sum(g) to the bias."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..frontend.backward import record
from ..frontend.grad_mode import no_grad
from ..frontend.reductions import reduce_node
from ..frontend.tensor import Tensor
from .normalization import stats_dtype


def reduced_batch_norm(input, running_mean, running_var, weight, bias, momentum: float,
                       eps: float, device):
    """(output, saved mean, saved invstd) of batch_norm(input, ..., training=True) for a
    16-bit float input on device, the running statistics updated in place; the statistics
    are float32 nodes of shape (1, C, 1, ...) holding values of the statistics' dtype."""
    stats = stats_dtype(input, (weight, bias, running_mean, running_var))
    tensors = [t for t in (input, weight, bias) if t is not None]
    x = input.node
    axes = (0,) + tuple(range(2, len(x.shape)))
    shape = (1, x.shape[1]) + (1,) * (len(x.shape) - 2)
    count = x.numel // x.shape[1]
    wide = x.cast(dt.float32)
    mean = reduce_node(ir.Op.SUM, wide, axes) / count
    centered = wide - mean.expand(x.shape)
    var_sum = reduce_node(ir.Op.SUM, centered * centered, axes)
    stepwise = stats == dt.bfloat16
    if stepwise:    # c10's BFloat16 arithmetic: var_sum and var_sum / n each rounded
        var = _narrowed(_narrowed(var_sum, stats) / _narrowed(count, stats), stats)
    else:
        var = var_sum / count
    saved_mean = _narrowed(mean, stats)
    invstd = _narrowed(_inverse_std(var, eps, device), stats)
    w = _parameter(weight, shape, 1.0)
    b = _parameter(bias, shape, 0.0)
    alpha = invstd * w
    beta = b - saved_mean * alpha
    out = _multiply_add(wide, alpha.expand(x.shape), beta.expand(x.shape), device).cast(x.dtype)
    if running_mean is not None and running_var is not None:
        _update_running(running_mean, running_var, mean, var_sum, count, momentum, stepwise,
                        device)
    derivation = _derivation(wide, saved_mean, invstd, weight, bias, shape, axes, count)
    out = record("batch_norm", out, device, tensors, derivation=derivation.cast(x.dtype))
    return out, saved_mean, invstd


def _multiply_add(x: ir.Node, alpha: ir.Node, beta: ir.Node, device) -> ir.Node:
    """x * alpha + beta rounded once to float32, as PyTorch's vector kernel's fmadd: in
    double, where the product of a 16-bit x and a float32 alpha, and its sum with beta, are
    exact (float32's product and sum round twice: x * alpha + beta cancels near the mean, and
    a float16 output an ulp off PyTorch's at a tie: fuzz seed 99704556); float32 where the
    device has no double."""
    if not device.has_fp64:
        return x * alpha + beta
    wide = [node.cast(dt.float64) for node in (x, alpha, beta)]
    return (wide[0] * wide[1] + wide[2]).cast(dt.float32)


def _narrowed(value, dtype):
    """value (a node or a number) rounded to dtype, in float32."""
    if isinstance(value, ir.Node):
        return value.cast(dtype).cast(dt.float32)
    return dt.rounded(value, dtype)


def _inverse_std(var: ir.Node, eps: float, device) -> ir.Node:
    """PyTorch's InvStd: 1 / sqrt(var + eps) in double (float32 where the device has none),
    0 where var and eps are both 0."""
    wide = var.cast(dt.float64 if device.has_fp64 else dt.float32)
    invstd = (wide + eps).sqrt().recip().cast(dt.float32)
    return var.eq(0).where(0, invstd) if eps == 0 else invstd


def _parameter(t, shape, default: float) -> ir.Node:
    """A weight or bias as float32 of shape (1, C, 1, ...), default where it is None."""
    if t is None:
        return ir.const(default, dt.float32, shape)
    return t.node.cast(dt.float32).reshape(shape)


def _update_running(running_mean, running_var, mean, var_sum, count, m: float, stepwise: bool,
                    device) -> None:
    """momentum * batch + (1 - momentum) * running, with the unbiased variance var_sum /
    (n - 1): in float32, rounded once to the running dtype, or for bfloat16 statistics
    each step rounded (the variance's product with momentum kept in float32)."""
    c = mean.shape[1]
    old_mean = running_mean.node.cast(dt.float32).reshape(mean.shape)
    old_var = running_var.node.cast(dt.float32).reshape(mean.shape)
    if stepwise:
        stats = running_mean.dtype
        m = dt.rounded(m, stats)
        kept = dt.rounded(1 - m, stats)
        unbiased = _narrowed(_narrowed(var_sum, stats) / _narrowed(count - 1, stats), stats)
        new_mean = _narrowed(_narrowed(_narrowed(mean, stats) * m, stats)
                             + _narrowed(old_mean * kept, stats), stats)
        new_var = unbiased * m + _narrowed(old_var * kept, stats)
    else:
        m = float(np.float32(m))
        kept = float(np.float32(1) - np.float32(m))
        new_mean = mean * m + old_mean * kept
        new_var = var_sum / (count - 1) * m + old_var * kept
    with no_grad():
        for running, new in ((running_mean, new_mean), (running_var, new_var)):
            running.copy_(Tensor(new.reshape((c,)).cast(running.dtype).detach(), device))


def _derivation(wide, mean, invstd, weight, bias, shape, axes, count) -> ir.Node:
    """A graph whose gradients are the backward kernel's (module docstring), in float32:
    the outermost op of a path is the first applied to g. To the input, g meets -sum(g) / n
    and -(x - mean) k at c, before c's slopes invstd, then w."""
    spread = wide.shape
    centered = wide - mean.expand(spread)
    inv = invstd.expand(spread)
    w = _parameter(weight, shape, 1.0)
    c = ir.sloped(ir.sloped(wide, w.expand(spread)), inv)
    mean_part = (reduce_node(ir.Op.SUM, c, axes) / count).expand(spread)
    dotp = reduce_node(ir.Op.SUM, ir.sloped(c, centered), axes) / count
    projected = ir.sloped(ir.sloped(ir.sloped(dotp, invstd), invstd).expand(spread), centered)
    derivation = (c - mean_part) - projected
    if weight is not None:      # sum(g (x - mean)) invstd
        derivation = derivation + ir.sloped(ir.sloped(w, invstd).expand(spread), centered)
    if bias is not None:        # sum(g)
        derivation = derivation + _parameter(bias, shape, 0.0).expand(spread)
    return derivation
