"""Gradient clipping, as torch.nn.utils.clip_grad: by the total norm of all gradients or by
value, in place.

Nothing here reads a value back: the total norm and the scale min(max_norm / (norm + 1e-6), 1)
are lazy tensors, so clipping fuses into the step that follows (PyTorch computes the scale as a
tensor for the same reason). Only error_if_nonfinite, which must decide at once, reads the norm.
The foreach argument is accepted for PyTorch's signature: every update here is fused anyway.
"""
from __future__ import annotations

import types
import warnings

from ...frontend import creation
from ...frontend.grad_mode import no_grad
from ...frontend.joining import stack
from ...frontend.statistics import vector_norm
from ...frontend.tensor import Tensor


def _tensor_list(tensors) -> list:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def _grads(parameters) -> list:
    return [p.grad for p in parameters if p.grad is not None]


@no_grad()
def get_total_norm(tensors, norm_type: float = 2.0, error_if_nonfinite: bool = False,
                   foreach: bool | None = None) -> Tensor:
    """The norm_type-norm of all tensors together, as if concatenated into one vector."""
    tensors = _tensor_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return creation.tensor(0.0)
    device = tensors[0].device
    norms = [vector_norm(t, norm_type).to(device) for t in tensors]
    total = vector_norm(stack(norms), norm_type)
    if error_if_nonfinite and not bool(total.isfinite()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is "
            "non-finite, so it cannot be clipped. To disable this error and scale the gradients "
            "by the non-finite norm anyway, set `error_if_nonfinite=False`")
    return total


@no_grad()
def clip_grads_with_norm_(parameters, max_norm: float, total_norm: Tensor,
                          foreach: bool | None = None) -> None:
    """Scales the gradients of parameters in place by min(max_norm / (total_norm + 1e-6), 1)."""
    grads = _grads(_tensor_list(parameters))
    if not grads:
        return
    scale = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.to(g.device))


@no_grad()
def clip_grad_norm_(parameters, max_norm: float, norm_type: float = 2.0,
                    error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """Clips the gradients of parameters in place so that their total norm is at most max_norm;
    returns the total norm from before clipping."""
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)
        if is_generator and not parameters:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.",
                          stacklevel=3)
    total = get_total_norm(_grads(parameters), norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_norm(parameters, max_norm: float, norm_type: float = 2.0,
                   error_if_nonfinite: bool = False, foreach: bool | None = None) -> Tensor:
    """The deprecated spelling of clip_grad_norm_."""
    warnings.warn("`torch.nn.utils.clip_grad_norm` is now deprecated in favor of "
                  "`torch.nn.utils.clip_grad_norm_`.", FutureWarning, stacklevel=2)
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@no_grad()
def clip_grad_value_(parameters, clip_value: float, foreach: bool | None = None) -> None:
    """Clamps the gradients of parameters in place to [-clip_value, clip_value]."""
    clip_value = float(clip_value)
    for g in _grads(_tensor_list(parameters)):
        g.clamp_(min=-clip_value, max=clip_value)
