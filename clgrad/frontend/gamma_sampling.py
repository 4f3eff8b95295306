"""torch._standard_gamma, torch._sample_dirichlet and their gradients' helpers
(_standard_gamma_grad, _dirichlet_grad): what torch.distributions' Gamma, Beta and Dirichlet
sample with. Samples are drawn on the host, as random_fills' are; a Gamma sample's gradient
with respect to its concentration is PyTorch's implicit reparameterization
(beta_gradients.py), so rsample carries gradients as PyTorch's does."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from . import creation
from .backward import record
from .beta_gradients import dirichlet_grad, standard_gamma_grad
from .generator import numpy_rng
from .operands import broadcast_shape, broadcast_to, common_device
from .tensor import Tensor
from .type_info import finfo


def _require_float(op: str, *tensors) -> None:
    for t in tensors:
        if not t.dtype.is_float:
            raise RuntimeError(f"{op}: expected a floating point tensor, got {t.dtype.name}")


def _accumulated(node: Node, device) -> Node:
    """node in the type PyTorch's CPU kernels of these gradients compute in: double for float
    (float where the device has no double)."""
    if node.dtype == dt.float32 and device.has_fp64:
        return node.cast(dt.float64)
    return node.cast(dt.float32) if node.dtype.is_16_bit_float else node


def _gamma_draws(alpha: np.ndarray, generator) -> np.ndarray:
    """Standard Gamma draws in float64, NaN where alpha is no shape (negative or NaN)."""
    valid = alpha >= 0
    draws = numpy_rng(generator, creation.generator()).standard_gamma(np.where(valid, alpha, 1))
    return np.where(valid, draws, np.nan)


def _standard_gamma(input, generator=None):
    """Samples of Gamma(input, 1), at least the dtype's smallest normal number (PyTorch's
    clamp); the gradient is d sample / d input by implicit reparameterization."""
    _require_float("_standard_gamma", input)
    alpha = input.detach().numpy().astype(np.float64)
    values = np.maximum(_gamma_draws(alpha, generator), finfo(input.dtype).tiny)
    sample = creation.tensor(values, dtype=input.dtype, device=input.device).node
    a = input.node
    slope = standard_gamma_grad(_accumulated(a, input.device), _accumulated(sample, input.device))
    return record("_standard_gamma", sample, input.device, [input],
                  derivation=ir.sloped(a, slope.cast(a.dtype)))


def _operands(op: str, *tensors) -> tuple:
    _require_float(op, *tensors)
    device = common_device(op, tensors)
    shape = broadcast_shape(op, *(t.shape for t in tensors))
    dtype = tensors[0].dtype
    nodes = [broadcast_to(t.node.detach().cast(dtype), shape) for t in tensors]
    return device, dtype, [_accumulated(n, device) for n in nodes]


def _standard_gamma_grad(self, output):
    """d output / d self for output a sample of Gamma(self, 1) (not itself differentiable, as
    in PyTorch)."""
    device, dtype, (alpha, x) = _operands("_standard_gamma_grad", self, output)
    return Tensor(standard_gamma_grad(alpha, x).cast(dtype), device)


def _dirichlet_grad(x, alpha, total):
    """The scaled gradient d x / d alpha / (1 - x) of a Beta(alpha, total - alpha) sample x,
    elementwise: what the backward of a Dirichlet sample multiplies by."""
    device, dtype, (x, alpha, total) = _operands("_dirichlet_grad", x, alpha, total)
    return Tensor(dirichlet_grad(x, alpha, total).cast(dtype), device)


def _sample_dirichlet(input, generator=None):
    """Samples of Dirichlet(input) over its last dimension: Gamma draws (float64, at least its
    smallest normal number) divided by their sum, then at least the dtype's smallest normal
    number (PyTorch's clamps). Not differentiable, as in PyTorch (distributions.Dirichlet's
    rsample attaches the gradient)."""
    _require_float("_sample_dirichlet", input)
    alpha = input.detach().numpy().astype(np.float64)
    draws = np.maximum(_gamma_draws(alpha, generator), np.finfo(np.float64).tiny)
    draws = draws / (draws.sum(-1, keepdims=True) if draws.ndim else draws)
    values = np.maximum(draws, finfo(input.dtype).tiny)
    return creation.tensor(values, dtype=input.dtype, device=input.device)


FUNCTIONS = {fn.__name__: fn for fn in (_standard_gamma, _standard_gamma_grad, _dirichlet_grad,
                                        _sample_dirichlet)}
