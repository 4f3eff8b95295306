"""repr of tensors in PyTorch's format."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt

_DEFAULT_DTYPES = (dt.float32, dt.int64, dt.bool_)


def _float_formatter(values: np.ndarray):
    finite = np.abs(values[np.isfinite(values)]) if values.size else values
    if finite.size and np.all(finite == np.round(finite)) and finite.max() < 1e8:
        return lambda v: f"{v:.0f}." if np.isfinite(v) else str(v)
    nonzero = finite[finite != 0]
    if nonzero.size and (nonzero.max() >= 1e8 or nonzero.min() < 1e-4 or
                         nonzero.max() / nonzero.min() >= 1e3 and nonzero.max() >= 1e3):
        return lambda v: f"{v:.4e}"
    return lambda v: f"{v:.4f}"


def tensor_repr(t) -> str:
    values = t.detach().numpy()
    prefix = "tensor("
    if values.dtype.kind == "f":
        fmt = _float_formatter(values.astype(np.float64))
        body = np.array2string(values, separator=", ", prefix=prefix,
                               formatter={"float_kind": fmt}, threshold=1000, edgeitems=3)
    else:
        body = np.array2string(values, separator=", ", prefix=prefix, threshold=1000,
                               formatter={"bool": lambda v: "True" if v else "False"})
    extras = []
    if values.size == 0:
        extras.append(f"size={tuple(t.shape)}")
    if t.dtype not in _DEFAULT_DTYPES:
        extras.append(f"dtype=clgrad.{t.dtype.name}")
    if t.grad_fn is not None:
        extras.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        extras.append("requires_grad=True")
    return prefix + body + "".join(", " + e for e in extras) + ")"
