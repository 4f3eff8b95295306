"""linear_cross_entropy: cross_entropy of linear(input, weight) logits, as
torch.nn.functional's reference path (options, its chunking strategy, changes how PyTorch
saves memory, not the result: clgrad's schedule decides what is kept)."""
from __future__ import annotations


def linear_cross_entropy(input, linear_weight, target, *, linear_bias=None, weight=None,
                         reduction: str = "mean", ignore_index: int | None = None,
                         label_smoothing: float = 0.0, options=None):
    """linear_weight is (C, in_features), or (C, d_1, ..., d_K, in_features) for a
    K-dimensional loss over (N, in_features) input."""
    from .functional import cross_entropy
    classes = tuple(linear_weight.shape[:-1])
    if len(classes) > 1 and input.ndim != 2:
        raise RuntimeError(f"linear_cross_entropy: a {len(classes) - 1}-dimensional loss "
                           f"(linear_weight of shape {tuple(linear_weight.shape)}) expects "
                           f"input of shape (N, in_features), got {tuple(input.shape)}")
    flat = linear_weight.reshape(-1, linear_weight.shape[-1])
    logits = (input @ flat.T).reshape(*input.shape[:-1], *classes)
    if linear_bias is not None:
        logits = logits + linear_bias
    return cross_entropy(logits, target, weight, reduction=reduction,
                         ignore_index=-100 if ignore_index is None else ignore_index,
                         label_smoothing=label_smoothing)


__all__ = ["linear_cross_entropy"]
