"""Spatial transformers: affine_grid makes a sampling grid from affine matrices, grid_sample
reads an image at a grid's points (PyTorch's grid_sampler, with its rules for the image's
edges). Both are frontend ops (gathers, floors, weights), so their gradients, to the image and
to the grid, come from the ops' own rules; the grid's gradient flows through the interpolation
weights only, as in PyTorch."""
from __future__ import annotations

import itertools
import math
import warnings

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.elementwise import where
from ..frontend.joining import stack
from ..frontend.operands import common_device

_MODES = ("bilinear", "nearest", "bicubic")
_PADDING_MODES = ("zeros", "border", "reflection")
_CUBIC_A = -0.75        # PyTorch's (and OpenCV's) bicubic coefficient


def _default_align_corners(align_corners):
    if align_corners is None:
        warnings.warn("Default grid_sample and affine_grid behavior has changed to "
                      "align_corners=False since 1.3.0. Please specify align_corners=True if "
                      "the old behavior is desired. See the documentation of grid_sample for "
                      "details.", stacklevel=3)
        return False
    return align_corners


# ---- affine_grid ---------------------------------------------------------------------------

def _base_coordinates(n: int, align_corners: bool, like):
    """n points spanning [-1, 1]: pixel corners when align_corners, else pixel centres."""
    if n <= 1:
        return creation.zeros(n, dtype=like.dtype, device=like.device)
    r = creation.linspace(-1, 1, n, dtype=like.dtype, device=like.device)
    return r if align_corners else r * ((n - 1) / n)


def affine_grid(theta, size, align_corners=None):
    """The (N, H, W, 2) or (N, D, H, W, 3) grid of points theta maps the output's normalised
    pixel coordinates to (x first, as grid_sample reads them)."""
    align_corners = _default_align_corners(align_corners)
    if not theta.dtype.is_float:
        raise ValueError(f"Expected theta to have floating point type, but got "
                         f"{theta.dtype}")
    size = list(size)
    if len(size) not in (4, 5):
        raise NotImplementedError(f"affine_grid only supports 4D and 5D sizes, for 2D and 3D "
                                  f"affine transforms, respectively. Got size {size}.")
    rows = len(size) - 2
    if theta.ndim != 3 or tuple(theta.shape[1:]) != (rows, rows + 1):
        kind = "2D affine matrices of shape Nx2x3" if rows == 2 else \
            "3D affine matrices of shape Nx3x4"
        raise ValueError(f"Expected a batch of {kind} for size {size}. Got "
                         f"{theta.shape}.")
    spatial = size[2:]
    if align_corners and min(spatial) == 1:
        warnings.warn("Since version 1.3.0, affine_grid behavior has changed for unit-size "
                      "grids when align_corners=True. This is not an intended use case of "
                      "affine_grid. See the documentation of affine_grid for details.",
                      stacklevel=2)
    elif min(size) <= 0:
        raise ValueError(f"Expected non-zero, positive output size. Got {size}")
    # base[..., k] is the k-th coordinate (x of the last axis first), then a column of ones
    axes = [_base_coordinates(n, align_corners, theta) for n in reversed(spatial)]
    columns = []
    for k, axis in enumerate(axes):
        shape = [1] * rows
        shape[rows - 1 - k] = spatial[rows - 1 - k]
        columns.append(axis.reshape(shape).expand(*spatial))
    columns.append(creation.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = stack(columns, -1).reshape(1, math.prod(spatial), rows + 1)
    grid = base.matmul(theta.transpose(1, 2))
    return grid.reshape(size[0], *spatial, rows)


# ---- grid_sample ---------------------------------------------------------------------------

def _unnormalize(coord, size: int, align_corners: bool):
    if align_corners:
        return (coord + 1) * ((size - 1) / 2)
    return ((coord + 1) * size - 1) / 2


def _clip(coord, size: int):
    """coord kept inside [0, size - 1]; zero gradient at and beyond the ends (PyTorch's)."""
    high = float(size - 1)
    return where(coord <= 0, 0.0, where(coord >= high, high, coord))


def _reflect(coord, twice_low: int, twice_high: int):
    """coord reflected off the ends of [twice_low / 2, twice_high / 2] until it lies inside."""
    if twice_low == twice_high:
        return creation.zeros_like(coord)
    low, span = twice_low / 2, (twice_high - twice_low) / 2
    distance = (coord - low).abs()
    extra = distance.fmod(span)
    flips = (distance / span).floor()
    even = flips.fmod(2) == 0
    return where(even, extra + low, span - extra + low)


def _pad_coordinate(coord, size: int, padding_mode: str, align_corners: bool):
    if padding_mode == "border":
        return _clip(coord, size)
    if padding_mode == "reflection":
        coord = (_reflect(coord, 0, 2 * (size - 1)) if align_corners
                 else _reflect(coord, -1, 2 * size - 1))
        return _clip(coord, size)
    return coord


def _cubic_weights(t):
    """The four bicubic convolution weights of taps at -1, 0, 1, 2 for the fraction t."""
    a = _CUBIC_A

    def near(x):       # |x| <= 1
        return ((a + 2) * x - (a + 3)) * x * x + 1

    def far(x):        # 1 < |x| < 2
        return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a
    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def _taps(coord, size: int, mode: str, padding_mode: str, align_corners: bool):
    """[(integer position, weight)] of the source pixels one axis reads for each point."""
    if mode == "bicubic":        # taps padded one by one, weights from the unpadded point
        start = coord.floor()
        weights = _cubic_weights(coord - start)
        return [(_pad_coordinate(start + (k - 1), size, padding_mode, align_corners), w)
                for k, w in enumerate(weights)]
    coord = _pad_coordinate(coord, size, padding_mode, align_corners)
    if mode == "nearest":      # a weight of 1 that keeps the grid's (zero) gradient, as PyTorch's
        return [(coord.round(), coord * 0 + 1)]
    start = coord.floor()
    fraction = coord - start
    return [(start, 1 - fraction), (start + 1, fraction)]


def _check_grid_sample(input, grid, mode, padding_mode):
    if mode not in _MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected mode to be 'bilinear', "
                         f"'nearest' or 'bicubic', but got: '{mode}'")
    if padding_mode not in _PADDING_MODES:
        raise ValueError(f"nn.functional.grid_sample(): expected padding_mode to be 'zeros', "
                         f"'border', or 'reflection', but got: '{padding_mode}'")
    if input.ndim not in (4, 5) or grid.ndim != input.ndim:
        raise RuntimeError(f"grid_sampler(): expected 4D or 5D input and grid with same number "
                           f"of dimensions, but got input with sizes {list(input.shape)} and "
                           f"grid with sizes {list(grid.shape)}")
    common_device("grid_sampler", [input, grid])
    if input.dtype != grid.dtype or not input.dtype.is_float:
        raise RuntimeError(f"grid_sampler(): expected input and grid to have the same floating "
                           f"dtype, but input has {input.dtype} and grid has {grid.dtype}")
    rows = input.ndim - 2
    if grid.shape[0] != input.shape[0] or grid.shape[-1] != rows:
        raise RuntimeError(f"grid_sampler(): expected grid to have size {rows} in last dimension "
                           f"and the input's batch size, but got grid with sizes "
                           f"{list(grid.shape)} for input with sizes {list(input.shape)}")
    if any(s == 0 for s in input.shape[2:]):
        raise RuntimeError(f"grid_sampler(): expected input to have non-empty spatial "
                           f"dimensions, but input has sizes {list(input.shape)}")
    if mode == "bicubic" and input.ndim != 4:
        raise RuntimeError("grid_sampler(): bicubic interpolation only supports 4D input")


def grid_sample(input, grid, mode: str = "bilinear", padding_mode: str = "zeros",
                align_corners=None):
    """input (N, C, [D,] H, W) read at grid (N, [D',] H', W', 2 or 3) points in [-1, 1]
    (x, y[, z]); points off the image read zeros, the nearest edge or the reflection."""
    _check_grid_sample(input, grid, mode, padding_mode)
    align_corners = _default_align_corners(align_corners)
    n, c, *spatial = input.shape
    out_spatial = tuple(grid.shape[1:-1])
    points = math.prod(out_spatial)
    flat_input = input.reshape(n, c, math.prod(spatial))
    flat_grid = grid.reshape(n, points, len(spatial))
    per_axis = []                               # the image's axes, outermost first
    for axis, size in enumerate(spatial):
        coord = _unnormalize(flat_grid[:, :, len(spatial) - 1 - axis], size, align_corners)
        per_axis.append(_taps(coord, size, mode, padding_mode, align_corners))
    out = None
    for combination in itertools.product(*per_axis):
        index, weight, inside = None, None, None
        for (position, w), size in zip(combination, spatial):
            ok = (position >= 0) & (position <= size - 1)
            inside = ok if inside is None else inside & ok
            clamped = position.clamp(0, size - 1).to(dt.int64)
            index = clamped if index is None else index * size + clamped
            weight = w if weight is None else weight * w
        picked = flat_input.gather(2, index.reshape(n, 1, points).expand(n, c, points))
        term = where(inside.reshape(n, 1, points), picked * weight.reshape(n, 1, points), 0.0)
        out = term if out is None else out + term
    return out.reshape(n, c, *out_spatial)


__all__ = ["affine_grid", "grid_sample"]
