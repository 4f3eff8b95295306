"""The statistics helpers of synchronized batch norm (torch.batch_norm_stats and its kin), with
PyTorch's signatures and formulas: each process computes its batch's per-channel statistics,
the processes' statistics are combined by their counts, the input is normalised with the
combined ones, and the backward pass reduces and applies the gradient the same way.

PyTorch has them for CUDA only (batch_norm_update_stats also on the CPU); their formulas are
its CUDA kernels': statistics in the accumulate type (float32 for a 16-bit float input),
invstd = 1 / sqrt(biased var + eps), running variances updated with the unbiased variance.
PyTorch gives none of them a derivative: an output that needs grad has a grad_fn that
refuses backward ("derivative for aten::... is not implemented"), as PyTorch's."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.grad_mode import no_grad
from ..frontend.no_derivative import record_without_derivative
from ..frontend.operands import common_device
from ..frontend.tensor import Tensor
from .batch_norm import update_running
from .native_norms import torch_dtype_name
from .normalization import stats_dtype


def _accumulate(dtype):
    return dt.float32 if dtype in (dt.float16, dt.bfloat16) else dtype


def _per_channel(input):
    """input as (N, C, L) in its accumulate type, and its channel count."""
    if input.ndim < 2:
        rank = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got 1)")
    if not input.dtype.is_float:
        raise RuntimeError(f"batch norm statistics: expected a floating point input, got "
                           f"{input.dtype.name}")
    n, c = input.shape[:2]
    x = input.node.cast(_accumulate(input.dtype))
    return x.reshape((n, c, math.prod(input.shape[2:]))), c


def _channel(node, shape):
    """A per-channel (C,) node viewed as (1, C, 1) and broadcast over shape (N, C, L)."""
    return node.reshape((1, shape[1], 1)).expand(shape)


def _result(op: str, node, device, inputs):
    return record_without_derivative(op, node, device, [t for t in inputs if t is not None])


def _mean_var(input):
    """(mean, biased variance) per channel, (C,) each, and the per-channel count."""
    x, c = _per_channel(input)
    count = x.shape[0] * x.shape[2]
    share = 1 / count if count else math.nan
    mean = x.sum((0, 2)) * share
    centered = x - _channel(mean.reshape((c,)), x.shape)
    var = (centered * centered).sum((0, 2)) * share
    return mean.reshape((c,)), var.reshape((c,)), count


def batch_norm_stats(input, eps: float):
    """(mean, invstd) of each channel (dim 1) over the batch and the other dims."""
    mean, var, _ = _mean_var(input)
    invstd = (var + eps).sqrt().recip()
    return (_result("batch_norm_stats", mean, input.device, [input]),
            _result("batch_norm_stats", invstd, input.device, [input]))


def batch_norm_update_stats(input, running_mean, running_var, momentum: float):
    """(mean, biased var) of each channel; the running statistics (when given) move towards
    them by momentum, the variance unbiased, in place. PyTorch has this one on the CPU too:
    its dtypes are the CPU kernel's (the input's, float32 for a 16-bit input with float32
    running statistics)."""
    if (running_mean is None) != (running_var is None):
        raise RuntimeError("Expected running_mean.defined() == running_var.defined() to be "
                           "true, but got false.")
    if input.ndim >= 2 and not input.numel():
        raise RuntimeError(f"input tensor must have at least one element, but got "
                           f"input_sizes = {list(input.shape)}")
    stats = stats_dtype(input, (running_mean, running_var))
    mean, var, count = _mean_var(input)
    if running_mean is not None:
        update_running(running_mean, running_var, mean, var, count, momentum, input.device)
    return (_result("batch_norm_update_stats", mean.cast(stats), input.device, [input]),
            _result("batch_norm_update_stats", var.cast(stats), input.device, [input]))


def batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                        momentum: float, eps: float, counts):
    """The statistics of the union of W batches from each one's (mean, invstd) (W, C) and
    count (W,): the counts-weighted mean, and 1 / sqrt(var + eps) of the pooled biased
    variance (each batch's var is 1 / invstd^2 - eps, plus its mean's spread). The running
    statistics (when given) move towards them by momentum, the variance unbiased."""
    for name, t in (("mean", mean), ("invstd", invstd)):
        if t.ndim != 2:
            raise RuntimeError(f"batch_norm_gather_stats: expected {name} of shape (world "
                               f"size, channels), got {list(t.shape)}")
    if counts.ndim != 1 or counts.shape[0] != mean.shape[0]:
        raise RuntimeError(f"batch_norm_gather_stats: expected counts of shape "
                           f"[{mean.shape[0]}], got {list(counts.shape)}")
    device = common_device("batch_norm_gather_stats_with_counts", [mean, invstd, counts])
    acc = _accumulate(mean.dtype)
    w, c = mean.shape
    m = mean.node.cast(acc)
    counts_node = counts.node.cast(acc).reshape((w, 1)).expand((w, c))
    total = counts_node.sum((0,)).reshape((c,))
    avg = (counts_node * m).sum((0,)).reshape((c,)) / total
    spread = m - avg.reshape((1, c)).expand((w, c))
    var_each = invstd.node.cast(acc).recip()
    var_each = var_each * var_each - eps
    var_n = (counts_node * (var_each + spread * spread)).sum((0,)).reshape((c,))
    new_invstd = (var_n / total + eps).sqrt().recip()
    if running_mean is not None:
        _update_pooled(running_mean, avg, momentum)
    if running_var is not None:
        _update_pooled(running_var, var_n / (total - 1), momentum)
    inputs = [input, mean, invstd]
    return (_result("batch_norm_gather_stats_with_counts", avg, device, inputs),
            _result("batch_norm_gather_stats_with_counts", new_invstd, device, inputs))


def _update_pooled(running, value, momentum: float) -> None:
    with no_grad():
        batch = Tensor(value.detach().cast(running.dtype), running.device)
        running.copy_(running * (1 - momentum) + batch * momentum)


def batch_norm_gather_stats(input, mean, invstd, running_mean, running_var, momentum: float,
                            eps: float, count: int):
    """batch_norm_gather_stats_with_counts with every batch of count elements."""
    dtype = running_mean.dtype if running_mean is not None else input.dtype
    counts = creation.full((mean.shape[0],), count, dtype=dtype, device=mean.device)
    return batch_norm_gather_stats_with_counts(input, mean, invstd, running_mean, running_var,
                                               momentum, eps, counts)


def batch_norm_elemt(input, weight, bias, mean, invstd, eps: float):
    """(input - mean) * invstd * weight + bias per channel, in input's dtype (eps unused, as
    PyTorch's: invstd already holds it)."""
    x, _ = _per_channel(input)
    shape = x.shape
    y = (x - _channel(mean.node.cast(x.dtype), shape)) * _channel(invstd.node.cast(x.dtype),
                                                                  shape)
    if weight is not None:
        y = y * _channel(weight.node.cast(x.dtype), shape)
    if bias is not None:
        y = y + _channel(bias.node.cast(x.dtype), shape)
    return _result("batch_norm_elemt", y.reshape(tuple(input.shape)).cast(input.dtype),
                   input.device, [input, weight, bias, mean, invstd])


def batch_norm_backward_reduce(grad_out, input, mean, invstd, weight, input_g: bool,
                               weight_g: bool, bias_g: bool):
    """(sum_dy, sum_dy_xmu, grad_weight, grad_bias) per channel: the sums of grad_out and of
    grad_out * (input - mean), and from them weight's gradient (sum_dy_xmu * invstd) and
    bias's (sum_dy); each None unless asked for (input_g asks for the first two)."""
    g, _ = _per_channel(grad_out)
    x, c = _per_channel(input)
    acc = _accumulate(mean.dtype)
    g, x = g.cast(acc), x.cast(acc)
    xmu = x - _channel(mean.node.cast(acc), x.shape)
    sum_dy = g.sum((0, 2)).reshape((c,))
    sum_dy_xmu = (g * xmu).sum((0, 2)).reshape((c,))
    param = weight.dtype if weight is not None else dt.float32
    inputs = [grad_out, input, mean, invstd, weight]

    def result(node, dtype):
        return _result("batch_norm_backward_reduce", node.cast(dtype), input.device, inputs)
    return (result(sum_dy, acc) if input_g else None,
            result(sum_dy_xmu, acc) if input_g else None,
            result(sum_dy_xmu * invstd.node.cast(acc), param) if weight_g else None,
            result(sum_dy, param) if bias_g else None)


def batch_norm_backward_elemt(grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu,
                              count):
    """The input's gradient from the reduced sums over all processes, whose element counts
    count (int32, one per process) holds: (grad_out - sum_dy / n - (input - mean) invstd^2
    sum_dy_xmu / n) * weight * invstd, n = sum(count)."""
    if count.dtype != dt.int32:
        raise RuntimeError(f"expected scalar type Int but found "
                           f"{torch_dtype_name(count.dtype)}")
    g, _ = _per_channel(grad_out)
    x, c = _per_channel(input)
    acc = _accumulate(mean.dtype)
    g, x = g.cast(acc), x.cast(acc)
    shape = x.shape
    n = count.node.cast(acc).reshape((count.numel(),)).sum((0,)).reshape((1, 1, 1))
    norm = n.recip().expand(shape)
    inv = _channel(invstd.node.cast(acc), shape)
    scale = inv if weight is None else inv * _channel(weight.node.cast(acc), shape)
    mean_dy = _channel(sum_dy.node.cast(acc), shape) * norm
    proj = inv * inv * _channel(sum_dy_xmu.node.cast(acc), shape) * norm
    grad = (g - mean_dy - (x - _channel(mean.node.cast(acc), shape)) * proj) * scale
    return _result("batch_norm_backward_elemt",
                   grad.reshape(tuple(input.shape)).cast(grad_out.dtype), input.device,
                   [grad_out, input, mean, invstd, weight, sum_dy, sum_dy_xmu])


FUNCTIONS = {fn.__name__: fn for fn in (
    batch_norm_stats, batch_norm_update_stats, batch_norm_gather_stats,
    batch_norm_gather_stats_with_counts, batch_norm_elemt, batch_norm_backward_reduce,
    batch_norm_backward_elemt)}
