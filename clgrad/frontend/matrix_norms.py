"""Matrix norms and what is measured with them: linalg.matrix_norm, cond, matrix_rank, and
multi_dot. Compositions of Tensor ops and svdvals (eigen.py): gradients come with them."""
from __future__ import annotations

import math

import numpy as np

from ..compiler.dtype import int64
from .eigen import svdvals
from .lu import inv
from .matrices import check_matrix, square
from .statistics import vector_norm

_SPECTRAL = (2, -2, "nuc")


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    check_matrix("linalg.matrix_norm", A)
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return vector_norm(A, 2, dim, keepdim)
    if ord not in (*_SPECTRAL, 1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    rows, cols = (d % A.ndim for d in dim)
    x = A.movedim((rows, cols), (-2, -1))
    if ord in _SPECTRAL:
        s = svdvals(x)
        out = s.sum(-1) if ord == "nuc" else s.amax(-1) if ord == 2 else s.amin(-1)
    else:   # 1: the largest column sum of |A|, inf: the largest row sum
        sums = x.abs().sum(-2 if abs(ord) == 1 else -1)
        out = sums.amax(-1) if ord > 0 else sums.amin(-1)
    if keepdim:
        for axis in sorted((rows, cols)):
            out = out.unsqueeze(axis)
    return out


def cond(A, p=None):
    """||A|| ||A^-1||; for p None or +-2 the ratio of the extreme singular values."""
    check_matrix("linalg.cond", A)
    if p in (None, 2, -2):
        s = svdvals(A)
        high, low = s.amax(-1), s.amin(-1)
        return high / low if p in (None, 2) else low / high
    square("linalg.cond", A)
    return matrix_norm(A, p) * matrix_norm(inv(A), p)


def matrix_rank(A, *, atol=None, rtol=None, hermitian: bool = False):
    """The singular values above max(atol, rtol * the largest), int64; rtol defaults to
    eps * max(m, n) when neither tolerance is given, as PyTorch."""
    check_matrix("linalg.matrix_rank", A)
    s = svdvals(A.detach())         # a count: no gradient
    if atol is None and rtol is None:
        rtol = float(np.finfo(A.dtype.np).eps) * max(A.shape[-2:])
    largest = s.amax(-1, keepdim=True) if s.shape[-1] else s.sum(-1, keepdim=True)
    tolerance = largest * (rtol or 0.0)
    if atol:
        tolerance = tolerance.clamp_min(atol)
    return (s > tolerance).to(int64).sum(-1)


def multi_dot(tensors):
    """The product of the list left to right; a 1-d first (last) operand is a row (column)
    vector, and its dimension is dropped from the result, as PyTorch."""
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    items = [first.unsqueeze(0) if first.ndim == 1 else first, *tensors[1:-1],
             last.unsqueeze(-1) if last.ndim == 1 else last]
    for k, t in enumerate(items):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {k} must be 2D but got {t.ndim}D")
    out = items[0]
    for t in items[1:]:
        out = out @ t
    if last.ndim == 1:
        out = out.squeeze(-1)
    if first.ndim == 1:
        out = out.squeeze(0)
    return out
