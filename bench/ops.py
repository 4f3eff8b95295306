"""Single-op and fused-chain workloads: W3 matmul, W4 the 8-op elementwise chain,
W5 a long sum, a row softmax, a topk and a column gather."""
from __future__ import annotations

import numpy as np

import clgrad as cg

from .registry import Case, randn, try_torch, workload
from .timing import synced

def _copies(a: np.ndarray):
    """a as a clgrad tensor, a as a PyTorch tensor (None without PyTorch), and torch."""
    torch = try_torch()
    return cg.from_numpy(a), torch.from_numpy(a) if torch else None, torch


def _matmul(n: int) -> Case:
    a, b = randn(n, n), randn(n, n)
    ca, ta, torch = _copies(a)
    cb, tb, _ = _copies(b)
    return Case(clgrad=lambda: synced(ca @ cb),
                numpy=lambda: a @ b,
                torch=(lambda: ta @ tb) if torch else None,
                flop=2.0 * n ** 3)


@workload("W3", "matmul 1024^3 f32")
def matmul_1024(quick: bool) -> Case:
    return _matmul(1024)


@workload("W3", "matmul 2048^3 f32")
def matmul_2048(quick: bool) -> Case:
    return _matmul(2048)


def _chain(x, relu, exp, sqrt, abs_):
    return sqrt(abs_(exp((relu(x * 2 + 1) * x) - 0.5) * 0.25 + x))


@workload("W4", "8-op chain, 2^24 f32")
def chain(quick: bool) -> Case:
    a = randn(1 << 24)
    x, t, torch = _copies(a)
    np_relu = lambda v: np.maximum(v, 0)  # noqa: E731
    return Case(
        clgrad=lambda: synced(_chain(x, cg.Tensor.relu, cg.Tensor.exp, cg.Tensor.sqrt,
                                     cg.Tensor.abs)),
        numpy=lambda: _chain(a, np_relu, np.exp, np.sqrt, np.abs),
        torch=(lambda: _chain(t, torch.relu, torch.exp, torch.sqrt, torch.abs)) if torch else None)


@workload("W5", "sum, 2^24 f32")
def long_sum(quick: bool) -> Case:
    a = randn(1 << 24)
    x, t, torch = _copies(a)
    return Case(clgrad=lambda: synced(x.sum()),
                numpy=lambda: a.sum(),
                torch=(lambda: t.sum()) if torch else None)


def _np_softmax(a: np.ndarray) -> np.ndarray:
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@workload("W5", "softmax (4096,1024) dim -1")
def softmax(quick: bool) -> Case:
    a = randn(4096, 1024)
    x, t, torch = _copies(a)
    return Case(clgrad=lambda: synced(x.softmax(-1)),
                numpy=lambda: _np_softmax(a),
                torch=(lambda: torch.softmax(t, -1)) if torch else None)


def _np_topk(a: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    part = np.argpartition(-a, k - 1, axis=-1)[..., :k]
    order = np.take_along_axis(part, np.argsort(-np.take_along_axis(a, part, -1), -1), -1)
    return np.take_along_axis(a, order, -1), order


@workload("W5", "topk 4 of (4096,1024) dim -1")
def topk(quick: bool) -> Case:
    a = randn(4096, 1024)
    x, t, torch = _copies(a)
    return Case(clgrad=lambda: synced(*x.topk(4)),
                numpy=lambda: _np_topk(a, 4),
                torch=(lambda: torch.topk(t, 4)) if torch else None)


@workload("W5", "x[:, i]: 16 columns of (4096,4096)")
def columns(quick: bool) -> Case:
    a = randn(4096, 4096)
    picks = np.random.default_rng(1).integers(0, 4096, 16)
    x, t, torch = _copies(a)
    i = cg.tensor(picks)
    ti = torch.from_numpy(picks) if torch else None
    return Case(clgrad=lambda: synced(x[:, i]),
                numpy=lambda: a[:, picks],
                torch=(lambda: t[:, ti]) if torch else None)
