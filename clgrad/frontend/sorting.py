"""sort, argsort, msort, topk, kthvalue, median, nanmedian, mode: SORT and ARGSORT nodes
(one kernel each, a heapsort per row) along the dim moved last, and picks from their results.
Gradients reach the elements picked (compiler/sorting.py). Installed on Tensor by tensor.py
from METHODS."""
from __future__ import annotations

import math
from collections import namedtuple

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.scans import along, positions
from .backward import record
from .operands import normalize_dim

SortResult = namedtuple("sort", ["values", "indices"])
TopkResult = namedtuple("topk", ["values", "indices"])
KthvalueResult = namedtuple("kthvalue", ["values", "indices"])
MedianResult = namedtuple("median", ["values", "indices"])
NanmedianResult = namedtuple("nanmedian", ["values", "indices"])
ModeResult = namedtuple("mode", ["values", "indices"])


def _axis_last(node: ir.Node, axis: int) -> tuple[ir.Node, tuple[int, ...]]:
    """node with axis moved last, as rows, and the order that did it (unpermute undoes it)."""
    order = tuple(a for a in range(len(node.shape)) if a != axis) + (axis,)
    return node.permute(order), order


def _sorted_nodes(x, axis: int, descending: bool) -> tuple[ir.Node, ir.Node]:
    """x's values sorted along axis, and where each was (int64), in x's shape (a 0-d x as
    shape (1,))."""
    node = x.node.reshape((1,)) if not x.ndim else x.node
    rows, order = _axis_last(node, axis)
    if node.shape[axis] <= 1:
        values, indices = rows, ir.const(0, dt.int64, rows.shape)
    else:
        values, indices = ir.sort(rows, descending), ir.argsort(rows, descending)
    return values.unpermute(order), indices.unpermute(order)


# topk of up to this many is selected as each row passes (ARGTOPK), not sorted whole. Along
# the rows of a (4096, 1024) float32 tensor on Intel's runtime (2-core EPYC Zen 4): k = 4 in
# 5 ms selected, 240-330 ms sorted (PyTorch 4-5 ms); k = 64 in 44 ms (PyTorch 49); rows in
# the worst order for it (each value entering first) k = 32 cost half a sort, 64 about one
SELECTED_K_MAX = 64


def _selected_nodes(x, axis: int, k: int, largest: bool) -> tuple[ir.Node, ir.Node]:
    """_sorted_nodes(x, axis, largest)'s first k along axis, x of 1 dim or more."""
    rows, order = _axis_last(x.node, axis)
    indices = ir.argtopk(rows, k, largest)
    values = along(rows, x.ndim - 1, indices)
    return values.unpermute(order), indices.unpermute(order)


def sort(self, dim: int = -1, descending: bool = False, stable: bool = False):
    """Equal values keep their order whatever `stable` says (a stable order is one of the
    orders an unstable sort may give)."""
    axis = normalize_dim("sort", dim, self.ndim)
    values, indices = _sorted_nodes(self, axis, descending)
    from .tensor import Tensor
    return SortResult(record("sort", values.reshape(self.shape), self.device, [self]),
                      Tensor(indices.reshape(self.shape), self.device))


def argsort(self, dim: int = -1, descending: bool = False, stable: bool = False):
    return sort(self, dim, descending, stable).indices


def msort(self):
    return sort(self, 0).values


def _slice(node: ir.Node, axis: int, begin: int, end: int) -> ir.Node:
    return node.shrink(tuple((begin, end) if a == axis else (0, n)
                             for a, n in enumerate(node.shape)))


def _selected(op: str, result, x, axis: int, values: ir.Node, indices: ir.Node, keepdim: bool):
    """(values, indices) of a pick along axis (kept as size 1 when keepdim), as `result`."""
    if not keepdim or not x.ndim:
        shape = tuple(n for a, n in enumerate(values.shape) if a != axis) if x.ndim else ()
        values, indices = values.reshape(shape), indices.reshape(shape)
    from .tensor import Tensor
    return result(record(op, values, x.device, [x]), Tensor(indices, x.device))


def topk(self, k: int, dim: int = -1, largest: bool = True, sorted: bool = True):
    axis = normalize_dim("topk", dim, self.ndim)
    n = self.shape[axis] if self.ndim else 1
    if not 0 <= k <= n:
        raise RuntimeError(f"topk(): selected index k out of range: k={k} for dimension {dim} "
                           f"of size {n}")
    if 0 < k <= SELECTED_K_MAX and n > 1:
        values, indices = _selected_nodes(self, axis, k, largest)
    else:
        values, indices = _sorted_nodes(self, axis, largest)
        values, indices = _slice(values, axis, 0, k), _slice(indices, axis, 0, k)
    if not self.ndim and k == 1:
        values, indices = values.reshape(()), indices.reshape(())
    from .tensor import Tensor
    return TopkResult(record("topk", values, self.device, [self]), Tensor(indices, self.device))


def kthvalue(self, k: int, dim: int = -1, keepdim: bool = False):
    """The k-th smallest element along dim (k counts from 1) and its position."""
    axis = normalize_dim("kthvalue", dim, self.ndim)
    n = self.shape[axis] if self.ndim else 1
    if not 1 <= k <= n:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {axis}")
    values, indices = _sorted_nodes(self, axis, False)
    picked = _slice(values, axis, k - 1, k), _slice(indices, axis, k - 1, k)
    return _selected("kthvalue", KthvalueResult, self, axis, *picked, keepdim)


def median(self, dim: int | None = None, keepdim: bool = False):
    """The lower median along dim and its position; a row with a NaN gives its first NaN, as
    PyTorch's. Without dim, the median of all elements (NaN for none), its gradient shared
    among the elements equal to it."""
    if dim is None:
        if self.numel() == 0:
            nan = ir.const(math.nan, self.dtype if self.dtype.is_float else dt.float32, ())
            return record("median", nan, self.device, [self])
        flat = self.node.reshape((self.numel(),))
        middle = median(self.detach().reshape(-1), 0).values.node
        if self.dtype.is_float:
            middle = _shared_among_equals(flat, middle)
        return record("median", middle, self.device, [self])
    axis = _checked_axis("median", self, dim)
    values, indices = _sorted_nodes(self, axis, False)
    middle = (values.shape[axis] - 1) // 2
    value = _slice(values, axis, middle, middle + 1)
    index = _slice(indices, axis, middle, middle + 1)
    if self.dtype.is_float:
        row = self.node.reshape((1,)) if not self.ndim else self.node
        value, index = _first_nan_instead(row, axis, value, index)
    return _selected("median_dim", MedianResult, self, axis, value, index, keepdim)


def nanmedian(self, dim: int | None = None, keepdim: bool = False):
    """median ignoring NaNs: the lower median of each row's other values (NaN for a row of
    NaNs only)."""
    if dim is None:
        if self.numel() == 0:
            return median(self)
        middle = nanmedian(self.detach().reshape(-1), 0).values.node
        if self.dtype.is_float:
            middle = _shared_among_equals(self.node.reshape((self.numel(),)), middle)
        return record("nanmedian", middle, self.device, [self])
    if not self.dtype.is_float:
        return median(self, dim, keepdim)
    axis = _checked_axis("nanmedian", self, dim)
    values, indices = _sorted_nodes(self, axis, False)      # NaNs last
    counted = values.eq(values).cast(dt.int64).sum((axis,))
    middle = (counted > 0).where((counted - 1) / 2, 0)     # C division: counted >= 1
    value, index = _read_at(values, axis, middle), _read_at(indices, axis, middle)
    return _selected("nanmedian_dim", NanmedianResult, self, axis, value, index, keepdim)


def mode(self, dim: int = -1, keepdim: bool = False):
    """The most frequent value of each row (the smallest of equally frequent ones; NaNs are
    all different) and the last position it is at: the longest run of the sorted row, whose
    run lengths come from a scan."""
    axis = _checked_axis("mode", self, dim)
    values, indices = _sorted_nodes(self, axis, False)
    at = positions(values, axis)
    n = values.shape[axis]
    earlier = values.pad(tuple((1, 0) if a == axis else (0, 0) for a in range(len(values.shape))))
    earlier = _slice(earlier, axis, 0, n)
    starts = at.eq(0) | values.ne(earlier)
    # run lengths and positions as int32: Intel's compiler crashed on this reduction's int64
    # vector selects
    at = at.cast(dt.int32)
    run = at - ir.scan(starts.where(at, 0), axis, "max") + 1
    longest = run.max((axis,))
    end = (n - run.eq(longest.expand(run.shape)).where(n - at, 0).max((axis,))).cast(dt.int64)
    value, index = _read_at(values, axis, end), _read_at(indices, axis, end)
    return _selected("mode", ModeResult, self, axis, value, index, keepdim)


def _checked_axis(op: str, x, dim: int) -> int:
    axis = normalize_dim(op, dim, x.ndim)
    if x.ndim and x.shape[axis] == 0:
        raise IndexError(f"{op}(): Expected reduction dim {axis} to have non-zero size.")
    return axis


def _read_at(node: ir.Node, axis: int, at: ir.Node) -> ir.Node:
    """node's element at position `at` (axis kept as size 1) of each row, as a masked sum:
    the gradient goes to that element."""
    hit = positions(node, axis).eq(at.expand(node.shape))
    return hit.where(node, 0).sum((axis,))


def _shared_among_equals(flat: ir.Node, middle: ir.Node) -> ir.Node:
    """middle (0-d) as the mean of the elements equal to it (of the NaNs when it is NaN),
    so that its gradient is shared among them, as PyTorch's median() shares it."""
    wide = middle.reshape((1,)).expand(flat.shape)
    hit = (wide.ne(wide)).where(flat.ne(flat), flat.eq(wide))
    count = hit.cast(flat.dtype).sum((0,))
    return (hit.where(flat, 0).sum((0,)) / count).reshape(())


def _first_nan_instead(node: ir.Node, axis: int, value: ir.Node, index: ir.Node):
    """(value, index) where the row has no NaN, else its first NaN and where it is (read as a
    masked sum, so that the gradient goes to that element)."""
    n = node.shape[axis]
    line = tuple(n if a == axis else 1 for a in range(len(node.shape)))
    at = ir.iota(n, dt.int64).reshape(line).expand(node.shape)
    is_nan = node.ne(node)
    first = n - is_nan.where(n - at, 0).max((axis,))
    has_nan = first < n
    hit = at.eq(first.expand(node.shape))
    nan_value = hit.where(node, 0).sum((axis,))
    return has_nan.where(nan_value, value), has_nan.where(first, index)


METHODS = [
    ("sort", sort), ("argsort", argsort), ("msort", msort), ("topk", topk),
    ("kthvalue", kthvalue), ("median", median), ("nanmedian", nanmedian), ("mode", mode),
]
