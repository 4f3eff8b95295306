"""Matrix norms and what is measured with them: linalg.norm, linalg.matrix_norm, cond,
matrix_rank, and multi_dot. Compositions of Tensor ops and svdvals (eigen.py), written as
PyTorch writes them, so that values and gradients come out alike."""
from __future__ import annotations

import math

import numpy as np

from ..compiler.dtype import float32, float64, int64
from .eigen import svdvals
from .lu import inv
from .matrices import check_matrix, square, torch_name
from .operands import normalize_dim
from .statistics import norm_dtype, order_text, vector_norm

_ORDERS = (1, -1, 2, -2, math.inf, -math.inf)


def norm(A, ord=None, dim=None, keepdim: bool = False, *, dtype=None):
    """A vector norm (dim an int or of length 1, or a 1-d A; ord None: the 2-norm of all
    elements) or a matrix norm (dim of length 2, or a 2-d A), as PyTorch dispatches."""
    dims = None if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if dims is not None and len(dims) not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is specified, it must be of length 1 or 2. "
                           f"Got {list(dims)}")
    if dims is None and ord is not None and A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be "
                           f"1D or 2D. Got {A.ndim}D.")
    if isinstance(ord, str) or (ord is not None and len(dims or range(A.ndim)) == 2):
        return matrix_norm(A, ord, (0, 1) if dims is None else dims, keepdim, dtype=dtype)
    return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)


def _matrix_checks(A, dim, dtype, low_precision: bool) -> tuple[int, int]:
    """PyTorch's checks of matrix_norm's operands; its two dims, wrapped."""
    op = "linalg.matrix_norm"
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if not A.dtype.is_float:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{torch_name(A.dtype)}")
    if not low_precision and A.dtype not in (float32, float64):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {torch_name(A.dtype)}")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) != 2:
        raise RuntimeError(f"{op}: dim must be a 2-tuple. Got {' '.join(map(str, dims))}")
    rows, cols = (normalize_dim(op, d, A.ndim) for d in dims)
    if rows == cols:
        raise RuntimeError(f"{op}: dims must be different. Got ({rows}, {cols})")
    norm_dtype(op, dtype, A.dtype)
    return rows, cols


def _extreme(x, axis: int, ord, keepdim: bool, shown: int):
    """The largest (ord > 0) or smallest of x's values along axis; the largest of none is
    0 (the values are magnitudes: zeros autograd does not see, as PyTorch's), the smallest of
    none is refused, as PyTorch's."""
    if x.shape[axis] == 0:
        if ord < 0:
            raise IndexError(f"amin(): Expected reduction dim {shown} to have non-zero size. "
                             f"(linalg.matrix_norm of order {order_text(ord)} over an empty dim)")
        return x.detach().sum(axis, keepdim)
    return x.amax(axis, keepdim) if ord > 0 else x.amin(axis, keepdim)


def _keep(out, axes: tuple[int, int], keepdim: bool):
    if keepdim:
        for axis in sorted(axes):
            out = out.unsqueeze(axis)
    return out


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim: bool = False, *, dtype=None):
    """'fro' (the 2-norm of the elements), 'nuc' (the sum of the singular values), ±2 (the
    largest or smallest singular value), ±1 and ±inf (the largest or smallest column or row
    sum of magnitudes), over the two dims."""
    if isinstance(ord, str):
        rows, cols = _matrix_checks(A, dim, dtype, ord != "nuc")
        if ord not in ("fro", "nuc"):
            raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
        if ord == "fro":
            return vector_norm(A, 2, (rows, cols), keepdim, dtype=dtype)
        x = A.to(dtype) if dtype is not None else A
        return _keep(svdvals(x.movedim((rows, cols), (-2, -1))).sum(-1), (rows, cols), keepdim)
    if ord not in _ORDERS:
        raise RuntimeError(f"linalg.matrix_norm: Order {order_text(ord)} not supported.")
    rows, cols = _matrix_checks(A, dim, dtype, abs(ord) != 2)
    if abs(ord) == 2:
        x = A.to(dtype) if dtype is not None else A
        s = svdvals(x.movedim((rows, cols), (-2, -1)))
        return _keep(_extreme(s, -1, ord, False, -1), (rows, cols), keepdim)
    first, second = (cols, rows) if abs(ord) == math.inf else (rows, cols)
    if not keepdim and first < second:
        second -= 1
    sums = vector_norm(A, 1, (first,), keepdim, dtype=dtype)
    return _extreme(sums, second, ord, keepdim, second)


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
