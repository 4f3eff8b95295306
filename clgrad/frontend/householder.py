"""linalg.householder_product (torch.orgqr): the first n columns of the product of k Householder
reflectors H_i = I - tau_i v_i v_i^T, v_i column i of the input below its diagonal with a 1 on
it. Each reflector is two matrix products, so the gradient comes from theirs."""
from __future__ import annotations

from ..compiler.factorizations import _columns, band, eye, mT
from .backward import record
from .matrices import check_matrix

_OP = "torch.linalg.householder_product"


def _check(A, tau) -> None:
    if A.ndim < 2:
        raise RuntimeError(f"{_OP}: input must have at least 2 dimensions.")
    check_matrix(_OP, A, "input")
    m, n = A.shape[-2:]
    if m < n:
        raise RuntimeError(f"{_OP}: input.shape[-2] must be greater than or equal to "
                           f"input.shape[-1]")
    if tau.ndim != A.ndim - 1:
        raise RuntimeError(f"{_OP}: Expected tau to have one dimension less than input, but "
                           f"got tau.ndim equal to {tau.ndim} and input.ndim is equal to "
                           f"{A.ndim}")
    if n < tau.shape[-1]:
        raise RuntimeError(f"{_OP}: input.shape[-1] must be greater than or equal to "
                           f"tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise RuntimeError(f"{_OP}: Expected batch dimensions of tau to be equal to "
                           f"input.shape[:-2], but got {list(tau.shape[:-1])}")
    if tau.dtype != A.dtype:
        raise RuntimeError(f"{_OP}: tau dtype {tau.dtype} does not match input dtype "
                           f"{A.dtype}")


def householder_product(A, tau):
    """H_1 H_2 ... H_k applied to the first n columns of the identity, right to left."""
    _check(A, tau)
    m, n = A.shape[-2:]
    a, t = A.node, tau.node
    identity = eye(m, a)
    reflectors = band(a, -1, lower=True) + _columns(identity, 0, n)
    q = _columns(identity, 0, n)
    for i in reversed(range(tau.shape[-1])):
        v = _columns(reflectors, i, i + 1)                              # (..., m, 1)
        scale = _columns(t, i, i + 1).reshape(t.shape[:-1] + (1, 1)).expand(v.shape)
        q = q - (v * scale) @ (mT(v) @ q)
    return record("linalg_householder_product", q, A.device, [A, tau])


METHODS = [("orgqr", householder_product)]
