"""histogram and histogramdd: (weighted) counts of points in bins, with the bins' edges.

Bins are given by count (equal widths between range, or the data's own min and max, read on
the host) or by their edges. A point's bin along a dim is how many edges after the first lie
at or below it, the last edge belonging to the last bin: PyTorch's binary search, and the
result of its linear interpolation after its local search, so the bins match PyTorch's. The
points are added into their bins by a scatter-add; like PyTorch's, the results carry no
gradient.
"""
from __future__ import annotations

import math
from collections import namedtuple

import numpy as np

from ..compiler import dtype as dt
from . import creation
from .operands import is_tensor

HistogramResult = namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = namedtuple("histogramdd", ["hist", "bin_edges"])


def _data_range(column) -> tuple[float, float]:
    """The min and max of a dim's points ((0, 1) for none)."""
    if not column.numel():
        return 0.0, 1.0
    values = column.detach().numpy()
    return float(values.min()), float(values.max())


def _linear_edges(points, dim: int, count: int, bounds, op: str):
    if count <= 0:
        raise RuntimeError(f"{op}: bins must be > 0, but got {count} for dimension {dim}")
    low, high = (bounds[2 * dim], bounds[2 * dim + 1]) if bounds is not None else \
        _data_range(points[:, dim])
    if not (math.isfinite(low) and math.isfinite(high)):
        raise RuntimeError(f"torch.histogramdd: dimension {dim}'s range [{low:g}, {high:g}] is "
                           f"not finite")
    if low > high:
        raise RuntimeError(f"torch.histogramdd: min should not exceed max, but got min {low:g} "
                           f"max {high:g} for dimension {dim}")
    if low == high:
        low, high = low - 0.5, high + 0.5
    return creation.linspace(low, high, count + 1, dtype=points.dtype, device=points.device)


def _given_edges(points, dim: int, edges, op: str):
    if edges.ndim != 1:
        raise RuntimeError(f"torch.histogramdd: bins tensor should have one dimension, but got "
                           f"{edges.ndim} dimensions in the bins tensor for dimension {dim}")
    if edges.dtype != points.dtype:
        raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have the "
                           f"same dtype, but got input with dtype {points.dtype.name} and bins "
                           f"for dimension {dim} with dtype {edges.dtype.name}")
    if edges.shape[0] < 2:
        raise RuntimeError(f"{op}: bins must be > 0, but got {edges.shape[0] - 1} for "
                           f"dimension {dim}")
    return edges.detach()


def _bin_of(column, edges):
    """Each point's bin along one dim (clamped into range) and whether it lies in the bins."""
    n = edges.shape[0] - 1
    inside = (column >= edges[0]) & (column <= edges[n])
    at_or_above = column.unsqueeze(-1) >= edges[1:].unsqueeze(0)
    return at_or_above.sum(-1).clamp(max=n - 1), inside


def _checked_points(input, weight):
    # PyTorch's histogram checks through histogramdd too: one wording for both
    if not input.dtype.is_float:
        raise NotImplementedError(f"\"histogramdd\" not implemented for '{input.dtype.name}'")
    if weight is not None:
        if tuple(weight.shape) != tuple(input.shape[:-1]):
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided it should have "
                               f"the same shape as the input tensor excluding its innermost "
                               f"dimension, but got input with shape {list(input.shape)} and "
                               f"weight with shape {list(weight.shape)}")
        if weight.dtype != input.dtype:
            raise RuntimeError(f"torch.histogramdd: if weight tensor is provided, input tensor "
                               f"and weight tensor should have the same dtype, but got "
                               f"input({input.dtype.name}), and weight({weight.dtype.name})")
    return input.detach().reshape(-1, input.shape[-1])


def _bin_specs(bins, dims: int, bounds) -> list:
    """bins as one entry per dim: a count or an edges tensor."""
    specs = [bins] * dims if isinstance(bins, int) else list(bins)
    if len(specs) != dims:
        raise RuntimeError("histogramdd: The size of bins must be equal to the innermost "
                           "dimension of the input.")
    if bounds is not None and len(bounds) != 2 * dims:
        raise RuntimeError(f"torch.histogramdd: for a {dims}-dimensional histogram range should "
                           f"have {2 * dims} elements, but got {len(bounds)}")
    return specs


def _histogram(input, bins, bounds, weight, density: bool, op: str):
    points = _checked_points(input, weight)
    dims = points.shape[1]
    edges = [_given_edges(points, d, b, op) if is_tensor(b) else
             _linear_edges(points, d, int(b), bounds, op)
             for d, b in enumerate(_bin_specs(bins, dims, bounds))]
    counts = tuple(e.shape[0] - 1 for e in edges)
    flat = creation.zeros(points.shape[0], dtype=dt.int64, device=points.device)
    inside = creation.ones(points.shape[0], dtype=dt.bool_, device=points.device)
    for d, e in enumerate(edges):
        position, within = _bin_of(points[:, d], e)
        flat, inside = flat * counts[d] + position, inside & within
    mass = inside.to(points.dtype)
    if weight is not None:
        mass = mass * weight.detach().reshape(-1)
    hist = creation.zeros(int(np.prod(counts)), dtype=points.dtype, device=points.device)
    hist = hist.index_add(0, flat, mass).reshape(counts)
    if density:
        hist = hist / hist.sum()
        for d, e in enumerate(edges):
            hist = hist / e.diff().reshape(tuple(-1 if k == d else 1 for k in range(dims)))
    return hist, edges


def histogramdd(input, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """The histogram of input's rows as points of input.shape[-1] coordinates, a dim of bins
    each: bins is one count for every dim, a count per dim or a tensor of edges per dim;
    range is (min0, max0, min1, max1, ...)."""
    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    hist, edges = _histogram(input, bins, range, weight, density, "torch.histogramdd()")
    return HistogramddResult(hist, tuple(edges))


def histogram(input, bins, *, range=None, weight=None, density: bool = False):  # noqa: A002
    """The histogram of input's values: bins a count (equal widths over range, else over the
    data's min and max) or a 1-D tensor of edges; weight, of input's shape, weighs each value;
    density divides the counts by their sum and by the bins' widths."""
    if weight is not None and weight.shape == input.shape:
        weight = weight.reshape(-1)
    bins = (bins,) if is_tensor(bins) else int(bins)
    hist, edges = _histogram(input.reshape(-1, 1), bins, range, weight, density,
                             "torch.histogram()")
    return HistogramResult(hist, edges[0])


METHODS = [("histogram", histogram)]

FUNCTIONS = {"histogram": histogram, "histogramdd": histogramdd}
