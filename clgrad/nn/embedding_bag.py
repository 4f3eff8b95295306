"""embedding_bag: the sums, means or maxima of bags of embedding rows, and nn.EmbeddingBag.

Each bag is a mask over the picked rows (a row of a 2-D input, or the span between two offsets
of a 1-D one), so a batch of bags is one masked reduction: no per-bag loop, no host read of the
offsets, and the gradient reaches the weight through the gather's own rule."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..frontend import creation, indexing
from ..frontend.elementwise import where
from ..frontend.grad_mode import no_grad
from ..frontend.joining import cat
from .embedding_frequency import rows_scaled_by_frequency

_MODES = ("sum", "mean", "max")


def renorm_rows_(weight, input, max_norm: float, norm_type: float = 2.0) -> None:
    """Scales in place, without recording a gradient, each row of weight that input picks and
    whose norm_type-norm exceeds max_norm, to that norm (PyTorch's embedding_renorm_)."""
    with no_grad():
        norms = weight.norm(p=norm_type, dim=1, keepdim=True)
        picked = creation.zeros(weight.shape[0], dtype=dt.bool_, device=weight.device)
        picked = picked.index_fill(0, input.reshape(-1), True).reshape(-1, 1)
        scale = where(picked & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
        weight.mul_(scale)


def _check(input, weight, offsets, mode, per_sample_weights, scale_grad_by_freq, max_norm):
    if per_sample_weights is not None and tuple(input.shape) != tuple(per_sample_weights.shape):
        raise ValueError(f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is "
                         f"not None, then it must have the same shape as the input "
                         f"({input.shape})")
    if weight.ndim != 2:
        raise ValueError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                         f"{weight.ndim}")
    if input.ndim == 2 and offsets is not None:
        raise ValueError(f"if input is 2D, then offsets has to be None, as input is treated is a "
                         f"mini-batch of fixed length sequences. However, found offsets of type "
                         f"{type(offsets)}")
    if input.ndim == 1 and offsets is None:
        raise ValueError("offsets has to be a 1D Tensor but got None")
    if input.ndim == 1 and offsets.ndim != 1:
        raise ValueError("offsets has to be a 1D Tensor")
    if input.ndim not in (1, 2):
        raise ValueError(f"input has to be 1D or 2D Tensor, but got Tensor of dimension "
                         f"{input.ndim}")
    if input.dtype.is_float or input.dtype == dt.bool_:
        raise RuntimeError(f"embedding_bag: expected an integer index tensor, got "
                           f"{input.dtype.name}")
    if mode not in _MODES:
        raise ValueError("mode has to be one of sum, mean or max")
    if mode == "max" and scale_grad_by_freq:
        raise ValueError("max mode does not support scaling the gradient by the frequency")
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(f"embedding_bag: per_sample_weights was not None. "
                                  f"per_sample_weights is only supported for mode='sum' "
                                  f"(got mode='{mode}'). Please open a feature request on "
                                  f"GitHub.")


def _bags(input, offsets, include_last_offset: bool):
    """(indices, held): the indices as (bags or 1, positions) and which of them each bag holds,
    (bags, positions) bool."""
    if input.ndim == 2:
        return input, creation.ones(*input.shape, dtype=dt.bool_, device=input.device)
    length = input.shape[0]
    starts = offsets.to(dt.int64)
    ends = cat([starts[1:], creation.tensor([length], device=input.device)])
    if include_last_offset:
        starts, ends = starts[:-1], ends[:-1]
    position = creation.arange(length, device=input.device).reshape(1, length)
    held = (position >= starts.reshape(-1, 1)) & (position < ends.reshape(-1, 1))
    return input.reshape(1, length), held


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type: float = 2,
                  scale_grad_by_freq: bool = False, mode: str = "mean", sparse: bool = False,
                  per_sample_weights=None, include_last_offset: bool = False, padding_idx=None):
    """(bags, embedding_dim): each bag's rows of weight reduced by mode ('sum', 'mean', 'max');
    rows equal to padding_idx take no part, and an empty bag gives zeros."""
    _check(input, weight, offsets, mode, per_sample_weights, scale_grad_by_freq, max_norm)
    if max_norm is not None:
        renorm_rows_(weight, input, max_norm, norm_type)
    indices, held = _bags(input, offsets, include_last_offset)
    if padding_idx is not None:
        held = held & (indices != padding_idx % weight.shape[0])
    pick = rows_scaled_by_frequency if scale_grad_by_freq else indexing.getitem
    picked = pick(weight, indices)                            # (bags or 1, positions, dim)
    mask = held.reshape(*held.shape, 1)
    if mode == "max":
        best = where(mask, picked, float("-inf")).amax(1)
        return where(held.any(1, keepdim=True), best, 0.0)
    if per_sample_weights is not None:
        picked = picked * per_sample_weights.reshape(*indices.shape, 1)
    total = where(mask, picked, 0.0).sum(1)
    if mode == "sum":
        return total
    count = held.sum(1, keepdim=True).to(weight.dtype)
    return total / count.clamp(min=1)


__all__ = ["embedding_bag"]
