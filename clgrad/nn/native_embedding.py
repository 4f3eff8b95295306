"""torch.embedding_bag (the ATen form: the weight first, mode as 0/1/2 for sum/mean/max,
offsets always given, four outputs) and torch.embedding_renorm_.

embedding_bag returns (output, offset2bag, bag_size, max_indices) as PyTorch's CPU kernel
does: offset2bag is each index's bag (empty in sum mode on its fast path: a float32, float16
or bfloat16 weight and no padding_idx), bag_size the number of non-padding indices of each bag
(zeros in sum mode), max_indices in max mode the row of weight each output element came from
(the first of equal maxima; 0 for an empty bag), the bag sizes in mean mode and zeros in sum
mode. With include_last_offset the last bag runs to the end of the indices, as on PyTorch's
CPU. Offsets and indices are read on the host, for PyTorch's checks and for these outputs.
Where a bag's maximum is NaN, clgrad's max takes the NaN (PyTorch's CPU loop keeps a NaN only
when it comes first in the bag)."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.backward import record
from ..frontend.elementwise import where
from ..frontend.grad_mode import is_grad_enabled, no_grad
from ..frontend.no_derivative import OneSidedBackward
from ..frontend.operands import is_tensor
from ..frontend.tensor import Tensor, host_values
from .embedding_bag import embedding_bag as functional_embedding_bag
from .native_norms import torch_dtype_name

_MODES = ("sum", "mean", "max")
_CHECK_MESSAGE = ("  (Could this error message be improved?  If so, please report an "
                  "enhancement request to PyTorch.)")


def _legacy_type(t) -> str:
    return f"torch.{torch_dtype_name(t.dtype)}Tensor"


def _check_indices(op: str, argument: str, t) -> None:
    if t.dtype not in (dt.int32, dt.int64):
        raise RuntimeError(f"Expected tensor for argument {argument} to have one of the "
                           f"following scalar types: Long, Int; but got {_legacy_type(t)} "
                           f"instead (while checking arguments for {op})")


def _check_range(indices: np.ndarray, rows: int) -> None:
    bad = np.flatnonzero((indices < 0) | (indices >= rows))
    if bad.size:
        k = int(bad[0])
        raise RuntimeError(f"Index {k} of input takes value {int(indices[k])} which is not in "
                           f"the valid range [0, {rows})")


def _check_bag_arguments(weight, indices, offsets, mode, per_sample_weights) -> None:
    if not is_tensor(offsets):
        raise TypeError(f"embedding_bag(): argument 'offsets' (position 3) must be Tensor, not "
                        f"{type(offsets).__name__}")
    for t in (indices, offsets):
        _check_indices("embedding_bag", "#1 'indices'", t)
    if weight.ndim != 2:
        raise RuntimeError(f"weight has to be a 2D Tensor, but got Tensor of dimension "
                           f"{weight.ndim}")
    if mode not in (0, 1, 2):
        raise RuntimeError("`mode` must be sum, mean, or max.")
    if per_sample_weights is None:
        return
    if mode != 0:
        raise RuntimeError("embedding_bag: per_sample_weights only supported with mode='sum'")
    if per_sample_weights.dtype != weight.dtype:
        raise RuntimeError(f"Expected tensor for argument #1 'weight' to have the same type as "
                           f"tensor for argument #1 'per_sample_weights'; but type "
                           f"{_legacy_type(weight)} does not equal "
                           f"{_legacy_type(per_sample_weights)} (while checking arguments for "
                           f"embedding_bag)")
    if per_sample_weights.numel() != indices.numel():
        raise RuntimeError(f"Expected per_sample_weights.value().numel() == indices.numel() to "
                           f"be true, but got false.{_CHECK_MESSAGE}")


def embedding_bag(weight, indices, offsets, scale_grad_by_freq: bool = False, mode: int = 0,
                  sparse: bool = False, per_sample_weights=None,
                  include_last_offset: bool = False, padding_idx: int | None = None):
    _check_bag_arguments(weight, indices, offsets, mode, per_sample_weights)
    rows = weight.shape[0]
    if padding_idx is not None:
        if not -rows <= padding_idx < rows:
            raise RuntimeError(f"padding_idx must be within the number of embeddings, -{rows} "
                               f"through {rows - 1}, but got {padding_idx}")
        padding_idx %= rows
    flat = indices.reshape(-1)
    index = host_values(flat).astype(np.int64)
    starts = host_values(offsets).reshape(-1).astype(np.int64)
    if starts.size and starts[0] != 0:
        raise RuntimeError(f"offsets[0] has to be 0, i.e., the first sequence in the mini-batch "
                           f"has to start from position 0. However, got {starts[0]}")
    if starts.size and starts[-1] > index.size:
        raise RuntimeError(f"offsets[-1] can not be greater than input's length {index.size} "
                           f"but got offsets[-1] of {starts[-1]}")
    _check_range(index, rows)
    bags = max(starts.size - 1 if include_last_offset else starts.size, 0)
    bag_of = np.searchsorted(starts[1:bags], np.arange(index.size), side="right")
    counted = index != padding_idx if padding_idx is not None else np.ones(index.size, bool)
    sizes = np.bincount(bag_of[counted], minlength=bags) if mode else np.zeros(bags, np.int64)
    int_type = dt.int64 if dt.int64 in (indices.dtype, offsets.dtype) else dt.int32

    def ints(values):
        return creation.tensor(np.asarray(values, np.int64), dtype=int_type,
                               device=weight.device)
    fast = mode == 0 and padding_idx is None and weight.dtype != dt.float64
    offset2bag = ints(np.zeros(0) if fast else bag_of)
    dim = weight.shape[1]
    if not bags:    # (PyTorch's kernel crashes here)
        output = creation.zeros(0, dim, dtype=weight.dtype, device=weight.device)
        return output, ints(np.zeros(0)), ints(np.zeros(0)), \
            ints(np.zeros((0, dim) if mode == 2 else 0))
    if mode == 2:
        output, max_indices = _bag_maxima(weight, flat, bag_of, counted, sizes, bags,
                                          int_type)
        return output, offset2bag, ints(sizes), max_indices
    ends = starts.copy()
    if include_last_offset and not fast:    # the last bag ends with the indices, as PyTorch's
        ends[-1] = index.size               # CPU kernel has it (its fast path ends it there)
    output = functional_embedding_bag(
        flat, weight, ints(ends), scale_grad_by_freq=scale_grad_by_freq, mode=_MODES[mode],
        per_sample_weights=None if per_sample_weights is None else per_sample_weights.reshape(-1),
        include_last_offset=include_last_offset, padding_idx=padding_idx)
    if not scale_grad_by_freq:      # (else its gradient is a custom Function's)
        inputs = [weight] + ([per_sample_weights] if per_sample_weights is not None else [])
        output = record("embedding_bag", output.node, weight.device, inputs)
    return output, offset2bag, ints(sizes), ints(np.zeros(bags) if mode == 0 else sizes)


def _bag_maxima(weight, flat, bag_of, counted, sizes, bags, int_type):
    """(output, max_indices) of max mode: the index of each column's first maximum in each
    bag (0 for an empty bag), and weight's elements there, so that the gradient reaches
    exactly those rows, as PyTorch's."""
    rows = creation.zeros(bags, weight.shape[1], dtype=dt.int64, device=weight.device)
    if flat.numel():
        held = creation.tensor((bag_of[None, :] == np.arange(bags)[:, None]) & counted[None, :],
                               device=weight.device)
        with no_grad():
            picked = weight.detach()[flat]                              # (n, dim)
            candidates = where(held.unsqueeze(-1), picked.unsqueeze(0), float("-inf"))
            position = candidates.argmax(1)                             # (bags, dim)
            rows = flat.to(dt.int64)[position.reshape(-1)].reshape(position.shape)
    filled = creation.tensor(sizes > 0, device=weight.device).unsqueeze(1)
    max_indices = where(filled, rows, 0)
    output = where(filled, weight.gather(0, max_indices), 0.0)
    output = record("embedding_bag", output.node, weight.device, [weight])
    return output, max_indices.to(int_type)


def embedding_renorm_(input, indices, max_norm: float, norm_type: float):
    """Scales in place each row of input (a weight) that indices names whose norm_type-norm
    exceeds max_norm, by max_norm / (norm + 1e-7). Returns input. Its grad_fn refuses
    backward, as PyTorch's EmbeddingRenormBackward0."""
    _check_indices("embedding_renorm_", "#2 'indices'", indices)
    if input.ndim != 2:
        raise RuntimeError(f"Expected 2-dimensional tensor, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for "
                           f"embedding_renorm_)")
    if not input.dtype.is_float:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {torch_dtype_name(input.dtype)} instead.")
    rows = input.shape[0]
    picked = host_values(indices).reshape(-1).astype(np.int64)
    bad = picked[(picked < -rows) | (picked >= rows)]
    if bad.size:
        raise IndexError(f"select(): index {int(bad[0])} out of range for tensor of size "
                         f"{list(input.shape)} at dimension 0")
    chosen = np.zeros(rows, bool)
    chosen[picked % rows if rows else picked] = True
    src = input._snapshot()
    with no_grad():
        norms = src.detach().norm(p=norm_type, dim=1, keepdim=True)
        named = creation.tensor(chosen, device=input.device).reshape(-1, 1)
        scale = where(named & (norms > max_norm), max_norm / (norms + 1e-7), 1.0)
    node = (src.detach() * scale.to(input.dtype)).node
    result = Tensor(node, input.device)
    if src.requires_grad and is_grad_enabled():
        result.requires_grad = True
        result.grad_fn = OneSidedBackward("EmbeddingRenormBackward0", [src], node, 0,
                                          "embedding_renorm", None)
    return input._assign(result, "embedding_renorm_")


FUNCTIONS = {"embedding_bag": embedding_bag, "embedding_renorm_": embedding_renorm_}
