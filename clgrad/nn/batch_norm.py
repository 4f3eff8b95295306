"""Batch normalisation's one computation, behind both F.batch_norm and torch.native_batch_norm:
normalise over every dim but the channel dim 1, with the batch's statistics in training (the
running ones then updated in place) or the running ones in eval. A float16/bfloat16 input in
training takes PyTorch's CPU kernels' steps (reduced_batch_norm.py)."""
from __future__ import annotations

import math

from ..compiler import ir
from ..frontend.backward import record
from ..frontend.grad_mode import no_grad
from ..frontend.operands import from_opmath, opmath
from ..frontend.tensor import Tensor
from .normalization import affine, standardize
from .reduced_batch_norm import reduced_batch_norm


def batch_normalized(input, node: ir.Node, weight, bias, running_mean, running_var,
                     training: bool, momentum: float, eps: float, device):
    """(output, statistics): the output recorded as BatchNormBackward of node (the input's
    value, as a float); statistics are the batch's (mean, 1 / sqrt(var + eps)) as float
    nodes of shape (1, C, 1, ...) in training, None in eval (running_mean and running_var
    are then given). Callers check shapes and counts first."""
    c = input.shape[1]
    axes = (0,) + tuple(range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    tensors = [t for t in (input, weight, bias) if t is not None]
    if training and node.dtype.is_16_bit_float:
        out, mean, invstd = reduced_batch_norm(input, running_mean, running_var, weight, bias,
                                               momentum, eps, device)
        return out, (mean, invstd)
    x = opmath(node)
    if training:
        y, mean, var = standardize(x, axes, eps)
        if running_mean is not None and running_var is not None:
            count = math.prod(input.shape[a] for a in axes)
            update_running(running_mean, running_var, mean.reshape((c,)), var.reshape((c,)),
                           count, momentum, device)
        statistics = (mean, (var + eps).sqrt().recip())
    else:
        mean = running_mean.node.cast(x.dtype).reshape(shape).expand(x.shape)
        inv = (running_var.node.cast(x.dtype) + eps).sqrt().recip()
        y = (x - mean) * inv.reshape(shape).expand(x.shape)
        statistics = None
    y = affine(y, weight, bias, shape)
    return record("batch_norm", from_opmath(y, node), device, tensors), statistics


def update_running(running_mean, running_var, mean: ir.Node, var: ir.Node, count: int,
                   momentum: float, device) -> None:
    """running = (1 - momentum) running + momentum batch, in place and outside autograd; the
    variance unbiased by count / (count - 1) (infinite for a count of 1, as PyTorch's)."""
    bessel = count / (count - 1) if count > 1 else math.inf
    with no_grad():
        batch_mean = Tensor(mean.detach(), device)
        batch_var = Tensor(var.detach(), device) * bessel
        running_mean.copy_(running_mean * (1 - momentum) + batch_mean * momentum)
        running_var.copy_(running_var * (1 - momentum) + batch_var * momentum)
