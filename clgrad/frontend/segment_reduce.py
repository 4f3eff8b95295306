"""torch.segment_reduce: reductions (sum, mean, max, min, prod) of consecutive segments of data
along an axis, the segments given by their lengths or by their offsets, with PyTorch's
checks, its values for empty segments (0, NaN, -inf, inf, 1, or `initial` where given) and
its gradients: max and min share a segment's gradient evenly among the elements equal to its
result (NaN matching NaN), prod's is the product of the others, zeros and NaNs included.
(PyTorch 2.13 divides among ties only a positive gradient, its kernel testing grad > 0 to find
the elements it wrote; a negative one reaches each tie whole. clgrad divides both.)

The lengths or offsets are read on the host (PyTorch checks them there too): each element of
data gets the number of its segment, and the reduction is one scatter_reduce along the axis
into a slot per segment, plus one for elements outside every segment (dropped), so its cost
is linear in the size of data. The gradient is a weight per element, worked out when backward
runs, times its segment's incoming gradient."""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from . import creation
from .backward import _FREED, GradFn
from .grad_mode import is_grad_enabled
from .elementwise import where
from .joining import cat
from .operands import is_tensor
from .scatter import scatter_reduce
from .tensor import Tensor, host_values
from .type_functions import _SCALAR_TYPE

_REDUCTIONS = {"sum": "sum", "mean": "mean", "max": "amax", "amax": "amax", "min": "amin",
               "amin": "amin", "prod": "prod"}
_EMPTY = {"sum": 0.0, "mean": 0.0, "amax": -math.inf, "amin": math.inf, "prod": 1.0}
_CHECK_MESSAGE = ("  (Could this error message be improved?  If so, please report an "
                  "enhancement request to PyTorch.)")


def _wrap_axis(axis: int, ndim: int) -> int:
    rank = max(ndim, 1)
    if not -rank <= axis < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got {axis})")
    return axis % rank


def _boundaries(data, axis: int, lengths, offsets, unsafe: bool):
    """(starts, counts) of the segments, int64 arrays of shape data.shape[:axis] + (S,)."""
    given, name = (offsets, "offsets") if offsets is not None else (lengths, "lengths")
    if data.ndim < given.ndim:
        raise RuntimeError(f"Expected data.dim() >= {name}_value.dim() to be true, but got "
                           f"false.{_CHECK_MESSAGE}")
    if axis != given.ndim - 1:
        raise RuntimeError(f"segment_reduce(): Expected axis to be the last dimension of {name} "
                           f"but got {axis}.")
    if tuple(given.shape[:-1]) != tuple(data.shape[:axis]):
        raise RuntimeError(f"segment_reduce(): expected {name} of shape "
                           f"{list(data.shape[:axis])} + [segments], got {list(given.shape)}")
    values = host_values(given).astype(np.int64)
    if offsets is None and not unsafe:
        if not values.size:
            raise RuntimeError("min(): Expected reduction dim to be specified for input.numel() "
                               "== 0. Specify the reduction dim with the 'dim' argument.")
        if values.min() < 0:
            raise RuntimeError("lengths contains negative value!")
        if np.any(values.sum(-1) != data.shape[axis]):
            raise RuntimeError("segment_reduce(): Expected all rows of lengths along axis to sum "
                               "to data.size(lengths.dim()-1) when !unsafe.")
    if offsets is not None:
        starts, counts = values[..., :-1], np.diff(values, axis=-1)
    else:
        starts, counts = np.cumsum(values, -1) - values, values
    if np.any(counts < 0):
        raise RuntimeError(f"Expected segment_length >= 0 to be true, but got false."
                           f"{_CHECK_MESSAGE}")
    return starts, counts


def _segment_of_each(starts: np.ndarray, counts: np.ndarray, n: int) -> np.ndarray:
    """For each of the n positions of each row, the number of its segment, or S (the number
    of segments) where no segment holds it."""
    s = starts.shape[-1]
    rows_starts, rows_counts = starts.reshape(-1, s), counts.reshape(-1, s)
    ids = np.full((rows_starts.shape[0], n), s, np.int64)
    positions = np.arange(n)
    for row, (begin, count) in enumerate(zip(rows_starts, rows_counts)):
        for k in np.flatnonzero(count):
            ids[row, positions[begin[k]:begin[k] + count[k]]] = k
    return ids.reshape(starts.shape[:-1] + (n,))


def segment_reduce(data, reduce: str, *, lengths=None, indices=None, offsets=None,
                   axis: int = 0, unsafe: bool = False, initial=None):
    axis = _wrap_axis(axis, data.ndim)
    if indices is not None:
        raise RuntimeError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None and offsets is None:
        raise RuntimeError("segment_reduce(): Either lengths or offsets must be defined.")
    if reduce not in _REDUCTIONS:
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, got "
                           f"{reduce}")
    mode = _REDUCTIONS[reduce]
    given = offsets if offsets is not None else lengths
    if not is_tensor(given) or given.dtype not in (dt.int32, dt.int64):
        kernel = "offsets" if offsets is not None else "lengths"
        got = _SCALAR_TYPE[given.dtype] if is_tensor(given) else type(given).__name__
        raise NotImplementedError(f'"_segment_reduce_{kernel}_cpu_kernel1" not implemented for '
                                  f"'{got}'")
    if not data.dtype.is_float:
        raise NotImplementedError(f"\"_segment_reduce_cpu\" not implemented for "
                                  f"'{_SCALAR_TYPE[data.dtype]}'")
    starts, counts = _boundaries(data, axis, lengths, offsets, unsafe)
    segments = starts.shape[-1]
    inner = tuple(data.shape[axis + 1:])
    slots = tuple(data.shape[:axis]) + (segments + 1,) + inner

    def into_slots(values, how: str, fill: float):
        base = creation.full(slots, fill, dtype=data.dtype, device=data.device)
        return scatter_reduce(base, axis, index, values, how, include_self=False)

    def segments_of(full):
        return full.narrow(axis, 0, segments)

    count = creation.tensor(counts.reshape(counts.shape + (1,) * len(inner)),
                            dtype=data.dtype, device=data.device)
    if not data.numel():
        empty = creation.full(slots, _EMPTY[mode], dtype=data.dtype, device=data.device)
        return _recorded(data, _with_initial(segments_of(empty), mode, initial, count),
                         lambda g: creation.zeros(*data.shape, dtype=g.dtype, device=g.device))
    ids = _segment_of_each(starts, counts, data.shape[axis])
    ids = ids.reshape(ids.shape + (1,) * len(inner))
    index = creation.tensor(np.ascontiguousarray(np.broadcast_to(ids, tuple(data.shape))),
                            device=data.device)
    x = Tensor(data.node.detach(), data.device)
    full = into_slots(x, "sum" if mode == "mean" else mode, _EMPTY[mode])
    out = _with_initial(segments_of(full), mode, initial, count)
    past = creation.zeros(tuple(data.shape[:axis]) + (1,) + inner, dtype=data.dtype,
                          device=data.device)

    def at(per_segment):
        """Each element's segment's value of per_segment (0 past the last segment)."""
        spread = per_segment.expand(*data.shape[:axis], segments, *inner)
        return cat([spread, past], axis).gather(axis, index)

    def total(values, how: str = "sum", fill: float = 0.0):
        return at(segments_of(into_slots(values, how, fill)))

    def share(g):
        return at(g) * _weights(mode, x, index == segments, at, total, out, count, initial)
    return _recorded(data, out, share)


class SegmentReduceBackward(GradFn):
    """Gives each element of data its segment's gradient times its share, share(g), worked
    out when backward runs (a weight per element: no graph to differentiate)."""

    def __init__(self, data, output, share):
        super().__init__("SegmentReduceBackward0", [data], output)
        self.share = share

    def apply(self, grads: list, create_graph: bool) -> list:
        if self.freed:
            raise RuntimeError(_FREED)
        result = self.share(grads[0])
        self._check_versions([result.node], grads[0].node)
        return [result]


def _recorded(data, out, share):
    result = Tensor(out.node, data.device)
    if data.requires_grad and is_grad_enabled():
        result.requires_grad = True
        result.grad_fn = SegmentReduceBackward(data, out.node, share)
    return result


def _with_initial(out, mode: str, initial, count):
    """The reduced segments with initial taken in (as one more element of each segment), and
    a mean divided by the segment's length (count)."""
    if mode == "mean":
        if initial is None:
            return out / count
        return where(count == 0, initial, (out + initial) / count)
    if initial is None:
        return out
    if mode == "sum":
        return out + initial
    if mode == "prod":
        return out * initial
    if math.isnan(initial):
        return out * 0 + math.nan
    # a NaN of the data stays (it compares false), as PyTorch's max/min propagate it
    below = (out < initial) if mode == "amax" else (out > initial)
    return where(below, initial, out)


def _weights(mode: str, x, outside, at, total, out, count, initial):
    """d out[segment] / d x for each element x of the segment, PyTorch's: 1 (sum), 1 / length
    (mean); max and min share evenly among the elements equal to the result (NaN matching
    NaN); prod's is out / x, or, for a zero or a NaN, the product of the others. outside: the
    elements no segment holds (they get none); at(v): each element's segment's value of v;
    total(values): each element's segment's sum of values."""
    if mode == "sum":
        return (~outside).to(x.dtype)
    if mode == "mean":
        return where(outside, 0.0, 1 / at(count))
    result = at(out)
    if mode in ("amax", "amin"):
        hit = ((x == result) | (x.isnan() & result.isnan())) & ~outside
        return where(hit, 1 / total(hit.to(x.dtype)), 0.0)
    zero, nan = x == 0, x.isnan()
    special = zero | nan
    rest = total(where(special, 1.0, x), "prod", 1.0)       # the product of the others
    other_zeros = total(zero.to(x.dtype)) - zero.to(x.dtype)
    other_nans = total(nan.to(x.dtype)) - nan.to(x.dtype)
    others = where(other_nans > 0, math.nan, where(other_zeros > 0, 0.0, rest))
    if initial is not None:
        others = others * initial
    return where(outside, 0.0, where(special, others, result / x))


FUNCTIONS = {"segment_reduce": segment_reduce}
