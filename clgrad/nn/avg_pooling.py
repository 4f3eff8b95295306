"""avg_pool2d as PyTorch's CPU kernel takes it (avg_pool1d is one of a single row).

Each window's sum (a 16-bit float's in float32) is divided by the window's count and rounded
once. A 16-bit gradient is PyTorch's backward kernel's: g divided by the count rounded to
the type, then added to each element of the window in the type, window after window in
row-major order. Where windows overlap, that order is a chain of rounded additions, which
the derivation reproduces (_taps_in_turn).
"""
from __future__ import annotations

import functools
import itertools
import operator

from ..compiler import ir
from ..frontend.backward import record
from ..frontend.operands import from_opmath, opmath
from . import convolution as conv


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
               count_include_pad: bool = True, divisor_override=None):
    """The mean of each window; with ceil_mode the windows past the padded input are
    averaged over their part inside it (inside the input without count_include_pad), as
    PyTorch does."""
    kernel, stride, padding, _ = conv._pool_args("avg_pool2d", kernel_size, stride, padding, 1)
    if divisor_override == 0:
        raise RuntimeError("avg_pool2d: divisor must be not zero (divisor_override=0; expected "
                           "None or a nonzero divisor)")
    x, unbatched = conv._batched(input, "avg_pool2d")
    for a in range(2):
        conv.out_size(x.shape[2 + a], kernel[a], stride[a], 1, padding[a], "avg_pool2d")
    extra = (0, 0)
    if ceil_mode:
        extra = tuple(conv._ceil_extra(x.shape[2 + a], kernel[a], stride[a], 1, padding[a])
                      for a in range(2))
    padded = conv._pad_spatial(x, padding, 0.0, extra)
    win = conv.windows(padded, kernel, stride, (1, 1))
    n, c, ho, _, wo, _ = win.shape
    wide = opmath(x).dtype
    count = _counts(x.shape, (ho, wo), kernel, stride, padding, extra, count_include_pad,
                    divisor_override, wide).expand((n, c, ho, wo))
    total = opmath(win).sum((3, 5)).reshape((n, c, ho, wo))
    out = from_opmath(total / count, x)
    derivation = None
    if x.dtype.is_16_bit_float:
        derivation = _taps_in_turn(padded, win, kernel, stride) / count.cast(x.dtype)
    if unbatched:
        out = out.reshape(out.shape[1:])
        derivation = None if derivation is None else derivation.reshape(out.shape)
    return record("avg_pool2d", out, input.device, [input], derivation=derivation)


def _counts(shape, outs, kernel, stride, padding, extra, count_include_pad: bool,
            divisor_override, dtype) -> ir.Node:
    """What each window's sum is divided by, (1, 1, Ho, Wo) of dtype: the override, or the
    elements of the padded input the window holds (without count_include_pad, of the input
    alone)."""
    h, w = shape[2:]
    if divisor_override is not None or (count_include_pad and not any(extra)):
        divisor = kernel[0] * kernel[1] if divisor_override is None else divisor_override
        return ir.const(divisor, dtype, (1, 1) + outs)
    if count_include_pad:
        ones = ir.const(1.0, dtype, (1, 1, h + 2 * padding[0], w + 2 * padding[1]))
        region = conv._pad_spatial(ones, (0, 0), 0.0, extra)
    else:
        region = conv._pad_spatial(ir.const(1.0, dtype, (1, 1, h, w)), padding, 0.0, extra)
    return conv.windows(region, kernel, stride, (1, 1)).sum((3, 5)).reshape((1, 1) + outs)


def _taps_in_turn(padded: ir.Node, win: ir.Node, kernel, stride) -> ir.Node:
    """The windows' sums in the type, (N, C, Ho, Wo), as a graph whose derived gradient adds
    each window's share to an element in PyTorch's order, rounding each addition. Windows
    that do not overlap give an element one share at most: their sum's own gradient. Where
    they overlap, the sum is of the kernel taps' views of the padded input in row-major
    order, and compiler/gradients.derive adds a node's readers' gradients from the last
    reader to the first: an element first gets the share of the window that reads it
    through the last tap, the window of the lowest row and column, which PyTorch adds
    first, and last the share through the first tap, PyTorch's last window."""
    n, c, ho, _, wo, _ = win.shape
    if all(s >= k for s, k in zip(stride, kernel)):
        return win.sum((3, 5)).reshape((n, c, ho, wo))
    taps = [padded.shrink(((0, n), (0, c), (a, a + (ho - 1) * stride[0] + 1),
                           (b, b + (wo - 1) * stride[1] + 1))).stride((1, 1) + stride)
            for a, b in itertools.product(range(kernel[0]), range(kernel[1]))]
    return functools.reduce(operator.add, taps)
