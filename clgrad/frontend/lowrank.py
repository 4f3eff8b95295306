"""torch.svd_lowrank and torch.pca_lowrank: randomized low-rank SVD (Halko, Martinsson and
Tropp 2009, algorithms 4.4 and 5.1), as PyTorch's torch/_lowrank.py computes it, on clgrad's
matmul, linalg.qr and linalg.svd (whose gradients they carry). The random test matrix comes
from clgrad's generator, so the results agree with PyTorch's to the accuracy of the method
(the singular values, the reconstruction U diag(S) V^T), not bit for bit; seed with
cg.manual_seed for repeatable results. clgrad has no sparse tensors: A is dense."""
from __future__ import annotations

from collections import namedtuple

from ..compiler import dtype as dt
from . import creation
from .eigen import svd
from .qr import linalg_qr

SvdLowrankResult = namedtuple("svd_lowrank", ["U", "S", "V"])


def _mH(x):
    return x.transpose(-2, -1)


def _floating(dtype):
    return dtype if dtype.is_float else dt.DEFAULT_FLOAT


def get_approximate_basis(A, q: int, niter: int | None = 2, M=None):
    """Q with q orthonormal columns such that Q Q^T (A - M) approximates A - M (M: None, or
    A's mean), by niter subspace iterations from a Gaussian test matrix."""
    niter = 2 if niter is None else niter
    R = creation.randn(A.shape[-1], q, dtype=_floating(A.dtype), device=A.device)

    def basis(X, transposed: bool = False):
        """The Q of (A - M) X, or of (A - M)^T X."""
        product = (_mH(A) if transposed else A) @ X
        if M is not None:
            product = product - (_mH(M) if transposed else M) @ X
        return linalg_qr(product).Q
    Q = basis(R)
    for _ in range(niter):
        Q = basis(basis(Q, transposed=True))
    return Q


def _svd_lowrank(A, q: int | None = 6, niter: int | None = 2, M=None):
    q = 6 if q is None else q
    m, n = A.shape[-2:]
    if M is not None:
        M = M.broadcast_to(A.shape)
    if m < n:
        A = _mH(A)
        if M is not None:
            M = _mH(M)
    Q = get_approximate_basis(A, q, niter=niter, M=M)
    B = _mH(Q) @ A
    if M is not None:
        B = B - _mH(Q) @ M
    U, S, Vh = svd(B, full_matrices=False)
    V = _mH(Vh)
    U = Q @ U
    if m < n:
        U, V = V, U
    return SvdLowrankResult(U, S, V)


def svd_lowrank(A, q: int | None = 6, niter: int | None = 2, M=None):
    """(U, S, V) with A - M ~ U diag(S) V^T: U (*, m, q), S (*, q), V (*, n, q)."""
    return _svd_lowrank(A, q=q, niter=niter, M=M)


def pca_lowrank(A, q: int | None = None, center: bool = True, niter: int = 2):
    """The randomized SVD of A centred over its rows (its columns' means subtracted) unless
    center is False: V's columns are the principal directions, S**2 / (m - 1) the variances
    along them. q defaults to min(6, m, n)."""
    m, n = A.shape[-2:]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise ValueError(f"q(={q}) must be non-negative integer and not greater than "
                         f"min(m, n)={min(m, n)}")
    if not niter >= 0:
        raise ValueError(f"niter(={niter}) must be non-negative integer")
    if not center:
        return _svd_lowrank(A, q, niter=niter, M=None)
    return _svd_lowrank(A - A.mean(dim=(-2,), keepdim=True), q, niter=niter, M=None)


FUNCTIONS = {"svd_lowrank": svd_lowrank, "pca_lowrank": pca_lowrank}
