"""Convolutions as products of windows, and the forms their gradients take.

A convolution of a padded (N, C, *spatial) input with an (O, C/groups, *kernel) weight is a
matmul of the input's windows (`columns`, a view: im2col never materialises) by the flattened
weight. The derivation recognises that product (`product_of_windows`) and gives its gradients
as `Convolution` says. Derived from the primitives, the input gradient would be the product
of the output's gradient by the weight (one value per window slot: kernel-size times the
input) summed back into place (col2im). For stride 1 it is instead the convolution of the
gradient, padded by the kernel's reach, with the flipped weight (`input_gradient`), which
writes nothing larger than the input. PyTorch's input gradient has no product with a place
outside the output (an infinite weight reaches only the inputs it touched), so that padding
is ABSENT: its products are skipped, not multiplied by zero; and its weight gradient none with
the input's padding, which the weight gradient's columns therefore read as absent too.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import ir
from .ir import Node
from .ops import Op


def windows(node: Node, kernel, stride, dilation) -> Node:
    """(N, C, *spatial) -> (N, C, o1, k1, o2, k2, ...) sliding windows of the spatial axes."""
    for a, (k, s, d) in enumerate(zip(kernel, stride, dilation)):
        node = node.window(2 + 2 * a, k, s, d)
    return node


def columns(padded: Node, kernel, stride, dilation, groups: int) -> Node:
    """The windows of padded as (groups, N * outputs, C/groups * kernel taps) rows."""
    win = windows(padded, kernel, stride, dilation)
    n, c = win.shape[:2]
    outs = win.shape[2::2]
    dims, cg = len(outs), c // groups
    win = win.reshape((n, groups, cg) + win.shape[2:])
    spatial = tuple(3 + 2 * a for a in range(dims))
    cols = win.permute((1, 0) + spatial + (2,) + tuple(a + 1 for a in spatial))  # G N o.. Cg k..
    return cols.reshape((groups, n * math.prod(outs), cg * math.prod(kernel)))


def weight_matrix(weight: Node, groups: int) -> Node:
    """(O, C/groups, *kernel) as (groups, C/groups * taps, O/groups), columns' partner."""
    o = weight.shape[0]
    return weight.reshape((groups, o // groups, math.prod(weight.shape[1:]))).permute((0, 2, 1))


def image(rows: Node, n: int, outs: tuple[int, ...]) -> Node:
    """A product's (groups, N * outputs, O/groups) rows as an (N, O, *outs) image."""
    groups, og, dims = rows.shape[0], rows.shape[-1], len(outs)
    rows = rows.reshape((groups, n) + outs + (og,))
    rows = rows.permute((1, 0, 2 + dims) + tuple(range(2, 2 + dims)))
    return rows.reshape((n, groups * og) + outs)


def convolve(padded: Node, weight: Node, stride, dilation, groups: int, bias=None) -> Node:
    """The (N, O, *outs) cross-correlation of padded with weight, plus bias (O,) if given."""
    kernel = weight.shape[2:]
    product = columns(padded, kernel, stride, dilation, groups) @ weight_matrix(weight, groups)
    n, og = padded.shape[0], product.shape[-1]
    outs = windows(padded, kernel, stride, dilation).shape[2::2]
    if bias is not None:
        # broadcast per image, then over its rows: the derived bias gradient sums each
        # image's rows (G*N*Og rows to reduce), then the images, where one reduction would
        # give only Og rows of N*Ho*Wo each
        per_image = bias.reshape((groups, 1, 1, og)).expand((groups, n, 1, og))
        product = product + per_image.expand((groups, n, math.prod(outs), og)).reshape(
            product.shape)
    return image(product, n, outs)


@dataclass(frozen=True)
class Convolution:
    """A product `columns(padded, kernel, stride, dilation, groups) @ weights`, recognised
    (`product_of_windows`), and its gradients' forms."""
    product: Node
    padded: Node
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    groups: int

    def input_gradient(self, g: Node) -> tuple[Node, Node] | None:
        """For a stride of 1 and input channels by the 8: (the input, its gradient for the
        product's gradient g) as the convolution of g's image with the flipped weight, else
        None. The input is padded's source where padded is a pad (its gradient is that of
        the inside). The convolution's columns are the input's channels: fewer than a
        vector's worth leave the matmul kernel's lanes idle, where col2im's product has a
        column per channel and tap (input gradients of 3x3 convolutions on Intel's runtime,
        64 images of 32x32 from 32 channels: col2im 13.7-14.3 ms, convolved 7.8-8.2; of 8
        channels: 6.5-6.7 and 3.0-3.3; LeNet's 16 to 6 channels, 15x15: 0.44 and 2.1)."""
        padded, kernel, dilation, groups = self.padded, self.kernel, self.dilation, self.groups
        wmat = self.product.src[1]
        n, c = padded.shape[:2]
        cg, og, dims = c // groups, wmat.shape[-1], len(kernel)
        if any(s != 1 for s in self.stride) or not padded.numel or cg % 8:
            return None
        outs = tuple(p - d * (k - 1) for p, k, d in zip(padded.shape[2:], kernel, dilation))
        source, pads = padded, ((0, 0),) * dims
        if padded.op is Op.PAD and padded.arg[0][:2] == ((0, 0), (0, 0)):
            source, pads = padded.src[0], padded.arg[0][2:]
        # input place i gets g at i + lo - t*d from tap t: g's image widened by the kernel's
        # reach less the padding, whose places hold no output: absent
        margins = tuple((d * (k - 1) - lo, d * (k - 1) - hi)
                        for k, d, (lo, hi) in zip(kernel, dilation, pads))
        grad_image = image(g, n, outs)
        grad_image = grad_image.shrink(((0, n), (0, grad_image.shape[1])) + tuple(
            (max(-lo, 0), o - max(-hi, 0)) for (lo, hi), o in zip(margins, outs)))
        grad_image = grad_image.pad(((0, 0), (0, 0)) + tuple(
            (max(lo, 0), max(hi, 0)) for lo, hi in margins), ir.ABSENT)
        # (groups * Cg, O/groups, *kernel): [g*Cg + c, o, t] = weight[g*og + o, c, last - t]
        flipped = wmat.permute((0, 2, 1)).reshape((groups, og, cg) + kernel)
        flipped = flipped.stride((1, 1, 1) + (-1,) * dims)
        flipped = flipped.permute((0, 2, 1) + tuple(range(3, 3 + dims)))
        flipped = flipped.reshape((groups * cg, og) + kernel)
        # copied into an image's layout (N, C, ...): the gradient flows on into passes over
        # each channel (BatchNorm's backward), which would otherwise gather each vector
        # across the product's rows (the ResNet step on Intel's runtime: 126 -> 120 ms)
        gradient = convolve(grad_image, flipped, self.stride, dilation, groups)
        return source, gradient.contiguous()

    def weight_columns(self) -> Node:
        """The columns the weight gradient multiplies the product's gradient by: the
        product's own, the padding's zeros made absent. PyTorch forms no product with the
        padding there either (an infinite gradient at the edge is no NaN; oneDNN does for a
        few grouped or dilated shapes of 4 or 8 channels a group), and the kernel,
        which skips absent elements in A alone, runs the product transposed: the windows'
        elements are read one by one for the rows of the weight gradient's columns instead
        of copied into panels a lane at a time (ResNet's 3x3 weight gradients of 32 and 64
        channels on Intel's runtime: 11.5-12.1 and 9.4-9.7 ms before, 7.4-8.3 and 6.6-6.9)."""
        padded = self.padded
        if padded.op is not Op.PAD or padded.arg[1] != 0:
            return self.product.src[0]
        absent = padded.src[0].pad(padded.arg[0], ir.ABSENT)
        return columns(absent, self.kernel, self.stride, self.dilation, self.groups)


def product_of_windows(product: Node) -> Convolution | None:
    """The convolution a product of `columns` is, else None."""
    cols = product.src[0]
    if cols.op is not Op.RESHAPE or len(cols.shape) != 3 or not product.dtype.is_float:
        return None
    node = cols
    while node.op in (Op.RESHAPE, Op.PERMUTE):
        node = node.src[0]
    found = []
    while node.op is Op.WINDOW:
        found.append(node.arg)
        node = node.src[0]
    dims = len(found)
    if not dims or len(node.shape) != 2 + dims:
        return None
    found.reverse()
    if [axis for axis, *_ in found] != [2 + 2 * a for a in range(dims)]:
        return None
    kernel, stride, dilation = (tuple(arg[i] for arg in found) for i in (1, 2, 3))
    groups = cols.shape[0]
    if node.shape[1] % groups or columns(node, kernel, stride, dilation, groups) is not cols:
        return None
    return Convolution(product, node, kernel, stride, dilation, groups)
