"""Max pooling's indices put to use: the *_with_indices spellings of the max pools, and
max_unpool1d/2d/3d, which scatter pooled values back to the positions their indices name
(zeros elsewhere); the gradient of an unpool reads the output's gradient at those positions."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..frontend import creation
from . import convolution as conv
from . import pooling as P


def max_pool1d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    return P.max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    return conv.max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode: bool = False, return_indices: bool = True):
    return P.max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input, output_size, return_indices: bool = True):
    return P.adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices: bool = True):
    return P.adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input, output_size, return_indices: bool = True):
    return P.adaptive_max_pool3d(input, output_size, True)


def _output_size(input, kernel, stride, padding, output_size) -> tuple[int, ...]:
    """PyTorch's default ((in - 1) * stride + kernel - 2 * padding), or output_size checked
    against it."""
    dims = len(kernel)
    default = tuple((input.shape[input.ndim - dims + d] - 1) * stride[d] + kernel[d]
                    - 2 * padding[d] for d in range(dims))
    if output_size is None:
        return default
    output_size = list(output_size)
    if len(output_size) == dims + 2:
        output_size = output_size[2:]
    if len(output_size) != dims:
        raise ValueError(f"output_size should be a sequence containing {dims} or {dims + 2} "
                         f"elements, but it has a length of '{len(output_size)}'")
    for d in range(dims):
        low, high = default[d] - stride[d], default[d] + stride[d]
        if not low < output_size[d] < high:
            raise ValueError(f'invalid output_size "{output_size}" (dim {d} must be between '
                             f'{low} and {high})')
    return tuple(output_size)


def _max_unpool(op: str, dims: int, input, indices, kernel_size, stride, padding,
                output_size):
    kernel = conv.ntuple(kernel_size, dims, "kernel_size")
    stride = kernel if stride is None else conv.ntuple(stride, dims, "stride")
    padding = conv.ntuple(padding, dims, "padding")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{op}: expected a {dims + 1}-D or {dims + 2}-D input, got shape "
                           f"{tuple(input.shape)}")
    if tuple(indices.shape) != tuple(input.shape) or indices.dtype != dt.int64:
        raise RuntimeError(f"{op}: expected int64 indices of the input's shape "
                           f"{tuple(input.shape)}, got {indices.dtype.name} of shape "
                           f"{tuple(indices.shape)}")
    size = _output_size(input, kernel, stride, padding, output_size)
    lead = tuple(input.shape[:-dims])
    planes = math.prod(lead)
    flat = creation.zeros(planes, math.prod(size), dtype=input.dtype, device=input.device)
    out = flat.scatter(1, indices.reshape(planes, -1), input.reshape(planes, -1))
    return out.reshape(*lead, *size)


def max_unpool1d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool2d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding,
                       output_size)


def max_unpool3d(input, indices, kernel_size, stride=None, padding=0, output_size=None):
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding,
                       output_size)


__all__ = ["max_pool1d_with_indices", "max_pool2d_with_indices", "max_pool3d_with_indices",
           "adaptive_max_pool1d_with_indices", "adaptive_max_pool2d_with_indices",
           "adaptive_max_pool3d_with_indices", "max_unpool1d", "max_unpool2d", "max_unpool3d"]
