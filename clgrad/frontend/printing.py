"""repr of tensors in PyTorch's format (torch/_tensor_str.py's layout rules: one width for
every element, right-aligned, wrapped to 80 columns, long tensors summarized)."""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from .tensor import host_values

_DEFAULT_DTYPES = (dt.float32, dt.int64, dt.bool_)
PRECISION, THRESHOLD, EDGEITEMS, LINEWIDTH = 4, 1000, 3, 80


def _summarized(values: np.ndarray) -> np.ndarray:
    """The elements shown when a tensor is summarized (the edges of every dim), flattened."""
    if values.ndim == 0:
        return values.reshape(1)
    if values.shape[0] > 2 * EDGEITEMS:
        values = np.concatenate([values[:EDGEITEMS], values[-EDGEITEMS:]])
    if values.ndim == 1:
        return values
    return np.concatenate([_summarized(v) for v in values]) if len(values) else values.reshape(-1)


class _Formatter:
    """Picks fixed, integer-valued or scientific notation from the values, and one width."""

    def __init__(self, values: np.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode, self.sci_mode = True, False
        if not self.floating:
            self.width = max((len(str(v)) for v in values.tolist()), default=1)
            return
        values = values.astype(np.float64)
        finite = values[np.isfinite(values) & (values != 0)]
        self.width = 1
        if finite.size == 0:
            return
        big, small = np.abs(finite).max(), np.abs(finite).min()
        self.int_mode = bool(np.all(finite == np.ceil(finite)))
        too_wide = big / small > 1000.0 or big > 1.0e8
        self.sci_mode = too_wide if self.int_mode else (too_wide or small < 1.0e-4)
        self.width = max(len(self._plain(v)) for v in finite.tolist())

    def _plain(self, value) -> str:
        if not self.floating:
            return str(value)
        if self.sci_mode:
            return f"{value:.{PRECISION}e}"
        if self.int_mode:
            return f"{value:.0f}" + ("." if math.isfinite(value) else "")
        return f"{value:.{PRECISION}f}"

    def __call__(self, value) -> str:
        return self._plain(value).rjust(self.width)


def _vector(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, (LINEWIDTH - indent) // (fmt.width + 2))
    items = values.tolist()
    if summarize and len(items) > 2 * EDGEITEMS:
        data = [fmt(v) for v in items[:EDGEITEMS]] + [" ..."] + \
            [fmt(v) for v in items[-EDGEITEMS:]]
    else:
        data = [fmt(v) for v in items]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    rows = range(len(values))
    if summarize and len(values) > 2 * EDGEITEMS:
        parts = [_body(values[i], indent + 1, summarize, fmt) for i in rows[:EDGEITEMS]] + \
            ["..."] + [_body(values[i], indent + 1, summarize, fmt) for i in rows[-EDGEITEMS:]]
    else:
        parts = [_body(values[i], indent + 1, summarize, fmt) for i in rows]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_repr(t) -> str:
    values = host_values(t.detach())
    prefix = "tensor("
    indent = len(prefix)
    summarize = values.size > THRESHOLD
    suffixes = []
    if values.size == 0:
        body = "[]"
        if values.shape != (0,):
            suffixes.append(f"size={tuple(t.shape)}")
    else:
        shown = _summarized(values) if summarize else values.reshape(-1)
        body = _body(values, indent, summarize, _Formatter(shown))
    if t.dtype not in _DEFAULT_DTYPES:
        suffixes.append(f"dtype=clgrad.{t.dtype.name}")
    if t.grad_fn is not None:
        suffixes.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t.requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last_line = len(text.rsplit("\n", 1)[-1])
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > LINEWIDTH:
            text += ",\n" + " " * indent + suffix
            last_line = indent + len(suffix)
        else:
            text += ", " + suffix
            last_line += len(suffix) + 2
    return text + ")"
