"""torch.* functions whose output size depends on the values (nonzero, masked_select, unique,
bincount, histc): like PyTorch, they read the values on the host to learn that size. Where
the output is a differentiable selection of the input (masked_select), the selection itself
is a lazy gather, so gradients reach the input."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from . import creation
from .operands import broadcast_shape, is_tensor


def _index_tensor(values, device):
    return creation.tensor(np.asarray(values, dtype=np.int64), device=device)


def nonzero(input, *, as_tuple: bool = False):
    """The indices of the nonzero elements, one row each in row-major order (as_tuple: one
    index tensor per dim)."""
    array = input.detach().numpy()
    found = np.nonzero(np.atleast_1d(array))
    if as_tuple:
        return tuple(_index_tensor(f, input.device) for f in found)
    if input.ndim == 0:         # one row of no coordinates if the scalar is nonzero
        return _index_tensor(np.zeros((int(array != 0), 0)), input.device)
    return _index_tensor(np.stack(found, 1), input.device)


def argwhere(input):
    return nonzero(input)


def masked_select(input, mask):
    if mask.dtype != dt.bool_:
        raise RuntimeError(f"masked_select: expected BoolTensor for mask, got "
                           f"{mask.dtype.name}")
    shape = broadcast_shape("masked_select", input.shape, mask.shape)
    picked = np.flatnonzero(np.broadcast_to(mask.detach().numpy(), shape))
    return input.expand(shape).reshape(-1)[_index_tensor(picked, input.device)]


def _with_extras(values, inverse, counts, device, return_inverse, return_counts, shape):
    out = [creation.tensor(values, device=device)]
    if return_inverse:
        out.append(_index_tensor(inverse, device).reshape(shape))
    if return_counts:
        out.append(_index_tensor(counts, device))
    return out[0] if len(out) == 1 else tuple(out)


def unique(input, sorted: bool = True, return_inverse: bool = False,  # noqa: A002  (torch's)
           return_counts: bool = False, dim: int | None = None):
    """The distinct values, sorted (also when sorted=False, as PyTorch on CPU); with dim, the
    distinct slices along dim."""
    array = input.detach().numpy()
    if dim is None:
        values, inverse, counts = np.unique(array, return_inverse=True, return_counts=True)
        return _with_extras(values, inverse.reshape(-1), counts, input.device, return_inverse,
                            return_counts, input.shape)
    axis = dim % input.ndim if input.ndim else 0
    values, inverse, counts = np.unique(array, return_inverse=True, return_counts=True,
                                        axis=axis)
    return _with_extras(values, inverse.reshape(-1), counts, input.device, return_inverse,
                        return_counts, (input.shape[axis],))


def unique_consecutive(input, return_inverse: bool = False, return_counts: bool = False,
                       dim: int | None = None):
    """Each run of equal consecutive values (or slices along dim) as one."""
    array = input.detach().numpy()
    axis = 0 if dim is None else dim % max(input.ndim, 1)
    flat = array.reshape(-1) if dim is None else np.moveaxis(array, axis, 0)
    if len(flat):
        starts = np.concatenate(([True], np.any((flat[1:] != flat[:-1]).reshape(len(flat) - 1,
                                                                                 -1), 1)))
    else:
        starts = np.zeros(0, bool)
    inverse = np.cumsum(starts) - 1
    counts = np.diff(np.append(np.flatnonzero(starts), len(flat)))
    values = flat[starts] if dim is None else np.moveaxis(flat[starts], 0, axis)
    shape = input.shape if dim is None else (input.shape[axis],)
    return _with_extras(values, inverse, counts, input.device, return_inverse, return_counts,
                        shape)


def bincount(input, weights=None, minlength: int = 0):
    """How often each value 0..max occurs (or the sum of its weights): a comparison of every
    element with every bin, summed. The number of bins is read on the host."""
    if input.ndim != 1 or input.dtype.is_float or input.dtype == dt.bool_:
        raise RuntimeError(f"bincount only supports 1-d non-negative integral inputs, got "
                           f"{input.ndim}-d {input.dtype.name}")
    values = input.detach().numpy()
    if values.size and values.min() < 0:
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if minlength < 0:
        raise RuntimeError("minlength should be >= 0")
    length = max(int(values.max()) + 1 if values.size else 0, minlength)
    hits = input.unsqueeze(0) == creation.arange(length, device=input.device).unsqueeze(1)
    if weights is None or not input.numel():     # (PyTorch counts then, weights or not)
        return hits.sum(1)
    if weights.shape != input.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    weights = weights if weights.dtype.is_float else weights.double()
    return (hits * weights.unsqueeze(0)).sum(1)


def histc(input, bins: int = 100, min: float = 0, max: float = 0):  # noqa: A002  (torch's)
    """Counts of the elements in bins equal-width bins between min and max (when both are 0,
    the data's own min and max, read on the host); elements outside are not counted."""
    if not input.dtype.is_float:
        raise RuntimeError(f"\"histogram_cpu\" not implemented for '{input.dtype.name}'")
    if bins <= 0:
        raise RuntimeError(f"torch.histc(): bins must be > 0, but got {bins} for dimension 0")
    low, high = float(min), float(max)
    if low == high and input.numel():
        data = input.detach().numpy()
        low, high = float(data.min()), float(data.max())
    if low == high:
        low, high = low - 1, high + 1
    if low > high:
        raise RuntimeError(f"torch.histc(): max must be larger than min, but got min {low} "
                           f"max {high}")
    x = input.detach().reshape(-1).double()
    # the bin of each element; max itself belongs to the last bin
    index = ((x - low) * (bins / (high - low))).floor().clamp(max=bins - 1)
    inside = (x >= low) & (x <= high)
    hits = (index.unsqueeze(0) == creation.arange(bins, device=input.device).unsqueeze(1)) \
        & inside.unsqueeze(0)
    return hits.sum(1).to(input.dtype)


def isin(elements, test_elements, *, assume_unique: bool = False, invert: bool = False):
    """Whether each element occurs in test_elements: a comparison with each of them."""
    if not is_tensor(elements):
        elements = creation.tensor(elements, device=test_elements.device)
    if not is_tensor(test_elements):
        test_elements = creation.tensor(test_elements, device=elements.device)
    found = (elements.unsqueeze(-1) == test_elements.reshape(-1)).any(-1)
    return ~found if invert else found


def searchsorted(sorted_sequence, input, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter=None):
    """Where each value would be inserted to keep each innermost row sorted: the count of the
    row's elements below it (at or below it when right)."""
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but "
                               f"got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, "
                               "got side of left while right was True")
        right = side == "right"
    if sorter is not None:
        sorted_sequence = sorted_sequence.gather(-1, sorter)
    scalar = not is_tensor(input)
    if scalar:
        input = creation.tensor(input, dtype=sorted_sequence.dtype, device=sorted_sequence.device)
    if sorted_sequence.ndim > 1 and sorted_sequence.shape[:-1] != input.shape[:-1]:
        raise RuntimeError(f"torch.searchsorted(): boundaries tensor should be 1 dimension or "
                           f"the first N-1 dimensions of boundaries tensor and input value "
                           f"tensor must match, but we got boundaries tensor "
                           f"{list(sorted_sequence.shape)} and input value tensor "
                           f"{list(input.shape)}")
    row = sorted_sequence if sorted_sequence.ndim == 1 else sorted_sequence.unsqueeze(-2)
    value = input.unsqueeze(-1)
    below = (row <= value) if right else (row < value)
    return below.sum(-1).to(dt.int32 if out_int32 else dt.int64)


def bucketize(input, boundaries, *, out_int32: bool = False, right: bool = False):
    if boundaries.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim("
                           f"{boundaries.ndim})")
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


METHODS = [
    ("nonzero", nonzero), ("argwhere", argwhere), ("masked_select", masked_select),
    ("unique", unique), ("unique_consecutive", unique_consecutive), ("bincount", bincount),
    ("histc", histc),
]

FUNCTIONS = {"isin": isin, "searchsorted": searchsorted, "bucketize": bucketize,
             **{name: fn for name, fn in METHODS}}
