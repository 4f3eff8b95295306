"""Shape ops (views: index arithmetic, no copies) and padding."""
from __future__ import annotations

import math

from . import views
from .backward import record
from .operands import broadcast_to, normalize_dim, normalize_dims


def _sizes(args) -> tuple:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        return tuple(args[0])
    return tuple(args)


def infer_shape(op: str, numel: int, shape: tuple, old_shape: tuple) -> tuple[int, ...]:
    shape = tuple(int(s) for s in shape)
    if shape.count(-1) > 1:
        raise RuntimeError(f"{op}: only one dimension can be inferred, got {shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or numel % known:
            raise RuntimeError(f"{op}: shape {list(shape)} is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    if math.prod(shape) != numel or any(s < 0 for s in shape):
        raise RuntimeError(f"{op}: shape {list(shape)} is invalid for input of size {numel} "
                           f"(shape {tuple(old_shape)})")
    return shape


def reshape(x, shape, op="view"):
    shape = infer_shape(op, x.numel(), _sizes(shape), x.shape)
    return views.reshaped(record(op, x.node.reshape(shape), x.device, [x]), x)


def permute(x, dims):
    dims = _sizes(dims)
    order = tuple(normalize_dim("permute", d, x.ndim) for d in dims)
    if sorted(order) != list(range(x.ndim)):
        raise RuntimeError(f"permute: dims {dims} are not a permutation of the {x.ndim} "
                           f"dimensions of a tensor of shape {x.shape}")
    return views.permuted(record("permute", x.node.permute(order), x.device, [x]), x, order)


def transpose(x, dim0, dim1):
    if x.ndim == 0:
        return x
    a, b = normalize_dim("transpose", dim0, x.ndim), normalize_dim("transpose", dim1, x.ndim)
    order = list(range(x.ndim))
    order[a], order[b] = order[b], order[a]
    out = record("transpose", x.node.permute(tuple(order)), x.device, [x])
    return views.permuted(out, x, tuple(order))


def t(x):
    if x.ndim > 2:
        raise RuntimeError(f"t() expects a tensor with <= 2 dimensions, but self is {x.ndim}D")
    if x.ndim < 2:
        return x
    return views.permuted(record("t", x.node.permute((1, 0)), x.device, [x]), x, (1, 0))


def _sizes_and_shape(x, sizes, too_few: str):
    """sizes as a tuple, and x's shape with 1s prepended to as many dims: expand and repeat
    align their sizes with x's trailing dims. too_few formats the error for fewer sizes than
    x has dims, with {n} and {ndim}."""
    sizes = _sizes(sizes)
    if len(sizes) < x.ndim:
        raise RuntimeError(too_few.format(n=len(sizes), ndim=x.ndim))
    return sizes, (1,) * (len(sizes) - x.ndim) + x.shape


def expand(x, sizes):
    sizes, old = _sizes_and_shape(x, sizes, "expand: the number of sizes provided ({n}) must be "
                                  "greater or equal to the number of dimensions in the tensor "
                                  "({ndim})")
    shape = tuple(o if s == -1 else s for s, o in zip(sizes, old))
    for s, o in zip(shape, old):
        if o != 1 and s != o:
            raise RuntimeError(f"expand: the expanded size {s} must match the existing size {o} "
                               f"at a non-singleton dimension (shape {x.shape} to {sizes})")
    return views.expanded(record("expand", broadcast_to(x.node, shape), x.device, [x]), x)


def unsqueeze(x, dim):
    axis = normalize_dim("unsqueeze", dim, x.ndim + 1)
    shape = x.shape[:axis] + (1,) + x.shape[axis:]
    return views.reshaped(record("unsqueeze", x.node.reshape(shape), x.device, [x]), x)


def squeeze(x, dim=None):
    axes = normalize_dims("squeeze", dim, x.ndim)
    shape = tuple(s for i, s in enumerate(x.shape) if not (i in axes and s == 1))
    name = "squeeze" if dim is None else "squeeze_dim"
    return views.reshaped(record(name, x.node.reshape(shape), x.device, [x]), x)


def flatten(x, start_dim=0, end_dim=-1):
    if x.ndim == 0:
        return reshape(x, (1,))
    start = normalize_dim("flatten", start_dim, x.ndim)
    end = normalize_dim("flatten", end_dim, x.ndim)
    if start > end:
        raise RuntimeError(f"flatten: start_dim {start_dim} cannot come after end_dim {end_dim}")
    shape = x.shape[:start] + (math.prod(x.shape[start:end + 1]),) + x.shape[end + 1:]
    return reshape(x, shape)


def flip(x, dims):
    axes = normalize_dims("flip", dims, x.ndim)
    steps = tuple(-1 if i in axes else 1 for i in range(x.ndim))
    return record("flip", x.node.stride(steps), x.device, [x])


def repeat(x, sizes):
    sizes, shape = _sizes_and_shape(x, sizes, "repeat: number of repeat dims {n} can not be "
                                    "smaller than the number of dimensions of the tensor "
                                    "({ndim})")
    node = x.node.reshape(tuple(d for s in shape for d in (1, s)))
    node = node.expand(tuple(d for r, s in zip(sizes, shape) for d in (r, s)))
    node = node.reshape(tuple(r * s for r, s in zip(sizes, shape)))
    return record("repeat", node, x.device, [x])


def pad(x, pads, value=0.0):
    """torch.nn.functional.pad, constant mode: pads lists (before, after) from the last dim."""
    pads = tuple(int(p) for p in pads)
    if len(pads) % 2 or len(pads) // 2 > x.ndim:
        raise RuntimeError(f"pad: padding length {len(pads)} must be even and at most twice the "
                           f"number of dimensions ({x.ndim})")
    per_dim = [(0, 0)] * x.ndim
    for k in range(len(pads) // 2):
        per_dim[x.ndim - 1 - k] = (pads[2 * k], pads[2 * k + 1])
    # negative padding crops
    crop = tuple((max(-b, 0), s - max(-e, 0)) for (b, e), s in zip(per_dim, x.shape))
    node = x.node.shrink(crop).pad(tuple((max(b, 0), max(e, 0)) for b, e in per_dim), value)
    return record("pad", node, x.device, [x])
