"""interpolate (nearest, nearest-exact, linear, bilinear, area) and pad's reflect, replicate
and circular modes, as torch.nn.functional's.

Both read each spatial axis at computed positions: an int64 index per output position, from
an iota, picks rows of the input (a gather, whose gradient adds the picked rows back up, as
PyTorch's backward accumulates). The positions are computed in the kernel in float32 (float64
for float64 input) exactly as PyTorch's CPU kernels compute them.
"""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..frontend.backward import record


def take(x: ir.Node, axis: int, index: ir.Node) -> ir.Node:
    """x with axis read at index (a 1-D int64 node): out[..., o, ...] = x[..., index[o], ...]."""
    n = x.shape[axis]
    rest = x.shape[:axis] + x.shape[axis + 1:]
    order = (axis,) + tuple(a for a in range(len(x.shape)) if a != axis)
    rows = x.permute(order).reshape((n, math.prod(rest)))
    picked = ir.gather(rows, index).reshape((index.shape[0],) + rest)
    return picked.unpermute(order)


def _positions(m: int) -> ir.Node:
    return ir.iota(m, dt.int64)


# ---- interpolate ------------------------------------------------------------------------------

_LINEAR_MODES = ("linear", "bilinear", "bicubic", "trilinear")
_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_NAMES = {"nearest": "upsample_nearest{d}d", "nearest-exact": "upsample_nearest_exact{d}d",
          "linear": "upsample_linear1d", "bilinear": "upsample_bilinear2d",
          "trilinear": "upsample_trilinear3d"}


def _float32(value) -> float:
    return float(np.float32(value))


def _scale(n: int, m: int, scale_factor) -> float:
    """PyTorch's compute_scales_value: 1 / scale_factor when one was given, else n / m, as
    float32."""
    if scale_factor is not None and scale_factor > 0:
        return _float32(1.0 / scale_factor)
    return _float32(np.float32(n) / np.float32(m))


def _torch_nearest(n: int, m: int, scale_factor, exact: bool) -> np.ndarray:
    """The source indices PyTorch's nearest kernels compute, on the host (float32, as theirs)."""
    if m == 2 * n and not exact:
        return np.arange(m) // 2
    f = np.arange(m, dtype=np.float32) + (np.float32(0.5) if exact else np.float32(0))
    src = np.floor(f * np.float32(_scale(n, m, scale_factor))).astype(np.int64)
    return np.minimum(src, n - 1)


def _nearest_axis(x: ir.Node, axis: int, m: int, scale_factor, exact: bool) -> ir.Node:
    n = x.shape[axis]
    if m == n:
        return x
    before, after = x.shape[:axis], x.shape[axis + 1:]
    wanted = _torch_nearest(n, m, scale_factor, exact)
    if m % n == 0 and np.array_equal(wanted, np.arange(m) // (m // n)):
        # each element repeated: a view whose gradient is a sum (a gather's is a matmul)
        k = m // n
        grown = x.reshape(before + (n, 1) + after).expand(before + (n, k) + after)
        return grown.reshape(before + (m,) + after)
    if n % m == 0 and np.array_equal(wanted, np.arange(m) * (n // m)):
        k = n // m                                          # every k-th element
        return x.reshape(before + (m, k) + after).shrink(
            tuple((0, 1) if a == axis + 1 else (0, s) for a, s in
                  enumerate(before + (m, k) + after))).reshape(before + (m,) + after)
    o = _positions(m)
    if m == 2 * n and not exact:
        src = o / 2                 # PyTorch's o >> 1
    else:
        scale = ir.const(_scale(n, m, scale_factor), dt.float32, (m,))
        f = o.cast(dt.float32)
        if exact:
            f = f + 0.5
        src = (f * scale).floor().cast(dt.int64)
        src = (src < n - 1).where(src, n - 1)
    return take(x, axis, src)


def _linear_axis(x: ir.Node, axis: int, m: int, scale_factor, align_corners: bool) -> ir.Node:
    """(1 - l) x[i0] + l x[i1] at source position s: align_corners maps the corner pixels'
    centres onto each other, s = o (n - 1) / (m - 1); else s = max((o + 0.5) n / m - 0.5, 0)."""
    n = x.shape[axis]
    if m == n:
        return x
    opmath = dt.float64 if x.dtype == dt.float64 else dt.float32
    if align_corners:
        ratio = (n - 1) / (m - 1) if m > 1 else 0.0
    else:
        ratio = 1.0 / scale_factor if scale_factor is not None and scale_factor > 0 else n / m
    if opmath == dt.float32:
        ratio = _float32(ratio)
    o = _positions(m).cast(opmath)
    r = ir.const(ratio, opmath, (m,))
    if align_corners:
        src = r * o
    else:
        src = r * (o + 0.5) - 0.5
        src = (src < 0).where(src.const_like(0), src)
    i0 = src.floor().cast(dt.int64)
    i0 = (i0 < n - 1).where(i0, n - 1)
    l1 = src - i0.cast(opmath)
    l1 = (l1 < 0).where(l1.const_like(0), (l1 > 1).where(l1.const_like(1), l1))
    i1 = i0 + (i0 < n - 1).cast(dt.int64)
    l0 = 1 - l1
    shape = tuple(m if a == axis else 1 for a in range(len(x.shape)))
    out_shape = x.shape[:axis] + (m,) + x.shape[axis + 1:]
    w0 = l0.cast(x.dtype).reshape(shape).expand(out_shape)
    w1 = l1.cast(x.dtype).reshape(shape).expand(out_shape)
    return take(x, axis, i0) * w0 + take(x, axis, i1) * w1


def _per_dim(value, convert, dims: int, spatial, what: str, got: str, wanted: str,
             letter: str) -> tuple:
    """One value per spatial dim, from a number or a sequence of dims values (PyTorch's
    message when the count is wrong)."""
    if not isinstance(value, (tuple, list)):
        return (convert(value),) * dims
    if len(value) != dims:
        raise ValueError(
            f"interpolate: Input and {what} must have the same number of spatial dimensions, "
            f"but got input with spatial dimensions of {list(spatial)} and {got} "
            f"{tuple(value)}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
            f"{wanted} in ({letter}1, {letter}2, ...,{letter}K) format.")
    return tuple(convert(v) for v in value)


def _output_sizes(input, size, scale_factor, dims, recompute_scale_factor):
    spatial = tuple(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size.")
        return _per_dim(size, int, dims, spatial, "output", "output size of", "output size",
                        "o"), (None,) * dims
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    scales = _per_dim(scale_factor, float, dims, spatial, "scale_factor",
                      "scale_factor of shape", "scale_factor", "s")
    sizes = tuple(int(math.floor(float(n) * s)) for n, s in zip(spatial, scales))
    return sizes, ((None,) * dims if recompute_scale_factor else scales)


def interpolate(input, size=None, scale_factor=None, mode: str = "nearest",
                align_corners=None, recompute_scale_factor=None, antialias: bool = False):
    dims = input.ndim - 2
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError("interpolate: align_corners option can only be set with the "
                             "interpolating modes: linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False
    if mode not in _MODES or dims not in (1, 2, 3):
        raise NotImplementedError(f"interpolate: Input Error: Only 3D, 4D and 5D input Tensors "
                                  f"supported (got {input.ndim}D) for the modes: nearest | "
                                  f"linear | bilinear | bicubic | trilinear | area | "
                                  f"nearest-exact (got {mode})")
    if antialias:
        raise NotImplementedError("interpolate: antialias=True is not supported")
    if not input.dtype.is_float:
        raise NotImplementedError(f"interpolate: not implemented for {input.dtype.name} input "
                                  f"of shape {tuple(input.shape)}")
    sizes, scales = _output_sizes(input, size, scale_factor, dims, recompute_scale_factor)
    if any(s <= 0 for s in sizes):
        raise RuntimeError(f"interpolate: Input and output sizes should be greater than 0, but "
                           f"got input {list(input.shape[2:])} and output {list(sizes)}")
    if mode == "area":
        from . import pooling
        return (pooling.adaptive_avg_pool1d, pooling.adaptive_avg_pool2d,
                pooling.adaptive_avg_pool3d)[dims - 1](input, sizes)
    needed = {"linear": 1, "bilinear": 2, "trilinear": 3}.get(mode)
    if needed is not None and needed != dims:
        raise NotImplementedError(f"interpolate: Got {input.ndim}D input, but {mode} mode needs "
                                  f"{needed + 2}D input")
    if mode not in _NAMES:
        raise NotImplementedError(f"interpolate: mode {mode!r} for {input.ndim}D input is not "
                                  "supported")
    x = input.node
    for k in reversed(range(dims)):        # the last axis first, as PyTorch's kernels
        axis = 2 + k
        if mode in ("nearest", "nearest-exact"):
            x = _nearest_axis(x, axis, sizes[k], scales[k], mode == "nearest-exact")
        else:
            x = _linear_axis(x, axis, sizes[k], scales[k], align_corners)
    name = _NAMES[mode].format(d=dims)
    return record(name, x, input.device, [input])


def upsample(input, size=None, scale_factor=None, mode: str = "nearest", align_corners=None):
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input, size=None, scale_factor=None):
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- pad modes ----------------------------------------------------------------------------

def _pad_index(n: int, before: int, after: int, mode: str) -> ir.Node:
    """Source position of each position of the padded axis."""
    j = _positions(n + before + after) - before
    if mode == "replicate":
        j = (j < 0).where(j.const_like(0), j)
        return (j < n - 1).where(j, j.const_like(n - 1))
    if mode == "reflect":
        j = (j < 0).where(-j, j)
        return (j < n).where(j, 2 * (n - 1) - j)
    return (j < 0).where(j + n, (j < n).where(j, j - n))       # circular


def _part(x: ir.Node, axis: int, lo: int, hi: int, flip: bool = False) -> ir.Node:
    part = x.shrink(tuple((lo, hi) if a == axis else (0, s) for a, s in enumerate(x.shape)))
    if flip:
        part = part.stride(tuple(-1 if a == axis else 1 for a in range(len(x.shape))))
    return part


def _pad_axis(x: ir.Node, axis: int, before: int, after: int, mode: str) -> ir.Node:
    """x with before and after (>= 0) elements added along axis: its reflection, its edge
    repeated, or its other end. Views of x put side by side (each padded to the full length,
    then added: one kernel), so the gradient adds slices back, no matmul."""
    if before == after == 0:
        return x
    n = x.shape[axis]
    if mode == "reflect":
        left, right = _part(x, axis, 1, before + 1, True), _part(x, axis, n - 1 - after, n - 1,
                                                                   True)
    elif mode == "replicate":
        def edge(i, size):
            return _part(x, axis, i, i + 1).expand(
                tuple(size if a == axis else s for a, s in enumerate(x.shape)))
        left, right = edge(0, before), edge(n - 1, after)
    else:
        left, right = _part(x, axis, n - before, n), _part(x, axis, 0, after)
    total, offset, out = n + before + after, 0, None
    for part in (left, x, right):
        size = part.shape[axis]
        if size:
            pads = tuple((offset, total - offset - size) if a == axis else (0, 0)
                         for a in range(len(x.shape)))
            placed = part.pad(pads)
            out = placed if out is None else out + placed
        offset += size
    return out


def _check_nonempty(mode: str, input, dims: int) -> None:
    """Reflection and replication read the input's edges: each of its dims must have some,
    but a batch's (the first of dims + 2)."""
    batched = input.ndim == dims + 2
    if mode in ("reflect", "replicate") and 0 in input.shape[1 if batched else 0:]:
        raise RuntimeError(f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with "
                           f"possibly 0 batch size and other non-zero dimensions for input, but "
                           f"got: {list(input.shape)}")


def _check_pad_sizes(mode: str, input, pad, dims: int) -> None:
    for k in range(dims):
        axis = input.ndim - 1 - k
        n = input.shape[axis]
        before, after = pad[2 * k], pad[2 * k + 1]
        if mode == "reflect" and (before >= n or after >= n):
            raise RuntimeError(f"pad: Argument #4: Padding size should be less than the "
                               f"corresponding input dimension, but got: padding "
                               f"({before}, {after}) at dimension {axis} of input "
                               f"{list(input.shape)}")
        if mode == "circular" and (before > n or after > n):
            raise RuntimeError(f"pad: Padding value causes wrapping around more than once "
                               f"(padding ({before}, {after}) at dimension {axis} of input "
                               f"{list(input.shape)})")
        if mode == "circular" and n + before + after < 0:
            raise RuntimeError("pad: Negative padding value is resulting in an empty dimension")
        if mode != "circular" and n + before + after <= 0:
            raise RuntimeError(f"pad: input of shape {list(input.shape)} padded by "
                               f"({before}, {after}) at dimension {axis} would be empty")


_PAD_NAMES = {"reflect": "reflection_pad{d}d", "replicate": "replication_pad{d}d",
              "circular": "copy_slices"}


def pad_modes(input, pad, mode: str, value=None):
    """Non-constant padding: reflect, replicate or circular over the last len(pad) // 2 dims
    (1 of a 2-D or 3-D input, 2 of a 3-D or 4-D one, 3 of a 4-D or 5-D one)."""
    if mode not in _PAD_NAMES:
        raise NotImplementedError(f"pad: Unrecognised padding mode {mode}")
    pad = [int(p) for p in pad]
    if len(pad) % 2:
        raise RuntimeError("pad: Padding length must be divisible by 2")
    if value is not None and value != 0:
        raise RuntimeError(f"pad: Padding mode \"{mode}\" doesn't take in value argument")
    dims = len(pad) // 2
    if dims not in (1, 2, 3) or input.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"pad: Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    _check_nonempty(mode, input, dims)
    _check_pad_sizes(mode, input, pad, dims)
    x = input.node
    for k in range(dims):
        axis = input.ndim - 1 - k
        before, after = pad[2 * k], pad[2 * k + 1]
        if min(before, after) >= 0:
            x = _pad_axis(x, axis, before, after, mode)
            continue
        if mode == "circular":
            # negative pads crop first; the wrap-around then reads the cropped axis
            n = x.shape[axis]
            x = x.shrink(tuple((max(-before, 0), n - max(-after, 0)) if a == axis else (0, s)
                               for a, s in enumerate(x.shape)))
            before, after = max(before, 0), max(after, 0)
        x = take(x, axis, _pad_index(x.shape[axis], before, after, mode))
    return record(_PAD_NAMES[mode].format(d=dims), x, input.device, [input])


def with_modes(constant_pad):
    """F.pad: constant_pad (nn/functional.py's) for mode 'constant', pad_modes for the rest."""
    def pad(input, pad, mode: str = "constant", value=None):
        if mode == "constant":
            return constant_pad(input, pad, mode, value)
        return pad_modes(input, pad, mode, value)
    pad.__doc__ = constant_pad.__doc__
    return pad


# ---- pixel shuffle ------------------------------------------------------------------------

def _check_shuffle(op: str, input, factor: int) -> None:
    if input.ndim < 3:
        raise RuntimeError(f"{op} expects input to have at least 3 dimensions, but got input "
                           f"with {input.ndim} dimension(s)")
    if factor <= 0:
        raise RuntimeError(f"{op} expects a positive factor, but got {factor}")


def pixel_shuffle(input, upscale_factor: int):
    """(*, C r^2, H, W) -> (*, C, H r, W r)."""
    r = int(upscale_factor)
    _check_shuffle("pixel_shuffle", input, r)
    *lead, c, h, w = input.shape
    if c % (r * r):
        raise RuntimeError(f"pixel_shuffle expects its input's 'channel' dimension to be "
                           f"divisible by the square of upscale_factor, but input.size(-3)={c} "
                           f"is not divisible by {r * r}")
    k = len(lead)
    x = input.node.reshape(tuple(lead) + (c // (r * r), r, r, h, w))
    x = x.permute(tuple(range(k)) + (k, k + 3, k + 1, k + 4, k + 2))
    out = x.reshape(tuple(lead) + (c // (r * r), h * r, w * r))
    return record("pixel_shuffle", out, input.device, [input])


def pixel_unshuffle(input, downscale_factor: int):
    """(*, C, H r, W r) -> (*, C r^2, H, W)."""
    r = int(downscale_factor)
    _check_shuffle("pixel_unshuffle", input, r)
    *lead, c, h, w = input.shape
    for name, size, axis in (("height", h, -2), ("width", w, -1)):
        if size % r:
            raise RuntimeError(f"pixel_unshuffle expects {name} to be divisible by "
                               f"downscale_factor, but input.size({axis})={size} is not "
                               f"divisible by {r}")
    k = len(lead)
    x = input.node.reshape(tuple(lead) + (c, h // r, r, w // r, r))
    x = x.permute(tuple(range(k)) + (k, k + 2, k + 4, k + 1, k + 3))
    out = x.reshape(tuple(lead) + (c * r * r, h // r, w // r))
    return record("pixel_unshuffle", out, input.device, [input])


def channel_shuffle(input, groups: int):
    """(N, g k, *) -> the channels regrouped as (k, g): channel i k + j goes to j g + i."""
    if input.ndim < 3:
        raise RuntimeError(f"channel_shuffle: expects input to have at least 3 dimensions, but "
                           f"got input with sizes {list(input.shape)}")
    if groups <= 0:
        raise RuntimeError(f"channel_shuffle: Number of groups to divide channels in must be "
                           f"positive. Value of groups:{groups}")
    n, c, *rest = input.shape
    if c % groups:
        raise RuntimeError(f"channel_shuffle: Number of channels must be divisible by groups. "
                           f"Got {c} channels and {groups} groups.")
    x = input.node.reshape((n, groups, c // groups) + tuple(rest))
    x = x.permute((0, 2, 1) + tuple(range(3, 3 + len(rest)))).reshape(input.shape)
    return record("channel_shuffle", x, input.device, [input])


native_channel_shuffle = channel_shuffle     # PyTorch's name of the same kernel

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "pixel_shuffle",
           "pixel_unshuffle", "channel_shuffle", "native_channel_shuffle"]
