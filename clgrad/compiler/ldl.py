"""LDL^T with Bunch-Kaufman pivoting, as LAPACK's sytrf (lower) computes it, and the solve
with its factors (sytrs): the LDL and LDL_SOLVE nodes (one kernel each, lower_ldl.py) and
what they mean in NumPy (compiler/interpret.py's reference). Neither has a gradient rule:
PyTorch differentiates neither.

An LDL node of a (..., n, n) source, read from its lower triangle, is (..., n, n+2): its
first n columns hold LAPACK's compact LD (L's multipliers below D's blocks, D's 1x1 and 2x2
blocks on the diagonal and just below it, zeros above), column n the pivots (1-based, the
same negative number on both rows of a 2x2 block), column n+1 a 1 on each row whose pivot
column was all zeros (LAPACK's info is 1 + the first such row), both as floats.

Where LAPACK leaves choices to its BLAS, these follow what PyTorch's CPU build (MKL)
returns, NaN and inf included: the largest magnitude of a column is its first NaN if it has
one (else its first largest), max(a, b) is `a > b ? a : b`, and the rank-1 update of a 1x1
step is skipped when 1/D is 0 (dsyr's quick return) and column by column where the
multiplier is 0."""
from __future__ import annotations

import math

import numpy as np

from . import ir
from .dtype import int32
from .ir import Node
from .ops import Op

ALPHA = (1 + math.sqrt(17)) / 8     # Bunch-Kaufman's bound: (1 + sqrt(17)) / 8


def alpha_of(np_dtype) -> float:
    """ALPHA as LAPACK computes it in the dtype ((ONE + SQRT(SEVTEN)) / EIGHT)."""
    t = np.dtype(np_dtype).type
    return float((t(1) + np.sqrt(t(17))) / t(8))


# ---- constructors --------------------------------------------------------------------------

def ldl(x: Node) -> Node:
    *batch, n, m = x.shape
    assert n == m and x.dtype.is_float, (x.shape, x.dtype)
    shape = (*batch, n, n + 2)
    if x.numel == 0:
        return ir.const(0, x.dtype, shape)
    return Node(Op.LDL, x.dtype, shape, (x,))


def ldl_parts(packed: Node) -> tuple[Node, Node, Node]:
    """(LD (..., n, n), pivots (..., n) as floats, zero-column flags (..., n)) of an LDL node."""
    *batch, n, _ = packed.shape
    keep = tuple((0, s) for s in batch) + ((0, n),)
    pivots = packed.shrink(keep + ((n, n + 1),)).reshape((*batch, n))
    flags = packed.shrink(keep + ((n + 1, n + 2),)).reshape((*batch, n))
    return packed.shrink(keep + ((0, n),)), pivots, flags


def ldl_solve(ld: Node, pivots: Node, b: Node) -> Node:
    """X with A X = b for A's factors (ld, int32 pivots) from an LDL node; all three share
    their batch dims."""
    assert ld.shape[:-1] == pivots.shape and pivots.dtype == int32, (ld.shape, pivots.shape)
    assert ld.shape[:-2] == b.shape[:-2] and ld.shape[-1] == b.shape[-2], (ld.shape, b.shape)
    if b.numel == 0:
        return b
    return Node(Op.LDL_SOLVE, b.dtype, b.shape, (ld, pivots, b))


# ---- NumPy meaning -------------------------------------------------------------------------

def _largest(v: np.ndarray) -> int:
    """The BLAS's i?amax as MKL has it: the first NaN, else the first largest magnitude."""
    nan = np.flatnonzero(np.isnan(v))
    return int(nan[0]) if nan.size else int(np.argmax(np.abs(v)))


def _larger(a, b):
    return a if a > b else b


def _pivot(a: np.ndarray, k: int, alpha: float) -> tuple[int, int, bool]:
    """(kp, kstep, whether the column is zero) of step k (sytf2's pivot choice)."""
    n = a.shape[0]
    absakk = abs(a[k, k])
    imax, colmax = k, 0.0
    if k < n - 1:
        imax = k + 1 + _largest(a[k + 1:, k])
        colmax = abs(a[imax, k])
    if _larger(absakk, colmax) == 0:
        return k, 1, True
    if absakk >= alpha * colmax:
        return k, 1, False
    rowmax = abs(a[imax, k + _largest(a[imax, k:imax])])
    if imax < n - 1:
        rowmax = _larger(rowmax, abs(a[imax + 1 + _largest(a[imax + 1:, imax]), imax]))
    if absakk >= alpha * colmax * (colmax / rowmax):
        return k, 1, False
    if abs(a[imax, imax]) >= alpha * rowmax:
        return imax, 1, False
    return imax, 2, False


def _interchange(a: np.ndarray, k: int, kk: int, kp: int, kstep: int) -> None:
    """Rows and columns kk and kp of the trailing lower triangle swapped."""
    a[kp + 1:, [kk, kp]] = a[kp + 1:, [kp, kk]]
    middle = a[kk + 1:kp, kk].copy()
    a[kk + 1:kp, kk] = a[kp, kk + 1:kp]
    a[kp, kk + 1:kp] = middle
    a[[kk, kp], [kk, kp]] = a[[kp, kk], [kp, kk]]
    if kstep == 2:
        a[[k + 1, kp], k] = a[[kp, k + 1], k]


def _eliminate(a: np.ndarray, k: int, kstep: int) -> None:
    """The trailing update of a 1x1 (kstep 1) or 2x2 block at k, its multipliers stored."""
    n = a.shape[0]
    if kstep == 1:
        d11 = 1 / a[k, k]
        for j in range(k + 1, n) if d11 != 0 else ():
            if a[j, k] != 0:
                a[j:, j] += a[j:, k] * (-d11 * a[j, k])
        a[k + 1:, k] *= d11
        return
    if k >= n - 2:
        return
    d21 = a[k + 1, k]
    d11, d22 = a[k + 1, k + 1] / d21, a[k, k] / d21
    d21 = (1 / (d11 * d22 - 1)) / d21
    for j in range(k + 2, n):
        wk = d21 * (d11 * a[j, k] - a[j, k + 1])
        wkp1 = d21 * (d22 * a[j, k + 1] - a[j, k])
        a[j:, j] = a[j:, j] - a[j:, k] * wk - a[j:, k + 1] * wkp1
        a[j, k], a[j, k + 1] = wk, wkp1


def _ldl_matrix(x: np.ndarray, out: np.ndarray) -> None:
    n = x.shape[0]
    a = np.tril(x).copy()
    alpha = alpha_of(x.dtype)
    k = 0
    while k < n:
        kp, kstep, zero = _pivot(a, k, alpha)
        out[k, n + 1] = zero
        if not zero:
            kk = k + kstep - 1
            if kp != kk:
                _interchange(a, k, kk, kp, kstep)
            _eliminate(a, k, kstep)
        out[k:k + kstep, n] = kp + 1 if kstep == 1 else -(kp + 1)
        k += kstep
    out[:, :n] = np.tril(a)


def _ldl_numpy(x: np.ndarray) -> np.ndarray:
    *batch, n, _ = x.shape
    out = np.zeros((*batch, n, n + 2), x.dtype)
    with np.errstate(all="ignore"):
        for src, dst in zip(x.reshape(-1, n, n), out.reshape(-1, n, n + 2)):
            _ldl_matrix(src, dst)
    return out


def _swap(b: np.ndarray, i: int, j: int) -> None:
    if i != j and 0 <= j < b.shape[0]:
        b[[i, j]] = b[[j, i]]


def _less_multiples(b: np.ndarray, k: int, column: np.ndarray, start: int) -> None:
    """b[start:] -= column * b[k], skipping the columns where b[k] is 0 (dger)."""
    for c in np.flatnonzero(b[k] != 0):
        b[start:, c] += column * -b[k, c]


def _forward(ld: np.ndarray, piv: np.ndarray, b: np.ndarray) -> None:
    """b <- D^-1 L^-1 b, the interchanges in order (sytrs's first loop)."""
    n, k = ld.shape[0], 0
    while k < n:
        if piv[k] > 0:
            _swap(b, k, piv[k] - 1)
            _less_multiples(b, k, ld[k + 1:, k], k + 1)
            b[k] *= 1 / ld[k, k]
            k += 1
            continue
        if k + 1 >= n:
            break
        _swap(b, k + 1, -piv[k] - 1)
        _less_multiples(b, k, ld[k + 2:, k], k + 2)
        _less_multiples(b, k + 1, ld[k + 2:, k + 1], k + 2)
        akm1k = ld[k + 1, k]
        akm1, ak = ld[k, k] / akm1k, ld[k + 1, k + 1] / akm1k
        denom = akm1 * ak - 1
        bkm1, bk = b[k] / akm1k, b[k + 1] / akm1k
        b[k], b[k + 1] = (ak * bkm1 - bk) / denom, (akm1 * bk - bkm1) / denom
        k += 2


def _backward(ld: np.ndarray, piv: np.ndarray, b: np.ndarray) -> None:
    """b <- L^-T b, the interchanges undone in reverse (sytrs's second loop)."""
    n = ld.shape[0]
    k = n - 1
    while k >= 0:
        two = piv[k] < 0 and k > 0
        for j in ((k, k - 1) if two else (k,)):
            b[j] -= ld[k + 1:, j] @ b[k + 1:]
        _swap(b, k, abs(piv[k]) - 1)
        k -= 2 if two else 1


def _ldl_solve_numpy(ld: np.ndarray, piv: np.ndarray, b: np.ndarray) -> np.ndarray:
    *batch, n, k = b.shape
    out = b.copy()
    with np.errstate(all="ignore"):
        for a, p, x in zip(ld.reshape(-1, n, n), piv.reshape(-1, n), out.reshape(-1, n, k)):
            _forward(a, p, x)
            _backward(a, p, x)
    return out


def numpy_meaning(node: Node, srcs: list[np.ndarray]) -> np.ndarray:
    if node.op is Op.LDL:
        return _ldl_numpy(srcs[0])
    return _ldl_solve_numpy(*srcs)
