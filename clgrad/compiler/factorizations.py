"""Dense factorizations of small matrices in the IR: the LU, CHOLESKY, QR and TRISOLVE nodes
(each one kernel, a work-item per matrix or per right-hand column: lower_linalg.py), what
they mean in NumPy (the interpreter's reference), and their gradients, written with the
same nodes so that backward passes stay on the device. (LDL^T, which has no gradient, is
compiler/ldl.py's.)

An LU node of a (..., n, n) source is (..., n, n+2): its first n columns hold L below the
diagonal (unit diagonal implied) and U on and above it, with P A = L U; column n holds the
row each step swapped in (LAPACK's pivots, 0-based) and column n+1 the source row that
ended in each row (P[i, perm[i]] = 1), both as floats (exact below 2**24 rows). A QR node of
an (..., m, n) source is (..., m, m+n): the full Q, then the full R (LAPACK's signs)."""
from __future__ import annotations

import numpy as np

from . import ir, ldl
from .dtype import int32
from .ir import Node
from .ops import Op


# ---- constructors --------------------------------------------------------------------------

def lu(x: Node) -> Node:
    *batch, n, m = x.shape
    assert n == m and x.dtype.is_float, (x.shape, x.dtype)
    shape = (*batch, n, n + 2)
    if x.numel == 0:
        return ir.const(0, x.dtype, shape)
    return Node(Op.LU, x.dtype, shape, (x,))


def cholesky(x: Node) -> Node:
    """L with L L^T = x, read from x's lower triangle; NaN where x is not positive-definite."""
    assert x.shape[-1] == x.shape[-2] and x.dtype.is_float, (x.shape, x.dtype)
    if x.numel == 0:
        return x
    return Node(Op.CHOLESKY, x.dtype, x.shape, (x,))


def qr(x: Node) -> Node:
    *batch, m, n = x.shape
    assert x.dtype.is_float, x.dtype
    shape = (*batch, m, m + n)
    if x.numel == 0:        # no reflections: Q is the identity, R empty or zeros
        identity = eye(m, ir.const(0, x.dtype, (*batch, m, m))) if m else \
            ir.const(0, x.dtype, (*batch, 0, 0))
        return identity.pad(tuple((0, 0) for _ in batch) + ((0, 0), (0, n)))
    return Node(Op.QR, x.dtype, shape, (x,))


def eigh(x: Node) -> Node:
    """[V | D] with x = V D V^T from x's lower triangle, D's diagonal ascending."""
    *batch, n, _ = x.shape
    assert x.shape[-1] == x.shape[-2] and x.dtype.is_float, (x.shape, x.dtype)
    if x.numel == 0:
        return ir.const(0, x.dtype, (*batch, n, 2 * n))
    return Node(Op.EIGH, x.dtype, (*batch, n, 2 * n), (x,))


def svd(x: Node) -> Node:
    """[U; V | S] of a tall or square x = U diag(S) V^T: U (m, n) over V (n, n), S (n,)
    descending in the last column's first n rows."""
    *batch, m, n = x.shape
    assert m >= n and x.dtype.is_float, (x.shape, x.dtype)
    if x.numel == 0:
        return ir.const(0, x.dtype, (*batch, m + n, n + 1))
    return Node(Op.SVD, x.dtype, (*batch, m + n, n + 1), (x,))


def trisolve(a: Node, b: Node, upper: bool, unit: bool = False, transposed: bool = False) -> Node:
    """X with op(a) X = b, op(a) = a^T when transposed; only a's upper (else lower) triangle
    is read, and not its diagonal when unit (taken as ones)."""
    assert a.shape[:-2] == b.shape[:-2] and a.shape[-1] == a.shape[-2] == b.shape[-2], \
        (a.shape, b.shape)
    if b.numel == 0:
        return b
    return Node(Op.TRISOLVE, b.dtype, b.shape, (a, b), (bool(upper), bool(unit), bool(transposed)))


# ---- matrix helpers on nodes -------------------------------------------------------------------

def mT(x: Node) -> Node:
    """x with its last two axes swapped."""
    order = tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2)
    return x.permute(order)


def _over_batch(matrix: Node, shape: tuple[int, ...]) -> Node:
    """An (n, m) node broadcast to shape's (..., n, m)."""
    return matrix.reshape((1,) * (len(shape) - 2) + matrix.shape).expand(shape)


def band(x: Node, diagonal: int, lower: bool) -> Node:
    """tril(x, diagonal) when lower, else triu(x, diagonal)."""
    rows, cols = x.shape[-2:]
    offset = ir.iota(cols, int32).reshape((1, cols)).expand((rows, cols)) - \
        ir.iota(rows, int32).reshape((rows, 1)).expand((rows, cols))
    keep = offset <= diagonal if lower else offset >= diagonal
    return _over_batch(keep, x.shape).where(x, 0)


def eye(n: int, like: Node) -> Node:
    """The identity in like's dtype, broadcast over like's batch dims."""
    index = ir.iota(n, int32)
    same = index.reshape((n, 1)).expand((n, n)).eq(index.reshape((1, n)).expand((n, n)))
    return _over_batch(same.where(ir.const(1, like.dtype, (n, n)), 0), like.shape[:-2] + (n, n))


def diagonal(x: Node) -> Node:
    """The main diagonal of x's (..., n, n) matrices, (..., n)."""
    *batch, n, _ = x.shape
    if n == 0:
        return ir.const(0, x.dtype, (*batch, 0))
    return x.reshape((*batch, n * n)).stride((1,) * len(batch) + (n + 1,))


def lu_parts(packed: Node) -> tuple[Node, Node, Node]:
    """(the n x n packed factors, pivots, permutation) of an LU node, views of it."""
    *batch, n, _ = packed.shape
    keep = tuple((0, s) for s in batch) + ((0, n),)
    return (packed.shrink(keep + ((0, n),)), packed.shrink(keep + ((n, n + 1),)),
            packed.shrink(keep + ((n + 1, n + 2),)))


def permutation_matrix(perm: Node) -> Node:
    """P (..., n, n) with P[i, j] = 1 where perm[i] = j, from an LU's permutation column."""
    *batch, n, _ = perm.shape
    columns = _over_batch(ir.iota(n, int32).cast(perm.dtype).reshape((1, n)), (*batch, n, n))
    return perm.expand((*batch, n, n)).eq(columns).where(ir.const(1, perm.dtype, columns.shape), 0)


# ---- gradients -------------------------------------------------------------------------------

def _product(a: Node, b: Node) -> Node:
    return a @ b if a.shape[-1] else ir.const(0, a.dtype, a.shape[:-1] + b.shape[-1:])


def trisolve_rule(node: Node, g: Node):
    """op(A) X = B: gB = op(A)^-T g, gA = -(gB X^T) on A's triangle (transposed for op)."""
    a, _ = node.src
    upper, unit, transposed = node.arg
    gb = trisolve(a, g, upper, unit, not transposed)
    ga = _product(gb, mT(node)) if not transposed else _product(node, mT(gb))
    # A's own triangle only, without the diagonal when unit
    triangle = band(-ga, 1 if unit else 0, False) if upper else band(-ga, -1 if unit else 0, True)
    return triangle, gb


def lu_rule(node: Node, g: Node):
    """For P A = L U (PyTorch's linalg_lu_backward, square case):
    gA = P^T L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T. The pivot columns carry none."""
    factors, _, perm = lu_parts(node)
    n = factors.shape[-1]
    gf = lu_parts(g)[0]
    lower = band(factors, -1, True) + eye(n, factors)
    upper = band(factors, 0, False)
    phi = band(_product(mT(lower), band(gf, -1, True)), -1, True) + \
        band(_product(band(gf, 0, False), mT(upper)), 0, False)
    inner = trisolve(factors, mT(trisolve(factors, mT(phi), upper=True)), upper=False,
                     unit=True, transposed=True)
    return (_product(mT(permutation_matrix(perm)), inner),)


def cholesky_rule(node: Node, g: Node):
    """Murray (2016), as PyTorch: phi = tril(L^T gL) with its diagonal halved,
    gA = L^-T phi L^-1, symmetrized."""
    n = node.shape[-1]
    phi = band(_product(mT(node), g), 0, True)
    phi = phi - eye(n, phi) * phi * 0.5
    right = mT(trisolve(node, mT(phi), upper=False, transposed=True))      # phi L^-1
    ga = trisolve(node, right, upper=False, transposed=True)
    return ((ga + mT(ga)) * 0.5,)


def qr_parts(packed: Node, n: int) -> tuple[Node, Node]:
    """(Q, R), full, of a QR node of an (..., m, n) source."""
    *batch, m, _ = packed.shape
    keep = tuple((0, s) for s in batch) + ((0, m),)
    return packed.shrink(keep + ((0, m),)), packed.shrink(keep + ((m, m + n),))


def _columns(x: Node, begin: int, end: int) -> Node:
    return x.shrink(tuple((0, s) for s in x.shape[:-1]) + ((begin, end),))


def _rows(x: Node, begin: int, end: int) -> Node:
    return mT(_columns(mT(x), begin, end))


def _square_qr_grad(q: Node, r: Node, gq: Node, gr: Node) -> Node:
    """A = Q R with R square (m >= n, reduced): M = R gR^T - gQ^T Q,
    gA = (gQ + Q copyltu(M)) R^-T, copyltu copying M's lower triangle above it
    (Liao et al. 2019; PyTorch's linalg_qr_backward)."""
    m_ = _product(r, mT(gr)) - _product(mT(gq), q)
    lower = band(m_, -1, True)
    sym = lower + mT(lower) + eye(m_.shape[-1], m_) * m_
    return mT(trisolve(r, mT(gq + _product(q, sym)), upper=True))


def qr_rule(node: Node, g: Node):
    """The gradient of the reduced factors: Q's first min(m, n) columns and R's first rows
    (the frontend allows no gradient of the complete Q of a tall matrix, not unique)."""
    (x,) = node.src
    m, n = x.shape[-2:]
    k = min(m, n)
    q, r = (_columns(qr_parts(node, n)[0], 0, k), _rows(qr_parts(node, n)[1], 0, k))
    gq, gr = (_columns(qr_parts(g, n)[0], 0, k), _rows(qr_parts(g, n)[1], 0, k))
    if m >= n:
        return (_square_qr_grad(q, r, gq, gr),)
    # A = Q [X Y]: X = Q R1 square; Y = Q R2 passes gradient to Q as Y gR2^T
    gr2, y = _columns(gr, m, n), _columns(x, m, n)
    gx = _square_qr_grad(q, _columns(r, 0, m), gq + _product(y, mT(gr2)), _columns(gr, 0, m))
    gy = _product(q, gr2)
    pads = tuple((0, 0) for _ in x.shape[:-1])
    return (gx.pad(pads + ((0, n - m),)) + gy.pad(pads + ((m, 0),)),)


def eigh_parts(packed: Node) -> tuple[Node, Node]:
    """(eigenvectors, eigenvalues (..., n)) of an EIGH node."""
    *batch, n, _ = packed.shape
    keep = tuple((0, s) for s in batch) + ((0, n),)
    return packed.shrink(keep + ((0, n),)), diagonal(packed.shrink(keep + ((n, 2 * n),)))


def eigh_rule(node: Node, g: Node):
    """As PyTorch's linalg_eig_backward for Hermitian input: the skew part of V^T gV over
    the eigenvalue gaps E[i, j] = l[j] - l[i], plus diag(gl), carried back by V ... V^T."""
    vectors, values = eigh_parts(node)
    g_vectors, g_values = eigh_parts(g)
    n = values.shape[-1]
    shape = vectors.shape
    rows = values.reshape(values.shape[:-1] + (n, 1)).expand(shape)
    gaps = values.reshape(values.shape[:-1] + (1, n)).expand(shape) - rows
    identity = eye(n, vectors)
    gaps = identity.eq(1).where(identity, gaps)
    projected = _product(mT(vectors), g_vectors)
    inner = (projected - mT(projected)) * 0.5 / gaps + \
        identity * g_values.reshape(g_values.shape[:-1] + (1, n)).expand(shape)
    return (_product(vectors, _product(inner, mT(vectors))),)


def svd_parts(packed: Node, m: int) -> tuple[Node, Node, Node]:
    """(U (..., m, n), S (..., n), V (..., n, n)) of an SVD node of an (m, n) source."""
    *batch, rows, width = packed.shape
    n = width - 1
    keep = tuple((0, s) for s in batch)
    s = packed.shrink(keep + ((0, n), (n, n + 1)))
    return (packed.shrink(keep + ((0, m), (0, n))), s.reshape(s.shape[:-1]),
            packed.shrink(keep + ((m, rows), (0, n))))


def svd_rule(node: Node, g: Node):
    """PyTorch's svd_backward (real, reduced, m >= n): with skew(X) = X - X^T and
    E[j, k] = S[k]^2 - S[j]^2, gA = U ((skew(U^T gU) S + S skew(V^T gV)) / E + diag(gS)) V^T
    + (gU - U U^T gU) S^-1 V^T."""
    (x,) = node.src
    m, n = x.shape[-2:]
    u, s, v = svd_parts(node, m)
    gu, gs, gv = svd_parts(g, m)
    shape = v.shape
    columns = s.reshape(s.shape[:-1] + (1, n)).expand(shape)        # S[k] at [j, k]
    rows = s.reshape(s.shape[:-1] + (n, 1)).expand(shape)           # S[j] at [j, k]
    identity = eye(n, v)
    gaps = identity.eq(1).where(identity, columns * columns - rows * rows)
    utgu, vtgv = _product(mT(u), gu), _product(mT(v), gv)
    inner = ((utgu - mT(utgu)) * columns + rows * (vtgv - mT(vtgv))) / gaps + \
        identity * gs.reshape(gs.shape[:-1] + (1, n)).expand(shape)
    ga = _product(u, _product(inner, mT(v)))
    if m > n:
        outside = gu - _product(u, utgu)
        ga = ga + _product(outside / s.reshape(s.shape[:-1] + (1, n)).expand(gu.shape), mT(v))
    return (ga,)


RULES = {Op.LU: lu_rule, Op.CHOLESKY: cholesky_rule, Op.TRISOLVE: trisolve_rule, Op.QR: qr_rule,
         Op.EIGH: eigh_rule, Op.SVD: svd_rule}


# ---- NumPy meaning (compiler/interpret.py) ---------------------------------------------------

def _lu_numpy(x: np.ndarray) -> np.ndarray:
    *batch, n, _ = x.shape
    out = np.zeros((*batch, n, n + 2), x.dtype)
    out[..., :n] = x
    out[..., n + 1] = np.arange(n)
    flat = out.reshape(-1, n, n + 2)
    for m in flat:
        for k in range(n):
            p = k + int(np.argmax(np.abs(m[k:, k])))
            m[[k, p]] = m[[p, k]]
            m[k, n] = p
            if m[k, k] != 0:
                m[k + 1:, k] /= m[k, k]
                m[k + 1:, k + 1:n] -= np.outer(m[k + 1:, k], m[k, k + 1:n])
    return out


def _cholesky_numpy(x: np.ndarray) -> np.ndarray:
    *batch, n, _ = x.shape
    out = np.zeros_like(x)
    for a, l in zip(x.reshape(-1, n, n), out.reshape(-1, n, n)):
        with np.errstate(invalid="ignore", divide="ignore"):
            for j in range(n):
                l[j, j] = np.sqrt(a[j, j] - l[j, :j] @ l[j, :j])
                l[j + 1:, j] = (a[j + 1:, j] - l[j + 1:, :j] @ l[j, :j]) / l[j, j]
    return out


def _trisolve_numpy(a: np.ndarray, b: np.ndarray, arg) -> np.ndarray:
    upper, unit, transposed = arg
    a = np.triu(a) if upper else np.tril(a)
    if unit:
        n = a.shape[-1]
        a = a - a * np.eye(n, dtype=a.dtype) + np.eye(n, dtype=a.dtype)
    if transposed:
        a = np.swapaxes(a, -1, -2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.linalg.solve(a, b).astype(b.dtype)


def _qr_numpy(x: np.ndarray) -> np.ndarray:
    """Householder QR with LAPACK's signs, as the kernel."""
    *batch, m, n = x.shape
    out = np.zeros((*batch, m, m + n), x.dtype)
    for a, o in zip(x.reshape(-1, m, n), out.reshape(-1, m, m + n)):
        q, r = np.eye(m, dtype=x.dtype), a.copy()
        for j in range(min(m, n)):
            alpha, below = r[j, j], r[j + 1:, j] @ r[j + 1:, j]
            if below == 0:
                continue
            beta = -np.copysign(np.hypot(alpha, np.sqrt(below)), alpha)
            v = np.concatenate([[1.0], r[j + 1:, j] / (alpha - beta)])
            tau = (beta - alpha) / beta
            r[j:] -= tau * np.outer(v, v @ r[j:])
            q[:, j:] -= tau * np.outer(q[:, j:] @ v, v)
            r[j + 1:, j] = 0
        o[:, :m], o[:, m:] = q, r
    return out


def _eigh_numpy(x: np.ndarray) -> np.ndarray:
    """LAPACK's eigenvectors, signs chosen as nothing promises (the kernel's may differ)."""
    values, vectors = np.linalg.eigh(x, UPLO="L")
    n = x.shape[-1]
    d = np.zeros_like(x)
    d[..., np.arange(n), np.arange(n)] = values
    return np.concatenate([vectors, d], axis=-1).astype(x.dtype)


def _svd_numpy(x: np.ndarray) -> np.ndarray:
    """LAPACK's factors, signs as nothing promises (the kernel's may differ)."""
    u, s, vh = np.linalg.svd(x, full_matrices=False)
    n = x.shape[-1]
    out = np.zeros(x.shape[:-2] + (x.shape[-2] + n, n + 1), x.dtype)
    out[..., :x.shape[-2], :n], out[..., x.shape[-2]:, :n] = u, np.swapaxes(vh, -1, -2)
    out[..., :n, n] = s
    return out


def numpy_meaning(node: Node, srcs: list[np.ndarray]) -> np.ndarray:
    if node.op in (Op.LDL, Op.LDL_SOLVE):
        return ldl.numpy_meaning(node, srcs)
    if node.op is Op.SVD:
        return _svd_numpy(srcs[0])
    if node.op is Op.EIGH:
        return _eigh_numpy(srcs[0])
    if node.op is Op.QR:
        return _qr_numpy(srcs[0])
    if node.op is Op.LU:
        return _lu_numpy(srcs[0])
    if node.op is Op.CHOLESKY:
        return _cholesky_numpy(srcs[0])
    return _trisolve_numpy(srcs[0], srcs[1], node.arg)
