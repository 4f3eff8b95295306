"""repr of tensors in PyTorch's format (torch/_tensor_str.py's layout rules: one width for
every element, right-aligned, wrapped to 80 columns, long tensors summarized), with the
options torch.set_printoptions sets."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..compiler import dtype as dt
from .tensor import host_values

_DEFAULT_DTYPES = (dt.float32, dt.int64, dt.bool_)


@dataclasses.dataclass
class _PrintOptions:
    precision: int = 4
    threshold: float = 1000
    edgeitems: int = 3
    linewidth: int = 80
    sci_mode: bool | None = None        # None: chosen from the values


OPTIONS = _PrintOptions()
_PROFILES = {"default": _PrintOptions(), "short": _PrintOptions(2, 1000, 2, 80),
             "full": _PrintOptions(4, math.inf, 3, 80)}


def set_printoptions(precision: int | None = None, threshold: float | None = None,
                     edgeitems: int | None = None, linewidth: int | None = None,
                     profile: str | None = None, sci_mode: bool | None = None) -> None:
    """How tensors print: digits after the point, the element count above which a tensor
    is summarized, the elements shown at each edge then, the line width, and scientific
    notation (None: chosen from the values). A profile ("default", "short", "full") sets the
    first four, the other arguments then override it; sci_mode is always set."""
    if profile is not None:
        if profile in _PROFILES:    # (PyTorch ignores an unknown profile too)
            chosen = _PROFILES[profile]
            OPTIONS.precision, OPTIONS.threshold = chosen.precision, chosen.threshold
            OPTIONS.edgeitems, OPTIONS.linewidth = chosen.edgeitems, chosen.linewidth
    for name, value in (("precision", precision), ("threshold", threshold),
                        ("edgeitems", edgeitems), ("linewidth", linewidth)):
        if value is not None:
            setattr(OPTIONS, name, value)
    OPTIONS.sci_mode = sci_mode


def _summarized(values: np.ndarray) -> np.ndarray:
    """The elements shown when a tensor is summarized (the edges of every dim), flattened."""
    if values.ndim == 0:
        return values.reshape(1)
    edge = OPTIONS.edgeitems
    if values.shape[0] > 2 * edge:
        values = np.concatenate([values[:edge], values[-edge:]])
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
        if OPTIONS.sci_mode is not None:
            self.sci_mode = OPTIONS.sci_mode
        self.width = max(len(self._plain(v)) for v in finite.tolist())

    def _plain(self, value) -> str:
        if not self.floating:
            return str(value)
        if self.sci_mode:
            return f"{value:.{OPTIONS.precision}e}"
        if self.int_mode:
            return f"{value:.0f}" + ("." if math.isfinite(value) else "")
        return f"{value:.{OPTIONS.precision}f}"

    def __call__(self, value) -> str:
        return self._plain(value).rjust(self.width)


def _vector(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    per_line = max(1, (OPTIONS.linewidth - indent) // (fmt.width + 2))
    items = values.tolist()
    edge = OPTIONS.edgeitems
    if summarize and len(items) > 2 * edge:
        data = [fmt(v) for v in items[:edge]] + [" ..."] + [fmt(v) for v in items[-edge:]]
    else:
        data = [fmt(v) for v in items]
    lines = [", ".join(data[i:i + per_line]) for i in range(0, len(data), per_line)]
    return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"


def _body(values: np.ndarray, indent: int, summarize: bool, fmt: _Formatter) -> str:
    if values.ndim == 0:
        return fmt(values.item())
    if values.ndim == 1:
        return _vector(values, indent, summarize, fmt)
    rows, edge = range(len(values)), OPTIONS.edgeitems
    if summarize and len(values) > 2 * edge:
        parts = [_body(values[i], indent + 1, summarize, fmt) for i in rows[:edge]] + \
            ["..."] + [_body(values[i], indent + 1, summarize, fmt) for i in rows[-edge:]]
    else:
        parts = [_body(values[i], indent + 1, summarize, fmt) for i in rows]
    return "[" + ("," + "\n" * (values.ndim - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_repr(t) -> str:
    values = host_values(t.detach())
    prefix = "tensor("
    indent = len(prefix)
    summarize = values.size > OPTIONS.threshold
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
        if last_line + len(suffix) + 2 > OPTIONS.linewidth:
            text += ",\n" + " " * indent + suffix
            last_line = indent + len(suffix)
        else:
            text += ", " + suffix
            last_line += len(suffix) + 2
    return text + ")"
