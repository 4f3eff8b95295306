"""Householder reflectors H_i = I - tau_i v_i v_i^T, v_i column i of a matrix below its
diagonal with a 1 on it. linalg.householder_product (torch.orgqr): the first n columns of their
product Q; ormqr: Q (or Q^T) times another matrix, on either side. Each reflector is two
matrix products, so the gradients come from theirs. geqrf: the reflectors of A's QR
decomposition, as LAPACK's (no gradient, as PyTorch has none)."""
from __future__ import annotations

from collections import namedtuple

from ..compiler.dtype import float32, float64
from ..compiler.factorizations import _columns, band, eye, mT
from .backward import record
from .elementwise import where
from .matrices import check_matrix, torch_name

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


def _reflectors(a, t):
    """Each reflector's (v_i (..., m, 1), tau_i broadcast to its shape), of the first k."""
    m, k = a.shape[-2], t.shape[-1]
    vectors = _columns(band(a, -1, lower=True), 0, k) + _columns(eye(m, a), 0, k)
    for i in range(k):
        v = _columns(vectors, i, i + 1)
        yield v, _columns(t, i, i + 1).reshape(t.shape[:-1] + (1, 1)).expand(v.shape)


def householder_product(A, tau):
    """H_1 H_2 ... H_k applied to the first n columns of the identity, right to left."""
    _check(A, tau)
    m, n = A.shape[-2:]
    q = _columns(eye(m, A.node), 0, n)
    for v, scale in reversed(list(_reflectors(A.node, tau.node))):
        q = q - (v * scale) @ (mT(v) @ q)
    return record("linalg_householder_product", q, A.device, [A, tau])


def _check_ormqr(input, tau, other, left: bool) -> None:
    """PyTorch's checks, in its order."""
    for name, x in (("input", input), ("other", other)):
        if x.ndim < 2:
            raise RuntimeError(f"torch.ormqr: {name} must have at least 2 dimensions.")
    side = -2 if left else -1
    if other.shape[side] != input.shape[-2]:
        raise RuntimeError(f"torch.ormqr: other.shape[{side}] must be equal to "
                           f"input.shape[-2]")
    if tau.ndim == 0 or tau.shape[-1] != min(other.shape[side], input.shape[-1]):
        raise RuntimeError(f"torch.ormqr: tau.shape[-1] must be equal to "
                           f"min(other.shape[{side}], input.shape[-1])")
    for name, x in (("tau", tau), ("other", other)):
        wanted = input.ndim - 1 if name == "tau" else input.ndim
        if x.ndim != wanted:
            relation = "one dimension less than" if name == "tau" else \
                "the same number of dimensions as"
            raise RuntimeError(f"torch.ormqr: Expected {name} to have {relation} input, but got "
                               f"{name}.ndim equal to {x.ndim} and input.ndim is equal to "
                               f"{input.ndim}")
    for name, x in (("tau", tau), ("other", other)):
        batch = tuple(x.shape[:input.ndim - 2])
        if batch != tuple(input.shape[:-2]):
            raise RuntimeError(f"torch.ormqr: Expected batch dimensions of {name} to be equal "
                               f"to input.shape[:-2], but got {list(batch)}")
    for name, x in (("tau", tau), ("other", other)):
        if x.dtype != input.dtype:      # ("dtypeDouble": PyTorch's spacing)
            raise RuntimeError(f"torch.ormqr: Expected input and {name} to have the same "
                               f"dtype, but input has dtype{torch_name(input.dtype)} and "
                               f"{name} has dtype {torch_name(x.dtype)}")
    if input.dtype not in (float32, float64):
        raise NotImplementedError(f"\"ormqr_cpu\" not implemented for "
                                  f"'{torch_name(input.dtype)}'")


def ormqr(input, tau, other, left: bool = True, transpose: bool = False):
    """op(Q) other (left) or other op(Q) (right), where Q = H_1 H_2 ... H_k from input's
    reflectors and tau (geqrf's) and op(Q) is Q^T if transpose. Each H_i is symmetric, so
    op(Q) applies the reflectors one by one, right to left for Q other and other Q^T."""
    _check_ormqr(input, tau, other, left)
    c = other.node
    reflectors = list(_reflectors(input.node, tau.node))
    if left != transpose:
        reflectors.reverse()
    for v, scale in reflectors:
        if left:
            c = c - (v * scale) @ (mT(v) @ c)
        else:
            c = c - (c @ v) @ mT(v * scale)
    return record("ormqr", c, input.device, [input, tau, other])


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


METHODS = [("orgqr", householder_product), ("geqrf", geqrf), ("ormqr", ormqr)]
