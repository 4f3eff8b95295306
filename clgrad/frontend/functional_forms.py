"""torch.*'s out-of-place forms of an in-place method and of an nn.functional op: fill (fill_
on a new tensor) and constant_pad_nd (F.pad's constant mode)."""
from __future__ import annotations

from . import movement
from .backward import record
from .operands import is_tensor


def fill(input, value):
    """A tensor of input's shape and dtype holding value (a number or a 0-d tensor, whose
    gradient is the sum of the result's)."""
    if not is_tensor(value):
        return record("fill", input.node.const_like(value), input.device, [input])
    if value.ndim:
        raise RuntimeError(f"fill_ only supports 0-dimension value tensor but got tensor with "
                           f"{value.ndim} dimensions.")
    node = value.node.cast(input.dtype).reshape((1,) * input.ndim).expand(input.shape)
    return record("fill_tensor", node, input.device, [input, value])


def constant_pad_nd(input, pad, value=0):
    """input padded by pad, (before, after) pairs from the last dim backwards, with value
    (negative sizes crop)."""
    pads = tuple(int(p) for p in pad)
    if len(pads) % 2:
        raise RuntimeError(f"Length of pad must be even but instead it equals {len(pads)}")
    if len(pads) > 2 * input.ndim:
        raise RuntimeError(f"Length of pad should be no more than twice the number of "
                           f"dimensions of the input. Pad length is {len(pads)} while the input "
                           f"has {input.ndim} dimensions.")
    for k in range(len(pads) // 2):
        dim = input.ndim - 1 - k
        if input.shape[dim] + pads[2 * k] + pads[2 * k + 1] < 0:
            raise RuntimeError(f"The input size {input.shape[dim]}, plus negative padding "
                               f"{pads[2 * k]} and {pads[2 * k + 1]} resulted in a negative "
                               f"output size, which is invalid. Check dimension {dim} of your "
                               f"input.")
    return movement.pad(input, pads, value)


FUNCTIONS = {"fill": fill, "constant_pad_nd": constant_pad_nd}
