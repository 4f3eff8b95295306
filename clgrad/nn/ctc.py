"""The connectionist temporal classification loss: F.ctc_loss, as PyTorch 2.13's.

Each target is extended with blanks (b, l1, b, l2, ..., b); the forward variable alpha_t(s),
the log-probability of every alignment of the first t+1 frames ending at extended label s,
follows alpha_{t-1} at s, s-1 and (between distinct labels) s-2. That recursion is a loop over
time of elementwise steps on (N, 2S+1) tensors: each step reads its frame's emissions from a
buffer of its own and keeps its alpha in one (frontend/step_slices.py), so the step compiles
once whatever the sequence length.

The gradient is PyTorch's own formula, exp(log_probs) - posterior / probs per class, with the
backward variables beta computed by the same recursion run on every sample's reversed frames
and labels: it is the gradient of the loss through a log_softmax that produced log_probs (not
of the loss as a function of log_probs alone), as PyTorch's is.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.elementwise import where
from ..frontend.function import Function
from ..frontend.joining import cat, stack
from ..frontend.operands import is_tensor
from ..frontend.step_slices import kept, step_slices
from .loss_functions import check_reduction

_NEG_INF = -math.inf
_ARGS = " (while checking arguments for ctc_loss_allocate_outputs)"


# ---- arguments ------------------------------------------------------------------------------

def _lengths(name: str, lengths, batch: int) -> list[int]:
    """input_lengths or target_lengths as Python ints, one per sample."""
    if is_tensor(lengths):
        if lengths.dtype.is_float or lengths.dtype == dt.bool_:
            raise RuntimeError(f"ctc_loss: {name} must be integral, got {lengths.dtype.name}")
        values = lengths.reshape(-1).tolist()
    elif isinstance(lengths, Sequence) and all(isinstance(v, int) for v in lengths):
        values = list(lengths)
    else:
        raise TypeError(f"ctc_loss: {name} must be a tensor or a tuple of ints, got "
                        f"{type(lengths).__name__}")
    if len(values) != batch:
        raise RuntimeError(f"{name} must be of size batch_size (ctc_loss: batch size {batch}, "
                           f"got {len(values)} lengths)")
    return values


def _check_range(name: str, values: list[int], most: int | None) -> None:
    low = min(values)
    if low < 0:
        raise RuntimeError(f"Expected {name} to have value at least 0, but got value {low}"
                           + _ARGS)
    if most is not None and max(values) > most:
        raise RuntimeError(f"Expected {name} to have value at most {most}, but got value "
                           f"{max(values)}" + _ARGS)


def _padded_targets(targets, target_lengths: list[int]):
    """targets as an int64 (N, max target length) tensor, each row's labels first; 1-D
    targets are the samples' labels one after another."""
    batch, longest = len(target_lengths), max(target_lengths)
    if targets.ndim not in (1, 2):
        raise RuntimeError(f"Expected 1 to 2 dimensions, but got {targets.ndim}-dimensional "
                           "tensor for argument #2 'targets'" + _ARGS)
    targets = targets.long()
    if targets.ndim == 2:
        if targets.shape[0] != batch:
            raise RuntimeError(f"Expected tensor to have size {batch} at dimension 0, but got "
                               f"size {targets.shape[0]} for argument #2 'targets'" + _ARGS)
        if targets.shape[1] < longest:
            raise RuntimeError(f"Expected tensor to have size at least {longest} at dimension "
                               f"1, but got size {targets.shape[1]} for argument #2 'targets'"
                               + _ARGS)
        return targets[:, :longest]
    total = sum(target_lengths)
    if targets.shape[0] != total:
        raise RuntimeError(f"Expected tensor to have size {total} at dimension 0, but got size "
                           f"{targets.shape[0]} for argument #2 'targets'" + _ARGS)
    if not total:
        return creation.zeros(batch, 0, dtype=dt.int64, device=targets.device)
    starts, index = 0, []
    for length in target_lengths:
        index.append([min(starts + k, total - 1) for k in range(longest)])
        starts += length
    return targets[creation.tensor(index, device=targets.device)]


# ---- the recursion --------------------------------------------------------------------------

def _shifted(x, k: int, fill):
    """x moved k places right along its last dim, fill coming in at the left."""
    width = x.shape[-1]
    k = min(k, width)
    head = creation.full((*x.shape[:-1], k), fill, dtype=x.dtype, device=x.device)
    return cat([head, x[..., :width - k]], -1)


def _extended(targets, labelled, blank: int):
    """(N, 2S+1) labels b, l1, b, l2, ..., b: blanks between and around each sample's labels
    (where labelled) and past them."""
    batch, longest = targets.shape
    blanks = creation.full((batch, longest + 1), blank, dtype=dt.int64, device=targets.device)
    pairs = stack([blanks[:, 1:], where(labelled, targets, blank)], 2)
    return cat([pairs.reshape(batch, 2 * longest), blanks[:, :1]], 1)


def _skips(labels, blank: int):
    """Where a path may skip the blank before a label: between two different labels."""
    return (labels != blank) & (labels != _shifted(labels, 2, blank))


def _log_add(*terms):
    """log(sum(exp(terms))), -inf (not NaN) where every term is -inf."""
    top = terms[0]
    for term in terms[1:]:
        top = top.maximum(term)
    top = where(top.isfinite(), top, 0.0)
    total = (terms[0] - top).exp()
    for term in terms[1:]:
        total = total + (term - top).exp()
    return top + total.log()


def _forward_variables(emissions, skips):
    """alpha for t = -1 (log 1 at the first extended label) and every frame: (T+1, N, 2S+1),
    from emissions (T, N, 2S+1), the log-probabilities of each extended label per frame."""
    batch, width = emissions.shape[1:]
    first = creation.arange(width, device=emissions.device) == 0
    alpha = where(first, 0.0, _NEG_INF).to(emissions.dtype).expand(batch, width)
    alphas = [alpha]
    for emitted in step_slices(emissions):
        skipped = where(skips, _shifted(alpha, 2, _NEG_INF), _NEG_INF)
        alpha = kept(_log_add(alpha, _shifted(alpha, 1, _NEG_INF), skipped) + emitted)
        alphas.append(alpha)
    return stack(alphas)


class _Layout:
    """Where each sample's frames and labels lie, as index tensors built on the host from the
    lengths (read there, as PyTorch reads them), so that no kernel computes an index."""

    def __init__(self, input_lengths: list[int], target_lengths: list[int], frames: int,
                 device):
        steps = np.array(input_lengths).reshape(1, -1, 1)
        lengths = np.array(target_lengths).reshape(-1, 1)
        widths = 2 * lengths.reshape(1, -1, 1) + 1
        batch, width = steps.shape[1], widths.max()
        t, n, s = np.ix_(range(frames), range(batch), range(width))
        upload = lambda a: creation.tensor(a, device=device)    # noqa: E731
        self.labelled = upload(np.arange(lengths.max()) < lengths)         # (N, S)
        self.counted = upload(t < steps)                                    # (T, N, 1)
        # frame T_n - 1 - t, extended label L_n - 1 - s of sample n, as flat indices
        self.frames_reversed = (upload(((steps - 1 - t).clip(0) * batch + n) * width
                                       + (widths - 1 - s).clip(0)),
                                upload((t < steps) & (s < widths)))
        self.labels_reversed = (upload(n[0] * width + (widths[0] - 1 - s[0]).clip(0)),
                                upload(s[0] < widths[0]))
        # alpha at the sample's last frame (T_n in the (T+1)-long stack of forward variables)
        # at its last extended label and (where the target is not empty) the one before it
        last = (steps[0] * batch + n[0]) * width + widths[0] - 1
        self.ends = upload(np.concatenate([last, last - (widths[0] > 1)], 1))
        self.two_ends = upload(widths[0, :, 0] > 1)


def _reversed(x, reversal: tuple, fill):
    """x with each sample's frames (or labels) in reverse order, fill past them."""
    index, valid = reversal
    return where(valid, x.reshape(-1)[index], fill)


def _log_likelihood(alphas, layout: _Layout):
    """log p(target) per sample: alpha at the sample's last frame, summed over the last
    extended label and the label before it."""
    ends = alphas.reshape(-1)[layout.ends]
    return _log_add(ends[:, 0], where(layout.two_ends, ends[:, 1], _NEG_INF))


class CtcLoss(Function):
    """-log p(target | log_probs) per sample, with PyTorch's gradient."""

    @staticmethod
    def forward(ctx, log_probs, labels, layout, blank, zero_infinity):
        frames = log_probs.shape[0]
        emissions = log_probs.gather(2, labels.unsqueeze(0).expand(frames, -1, -1))
        alphas = _forward_variables(emissions, _skips(labels, blank))
        nll = -_log_likelihood(alphas, layout)
        ctx.save_for_backward(log_probs, labels, emissions, alphas[1:], nll)
        ctx.layout, ctx.blank, ctx.zero_infinity = layout, blank, zero_infinity
        return nll

    @staticmethod
    def backward(ctx, grad):
        log_probs, labels, emissions, alphas, nll = ctx.saved_tensors
        layout = ctx.layout
        labels_reversed = _reversed(labels, layout.labels_reversed, ctx.blank)
        emissions_reversed = _reversed(emissions, layout.frames_reversed, _NEG_INF)
        betas = _forward_variables(emissions_reversed, _skips(labels_reversed, ctx.blank))
        betas = _reversed(betas[1:], layout.frames_reversed, _NEG_INF)
        # alpha * beta / p per extended label (both include the frame's emission), summed per
        # class; where no path exists (nll inf) it is NaN everywhere, as in PyTorch's formula
        occupancy = (alphas + betas + nll.reshape(1, -1, 1)).exp()
        class_ids = creation.arange(log_probs.shape[2], device=log_probs.device)
        classes = (labels.unsqueeze(2) == class_ids).to(log_probs.dtype)
        mass = (occupancy.transpose(0, 1) @ classes).transpose(0, 1)
        gradient = (log_probs.exp() - (mass.log() - log_probs).exp()) * grad.reshape(1, -1, 1)
        counted = layout.counted
        if ctx.zero_infinity:
            counted = counted & ~nll.isinf().reshape(1, -1, 1)
        return where(counted, gradient, 0.0), None, None, None, None


# ---- F.ctc_loss -----------------------------------------------------------------------------

def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0,
             reduction: str = "mean", zero_infinity: bool = False):
    """The CTC loss of (T, N, C) (or unbatched (T, C)) log_probs against targets, padded
    (N, S) or concatenated 1-D. reduction 'mean' divides each sample's loss by its target
    length (at least 1) before averaging over the batch; zero_infinity makes the loss and
    gradient of impossible alignments 0."""
    check_reduction(reduction)
    unbatched = log_probs.ndim == 2
    log_probs = log_probs.unsqueeze(1) if log_probs.ndim != 3 else log_probs
    if log_probs.ndim != 3:
        raise RuntimeError(f"Expected 3-dimensional tensor, but got {log_probs.ndim}-"
                           "dimensional tensor for argument #1 'log_probs'" + _ARGS)
    if not log_probs.dtype.is_float or log_probs.dtype == dt.float16:
        raise NotImplementedError(f"ctc_loss: log_probs must be float32 or float64, got "
                                  f"{log_probs.dtype.name}")
    if not log_probs.numel():
        raise RuntimeError(f"log_probs tensor must not be empty (ctc_loss: log_probs of shape "
                           f"{tuple(log_probs.shape)})")
    frames, batch, classes = log_probs.shape
    if not 0 <= blank < classes:
        raise RuntimeError(f"blank must be in label range (ctc_loss: blank {blank}, "
                           f"{classes} classes)")
    if is_tensor(input_lengths) != is_tensor(target_lengths):
        raise TypeError("ctc_loss: input_lengths and target_lengths must be both tensors or "
                        "both tuples of ints")
    input_lengths = _lengths("input_lengths", input_lengths, batch)
    target_lengths = _lengths("target_lengths", target_lengths, batch)
    _check_range("input_lengths", input_lengths, frames)
    _check_range("target_lengths", target_lengths, None)
    targets = _padded_targets(targets, target_lengths)
    layout = _Layout(input_lengths, target_lengths, frames, log_probs.device)
    labels = _extended(targets.to(log_probs.device), layout.labelled, blank)
    loss = CtcLoss.apply(log_probs, labels, layout, blank, zero_infinity)
    if zero_infinity:
        loss = where(loss == math.inf, creation.zeros_like(loss), loss)
    if reduction == "mean":
        divisors = creation.tensor(target_lengths, device=log_probs.device).clamp_min(1)
        return (loss / divisors).mean()
    if reduction == "sum":
        return loss.sum()
    return loss.squeeze(0) if unbatched else loss


__all__ = ["ctc_loss"]
