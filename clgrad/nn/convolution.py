"""Convolution and pooling as views plus one matmul or reduction.

Sliding windows are pure index arithmetic (compiler/convolutions.py's `windows`): a spatial
axis of size i becomes two axes (o, k) with element [oo, kk] = x[oo*s + kk*d], so im2col never
materialises and the matmul kernel reads the input through that index map. Backward comes
from the primitive rules, and the compiler's own for the input gradient of a stride of 1.
One code path serves 1, 2 and 3 spatial dims (the weight's rank says which); a transposed
convolution is a matmul whose products are added at their places in the output (col2im).
"""
from __future__ import annotations

import itertools
import math

from ..compiler import dtype as dtypes, ir
from ..compiler.convolutions import convolve, windows
from ..frontend.backward import record
from ..frontend.operands import common_device, rounded_once
from ..frontend.reductions import max_at_first
from .max_pool_gradient import picked_in_turn


def pair(value, name: str = "value") -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
        return int(value[0]), int(value[1])
    return int(value), int(value)


def ntuple(value, dims: int, name: str = "value") -> tuple[int, ...]:
    """An int, or a sequence of dims ints, as a tuple of dims ints (a layer's kernel_size)."""
    if isinstance(value, (tuple, list)):
        if len(value) != dims:
            raise ValueError(f"{name} must be an int or a tuple of {dims} ints, got {value}")
        return tuple(int(v) for v in value)
    return (int(value),) * dims


def _conv_param(op: str, value, dims: int, name: str) -> tuple[int, ...]:
    """A convolution's stride, padding, ... as one int per spatial dim: an int, or a sequence
    of one (repeated) or of dims ints, as PyTorch's expand_param_if_needed takes them."""
    if isinstance(value, str):
        raise TypeError(f"{op}: {name} must be a tuple of ints, not str ({value!r})")
    values = list(value) if isinstance(value, (tuple, list)) else [value]
    if len(values) == 1:
        values *= dims
    if len(values) != dims:
        raise RuntimeError(f"{op}: expected {name} to be a single integer value or a list of "
                           f"{dims} values to match the convolution dimensions, but got "
                           f"{name}={list(value)}")
    return tuple(int(v) for v in values)


def out_size(i: int, k: int, s: int, d: int, p: int, op: str) -> int:
    o = (i + 2 * p - d * (k - 1) - 1) // s + 1
    if o < 1:
        raise RuntimeError(f"{op}: the kernel ({k} with dilation {d}) does not fit the input of "
                           f"size {i} with padding {p}; the output would have size {o}")
    return o


def _pad_spatial(node: ir.Node, padding, fill=0.0, extra=None) -> ir.Node:
    """padding on both sides of each spatial axis, and extra more after it."""
    extra = extra or (0,) * len(padding)
    pads = tuple((p, p + e) for p, e in zip(padding, extra))
    return node.pad(((0, 0), (0, 0)) + pads, fill)


def _batched(x, op: str):
    if x.ndim == 3:
        return x.node.reshape((1,) + x.shape), True
    if x.ndim != 4:
        raise RuntimeError(f"{op}: expected a 3-D or 4-D input, got shape {tuple(x.shape)}")
    return x.node, False


def _padding(op: str, padding, kernel, dilation, stride) -> tuple[tuple, tuple]:
    """(padding on both sides, extra after) per spatial axis. 'same' splits an odd total
    padding with the extra element after, as PyTorch does."""
    dims = len(kernel)
    if not isinstance(padding, str):
        return _conv_param(op, padding, dims, "padding"), None
    if padding == "valid":
        return (0,) * dims, None
    if padding != "same":
        raise RuntimeError(f"{op}: Invalid padding string: '{padding}'")
    if any(s != 1 for s in stride):
        raise RuntimeError(f"{op}: padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    return tuple(t // 2 for t in totals), tuple(t % 2 for t in totals)


def _check_conv(op: str, input, weight, bias, groups: int, transposed: bool, dims: int):
    """Raises as PyTorch does when the operands of a convolution do not fit together."""
    if weight.ndim != dims:
        layout = "(in, out/groups, k...)" if transposed else "(out, in/groups, k...)"
        raise RuntimeError(f"{op}: expected a {dims}-D weight {layout}, got shape "
                           f"{tuple(weight.shape)}")
    if input.ndim not in (dims - 1, dims):
        raise RuntimeError(f"{op}: expected a {dims - 1}-D (unbatched) or {dims}-D (batched) "
                           f"input, got shape {tuple(input.shape)}")
    if groups < 1:
        raise RuntimeError(f"{op}: non-positive groups is not supported, got groups={groups}")
    if weight.shape[0] == 0:
        raise RuntimeError(f"{op}: given groups={groups}, expected weight to be at least 1 at "
                           f"dimension 0, but got weight of size {list(weight.shape)}")
    if weight.shape[0] % groups:
        raise RuntimeError(f"{op}: groups={groups} should divide the {weight.shape[0]} channels "
                           f"of dim 0 of the weight of shape {tuple(weight.shape)}")
    channels = input.shape[-dims + 1]
    expected = weight.shape[0] if transposed else weight.shape[1] * groups
    if channels != expected:
        raise RuntimeError(f"{op}: input of shape {tuple(input.shape)} with groups={groups} "
                           f"expects {expected} input channels for weight of shape "
                           f"{tuple(weight.shape)}, got {channels}")
    batch = input.shape[0] if input.ndim == dims else 1
    if batch and channels and 0 in input.shape[-dims + 2:]:
        raise RuntimeError(f"{op}: only zero batch or zero channel inputs are supported, but "
                           f"got input shape {list(input.shape)}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and t.dtype != input.dtype:
            raise RuntimeError(f"{op}: input dtype {input.dtype.name} and {name} dtype "
                               f"{t.dtype.name} should be the same")
    out_channels = weight.shape[1] * groups if transposed else weight.shape[0]
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(f"{op}: expected bias of shape ({out_channels},), got "
                           f"{tuple(bias.shape)}")


def _operands(op, input, weight, bias, groups, transposed, dims):
    """The checked operands of a convolution of dims spatial dims: (tensors, device, input
    with a batch dimension, whether the input had none)."""
    tensors = [t for t in (input, weight, bias) if t is not None]
    device = common_device(op, tensors)
    _check_conv(op, input, weight, bias, groups, transposed, dims + 2)
    unbatched = input.ndim == dims + 1
    x = input.node.reshape((1,) + input.shape) if unbatched else input.node
    return tensors, device, x, unbatched


def _result(op, out: ir.Node, unbatched: bool, device, tensors, derivation=None):
    if unbatched:
        out = out.reshape(out.shape[1:])
        derivation = None if derivation is None else derivation.reshape(out.shape)
    return record(op, out, device, tensors, derivation=derivation)


def _convolve(op, input, weight, bias, stride, padding, dilation, groups, dims):
    """conv1d, conv2d and conv3d: a matmul of the input's windows (a view) with the flattened
    weight."""
    tensors, device, x, unbatched = _operands(op, input, weight, bias, groups, False, dims)
    kernel = weight.shape[2:]
    stride = _conv_param(op, stride, dims, "stride")
    dilation = _conv_param(op, dilation, dims, "dilation")
    padding, extra = _padding(op, padding, kernel, dilation, stride)
    for a in range(dims):   # raises, naming the shapes, if the kernel does not fit
        out_size(x.shape[2 + a] + (extra[a] if extra else 0), kernel[a], stride[a],
                 dilation[a], padding[a], op)
    def convolved(x: ir.Node, weight: ir.Node, *bias: ir.Node) -> ir.Node:
        out = convolve(_pad_spatial(x, padding, 0.0, extra), weight, stride, dilation, groups,
                       *bias)
        if x.shape[1] == 0:     # PyTorch's result of an input without channels has none either
            out = out.shrink(((0, out.shape[0]), (0, 0)) + tuple((0, s) for s in out.shape[2:]))
        return out
    if bias is None:
        return _result(op, convolved(x, weight.node), unbatched, device, tensors)
    # PyTorch adds a 16-bit float's bias to the float32 products and rounds once
    out, derivation = rounded_once(convolved, x, weight.node, bias.node)
    if x.dtype.is_16_bit_float and out.numel:
        # and takes its gradient as one sum of g over the batch and the image, where
        # convolve's sums each image's, then their total (rounded twice)
        spread = bias.node.reshape((1, out.shape[1]) + (1,) * dims).expand(out.shape)
        derivation = convolved(x, weight.node) + spread
    return _result(op, out, unbatched, device, tensors, derivation)


def conv1d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of (N, C, L) input with (O, C/groups, k) weight."""
    return _convolve("conv1d", input, weight, bias, stride, padding, dilation, groups, 1)


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of (N, C, H, W) input with (O, C/groups, kh, kw) weight."""
    return _convolve("conv2d", input, weight, bias, stride, padding, dilation, groups, 2)


def conv3d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of (N, C, D, H, W) input with (O, C/groups, kd, kh, kw) weight."""
    return _convolve("conv3d", input, weight, bias, stride, padding, dilation, groups, 3)


def conv_tbc(input, weight, bias, pad: int = 0):
    """A 1-D convolution of (time, batch, channels) input with (kernel, in, out) weight,
    padded by pad steps at both ends of time; (time', batch, out) comes out."""
    if input.ndim != 3 or weight.ndim != 3 or bias.ndim != 1:
        raise RuntimeError(f"conv_tbc: expected 3-D input and weight and a 1-D bias, got "
                           f"shapes {tuple(input.shape)}, {tuple(weight.shape)} and "
                           f"{tuple(bias.shape)}")
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, padding=pad)
    return out.permute(2, 0, 1)


def _transposed(op, input, weight, bias, stride, padding, output_padding, groups, dilation,
                dims):
    """conv_transpose1d/2d/3d as PyTorch computes them: each input position times the weight
    (a matmul over the input channels), then each kernel tap's products added at their place
    in the output (col2im). No product meets a zero of the padding or of the stride, so an
    infinite weight reaches only the outputs it touches (written as a convolution of the
    input spread by the stride, 0 * inf made NaNs PyTorch has not)."""
    tensors, device, x, unbatched = _operands(op, input, weight, bias, groups, True, dims)
    stride = _conv_param(op, stride, dims, "stride")
    dilation = _conv_param(op, dilation, dims, "dilation")
    padding = _conv_param(op, padding, dims, "padding")
    extra = _conv_param(op, output_padding, dims, "output_padding")
    if any(e >= max(s, d) for e, s, d in zip(extra, stride, dilation)):
        raise RuntimeError(f"{op}: output padding must be smaller than either stride or "
                           f"dilation, got output_padding={output_padding}, stride={stride}, "
                           f"dilation={dilation}")
    (n, c), spatial, kernel = x.shape[:2], x.shape[2:], weight.shape[2:]
    sizes = tuple((i - 1) * s - 2 * p + d * (k - 1) + e + 1 for i, s, p, d, k, e in
                  zip(spatial, stride, padding, dilation, kernel, extra))
    if min(sizes) < (0 if x.numel == 0 else 1):     # an empty batch may give an empty output
        raise RuntimeError(f"{op}: input of shape {tuple(input.shape)} with weight of shape "
                           f"{tuple(weight.shape)} gives an output of size {sizes}")
    og, cg, taps = weight.shape[1], c // groups, math.prod(kernel)
    rows = x.reshape((n, groups, cg) + spatial)
    rows = rows.permute((1, 0) + tuple(range(3, 3 + dims)) + (2,))
    rows = rows.reshape((groups, n * math.prod(spatial), cg))
    products = rows @ weight.node.reshape((groups, cg, og * taps))     # G, N*spatial, og*taps
    # (N, G*og, taps, *spatial): each tap's products in the output's channel layout
    products = products.reshape((groups, n) + spatial + (og, taps))
    products = products.permute((1, 0, 2 + dims, 3 + dims) + tuple(range(2, 2 + dims)))
    products = products.reshape((n, groups * og, taps) + spatial)
    out = None
    for t, tap in enumerate(itertools.product(*(range(k) for k in kernel))):
        part = products.shrink(((0, n), (0, groups * og), (t, t + 1))
                               + tuple((0, s) for s in spatial))
        part = part.reshape((n, groups * og) + spatial)
        for a in range(dims):
            part = _dilate(part, 2 + a, stride[a])
            part = _place(part, 2 + a, tap[a] * dilation[a] - padding[a], sizes[a])
        out = part if out is None else out + part
    if bias is not None:
        out = out + bias.node.reshape((1, out.shape[1]) + (1,) * dims).expand(out.shape)
    return _result(op, out, unbatched, device, tensors)


def conv_transpose1d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transposed convolution of (N, C, L) input with (C, O/groups, k) weight."""
    return _transposed("conv_transpose1d", input, weight, bias, stride, padding, output_padding,
                       groups, dilation, 1)


def conv_transpose2d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transposed convolution of (N, C, H, W) input with (C, O/groups, kh, kw) weight."""
    return _transposed("conv_transpose2d", input, weight, bias, stride, padding, output_padding,
                       groups, dilation, 2)


def conv_transpose3d(input, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1):
    """The transposed convolution of (N, C, D, H, W) input with (C, O/groups, kd, kh, kw)
    weight."""
    return _transposed("conv_transpose3d", input, weight, bias, stride, padding, output_padding,
                       groups, dilation, 3)


def convolution(input, weight, bias, stride, padding, dilation, transposed: bool,
                output_padding, groups: int):
    """torch.convolution: a batched convolution (transposed or not) of as many spatial dims as
    the weight has past its two channel dims; every argument given, as lists."""
    if weight.ndim not in (3, 4, 5) or input.ndim != weight.ndim:
        raise RuntimeError(f"convolution: expected a {weight.ndim}-D input for a "
                           f"{weight.ndim}-D weight of shape {tuple(weight.shape)}, got input "
                           f"of shape {tuple(input.shape)}")
    dims = weight.ndim - 2
    if transposed:
        return _transposed(f"conv_transpose{dims}d", input, weight, bias, stride, padding,
                           output_padding, groups, dilation, dims)
    return _convolve(f"conv{dims}d", input, weight, bias, stride, padding, dilation, groups,
                     dims)


def _dilate(node: ir.Node, axis: int, step: int) -> ir.Node:
    """step - 1 zeros between neighbours along axis."""
    n = node.shape[axis]
    if step == 1 or n == 0:
        return node
    before, after = node.shape[:axis], node.shape[axis + 1:]
    node = node.reshape(before + (n, 1) + after)
    pads = tuple((0, step - 1) if a == axis + 1 else (0, 0) for a in range(len(node.shape)))
    node = node.pad(pads).reshape(before + (n * step,) + after)
    span = tuple((0, (n - 1) * step + 1) if a == axis else (0, s)
                 for a, s in enumerate(node.shape))
    return node.shrink(span)


def _place(node: ir.Node, axis: int, offset: int, size: int) -> ir.Node:
    """node's elements along axis put at offset onward in an axis of size, zeros around; those
    that fall outside left out (the transposed convolution's padding crops them)."""
    n = node.shape[axis]
    start = min(max(-offset, 0), n)
    end = max(min(size - offset, n), start)
    node = node.shrink(tuple((start, end) if a == axis else (0, s)
                             for a, s in enumerate(node.shape)))
    lo = offset + start if end > start else 0
    return node.pad(tuple((lo, size - lo - (end - start)) if a == axis else (0, 0)
                          for a in range(len(node.shape))))


def _pool_args(op, kernel_size, stride, padding, dilation):
    kernel = pair(kernel_size, "kernel_size")
    stride = kernel if stride is None or stride == [] or stride == () else pair(stride, "stride")
    padding, dilation = pair(padding, "padding"), pair(dilation, "dilation")
    if any(p * 2 > k for p, k in zip(padding, kernel)):
        raise RuntimeError(f"{op}: pad should be at most half of effective kernel size, but got "
                           f"pad={padding}, kernel_size={kernel}")
    return kernel, stride, padding, dilation


def _ceil_extra(i, k, s, d, p) -> int:
    """Right padding that makes the output size round up (ceil_mode), as PyTorch counts it."""
    o = -(-(i + 2 * p - d * (k - 1) - 1) // s) + 1
    if (o - 1) * s >= i + p:
        o -= 1
    return max((o - 1) * s + d * (k - 1) + 1 - (i + 2 * p), 0)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """The max of each window; with return_indices also its position in the input's plane
    (row * width + column, int64), PyTorch's indices for max_unpool2d."""
    kernel, stride, padding, dilation = _pool_args("max_pool2d", kernel_size, stride, padding,
                                                   dilation)
    x, unbatched = _batched(input, "max_pool2d")
    extra = (0, 0)
    if ceil_mode:
        extra = tuple(_ceil_extra(x.shape[2 + a], kernel[a], stride[a], dilation[a], padding[a])
                      for a in range(2))
    for a in range(2):
        out_size(x.shape[2 + a], kernel[a], stride[a], dilation[a], padding[a], "max_pool2d")

    def view(node: ir.Node) -> ir.Node:
        if stride == kernel and dilation == (1, 1):
            return _blocks(node, kernel)
        return windows(node, kernel, stride, dilation)
    win = view(_pad_spatial(x, padding, float("-inf"), extra))
    # the padding is no candidate: PyTorch takes the max of a window's elements inside the
    # input, so an element of -inf is picked over the padding beside it (its gradient too)
    inside = None
    if any(padding) or any(extra):
        image = ir.const(True, dtypes.bool_, (1, 1) + x.shape[2:])
        inside = view(_pad_spatial(image, padding, False, extra)).expand(win.shape)
    n, c, ho, kh, wo, kw = win.shape
    if kh * kw <= _MAX_SELECTS:
        out, slot = _max_select(win, inside)
    else:   # a reduction (the chain's backward would grow with the square of the window)
        def rows(node):
            return None if node is None else \
                node.permute((0, 1, 2, 4, 3, 5)).reshape((n, c, ho, wo, kh * kw))
        out, slot = (node.reshape((n, c, ho, wo))
                     for node in max_at_first(rows(win), 4, rows(inside)))
    index = _plane_index(slot, (kh, kw), stride, padding, dilation, x.shape[3])
    if unbatched:
        out = out.reshape(out.shape[1:])
    values = record("max_pool2d", out, input.device, [input],
                    derivation=picked_in_turn(x, index, out.shape))
    if not return_indices:
        return values
    from ..frontend.tensor import Tensor
    return values, Tensor(index.reshape(out.shape), input.device)


def _plane_index(slot: ir.Node, kernel, stride, padding, dilation, width: int) -> ir.Node:
    """Where in the input plane each window's element number slot (row-major in the window)
    lies, as row * width + column."""
    n, c, ho, wo = slot.shape
    slot = slot.cast(dtypes.int64)
    rows = ir.iota(ho, dtypes.int64).reshape((1, 1, ho, 1)).expand(slot.shape)
    cols = ir.iota(wo, dtypes.int64).reshape((1, 1, 1, wo)).expand(slot.shape)
    row = rows * stride[0] - padding[0] + (slot / kernel[1]) * dilation[0]
    col = cols * stride[1] - padding[1] + (slot % kernel[1]) * dilation[1]
    return row * width + col


def _blocks(node: ir.Node, kernel) -> ir.Node:
    """(N, C, H, W) -> (N, C, Ho, kh, Wo, kw) non-overlapping windows (stride == kernel): the
    rows and columns past the last whole window dropped, then each axis split in two, so the
    index arithmetic is a plain reshape with no window offsets."""
    n, c, h, w = node.shape
    (kh, kw), ho, wo = kernel, h // kernel[0], w // kernel[1]
    return node.shrink(((0, n), (0, c), (0, ho * kh), (0, wo * kw))).reshape((n, c, ho, kh, wo, kw))


# Windows up to this many elements take the max as a chain of selects (below).
_MAX_SELECTS = 16


def _max_select(win: ir.Node, inside: ir.Node | None) -> tuple[ir.Node, ir.Node]:
    """The max of each (kh, kw) window of (N, C, Ho, kh, Wo, kw), and the position of its
    first largest element (row-major) by which it is picked, so the derived gradient goes to
    that one element as PyTorch's does. Both are elementwise over the window's elements
    (views, no reduction loop): scanning from the last, an element wins if it is at least the
    max of those after it; where inside (the same windows of a mask of the input) is given, a
    padding element never wins. The position gets a buffer of its own (one kernel with the
    max), so the backward reads it instead of comparing the window again."""
    n, c, ho, kh, wo, kw = win.shape

    def element(node: ir.Node, j: int) -> ir.Node:
        a, b = divmod(j, kw)
        bounds = ((0, n), (0, c), (0, ho), (a, a + 1), (0, wo), (b, b + 1))
        return node.shrink(bounds).reshape((n, c, ho, wo))

    slots = [element(win, j) for j in range(kh * kw)]
    last = len(slots) - 1
    first, after = ir.const(last, dtypes.int32, (n, c, ho, wo)), slots[last]
    candidate = None if inside is None else element(inside, last)   # whether after is one's
    for j in reversed(range(last)):
        v = slots[j]
        # v loses if it is smaller, or a later element is NaN (after is NaN then: the last
        # NaN is PyTorch's pick); a NaN v beats all but a later NaN
        loses = (v < after) | after.ne(after)
        if inside is None:
            after = v.maximum(after)
        else:
            ok = element(inside, j)
            loses = ~ok | (candidate & loses)
            candidate = candidate | ok
            after = loses.where(after, v)
        first = loses.where(first, j)
    first = first.contiguous()
    out = slots[last]
    for j in reversed(range(last)):
        out = first.eq(j).where(slots[j], out)
    return out, first

