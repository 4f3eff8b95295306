"""Parameters as one flat vector and back, as torch.nn.utils.convert_parameters."""
from __future__ import annotations

from ...frontend.grad_mode import no_grad
from ...frontend.inplace import assign
from ...frontend.joining import cat
from ...frontend.tensor import Tensor


def _same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError("Found two parameters on different devices, this is currently not "
                        "supported.")
    return param.device


def parameters_to_vector(parameters) -> Tensor:
    """Every parameter flattened and concatenated, in order (differentiable, as in PyTorch)."""
    device, flat = None, []
    for param in parameters:
        device = _same_device(param, device)
        flat.append(param.view(-1))
    return cat(flat)


def vector_to_parameters(vec: Tensor, parameters) -> None:
    """Writes consecutive slices of vec into parameters in place, outside autograd (PyTorch
    replaces each param.data)."""
    if not isinstance(vec, Tensor):
        raise TypeError(f"expected torch.Tensor, but got: {type(vec).__name__}")
    device, pointer = None, 0
    with no_grad():
        for param in parameters:
            device = _same_device(param, device)
            count = param.numel()
            assign(param, vec[pointer:pointer + count].view_as(param), "vector_to_parameters")
            pointer += count
