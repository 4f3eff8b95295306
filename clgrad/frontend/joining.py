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
    nodes = [t.node for t in tensors]   # their shapes read once: a Size is made per .shape
    ref = next((n.shape for n in nodes if n.shape != (0,)), nodes[0].shape)
    axis = normalize_dim("cat", dim, len(ref))
    # PyTorch skips 1-d empty parts, whatever the others' shapes; if all are, the result is one
    kept = [i for i, n in enumerate(nodes) if n.shape != (0,)] or [0]
    others = ref[:axis] + ref[axis + 1:]
    if any(len(s) != len(ref) or s[:axis] + s[axis + 1:] != others
           for s in (nodes[i].shape for i in kept)):
        raise RuntimeError(f"cat: sizes of tensors must match except in dimension {axis}; "
                           f"got shapes {[nodes[i].shape for i in kept]}")
    total = sum(nodes[i].shape[axis] for i in kept)
    # padded with -0.0, which added to any float leaves it as it is: a -0.0 of a part plus
    # another part's +0.0 fill would be +0.0 (1 / x then inf for -inf; fuzz seed 401163)
    fill = -0.0 if dtype.is_float else 0
    pads = [(0, 0)] * len(ref)
    offset, node = 0, None
    for i in kept:      # each part padded to the full size; the sum fuses into one kernel
        length = nodes[i].shape[axis]
        pads[axis] = (offset, total - offset - length)
        piece = nodes[i].cast(dtype).pad(tuple(pads), fill)
        node = piece if node is None else node + piece
        offset += length
    # a skipped part still gets its (empty) gradient, as in PyTorch: summed over nothing, it
    # is 0, and 0 times an inf in its graph is NaN there (a part dropped had none: edge fuzz
    # seed 8701372); added as a slab of nothing padded with -0.0, it changes no value
    parts = [tensors[i] for i in kept]
    skipped = [t for t, n in zip(tensors, nodes) if n.shape == (0,) and t is not parts[0]]
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
