"""Symmetric eigendecomposition: linalg.eigh and linalg.eigvalsh, one Jacobi kernel per batch
of matrices (compiler/factorizations.py), gradients as PyTorch's. Eigenvalues ascend; each
eigenvector's sign is whichever the rotations give (LAPACK's differ, and promise none), so
compare V diag(L) V^T, or vectors with a sign fixed, across libraries."""
from __future__ import annotations

from collections import namedtuple

from ..compiler.factorizations import eigh as eigh_node
from ..compiler.factorizations import eigh_parts, mT
from .backward import record
from .matrices import square

EighResult = namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


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
