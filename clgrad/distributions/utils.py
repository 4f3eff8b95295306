"""torch.distributions.utils: broadcasting parameters, probabilities and logits, the lazily
computed parameter, and the helpers the families share."""
from __future__ import annotations

import functools

from .. import frontend as ops
from ..frontend.elementwise import where  # noqa: F401  (torch.where, for the families)
from ..frontend.grad_mode import enable_grad
from ..frontend.size import Size
from ..frontend.tensor import Tensor

euler_constant = 0.57721566490153286060     # Euler-Mascheroni constant


def is_number(value) -> bool:
    """A Python number, as PyTorch's _Number: an int, a float or a bool."""
    return isinstance(value, (int, float, bool))


def broadcast_all(*values) -> tuple:
    """values as tensors broadcast to one shape; a number becomes a tensor of the first
    tensor's dtype and device (the default dtype when there is none)."""
    if not all(isinstance(v, Tensor) or is_number(v) for v in values):
        raise ValueError("Input arguments must all be instances of Number, torch.Tensor or "
                         "objects implementing __torch_function__.")
    if not all(isinstance(v, Tensor) for v in values):
        options = {"dtype": ops.get_default_dtype()}
        for value in values:
            if isinstance(value, Tensor):
                options = {"dtype": value.dtype, "device": value.device}
                break
        values = [v if isinstance(v, Tensor) else ops.tensor(v, **options) for v in values]
    return tuple(ops.broadcast_tensors(*values))


def batch_shape_of(param: Tensor, *given) -> Size:
    """A family's batch shape: () when every parameter was given as a number, else the shape
    of param, one of the broadcast parameters."""
    return Size() if all(is_number(g) for g in given) else param.size()


def standard_normal(shape, dtype, device) -> Tensor:
    return ops.randn(*shape, dtype=dtype, device=device)


def sum_rightmost(value, dim: int):
    """value summed over its dim rightmost dimensions."""
    if dim == 0:
        return value
    return value.reshape(value.shape[:-dim] + (-1,)).sum(-1)


def logits_to_probs(logits: Tensor, is_binary: bool = False) -> Tensor:
    if is_binary:
        return logits.sigmoid()
    return logits.softmax(dim=-1)


def clamp_probs(probs: Tensor) -> Tensor:
    """probs inside (0, 1) by the dtype's eps, so that their logits are finite."""
    eps = ops.finfo(probs.dtype).eps
    return probs.clamp(min=eps, max=1 - eps)


def probs_to_logits(probs: Tensor, is_binary: bool = False) -> Tensor:
    clamped = clamp_probs(probs)
    if is_binary:
        return clamped.log() - (-clamped).log1p()
    return clamped.log()


class lazy_property:
    """A property computed once, at its first read, with gradients enabled, then stored on
    the instance under its own name (a distribution given probs computes its logits only when
    asked)."""

    def __init__(self, wrapped):
        self.wrapped = wrapped
        functools.update_wrapper(self, wrapped)

    def __get__(self, instance, owner=None):
        if instance is None:
            return _lazy_property_and_property(self.wrapped)
        with enable_grad():
            value = self.wrapped(instance)
        setattr(instance, self.wrapped.__name__, value)
        return value


class _lazy_property_and_property(lazy_property, property):
    """What the class reads a lazy_property as: a property too, for introspection."""

    def __init__(self, wrapped):
        property.__init__(self, wrapped)


def _tril_positions(n: int, diag: int) -> list:
    """The row-major positions in an n x n matrix of its elements on or below diagonal
    diag."""
    return [i * n + j for i in range(n) for j in range(n) if j < i + diag + 1]


def tril_matrix_to_vec(mat: Tensor, diag: int = 0) -> Tensor:
    """The elements of each D x D matrix of mat on or below diagonal diag, in row order."""
    n = mat.shape[-1]
    if diag < -n or diag >= n:
        raise ValueError(f"diag ({diag}) provided is outside [{-n}, {n - 1}].")
    positions = ops.tensor(_tril_positions(n, diag), device=mat.device)
    return mat.flatten(-2)[..., positions]


def vec_to_tril_matrix(vec: Tensor, diag: int = 0) -> Tensor:
    """The D x D lower-triangular matrices whose elements on or below diagonal diag are
    vec's last dimension in row order (tril_matrix_to_vec's inverse)."""
    # the positive root of D² + (1 + 2 diag) D - |diag| (diag + 1) - 2 len(vec) = 0
    root = (-(1 + 2 * diag) + ((1 + 2 * diag) ** 2 + 8 * vec.shape[-1]
                               + 4 * abs(diag) * (diag + 1)) ** 0.5) / 2
    if round(root) - root > ops.finfo(vec.dtype).eps:
        raise ValueError(f"The size of last dimension is {vec.shape[-1]} which cannot be "
                         "expressed as the lower triangular part of a square D x D matrix.")
    n = round(root)
    positions = _tril_positions(n, diag)
    if len(positions) != vec.shape[-1]:     # a root just below an integer
        raise RuntimeError(f"vec_to_tril_matrix: shape mismatch: value tensor of shape "
                           f"{list(vec.shape)} cannot be broadcast to indexing result of shape "
                           f"{list(vec.shape[:-1]) + [len(positions)]}")
    # each matrix element picks its element of vec, or the zero appended after them
    slots = [vec.shape[-1]] * (n * n)
    for k, position in enumerate(positions):
        slots[position] = k
    padded = ops.cat([vec, vec.new_zeros(tuple(vec.shape[:-1]) + (1,))], -1)
    picked = padded[..., ops.tensor(slots, device=vec.device)]
    return picked.reshape(tuple(vec.shape[:-1]) + (n, n))


def extended_size(sample_shape) -> Size:
    return sample_shape if isinstance(sample_shape, Size) else Size(sample_shape)


def shown(value):
    """value as PyTorch's f-strings show a tensor: a 0-d one as its number."""
    return value.item() if isinstance(value, Tensor) and value.dim() == 0 else value


def is_all_true(valid) -> bool:
    return bool(valid.all().item()) if isinstance(valid, Tensor) else bool(valid)


__all__ = ["broadcast_all", "logits_to_probs", "clamp_probs", "probs_to_logits",
           "lazy_property", "tril_matrix_to_vec", "vec_to_tril_matrix", "euler_constant"]
