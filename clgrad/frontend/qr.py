"""QR and what is built on it: linalg.qr (modes reduced, complete, r), torch.qr, lstsq and
pinv/pinverse for matrices of full rank. One Householder kernel per batch of matrices
(compiler/factorizations.py), gradients from its rule (m >= n, or the first m columns for
wide matrices, as PyTorch)."""
from __future__ import annotations

from collections import namedtuple

from ..compiler import ir
from ..compiler.dtype import int64
from ..compiler.factorizations import _columns, _rows, eye, mT, qr as qr_node, qr_parts, trisolve
from ..compiler.ir import Node
from .backward import record
from .grad_mode import is_grad_enabled
from .matrices import broadcast_batches, check_matrix, same_dtype, tensor_of
from .operands import common_device

QRResult = namedtuple("linalg_qr", ["Q", "R"])
LstsqResult = namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])
_MODES = ("reduced", "complete", "r")


def _factors(a: Node, complete: bool) -> tuple[Node, Node]:
    m, n = a.shape[-2:]
    k = m if complete else min(m, n)
    q, r = qr_parts(qr_node(a), n)
    return _columns(q, 0, k), _rows(r, 0, k)


def linalg_qr(A, mode: str = "reduced"):
    check_matrix("linalg.qr", A)
    if mode not in _MODES:
        raise RuntimeError(f"qr received unrecognized mode '{mode}' but expected one of "
                           f"'reduced' (default), 'r', or 'complete'")
    m, n = A.shape[-2:]
    if mode == "complete" and m > n and A.requires_grad and is_grad_enabled():
        raise RuntimeError("linalg.qr: The QR decomposition is not differentiable when "
                           "mode='complete' and nrows > ncols.")
    q, r = _factors(A.node, mode == "complete")
    if mode == "r":
        return QRResult(tensor_of(ir.const(0, A.dtype, (0,)), A.device),
                        record("linalg_qr", r, A.device, [A]))
    return QRResult(record("linalg_qr", q, A.device, [A]), record("linalg_qr", r, A.device, [A]))


def qr(self, some: bool = True):
    """Deprecated in PyTorch: linalg.qr with mode 'reduced' (some) or 'complete'."""
    return linalg_qr(self, "reduced" if some else "complete")


def _full_rank_solve(a: Node, b: Node) -> Node:
    """The least-squares solution of a X = b for a of full rank: R^-1 Q^T b when a is tall,
    the minimum-norm Q R^-T b through a^T = Q R when it is wide."""
    m, n = a.shape[-2:]
    if m >= n:
        q, r = _factors(a, False)
        return trisolve(r, mT(q) @ b, upper=True)
    q, r = _factors(mT(a), False)
    return q @ trisolve(r, b, upper=True, transposed=True)


def lstsq(A, B, rcond=None, *, driver=None):
    """For A of full rank, with the results of PyTorch's default CPU driver gelsy: the rank
    is min(m, n) (a rank-deficient A is not detected: its solution holds inf or NaN); no
    residuals or singular values (gelsy computes none)."""
    check_matrix("linalg.lstsq", A)
    same_dtype("linalg.lstsq", A, B)
    device = common_device("linalg.lstsq", [A, B])
    vector = B.ndim == A.ndim - 1
    b = B.unsqueeze(-1) if vector else B
    if b.shape[-2] != A.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), "
                           f"got {A.shape[-2]} and {b.shape[-2]}")
    a, b = broadcast_batches("linalg.lstsq", A.node, b.node)
    x = _full_rank_solve(a, b)
    if vector:
        x = x.reshape(x.shape[:-1])
    nothing = tensor_of(ir.const(0, A.dtype, (0,)), device)
    rank = ir.const(min(A.shape[-2:]), int64, a.shape[:-2])
    return LstsqResult(record("linalg_lstsq", x, device, [A, B]), nothing,
                       tensor_of(rank, device), nothing)


def pinv(A, *, atol=None, rtol=None, hermitian: bool = False):
    """For A of full rank: (A^T A)^-1 A^T through QR, equal to PyTorch's SVD-based pinv there.
    The rank cutoffs (atol, rtol) cut nothing from a full-rank A."""
    check_matrix("linalg.pinv", A)
    *batch, m, n = A.shape
    if A.numel() == 0:
        return record("linalg_pinv", ir.const(0, A.dtype, (*batch, n, m)), A.device, [A])
    rhs = eye(m, ir.const(0, A.dtype, (*batch, m, m)))
    return record("linalg_pinv", _full_rank_solve(A.node, rhs), A.device, [A])


def pinverse(self, rcond: float = 1e-15):
    return pinv(self)


METHODS = [("qr", qr), ("pinverse", pinverse)]
