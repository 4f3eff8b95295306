"""Fractional max pooling (Graham, 2014), as torch.nn.functional's fractional_max_pool2d/3d.

Along an axis of size n pooled into m windows of size k, window i starts at
trunc((i + u) * alpha) - trunc(u * alpha), alpha = (n - k) / (m - 1), and the last window at
n - k; u is one random sample per (sample, channel, axis), drawn in [0, 1) unless given as
_random_samples. The arithmetic is the input dtype's, as PyTorch's, so that the same samples
give the same windows. Every window's elements are gathered by flat position and the first
maximum taken (PyTorch's gradient goes to it alone; a NaN wins, the last one).
"""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.backward import record
from ..frontend.reductions import max_at_first
from ..frontend.tensor import Tensor
from .max_pool_gradient import picked_in_turn
from .pooling import spatial_input


def per_axis(value, dims: int, name: str, op: str) -> tuple:
    """value for each of dims axes: a number for all, or a sequence of dims."""
    values = tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims
    if len(values) != dims:
        raise ValueError(f"{op}: {name} must be a number or a tuple of {dims}, got {value}")
    return values


def _output_sizes(op, spatial, kernel, output_size, output_ratio) -> tuple[int, ...]:
    dims = len(spatial)
    if output_size is None and output_ratio is None:
        raise ValueError(f"{op} requires specifying either an output_size or an output_ratio")
    if output_size is None:
        ratios = per_axis(output_ratio, dims, "output_ratio", op)
        if not all(0 < r < 1 for r in ratios):
            raise ValueError(f"{op}: output_ratio must be between 0 and 1 (got {output_ratio})")
        output_size = tuple(int(n * r) for n, r in zip(spatial, ratios))
    sizes = tuple(int(s) for s in per_axis(output_size, dims, "output_size", op))
    for n, k, m in zip(spatial, kernel, sizes):
        if m + k - 1 > n:
            raise RuntimeError(f"{op}(): pool size {k} too large relative to input size {n} "
                               f"for output size {m} (input {tuple(spatial)}, kernel {kernel})")
    return sizes


def _in_type(value, dtype):
    """value in dtype, as PyTorch's kernel holds it: a NumPy scalar of the type (a bfloat16,
    which NumPy lacks, rounded to it and held in float32)."""
    return dtype.np(dt.scalar(value, dtype))


def _starts(samples: Tensor, n: int, m: int, k: int) -> Tensor:
    """(N, C, m) int64: where each of the m windows of size k along an axis of n begins."""
    last = creation.full((*samples.shape, m), n - k, dtype=np.int64, device=samples.device)
    if m == 1:
        return last
    dtype = samples.dtype       # the arithmetic is the input dtype's, as PyTorch's
    alpha = float(_in_type(_in_type(n - k, dtype) / _in_type(m - 1, dtype), dtype))
    i = creation.arange(m, dtype=samples.dtype, device=samples.device)
    u = samples.unsqueeze(-1)
    starts = ((i + u) * alpha).long() - (u * alpha).long()
    return last.where(creation.arange(m, device=samples.device).eq(m - 1), starts)


def _fractional_max_pool(op, input, kernel_size, output_size, output_ratio, return_indices,
                         samples, dims: int):
    _, unbatched = spatial_input(op, input, dims)
    x = input.unsqueeze(0) if unbatched else input     # (recorded: the gradient flows back)
    batch, channels, *spatial = x.shape
    kernel = tuple(int(k) for k in per_axis(kernel_size, dims, "kernel_size", op))
    sizes = _output_sizes(op, spatial, kernel, output_size, output_ratio)
    if samples is None:
        samples = creation.rand(batch, channels, dims, dtype=x.dtype, device=x.device)
    elif tuple(samples.shape) != (batch, channels, dims):
        raise RuntimeError(f"{op}(): expected _random_samples of shape {(batch, channels, dims)}, "
                           f"got {tuple(samples.shape)}")
    # PyTorch's sample order: (W, H) in 2-D, (T, H, W) in 3-D
    order = (1, 0) if dims == 2 else (0, 1, 2)
    position = creation.zeros(batch, channels, *(1,) * (2 * dims), dtype=np.int64,
                              device=x.device)
    stride = 1
    for axis in reversed(range(dims)):      # flat position of every window element
        starts = _starts(samples[..., order[axis]], spatial[axis], sizes[axis], kernel[axis])
        offsets = creation.arange(kernel[axis], device=x.device)
        shape = [1] * (2 * dims)
        shape[axis], shape[dims + axis] = sizes[axis], 1
        coordinate = starts.reshape(batch, channels, *shape)
        shape[axis], shape[dims + axis] = 1, kernel[axis]
        coordinate = coordinate + offsets.reshape(*shape)
        position = position + coordinate * stride
        stride *= spatial[axis]
    window = math.prod(kernel)
    position = position.reshape(batch, channels, *sizes, window)
    flat = x.reshape(batch, channels, -1)
    picked = flat.gather(2, position.reshape(batch, channels, -1)).reshape(position.shape)
    value, first = max_at_first(picked.node, dims + 2)
    out = value.reshape(value.shape[:-1])
    index = position.gather(dims + 2, Tensor(first, x.device)).squeeze(-1)
    shape = out.shape[1:] if unbatched else out.shape
    # a 16-bit gradient goes straight to x, added output after output in the type as
    # PyTorch's (max_pool_gradient.py); others back through the windows' gather
    derivation = picked_in_turn(x.node, index.node, shape)
    values = record(op, out.reshape(shape), input.device,
                    [picked] if derivation is None else [x], derivation=derivation)
    if unbatched:
        index = index.squeeze(0)
    return (values, index) if return_indices else values


def fractional_max_pool2d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    return _fractional_max_pool("fractional_max_pool2d", input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples, 2)


def fractional_max_pool3d(input, kernel_size, output_size=None, output_ratio=None,
                          return_indices: bool = False, _random_samples=None):
    return _fractional_max_pool("fractional_max_pool3d", input, kernel_size, output_size,
                                output_ratio, return_indices, _random_samples, 3)


def fractional_max_pool2d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    return fractional_max_pool2d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


def fractional_max_pool3d_with_indices(input, kernel_size, output_size=None, output_ratio=None,
                                       return_indices: bool = False, _random_samples=None):
    return fractional_max_pool3d(input, kernel_size, output_size, output_ratio, True,
                                 _random_samples)


__all__ = ["fractional_max_pool2d", "fractional_max_pool3d",
           "fractional_max_pool2d_with_indices", "fractional_max_pool3d_with_indices"]
