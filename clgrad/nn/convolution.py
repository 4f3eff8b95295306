"""Convolution and pooling as views plus one matmul or reduction.

Sliding windows are pure index arithmetic (`windows`): a spatial axis of size i becomes two
axes (o, k) with element [oo, kk] = x[oo*s + kk*d], so im2col never materialises and the
matmul kernel reads the input through that index map. Backward comes from the primitive rules.
"""
from __future__ import annotations


from ..compiler import dtype as dtypes, ir
from ..frontend.backward import record
from ..frontend.function import Function
from ..frontend.grad_fn_names import GRAD_FN_NAMES
from ..frontend.operands import common_device
from ..frontend.reductions import max_at_first
from ..frontend.tensor import Tensor


def pair(value, name: str = "value") -> tuple[int, int]:
    if isinstance(value, (tuple, list)):
        if len(value) != 2:
            raise ValueError(f"{name} must be an int or a pair of ints, got {value}")
        return int(value[0]), int(value[1])
    return int(value), int(value)


def out_size(i: int, k: int, s: int, d: int, p: int, op: str) -> int:
    o = (i + 2 * p - d * (k - 1) - 1) // s + 1
    if o < 1:
        raise RuntimeError(f"{op}: the kernel ({k} with dilation {d}) does not fit the input of "
                           f"size {i} with padding {p}; the output would have size {o}")
    return o


def window_axis(node: ir.Node, axis: int, k: int, s: int, d: int) -> ir.Node:
    """Replaces axis (size i) by two axes (o, k): [oo, kk] = node[oo*s + kk*d]."""
    return node.window(axis, k, s, d)


def windows(node: ir.Node, kernel, stride, dilation) -> ir.Node:
    """(N, C, H, W) -> (N, C, Ho, kh, Wo, kw) sliding windows of the last two axes."""
    node = window_axis(node, 2, kernel[0], stride[0], dilation[0])
    return window_axis(node, 4, kernel[1], stride[1], dilation[1])


def _pad_spatial(node: ir.Node, padding, fill=0.0, extra=(0, 0)) -> ir.Node:
    (ph, pw), (eh, ew) = padding, extra
    return node.pad(((0, 0), (0, 0), (ph, ph + eh), (pw, pw + ew)), fill)


def _batched(x, op: str, dims: int = 4):
    if x.ndim == dims - 1:
        return x.node.reshape((1,) + x.shape), True
    if x.ndim != dims:
        raise RuntimeError(f"{op}: expected a {dims - 1}-D or {dims}-D input, got shape "
                           f"{tuple(x.shape)}")
    return x.node, False


def _same_padding(kernel, dilation, stride) -> tuple[int, int]:
    if stride != (1, 1):
        raise ValueError("padding='same' is not supported for strided convolutions")
    totals = [d * (k - 1) for k, d in zip(kernel, dilation)]
    if any(t % 2 for t in totals):
        raise NotImplementedError("padding='same' with an odd total padding is not supported")
    return totals[0] // 2, totals[1] // 2


# Measured on PoCL (2 cores), LeNet-sized layers at batch 64, forward + backward: "rows" 41,
# 39, 24 ms against "columns" 42, 75, 31 ms, so rows it is; both stay for other devices.
LAYOUT = "rows"


def _add_bias(out: ir.Node, bias: ir.Node | None, shape: tuple[int, ...]) -> ir.Node:
    """out + bias viewed as shape, at the matmul's own shape so it runs as its epilogue."""
    if bias is None:
        return out
    return out + bias.reshape(shape).expand(out.shape)


def _conv_rows(win: ir.Node, weight: ir.Node, bias, g: int, og: int) -> ir.Node:
    """(N*Ho*Wo, C*kh*kw) windows @ (C*kh*kw, O) weight per group, then back to NCHW."""
    n, c, ho, kh, wo, kw = win.shape
    cg = c // g
    win = win.reshape((n, g, cg, ho, kh, wo, kw))
    cols = win.permute((1, 0, 3, 5, 2, 4, 6))                         # G N Ho Wo Cg kh kw
    cols = cols.reshape((g, n * ho * wo, cg * kh * kw))
    wmat = weight.reshape((g, og, cg * kh * kw)).permute((0, 2, 1))
    out = cols @ wmat                                                 # G NHW Og
    if bias is not None:
        # broadcast per image, then over its rows: the derived bias gradient sums each
        # image's rows (G*N*Og rows to reduce), then the images, where one reduction would
        # give only Og rows of N*Ho*Wo each
        per_image = bias.reshape((g, 1, 1, og)).expand((g, n, 1, og))
        out = out + per_image.expand((g, n, ho * wo, og)).reshape(out.shape)
    out = out.reshape((g, n, ho, wo, og)).permute((1, 0, 4, 2, 3))
    return out.reshape((n, g * og, ho, wo))


def _conv_columns(win: ir.Node, weight: ir.Node, bias, g: int, og: int) -> ir.Node:
    """Per image: (O, C*kh*kw) weight @ (C*kh*kw, Ho*Wo) windows, already NCHW."""
    n, c, ho, kh, wo, kw = win.shape
    cg = c // g
    win = win.reshape((n, g, cg, ho, kh, wo, kw))
    cols = win.permute((0, 1, 2, 4, 6, 3, 5)).reshape((n, g, cg * kh * kw, ho * wo))
    wmat = weight.reshape((1, g, og, cg * kh * kw)).expand((n, g, og, cg * kh * kw))
    out = _add_bias(wmat @ cols, bias, (1, g, og, 1))
    return out.reshape((n, g * og, ho, wo))


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation of (N, C, H, W) input with (O, C/groups, kh, kw) weight, as a matmul
    of the input's windows (a view) with the flattened weight."""
    tensors = [t for t in (input, weight, bias) if t is not None]
    device = common_device("conv2d", tensors)
    x, unbatched = _batched(input, "conv2d")
    if weight.ndim != 4:
        raise RuntimeError(f"conv2d: expected a 4-D weight (out, in/groups, kh, kw), got shape "
                           f"{tuple(weight.shape)}")
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    if groups < 1 or c % groups or o % groups or cg * groups != c:
        raise RuntimeError(f"conv2d: input of shape {tuple(input.shape)} with groups={groups} "
                           f"expects {cg * groups} input channels for weight of shape "
                           f"{tuple(weight.shape)}, got {c}")
    if input.dtype != weight.dtype:
        raise RuntimeError(f"conv2d: input dtype {input.dtype.name} and weight dtype "
                           f"{weight.dtype.name} should be the same")
    if bias is not None and tuple(bias.shape) != (o,):
        raise RuntimeError(f"conv2d: expected bias of shape ({o},), got {tuple(bias.shape)}")
    stride, dilation = pair(stride, "stride"), pair(dilation, "dilation")
    if isinstance(padding, str):
        padding = (0, 0) if padding == "valid" else _same_padding((kh, kw), dilation, stride)
    padding = pair(padding, "padding")
    for size, k, a in ((h, kh, 0), (w, kw, 1)):    # raises, naming the shapes, if k does not fit
        out_size(size, k, stride[a], dilation[a], padding[a], "conv2d")
    conf = (stride, padding, dilation, groups, unbatched)
    if not GRADIENT_KERNELS:
        out = _conv_node(x, weight.node, None if bias is None else bias.node, conf)
        return record("conv2d", out, device, tensors)
    out = _Convolution.apply(input, weight, bias, conf)
    if out.grad_fn is not None:
        out.grad_fn._name = GRAD_FN_NAMES["conv2d"]
    return out


def _conv_node(x: ir.Node, weight: ir.Node, bias, conf) -> ir.Node:
    stride, padding, dilation, groups, unbatched = conf
    kh, kw = weight.shape[2:]
    win = windows(_pad_spatial(x, padding), (kh, kw), stride, dilation)  # N C Ho kh Wo kw
    layout = _conv_rows if LAYOUT == "rows" else _conv_columns
    out = layout(win, weight, bias, groups, weight.shape[0] // groups)
    return out.reshape(out.shape[1:]) if unbatched else out


# The gradients the primitive rules derive for conv2d sum the windows back into the input with
# a reduction over the repeated axis (col2im) and reduce the weight gradient over N*Ho*Wo in few
# work-items. The alternative written out below computes the input gradient as a transposed
# convolution (the dilated, padded output gradient convolved with the flipped weight: one
# matmul) and the weight gradient as one matmul per image, summed. Measured on the LeNet step
# (batch 64, SGD, PoCL 2 cores): derived 58-85 ms, written out 73-116 ms, because the tiled
# matmul is slow on the narrow (6 or 16 column) products the transposed form needs. So the
# derived gradients are the default; flip this when the matmul handles narrow outputs well.
GRADIENT_KERNELS = False


def _dilate(node: ir.Node, axis: int, step: int) -> ir.Node:
    """step - 1 zeros between neighbours along axis."""
    if step == 1:
        return node
    n = node.shape[axis]
    before, after = node.shape[:axis], node.shape[axis + 1:]
    node = node.reshape(before + (n, 1) + after)
    pads = tuple((0, step - 1) if a == axis + 1 else (0, 0) for a in range(len(node.shape)))
    node = node.pad(pads).reshape(before + (n * step,) + after)
    span = tuple((0, (n - 1) * step + 1) if a == axis else (0, s)
                 for a, s in enumerate(node.shape))
    return node.shrink(span)


def _pad_or_crop(node: ir.Node, axis: int, lo: int, hi: int) -> ir.Node:
    span = tuple((max(-lo, 0), s - max(-hi, 0)) if a == axis else (0, s)
                 for a, s in enumerate(node.shape))
    node = node.shrink(span)
    pads = tuple((max(lo, 0), max(hi, 0)) if a == axis else (0, 0)
                 for a in range(len(node.shape)))
    return node.pad(pads)


def _input_grad(g: ir.Node, weight: ir.Node, x_shape, conf) -> ir.Node:
    """d conv / d x: the output gradient dilated by the stride, padded, convolved (stride 1)
    with the weight flipped in space and transposed in channels, group by group."""
    stride, padding, dilation, groups, _ = conf
    o, cg, kh, kw = weight.shape
    og = o // groups
    for axis, k in ((2, kh), (3, kw)):
        a = axis - 2
        g = _dilate(g, axis, stride[a])
        lo = dilation[a] * (k - 1) - padding[a]
        hi = x_shape[axis] + dilation[a] * (k - 1) - g.shape[axis] - lo
        g = _pad_or_crop(g, axis, lo, hi)
    flipped = weight.reshape((groups, og, cg, kh, kw))
    flipped = flipped.permute((0, 2, 1, 3, 4)).stride((1, 1, 1, -1, -1))
    flipped = flipped.reshape((groups * cg, og, kh, kw))
    win = windows(g, (kh, kw), (1, 1), dilation)
    return _conv_rows(win, flipped, None, groups, cg)


def _weight_grad(g: ir.Node, x: ir.Node, weight_shape, conf) -> ir.Node:
    """d conv / d weight: per image (Og, Ho*Wo) @ (Ho*Wo, Cg*kh*kw), then summed over images,
    so each work-item's reduction is one image long."""
    stride, padding, dilation, groups, _ = conf
    o, cg, kh, kw = weight_shape
    n, _, ho, wo = g.shape
    win = windows(_pad_spatial(x, padding), (kh, kw), stride, dilation)  # N C Ho kh Wo kw
    win = win.reshape((n, groups, cg, ho, kh, wo, kw))
    cols = win.permute((0, 1, 3, 5, 2, 4, 6)).reshape((n, groups, ho * wo, cg * kh * kw))
    per_image = g.reshape((n, groups, o // groups, ho * wo)) @ cols   # N G Og CgKK
    return per_image.sum((0,)).reshape(weight_shape)


class _Convolution(Function):
    @staticmethod
    def forward(ctx, x, weight, bias, conf):
        ctx.save_for_backward(x, weight)
        ctx.conf = conf
        node = x.node if not conf[4] else x.node.reshape((1,) + x.shape)
        out = _conv_node(node, weight.node, None if bias is None else bias.node, conf)
        return Tensor(out, x.device)

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        conf = ctx.conf
        g = grad.node if not conf[4] else grad.node.reshape((1,) + grad.shape)
        xn = x.node if not conf[4] else x.node.reshape((1,) + x.shape)
        dx = dw = db = None
        if ctx.needs_input_grad[0]:
            dx = _input_grad(g, weight.node, xn.shape, conf).reshape(x.shape)
            dx = Tensor(dx, x.device)
        if ctx.needs_input_grad[1]:
            dw = Tensor(_weight_grad(g, xn, weight.shape, conf), x.device)
        if ctx.needs_input_grad[2]:
            db = Tensor(g.sum((0, 2, 3)).reshape((weight.shape[0],)), x.device)
        return dx, dw, db, None


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
    if return_indices:
        raise NotImplementedError("max_pool2d: return_indices=True is not supported")
    kernel, stride, padding, dilation = _pool_args("max_pool2d", kernel_size, stride, padding,
                                                   dilation)
    x, unbatched = _batched(input, "max_pool2d")
    extra = (0, 0)
    if ceil_mode:
        extra = tuple(_ceil_extra(x.shape[2 + a], kernel[a], stride[a], dilation[a], padding[a])
                      for a in range(2))
    for a in range(2):
        out_size(x.shape[2 + a], kernel[a], stride[a], dilation[a], padding[a], "max_pool2d")
    padded = _pad_spatial(x, padding, float("-inf"), extra)
    if stride == kernel and dilation == (1, 1):
        win = _blocks(padded, kernel)
    else:
        win = windows(padded, kernel, stride, dilation)
    n, c, ho, kh, wo, kw = win.shape
    if kh * kw <= _MAX_SELECTS:
        out = _max_select(win)
    else:   # a reduction (the chain's backward would grow with the square of the window)
        rows = win.permute((0, 1, 2, 4, 3, 5)).reshape((n, c, ho, wo, kh * kw))
        out = max_at_first(rows, 4).reshape((n, c, ho, wo))
    if unbatched:
        out = out.reshape(out.shape[1:])
    return record("max_pool2d", out, input.device, [input])


def _blocks(node: ir.Node, kernel) -> ir.Node:
    """(N, C, H, W) -> (N, C, Ho, kh, Wo, kw) non-overlapping windows (stride == kernel): the
    rows and columns past the last whole window dropped, then each axis split in two, so the
    index arithmetic is a plain reshape with no window offsets."""
    n, c, h, w = node.shape
    (kh, kw), ho, wo = kernel, h // kernel[0], w // kernel[1]
    return node.shrink(((0, n), (0, c), (0, ho * kh), (0, wo * kw))).reshape((n, c, ho, kh, wo, kw))


# Windows up to this many elements take the max as a chain of selects (below).
_MAX_SELECTS = 16


def _max_select(win: ir.Node) -> ir.Node:
    """The max of each (kh, kw) window of (N, C, Ho, kh, Wo, kw), picked by the position of
    its first largest element (row-major), so the derived gradient goes to that one element as
    PyTorch's does. Both are elementwise over the window's elements (views, no reduction
    loop): scanning from the last, an element wins if it is at least the max of those after
    it. The position gets a buffer of its own (one kernel with the max), so the backward
    reads it instead of comparing the window again."""
    n, c, ho, kh, wo, kw = win.shape

    def element(a: int, b: int) -> ir.Node:
        bounds = ((0, n), (0, c), (0, ho), (a, a + 1), (0, wo), (b, b + 1))
        return win.shrink(bounds).reshape((n, c, ho, wo))

    slots = [element(a, b) for a in range(kh) for b in range(kw)]
    first, after = ir.const(len(slots) - 1, dtypes.int32, (n, c, ho, wo)), slots[-1]
    for j in reversed(range(len(slots) - 1)):
        v = slots[j]
        # v wins unless it is smaller, or a later element is NaN (after is NaN then: the
        # last NaN is PyTorch's pick); a NaN v beats all but a later NaN
        first = ((v < after) | after.ne(after)).where(first, j)
        after = v.maximum(after)
    first = first.contiguous()
    out = slots[-1]
    for j in reversed(range(len(slots) - 1)):
        out = first.eq(j).where(slots[j], out)
    return out


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    if ceil_mode:
        raise NotImplementedError("avg_pool2d: ceil_mode=True is not supported")
    kernel, stride, padding, _ = _pool_args("avg_pool2d", kernel_size, stride, padding, 1)
    x, unbatched = _batched(input, "avg_pool2d")
    for a in range(2):
        out_size(x.shape[2 + a], kernel[a], stride[a], 1, padding[a], "avg_pool2d")
    win = windows(_pad_spatial(x, padding), kernel, stride, (1, 1))
    total = win.sum((3, 5))
    if divisor_override:
        count = total.const_like(divisor_override)
    elif count_include_pad or padding == (0, 0):
        count = total.const_like(kernel[0] * kernel[1])
    else:
        ones = ir.const(1.0, x.dtype, (1, 1) + x.shape[2:])
        counted = windows(_pad_spatial(ones, padding), kernel, stride, (1, 1)).sum((3, 5))
        count = counted.expand(total.shape)
    out = (total / count).reshape((win.shape[0], win.shape[1], win.shape[2], win.shape[4]))
    if unbatched:
        out = out.reshape(out.shape[1:])
    return record("avg_pool2d", out, input.device, [input])
