"""Joining tensors: cat and stack. Each part is padded to the full size and the parts are
added, which fuses into one kernel: no copies."""
from __future__ import annotations

from .backward import record
from .movement import unsqueeze
from .operands import common_device, normalize_dim, result_dtype


def cat(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("cat: expected a non-empty list of tensors")
    device = common_device("cat", tensors)
    dtype = result_dtype("cat", tensors)
    ref = next((t for t in tensors if t.shape != (0,)), tensors[0])
    axis = normalize_dim("cat", dim, ref.ndim)
    # PyTorch skips 1-d empty parts, whatever the others' shapes; if all are, the result is one
    parts = [t for t in tensors if t.shape != (0,)] or tensors[:1]
    for t in parts:
        if t.ndim != ref.ndim or any(a != b for i, (a, b) in enumerate(zip(t.shape, ref.shape))
                                     if i != axis):
            raise RuntimeError(f"cat: sizes of tensors must match except in dimension {axis}; "
                               f"got shapes {[tuple(p.shape) for p in parts]}")
    total = sum(t.shape[axis] for t in parts)
    # padded with -0.0, which added to any float leaves it as it is: a -0.0 of a part plus
    # another part's +0.0 fill would be +0.0 (1 / x then inf for -inf; fuzz seed 401163)
    fill = -0.0 if dtype.is_float else 0
    offset, node = 0, None
    for t in parts:     # each part padded to the full size; the sum fuses into one kernel
        pads = tuple((offset, total - offset - t.shape[axis]) if i == axis else (0, 0)
                     for i in range(ref.ndim))
        piece = t.node.cast(dtype).pad(pads, fill)
        node = piece if node is None else node + piece
        offset += t.shape[axis]
    # a skipped part still gets its (empty) gradient, as in PyTorch: summed over nothing, it
    # is 0, and 0 times an inf in its graph is NaN there (a part dropped had none: edge fuzz
    # seed 8701372); added as a slab of nothing padded with -0.0, it changes no value
    skipped = [t for t in tensors if t.shape == (0,) and t is not parts[0]]
    slab = tuple(0 if i == axis else n for i, n in enumerate(node.shape))
    for t in skipped:
        node = node + t.node.cast(dtype).reshape(slab).pad(
            tuple((0, total) if i == axis else (0, 0) for i in range(len(slab))), fill)
    return record("cat", node, device, parts + skipped)


def stack(tensors, dim=0):
    tensors = list(tensors)
    if not tensors:
        raise RuntimeError("stack: expected a non-empty list of tensors")
    shapes = {t.shape for t in tensors}
    if len(shapes) > 1:
        raise RuntimeError(f"stack: expects each tensor to be equal size, got {sorted(shapes)}")
    axis = normalize_dim("stack", dim, tensors[0].ndim + 1)
    return cat([unsqueeze(t, axis) for t in tensors], axis)
