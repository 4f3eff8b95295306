"""Norms and distances of torch.nn.functional: normalize, cosine_similarity,
pairwise_distance, cdist and pdist, recorded under PyTorch's grad_fn names."""
from __future__ import annotations

import numpy as np

from ..compiler import ir
from ..frontend import creation
from ..frontend.backward import record
from ..frontend.statistics import vector_norm, vector_norm_node as _vector_norm
from ..frontend.operands import (as_float, broadcast_shape, broadcast_to, common_device,
                                 normalize_dims, result_dtype)


def _norm_axes(op: str, dim, ndim: int) -> tuple[int, ...]:
    return normalize_dims(op, dim, ndim)


def normalize(input, p: float = 2.0, dim=1, eps: float = 1e-12, out=None):
    """input / max(norm_p(input, dim), eps), written into out when given: PyTorch's ops in
    turn (vector_norm, clamp_min, a division), each with its backward formula, whose steps
    a 16-bit input's gradient rounds at (the norm's g * (x / norm) in the type, not the
    derivative of its float32 sum of squares: fuzz seed 99000301)."""
    denom = vector_norm(input, p, dim, keepdim=True).clamp_min(eps).expand_as(input)
    result = input / denom
    return result if out is None else out.copy_(result)


def cosine_similarity(x1, x2, dim: int = 1, eps: float = 1e-8):
    """sum(x1 / |x1| * x2 / |x2|) along dim; each norm is raised to eps at least, a step
    PyTorch takes outside autograd (so the gradient flows as if it were not clamped)."""
    device = common_device("cosine_similarity", [x1, x2])
    dtype = result_dtype("cosine_similarity", (x1, x2))
    if not dtype.is_float:
        raise RuntimeError(f"cosine_similarity: expected common dtype to be floating point, "
                           f"yet common dtype is {dtype.name} (inputs {x1.dtype.name} "
                           f"{tuple(x1.shape)} and {x2.dtype.name} {tuple(x2.shape)})")
    shape = broadcast_shape("cosine_similarity", x1.shape, x2.shape)
    axis = _norm_axes("cosine_similarity", dim, len(shape))
    a, b = (broadcast_to(t.node.cast(dtype), shape) for t in (x1, x2))

    def unit(v):
        n = _vector_norm(v, 2, axis)
        raised = (n < eps).where(n - n.detach() + eps, n)
        return v / raised.expand(v.shape)
    out = (unit(a) * unit(b)).sum(axis)
    out = out.reshape(tuple(s for i, s in enumerate(shape) if i not in axis))
    return record("sum_dim", out, device, [x1, x2])


def pairwise_distance(x1, x2, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """norm_p(x1 - x2 + eps) over the last dim."""
    device = common_device("pairwise_distance", [x1, x2])
    dtype = result_dtype("pairwise_distance", (x1, x2))
    shape = broadcast_shape("pairwise_distance", x1.shape, x2.shape)
    if not shape:
        raise RuntimeError("pairwise_distance: expected inputs of at least 1 dimension, got "
                           "0-d inputs")
    a, b = (broadcast_to(as_float(t.node.cast(dtype)), shape) for t in (x1, x2))
    axis = len(shape) - 1
    norm = _vector_norm(a - b + eps, p, (axis,))
    if not keepdim:
        norm = norm.reshape(shape[:-1])
    return record("norm", norm, device, [x1, x2])


def cdist(x1, x2, p: float = 2.0,
          compute_mode: str = "use_mm_for_euclid_dist_if_necessary"):
    """The p-norm distance between each row of x1 and each row of x2 (batched over the leading
    dims): (..., P, M) and (..., R, M) give (..., P, R)."""
    if x1.ndim < 2 or x2.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1.ndim}D"
                           if x1.ndim < 2 else
                           f"cdist only supports at least 2D tensors, X2 got: {x2.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: "
                           f"{x1.shape[-1]} X2: {x2.shape[-1]}")
    if p < 0:
        raise RuntimeError("cdist only supports non-negative p values")
    return (x1.unsqueeze(-2) - x2.unsqueeze(-3)).norm(p, -1)


def pdist(input, p: float = 2.0):
    """The p-norm distance between each pair of rows i < j of a matrix, row-major."""
    if input.ndim != 2:
        raise RuntimeError(f"pdist only supports 2D tensors, got: {input.ndim}D")
    if p < 0:
        raise RuntimeError("pdist only supports non-negative p values")
    rows, cols = np.triu_indices(input.shape[0], 1)
    first, second = (creation.tensor(i.astype(np.int64), device=input.device)
                     for i in (rows, cols))
    return (input[first] - input[second]).norm(p, -1)


__all__ = ["normalize", "cosine_similarity", "pairwise_distance", "pdist"]  # (cdist: torch.* only)
