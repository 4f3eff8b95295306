"""A 16-bit max pool's input gradient as PyTorch's CPU backward kernel computes it.

That kernel adds each output's gradient onto the input element the output picked, in the
type (each addition rounded), output after output in row-major order, plane by plane. Where
windows overlap (kernel 3, stride 1), an element picked by several outputs gets a sum
rounded at every step, in that order; a sum in float32 rounded once, or in another order, is
an ulp or more off (a cancelling sum: 8 ulps). A float32 or float64 gradient is derived from
the pool's own graph.
"""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir


def picked_in_turn(x: ir.Node, index: ir.Node, shape: tuple[int, ...]) -> ir.Node | None:
    """For a 16-bit float x (N, C, *spatial), the elements each output picked, index (N, C,
    *outputs: the row-major position in the plane or volume, int64), in the pool's shape (an
    unbatched one's has no N), as a graph whose derived gradient is PyTorch's: an ordered
    scatter in the type (ir.gather's partials_in_type). None for other types, or no outputs.
    The positions are laid out major and the planes minor, so that the scatter shares no
    plane between work-items (scatter_order.py; on a CPU one takes a cache line of planes),
    each walking its planes' outputs in order."""
    if not x.dtype.is_16_bit_float or index.numel == 0:
        return None
    n, c, *spatial = x.shape
    planes, dims = n * c, len(spatial)
    columns = x.permute(tuple(range(2, 2 + dims)) + (0, 1)).reshape(
        (math.prod(spatial) * planes, 1))
    plane = ir.iota(planes, dt.int64).reshape((n, c) + (1,) * dims).expand(index.shape)
    picked = columns.gather(index * planes + plane, partials_in_type=True)
    return picked.reshape(shape)
