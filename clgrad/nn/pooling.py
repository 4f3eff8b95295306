"""Adaptive pooling, 1-D and 3-D pooling and power-average pooling, as torch.nn.functional's.

Adaptive pooling of an axis of size n into m windows takes window i over
[floor(i n / m), ceil((i + 1) n / m)), as PyTorch does. When m divides n that is a reshape
and a reduction; otherwise the axis is read through a mask of window membership, (m, n), built
from iotas by integer products (no division): j is in window i iff i n < (j + 1) m and
j m < (i + 1) n. 2-D pools go one axis at a time (max is separable, and taking the first max of
each row, then the first row holding the overall max, is the first max in row-major order, the
element PyTorch's gradient goes to).
"""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir
from ..frontend.backward import record
from . import convolution as conv
from .avg_pooling import avg_pool2d
from .max_pool_gradient import picked_in_turn


def _sizes(op: str, output_size, spatial: tuple[int, ...]) -> tuple[int, ...]:
    """output_size as one size per spatial dim; None keeps the input's size."""
    dims = len(spatial)
    if isinstance(output_size, (tuple, list)):
        if len(output_size) != dims:
            raise ValueError(f"{op}: output_size must be an int or a tuple of {dims}, got "
                             f"{tuple(output_size)}")
        sizes = tuple(s if o is None else int(o) for o, s in zip(output_size, spatial))
    else:
        sizes = (int(output_size),) * dims
    if any(s < 0 for s in sizes):
        raise RuntimeError(f"{op}: elements of output_size must be greater than or equal to 0 "
                           f"but received {sizes}")
    return sizes


def spatial_input(op: str, input, dims: int):
    """input's node with a batch dim (an unbatched input gets one), and whether it was added."""
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}(): Expected {dims + 1}D or {dims + 2}D tensor, but got "
                           f"{list(input.shape)}")
    if not input.dtype.is_float:
        raise NotImplementedError(f"{op}: not implemented for {input.dtype.name} input of shape "
                                  f"{tuple(input.shape)}")
    if any(s == 0 for s in input.shape[-dims:]):
        raise RuntimeError(f"{op}(): Expected input to have non-zero size for non-batch "
                           f"dimensions, but input has sizes {list(input.shape)}")
    unbatched = input.ndim == dims + 1
    x = input.node.reshape((1,) + input.shape) if unbatched else input.node
    return x, unbatched


def _membership(n: int, m: int) -> ir.Node:
    """(m, n) bool: is input position j in adaptive window i."""
    i = ir.iota(m, dt.int64).reshape((m, 1)).expand((m, n))
    j = ir.iota(n, dt.int64).reshape((1, n)).expand((m, n))
    return ((i * n) < ((j + 1) * m)) & ((j * m) < ((i + 1) * n))


def _windowed(x: ir.Node, axis: int, m: int, fill: float) -> ir.Node:
    """x with axis (size n) replaced by (m, n): row i holds the axis where position j is in
    window i, fill elsewhere."""
    n = x.shape[axis]
    before, after = x.shape[:axis], x.shape[axis + 1:]
    grown = x.reshape(before + (1, n) + after).expand(before + (m, n) + after)
    mask = _membership(n, m).reshape((1,) * len(before) + (m, n) + (1,) * len(after))
    return mask.expand(grown.shape).where(grown, fill)


def _avg_axis(x: ir.Node, axis: int, m: int) -> ir.Node:
    n = x.shape[axis]
    before, after = x.shape[:axis], x.shape[axis + 1:]
    if m == n:
        return x
    if m and n % m == 0:
        k = n // m
        return x.reshape(before + (m, k) + after).sum((axis + 1,)).reshape(
            before + (m,) + after) * (1 / k)
    total = _windowed(x, axis, m, 0.0).sum((axis + 1,)).reshape(before + (m,) + after)
    counts = _membership(n, m).cast(x.dtype).sum((1,)).reshape(
        (1,) * len(before) + (m,) + (1,) * len(after))
    return total / counts.expand(total.shape)


def first_max(rows: ir.Node, axis: int) -> tuple[ir.Node, ir.Node]:
    """The max along axis (kept as size 1), read at the first largest element only, so its
    derived gradient goes there alone (PyTorch's pooling gradient), and that element's
    position (int64). A NaN wins over any number, the last NaN over the others, as in
    PyTorch's kernels (which take every NaN they meet)."""
    n = rows.shape[axis]
    best = rows.max((axis,)).expand(rows.shape)
    line = tuple(n if a == axis else 1 for a in range(len(rows.shape)))
    position = ir.iota(n, dt.int64).reshape(line).expand(rows.shape)
    # the earliest largest number scores n - position (1..n), a NaN n + 1 + position (more)
    score = rows.ne(rows).where(position + (n + 1), rows.eq(best).where(n - position, 0))
    top = score.max((axis,))
    first = (top > n).where(top - (n + 1), n - top)
    hit = position.eq(first.expand(rows.shape))
    return hit.where(rows, 0.0).sum((axis,)), first


def _max_axis(x: ir.Node, axis: int, m: int):
    """The first max of each window along axis, and its position in the axis (int64)."""
    n = x.shape[axis]
    before, after = x.shape[:axis], x.shape[axis + 1:]
    if m and n % m == 0:
        rows = x.reshape(before + (m, n // m) + after)
        offset = ir.iota(m, dt.int64).reshape((1,) * len(before) + (m, 1) + (1,) * len(after))
        offset = (offset * (n // m)).expand(before + (m, 1) + after)
    else:
        rows = _windowed(x, axis, m, -math.inf)
        offset = None
    values, first = first_max(rows, axis + 1)
    values = values.reshape(before + (m,) + after)
    position = first if offset is None else first + offset
    return values, position.reshape(before + (m,) + after)


def adaptive_avg_pool2d(input, output_size):
    x, unbatched = spatial_input("adaptive_avg_pool2d", input, 2)
    oh, ow = _sizes("adaptive_avg_pool2d", output_size, x.shape[2:])
    out = _avg_axis(_avg_axis(x, 3, ow), 2, oh)
    return record("adaptive_avg_pool2d", out.reshape(out.shape[1:]) if unbatched else out,
                  input.device, [input])


def adaptive_avg_pool1d(input, output_size):
    x, unbatched = spatial_input("adaptive_avg_pool1d", input, 1)
    (o,) = _sizes("adaptive_avg_pool1d", output_size, x.shape[2:])
    out = _avg_axis(x, 2, o)
    return record("squeeze_dim", out.reshape(out.shape[1:]) if unbatched else out,
                  input.device, [input])


def adaptive_avg_pool3d(input, output_size):
    x, unbatched = spatial_input("adaptive_avg_pool3d", input, 3)
    od, oh, ow = _sizes("adaptive_avg_pool3d", output_size, x.shape[2:])
    out = _avg_axis(_avg_axis(_avg_axis(x, 4, ow), 3, oh), 2, od)
    return record("adaptive_avg_pool3d", out.reshape(out.shape[1:]) if unbatched else out,
                  input.device, [input])


def _pick(values: ir.Node, axis: int, at: ir.Node) -> ir.Node:
    """values read along axis at the positions in at (int64), whose axis holds m windows where
    values' holds n positions and whose other axes are values': for each window, the value at
    the position its max came from (compared positions, summed: no gather)."""
    n, m = values.shape[axis], at.shape[axis]
    before, after = values.shape[:axis], values.shape[axis + 1:]
    both = before + (m, n) + after
    line = (1,) * (len(before) + 1) + (n,) + (1,) * len(after)
    hit = ir.iota(n, dt.int64).reshape(line).expand(both).eq(
        at.reshape(before + (m, 1) + after).expand(both))
    grown = values.reshape(before + (1, n) + after).expand(both)
    return hit.where(grown, 0).sum((axis + 1,)).reshape(at.shape)


def _adaptive_max(op: str, input, output_size, dims: int):
    """adaptive_max_pool1d/2d/3d: (the input with a batch dim, the first max of each window of
    the last axis, then of those along the axis before, ...; its index in the input's spatial
    volume (row-major), built as the winning position along each axis plus the index already
    found at that position; whether the input had no batch dim)."""
    x, unbatched = spatial_input(op, input, dims)
    sizes = _sizes(op, output_size, x.shape[2:])
    if 0 in sizes:
        shape = x.shape[:2] + sizes
        return x, ir.const(0.0, x.dtype, shape), ir.const(0, dt.int64, shape), unbatched
    out, index, step = x, None, 1
    for axis in reversed(range(2, 2 + dims)):
        out, position = _max_axis(out, axis, sizes[axis - 2])
        index = position if index is None else position * step + _pick(index, axis, position)
        step *= x.shape[axis]
    return x, out, index, unbatched


def _pooled(op: str, input, x, out, index, unbatched: bool, return_indices: bool):
    """A max pool of x (input with a batch dim): its values (recorded as op, a 16-bit
    float's gradient PyTorch's, max_pool_gradient.py) and, if asked, its indices, unbatched
    as input."""
    if unbatched:
        out = out.reshape(out.shape[1:])
    values = record(op, out, input.device, [input],
                    derivation=picked_in_turn(x, index, out.shape))
    if not return_indices:
        return values
    from ..frontend.tensor import Tensor
    return values, Tensor(index.reshape(index.shape[1:]) if unbatched else index, input.device)


def adaptive_max_pool1d(input, output_size, return_indices: bool = False):
    x, out, index, unbatched = _adaptive_max("adaptive_max_pool1d", input, output_size, 1)
    return _pooled("squeeze_dim", input, x, out, index, unbatched, return_indices)


def adaptive_max_pool2d(input, output_size, return_indices: bool = False):
    x, out, index, unbatched = _adaptive_max("adaptive_max_pool2d", input, output_size, 2)
    return _pooled("adaptive_max_pool2d", input, x, out, index, unbatched, return_indices)


def adaptive_max_pool3d(input, output_size, return_indices: bool = False):
    x, out, index, unbatched = _adaptive_max("adaptive_max_pool3d", input, output_size, 3)
    return _pooled("adaptive_max_pool3d", input, x, out, index, unbatched, return_indices)


# ---- 1-D pooling: the 2-D pools of (N, C, 1, L) ------------------------------------------

def _single(value, name: str) -> int:
    if isinstance(value, (tuple, list)):
        if len(value) != 1:
            raise ValueError(f"{name} must be an int or a 1-tuple, got {value}")
        return int(value[0])
    return int(value)


def _as_2d(op: str, input):
    if input.ndim not in (2, 3):
        raise RuntimeError(f"{op}: expected a 2-D or 3-D input (N, C, L), got shape "
                           f"{tuple(input.shape)}")
    return input.unsqueeze(-2)


def max_pool1d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    k = _single(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] or stride == () else _single(stride, "stride")
    out = conv.max_pool2d(_as_2d("max_pool1d", input), (1, k), (1, s),
                          (0, _single(padding, "padding")), (1, _single(dilation, "dilation")),
                          ceil_mode, return_indices)
    if return_indices:     # (a plane of one row: the position along the row)
        return out[0].squeeze(-2), out[1].squeeze(-2)
    return out.squeeze(-2)


def avg_pool1d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True):
    k = _single(kernel_size, "kernel_size")
    s = k if stride is None or stride == [] or stride == () else _single(stride, "stride")
    out = avg_pool2d(_as_2d("avg_pool1d", input), (1, k), (1, s),
                     (0, _single(padding, "padding")), ceil_mode, count_include_pad)
    return out.squeeze(-2)


# ---- 3-D pooling ----------------------------------------------------------------------------

def _triple(value, name: str) -> tuple[int, int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 3:
            raise ValueError(f"{name} must be an int or a triple of ints, got {value}")
        return tuple(int(v) for v in value)
    return (int(value),) * 3


def _pool3d_args(op, input, kernel_size, stride, padding, dilation):
    kernel = _triple(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else \
        _triple(stride, "stride")
    padding, dilation = _triple(padding, "padding"), _triple(dilation, "dilation")
    if any(p * 2 > k for p, k in zip(padding, kernel)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got "
                           f"pad={padding}, kernel_size={kernel}")
    if input.ndim not in (4, 5):
        raise RuntimeError(f"{op}: expected a 4-D or 5-D input, got shape "
                           f"{tuple(input.shape)}")
    unbatched = input.ndim == 4
    x = input.node.reshape((1,) + input.shape) if unbatched else input.node
    if not input.dtype.is_float:
        raise NotImplementedError(f"{op}: not implemented for {input.dtype.name} input of shape "
                                  f"{tuple(input.shape)}")
    for a in range(3):
        conv.out_size(x.shape[2 + a], kernel[a], stride[a], dilation[a], padding[a], op)
    return x, unbatched, kernel, stride, padding, dilation


def _pool3d_by_planes(pool2d, x: ir.Node, device, kernel, stride, padding, dilation,
                      ceil_mode, **kw):
    """A 3-D pool as a 2-D pool of each depth slice, then a pool of the results along depth
    (max and average are separable over a box). Its gradient is the 2-D pools', whose window
    rules run in one kernel per pool: three windowed axes at once would lower to a kernel
    whose index expressions grow with the cube of the window. pool2d returns a pair (values,
    a max pool's indices or None); this returns (N, C, Do, Ho, Wo) and both pools' indices."""
    from ..frontend.tensor import Tensor
    n, c, d, h, w = x.shape
    planes = Tensor(x.reshape((n, c * d, h, w)), device)
    first, plane_index = pool2d(planes, kernel[1:], stride[1:], padding[1:],
                                dilation=dilation[1:], ceil_mode=ceil_mode,
                                **kw.get("plane", {}))
    ho, wo = first.shape[2:]
    depth = Tensor(first.node.reshape((n, c, d, ho * wo)), device)
    second, depth_index = pool2d(depth, (kernel[0], 1), (stride[0], 1), (padding[0], 0),
                                 dilation=(dilation[0], 1), ceil_mode=ceil_mode,
                                 **kw.get("depth", {}))
    return second.node.reshape((n, c, second.shape[2], ho, wo)), plane_index, depth_index


def _volume_index(plane_index, depth_index, shape) -> ir.Node:
    """max_pool3d's indices (depth * H * W + row * W + column) from its 2-D pools': the depth
    pool's index into the (D, Ho * Wo) plane of the slices' maxima gives the depth, and the
    slice pool's index at that depth the position in the plane."""
    n, c, d, h, w = shape
    planes = plane_index.node.reshape((n, c, d) + plane_index.shape[2:])    # N C D Ho Wo
    depth = (depth_index.node / (planes.shape[3] * planes.shape[4])).reshape(
        (n, c, depth_index.shape[2]) + planes.shape[3:])
    return depth * (h * w) + _pick(planes, 2, depth)


def max_pool3d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode: bool = False,
               return_indices: bool = False):
    """The max of each window; with return_indices also its position in the input's volume
    (depth * H * W + row * W + column, int64), PyTorch's indices for max_unpool3d."""
    x, unbatched, kernel, stride, padding, dilation = _pool3d_args(
        "max_pool3d", input, kernel_size, stride, padding, dilation)

    def pool2d(t, k, s, p, dilation, ceil_mode):     # (values, indices: lazy, unread if unused)
        return conv.max_pool2d(t, k, s, p, dilation, ceil_mode, True)
    out, plane_index, depth_index = _pool3d_by_planes(pool2d, x, input.device, kernel, stride,
                                                      padding, dilation, ceil_mode)
    index = _volume_index(plane_index, depth_index, x.shape)
    return _pooled("max_pool3d", input, x, out, index, unbatched, return_indices)


def avg_pool3d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None):
    x, unbatched, kernel, stride, padding, _ = _pool3d_args(
        "avg_pool3d", input, kernel_size, stride, padding, 1)

    def pool2d(t, k, s, p, dilation, ceil_mode, divisor_override=None):
        return avg_pool2d(t, k, s, p, ceil_mode, count_include_pad, divisor_override), None
    # the planes' averages, averaged along depth: each divided by its own count, which is
    # the box's count split in two factors; an override divides the sum once
    split = {} if not divisor_override else dict(plane=dict(divisor_override=1),
                                                 depth=dict(divisor_override=divisor_override))
    out, _, _ = _pool3d_by_planes(pool2d, x, input.device, kernel, stride, padding,
                                  (1, 1, 1), ceil_mode, **split)
    return record("avg_pool3d", out.reshape(out.shape[1:]) if unbatched else out,
                  input.device, [input])


# ---- power-average pooling ------------------------------------------------------------------

def _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, dims):
    """(sum over each window of x^p)^(1/p), as PyTorch computes it: an average pool of x^p
    times the window size (p = inf: the max of |x|)."""
    from . import functional as F
    max_pool = {1: max_pool1d, 2: F.max_pool2d, 3: max_pool3d}[dims]
    avg_pool = {1: avg_pool1d, 2: avg_pool2d, 3: avg_pool3d}[dims]
    if norm_type == math.inf:
        return max_pool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return -max_pool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    window = {1: lambda k, name: (_single(k, name),), 2: conv.pair, 3: _triple}[dims]
    count = math.prod(window(kernel_size, "kernel_size"))
    out = avg_pool(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    return (out.sign() * out.abs().relu() * count).pow(1.0 / norm_type)


def lp_pool1d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


__all__ = ["max_pool3d", "avg_pool3d", "lp_pool1d", "lp_pool2d", "lp_pool3d",
           "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_max_pool1d",
           "adaptive_max_pool2d", "max_pool1d", "avg_pool1d", "adaptive_avg_pool3d",
           "adaptive_max_pool3d"]
