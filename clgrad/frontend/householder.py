"""Householder reflectors H_i = I - tau_i v_i v_i^T, v_i column i of a matrix below its
diagonal with a 1 on it. linalg.householder_product (torch.orgqr): the first n columns of their
product; each reflector is two matrix products, so the gradient comes from theirs. geqrf: the
reflectors of A's QR decomposition, as LAPACK's (no gradient, as PyTorch has none)."""
from __future__ import annotations

from collections import namedtuple

from ..compiler.factorizations import _columns, band, eye, mT
from .backward import record
from .elementwise import where
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


GeqrfResult = namedtuple("geqrf", ["a", "tau"])


def _reflector(column, rows, i: int):
    """LAPACK's dlarfg for column i: (v, tau, R's new diagonal beta) of the reflector that
    zeroes the column below row i; tau = 0 (no reflection) where it is zero already."""
    below = rows > i
    alpha = column[..., i:i + 1, :]
    rest = (column * column * below).sum(-2, keepdim=True)
    norm = (alpha * alpha + rest).sqrt()
    beta = where(alpha >= 0, -norm, norm)
    skip = rest == 0
    tau = where(skip, 0.0, (beta - alpha) / beta)
    v = where(below, column / where(skip, 1.0, alpha - beta), (rows == i).to(column.dtype))
    return v, tau


def geqrf(input):
    """(a, tau): R on and above a's diagonal, below it the reflectors whose product is Q."""
    check_matrix("geqrf", input, "input")
    from .creation import arange
    from .joining import cat
    r = input.detach().clone()
    m, n = r.shape[-2:]
    rows = arange(m, device=r.device).reshape(m, 1)
    columns, taus = [], []
    for i in range(min(m, n)):
        v, tau = _reflector(r[..., i:i + 1], rows, i)
        r = r - (tau * v) @ (v.mT @ r)
        columns.append(where(rows > i, v, r[..., i:i + 1]))
        taus.append(tau.reshape(*tau.shape[:-2], 1))
    columns.append(r[..., len(taus):])
    tau = cat(taus, -1) if taus else r.new_zeros(*r.shape[:-2], 0)
    return GeqrfResult(cat(columns, -1), tau)


METHODS = [("orgqr", householder_product), ("geqrf", geqrf)]
