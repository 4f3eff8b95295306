"""Ranking losses written with tensor ops: the triplet loss with any distance, and the
multi-label hinge loss over each sample's target classes."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.elementwise import where
from ..frontend.jit_protocol import in_jit
from .distance import pairwise_distance
from .loss_functions import check_reduction, legacy_reduction


def _reduce(loss, reduction: str):
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if reduction == "mean" else loss


def triplet_margin_with_distance_loss(anchor, positive, negative, *, distance_function=None,
                                      margin: float = 1.0, swap: bool = False,
                                      reduction: str = "mean"):
    """max(0, margin + d(a, p) - d(a, n)) for a distance_function d (pairwise_distance by
    default); with swap, d(a, n) is the smaller of d(a, n) and d(p, n)."""
    check_reduction(reduction)
    if margin <= 0:
        raise ValueError(f"margin must be greater than 0, got {margin}")
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"The anchor, positive, and negative tensors are expected to have the "
                           f"same number of dimensions, but got: anchor {anchor.ndim}D, positive "
                           f"{positive.ndim}D, and negative {negative.ndim}D inputs")
    distance = pairwise_distance if distance_function is None else distance_function
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    return _reduce((margin + d_pos - d_neg).clamp_min(0), reduction)


def _check_multilabel(input, target):
    if input.ndim > 2 or tuple(target.shape) != tuple(input.shape):
        raise RuntimeError(f"multilabel_margin_loss: inconsistent target size: "
                           f"{list(target.shape)} for input of size: {list(input.shape)}")
    if target.dtype != dt.int64:
        raise RuntimeError(f"multilabel_margin_loss: expected target of dtype int64, got "
                           f"{target.dtype.name}")
    classes = input.shape[-1] if input.ndim else 1
    if target.is_leaf and not in_jit() and target.numel():    # a value already at hand
        values = target.numpy()
        if values.min() < -1 or values.max() >= classes:
            raise RuntimeError("multilabel_margin_loss: argument #2 'target' is out of range: "
                               f"class indices must lie in [-1, {classes})")


def multilabel_margin_loss(input, target, size_average=None, reduce=None,
                           reduction: str = "mean"):
    """For each sample, the sum over its target classes j (target's leading entries up to the
    first -1) and non-target classes i of max(0, 1 - (x[j] - x[i])), divided by the number of
    classes."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    _check_multilabel(input, target)
    x = input.reshape(-1, input.shape[-1] if input.ndim else 1)
    y = target.reshape(x.shape)
    rows, classes = x.shape
    listed = (y < 0).to(dt.int64).cumsum(1) == 0                    # before the first -1
    class_ids = creation.arange(classes, device=x.device).reshape(1, 1, classes)
    is_target = (listed.reshape(rows, classes, 1) & (y.reshape(rows, classes, 1) == class_ids))
    is_target = is_target.any(1)                                      # (rows, classes)
    x_target = x.gather(1, y.clamp(min=0))                            # x[y[k]], (rows, k)
    hinge = (1 - x_target.reshape(rows, classes, 1) + x.reshape(rows, 1, classes)).clamp_min(0)
    counted = listed.reshape(rows, classes, 1) & ~is_target.reshape(rows, 1, classes)
    loss = where(counted, hinge, 0.0).sum((1, 2)) / classes
    if input.ndim < 2:
        loss = loss.reshape(())
    if reduction == "mean" and rows == 0:
        return loss.sum()                  # PyTorch's mean over no samples is 0, not NaN
    return _reduce(loss, reduction)


__all__ = ["triplet_margin_with_distance_loss", "multilabel_margin_loss"]
