"""One helper for op tests: run the same function on clgrad and on a reference, compare the
forward values and the gradients of every float input.

The reference is PyTorch when it is importable. Without it (or with CLGRAD_TEST_NO_TORCH=1)
the forward values are checked against clgrad's NumPy interpreter of the same graph built in
float64, and the gradients against central finite differences of that float64 graph.
"""
from __future__ import annotations

import importlib
import os

import numpy as np

import clgrad as cg
from clgrad.compiler import interpret
from clgrad.frontend.backward import backward

try:
    if os.environ.get("CLGRAD_TEST_NO_TORCH"):
        raise ImportError("CLGRAD_TEST_NO_TORCH is set")
    import torch
except ImportError:
    torch = None

SEED = 1234
FD_MAX_ELEMENTS = 256       # finite differences check at most this many elements per input


def make(shape, dtype=np.float32, low=-2.0, high=2.0, seed=SEED) -> np.ndarray:
    """A seeded random array: uniform floats in [low, high), ints in [low, high), random bools."""
    rng = np.random.default_rng(seed + 7 * len(shape) + int(np.prod(shape)))
    dtype = np.dtype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if dtype.kind in "iu":
        return rng.integers(int(low), int(high), size=shape).astype(dtype)
    return rng.uniform(low, high, size=shape).astype(dtype)


def library(t):
    """clgrad or torch, whichever t belongs to (the APIs match)."""
    return importlib.import_module(type(t).__module__.split(".")[0])


def F(x):
    """The nn.functional of x's library, so that one lambda runs on both."""
    return library(x).nn.functional


def nn(x):
    """The nn of x's library."""
    return library(x).nn


def _arrays(inputs, dtype, low, high) -> list:
    out = []
    for k, x in enumerate(inputs):
        if isinstance(x, tuple):
            out.append(make(x, dtype, low, high, seed=SEED + k))
        else:
            out.append(x)      # an ndarray, or a Python number passed through as is
    return out


def _flatten(out) -> list:
    return list(out) if isinstance(out, (tuple, list)) else [out]


def _wants_grad(a) -> bool:
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def check(fn, *inputs, dtype=np.float32, grad=True, atol=1e-5, rtol=1e-4, low=-2.0, high=2.0,
          grad_atol=None, grad_rtol=None):
    """Runs fn on clgrad tensors and on reference tensors built from the same arrays; compares
    outputs (values, shapes, dtypes) and, when grad, the gradients of every float input for the
    cotangent-weighted sum of the float outputs. inputs are shapes (random arrays of dtype),
    ndarrays (used as given) or Python numbers. Returns the clgrad outputs."""
    arrays = _arrays(inputs, dtype, low, high)
    grad_atol = atol * 10 if grad_atol is None else grad_atol
    grad_rtol = rtol * 10 if grad_rtol is None else grad_rtol
    ours = [cg.tensor(a, requires_grad=grad and _wants_grad(a)) if isinstance(a, np.ndarray)
            else a for a in arrays]
    outs = _flatten(fn(*ours))
    if torch is not None:
        ref_inputs = [torch.tensor(a, requires_grad=grad and _wants_grad(a))
                      if isinstance(a, np.ndarray) else a for a in arrays]
        refs = _flatten(fn(*ref_inputs))
        _compare_forward(outs, [r.detach().numpy() for r in refs], atol, rtol)
        for k, (r, o) in enumerate(zip(refs, outs)):
            assert str(r.dtype).replace("torch.", "") == o.dtype.name, (r.dtype, o.dtype)
            # (an output that wrongly does not require grad would have no gradient compared)
            assert o.requires_grad == r.requires_grad, f"output {k} requires_grad"
    else:
        refs, nodes, leaves = _float64_graph(fn, arrays)
        _compare_forward(outs, refs, atol, rtol)
    if not grad:
        return outs
    float_outs = [k for k, o in enumerate(outs) if o.dtype.is_float and o.requires_grad]
    cotangents = [make(outs[k].shape, np.float64, seed=SEED + 100 + k) for k in float_outs]
    if not float_outs:
        return outs
    backward([outs[k] for k in float_outs],
             [cg.tensor(c.astype(outs[k].dtype.np)) for k, c in zip(float_outs, cotangents)])
    if torch is not None:
        torch.autograd.backward([refs[k] for k in float_outs],
                                [torch.tensor(c, dtype=refs[k].dtype)
                                 for k, c in zip(float_outs, cotangents)])
        expected = [t.grad.numpy() if isinstance(t, torch.Tensor) and t.requires_grad
                    and t.grad is not None else None for t in ref_inputs]
        ref_wanted = [isinstance(t, torch.Tensor) and t.requires_grad for t in ref_inputs]
    else:
        expected = _finite_differences(nodes, leaves, float_outs, cotangents)
        ref_wanted = [leaf is not None for leaf in leaves]
    for k, (t, want) in enumerate(zip(ours, ref_wanted)):
        if not want:
            continue
        got = None if t.grad is None else t.grad.numpy()
        if expected[k] is None or got is None:    # no path: the other side must be zero
            other = got if expected[k] is None else np.ma.filled(expected[k], 0)
            assert other is None or not np.any(other), f"input {k}: gradient {got} vs {expected[k]}"
            continue
        assert got.shape == expected[k].shape, (k, got.shape, expected[k].shape)
        want, mask = expected[k], np.ma.getmaskarray(expected[k])
        np.testing.assert_allclose(got[~mask], np.ma.getdata(want)[~mask], atol=grad_atol,
                                   rtol=grad_rtol, err_msg=f"gradient of input {k}")
    return outs


def _compare_forward(outs, refs, atol, rtol) -> None:
    assert len(outs) == len(refs), (len(outs), len(refs))
    for k, (o, r) in enumerate(zip(outs, refs)):
        got = o.detach().numpy()
        assert got.shape == np.shape(r), f"output {k}: shape {got.shape} != {np.shape(r)}"
        if got.dtype.kind in "biu":
            np.testing.assert_array_equal(got, r, err_msg=f"output {k}")
        else:
            np.testing.assert_allclose(got, r, atol=atol, rtol=rtol, equal_nan=True,
                                       err_msg=f"output {k}")


def _float64_graph(fn, arrays):
    """fn's outputs computed by the NumPy interpreter on float64 copies of the inputs, the
    output nodes, and for each float input (BufferRef of its leaf, its float64 values)."""
    leaves, ins = [], []
    for a in arrays:
        if _wants_grad(a):
            t = cg.tensor(a.astype(np.float64))
            leaves.append((t.node.arg, a.astype(np.float64)))
            ins.append(t)
        else:
            leaves.append(None)
            ins.append(cg.tensor(a) if isinstance(a, np.ndarray) else a)
    nodes = [o.node for o in _flatten(fn(*ins))]
    values = interpret.evaluate(nodes, dict(leaf for leaf in leaves if leaf is not None))
    return [v.astype(n.dtype.np) for v, n in zip(values, nodes)], nodes, leaves


def _finite_differences(nodes, leaves, float_outs, cotangents, eps=1e-3) -> list:
    """Central differences of sum(cotangent * output) in float64, one input element at a time.
    Elements where the one-sided slopes disagree sit on a kink or a jump (relu at 0, ties of
    max, round at .5), where the reference's choice of subgradient is a convention: those
    elements are left out (masked), as are all but a sample of a large input's. eps is large
    enough that a float32 cast inside the graph does not swamp it."""
    current = dict(leaf for leaf in leaves if leaf is not None)
    roots = [nodes[k] for k in float_outs]

    def loss() -> float:
        values = interpret.evaluate(roots, current)
        return sum(float(np.sum(v * c)) for v, c in zip(values, cotangents))

    base = loss()
    expected = []
    for leaf in leaves:
        if leaf is None:
            expected.append(None)
            continue
        x = current[leaf[0]]
        g = np.ma.masked_all(x.shape, np.float64)
        everything = list(np.ndindex(x.shape))
        picks = np.random.default_rng(SEED).permutation(len(everything))[:FD_MAX_ELEMENTS]
        for i in (everything[p] for p in sorted(picks)):
            saved = x[i]
            x[i] = saved + eps
            up = (loss() - base) / eps
            x[i] = saved - eps
            down = (base - loss()) / eps
            x[i] = saved
            if abs(up - down) <= 1e-2 * (1 + abs(up)):
                g[i] = (up + down) / 2
        expected.append(g)
    return expected
