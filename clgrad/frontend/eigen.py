"""Symmetric eigendecomposition (linalg.eigh, eigvalsh) and singular values (linalg.svd,
svdvals, torch.svd): one Jacobi kernel per batch of matrices (compiler/factorizations.py),
gradients as PyTorch's. Eigenvalues ascend; each
eigenvector's sign is whichever the rotations give (LAPACK's differ, and promise none), so
compare V diag(L) V^T, or vectors with a sign fixed, across libraries."""
from __future__ import annotations

from collections import namedtuple

from ..compiler.factorizations import eigh as eigh_node
from ..compiler.factorizations import eigh_parts, mT, qr_parts
from ..compiler.factorizations import qr as qr_node
from ..compiler.factorizations import svd as svd_node
from ..compiler.factorizations import svd_parts
from ..compiler.ir import Node
from .backward import record
from .matrices import check_matrix, square

EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])
SvdResult = namedtuple("linalg_svd", ["U", "S", "Vh"])
TorchSvdResult = namedtuple("svd", ["U", "S", "V"])


def _factors(op: str, a, UPLO: str):
    square(op, a)
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"{op}: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return eigh_parts(eigh_node(a.node if UPLO == "L" else mT(a.node)))


def eigh(A, UPLO: str = "L"):
    vectors, values = _factors("linalg.eigh", A, UPLO)
    return EighResult(record("linalg_eigh", values, A.device, [A]),
                      record("linalg_eigh", vectors, A.device, [A]))


def eigvalsh(A, UPLO: str = "L"):
    return record("linalg_eigvalsh", _factors("linalg.eigvalsh", A, UPLO)[1], A.device, [A])


def _svd_nodes(op: str, a):
    """(U, S, V) reduced, of any a: a wide a through the SVD of a^T."""
    check_matrix(op, a)
    m, n = a.shape[-2:]
    if m >= n:
        return svd_parts(svd_node(a.node), m)
    u, s, v = svd_parts(svd_node(mT(a.node)), n)
    return v, s, u


def _completed(u: Node) -> Node:
    """U (m, k) with m - k orthonormal columns more, from the complete QR of U (gradients
    reach the first k columns only, as PyTorch's)."""
    m, k = u.shape[-2:]
    if m == k:
        return u
    q = qr_parts(qr_node(u), k)[0]
    extra = q.shrink(tuple((0, s) for s in q.shape[:-1]) + ((k, m),))
    pads = tuple((0, 0) for _ in u.shape[:-1])
    return u.pad(pads + ((0, m - k),)) + extra.pad(pads + ((k, 0),))


def svd(A, full_matrices: bool = True, *, driver=None):
    """linalg.svd: U, S, Vh. Singular vectors' signs are whichever the rotations give (LAPACK's
    promise none): compare U diag(S) Vh, or vectors with a sign fixed."""
    u, s, v = _svd_nodes("linalg.svd", A)
    if full_matrices:
        u, v = _completed(u), _completed(v)
    return SvdResult(*(record("linalg_svd", node, A.device, [A]) for node in (u, s, mT(v))))


def svdvals(A, *, driver=None):
    return record("linalg_svdvals", _svd_nodes("linalg.svdvals", A)[1], A.device, [A])


def torch_svd(self, some: bool = True, compute_uv: bool = True):
    """Deprecated in PyTorch: U, S, V (not Vh); with compute_uv=False, U and V are zeros."""
    u, s, v = _svd_nodes("svd", self)
    if not some:
        u, v = _completed(u), _completed(v)
    if not compute_uv:
        u, v = u.const_like(0), v.const_like(0)
    return TorchSvdResult(*(record("svd", node, self.device, [self]) for node in (u, s, v)))


METHODS = [("svd", torch_svd)]
