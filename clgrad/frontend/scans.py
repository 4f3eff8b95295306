"""Cumulative ops along one dim (cumsum, cumprod, cummax, cummin, logcumsumexp), each one
SCAN node: a kernel that walks each row once. Their gradients are scans too
(compiler/scans.py). Installed on Tensor by tensor.py from METHODS."""
from __future__ import annotations

from collections import namedtuple

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.scans import extreme_positions, kept_scan, split_scan
from .backward import record
from .operands import normalize_dim
from .reductions import _compared

CummaxResult = namedtuple("cummax", ["values", "indices"])
CumminResult = namedtuple("cummin", ["values", "indices"])
# Sums and products this long over this few rows scan in blocks (split_scan): one work-item
# per row would leave the other cores idle.
_SPLIT_MIN_LENGTH = 1 << 15
_SPLIT_MAX_ROWS = 64
_SPLIT_BLOCK = 1000      # not a power of two: rows that far apart collide in the caches


def _scanned(op: str, x, dim: int, node: ir.Node, combine: str) -> tuple[ir.Node, int]:
    """node scanned along dim of x, and the axis (a 0-d tensor's dim 0 or -1 is its one
    element)."""
    axis = normalize_dim(op, dim, x.ndim)
    row = node.reshape((1,)) if not x.ndim else node
    length = row.shape[axis]
    if combine in ("add", "logaddexp") and length == 1 and row.dtype.is_float:
        row = row + 0.0     # these start at +0.0 and -inf (ir.scan of one element is itself)
    if combine in ("add", "mul") and length >= _SPLIT_MIN_LENGTH \
            and row.numel // length < _SPLIT_MAX_ROWS:
        return split_scan(row, axis, combine, _SPLIT_BLOCK).reshape(x.shape), axis
    return ir.scan(row, axis, combine).reshape(x.shape), axis


def _accumulated(op: str, combine: str):
    """cumsum or cumprod: integer and bool inputs accumulate in int64, as PyTorch's."""
    def method(self, dim: int, *, dtype=None):
        target = dtype or (self.dtype if self.dtype.is_float else dt.int64)
        out, _ = _scanned(op, self, dim, self.node.cast(target), combine)
        return record(op, out, self.device, [self])
    method.__name__ = op
    return method


def logcumsumexp(self, dim: int):
    if not self.dtype.is_float:
        raise NotImplementedError(f"logcumsumexp: not implemented for {self.dtype.name} "
                                  f"input of shape {tuple(self.shape)}")
    # (a 16-bit float's scan accumulates in float32 and rounds each result, as PyTorch's,
    # whose backward formula then reads it)
    out, axis = _scanned("logcumsumexp", self, dim, self.node, "logaddexp")
    # rows of one element, which no scan computes, take the rule of longer ones as PyTorch's
    # do: exp(log|g| - out + x), NaN at ±inf, 0 for a NaN g, and at a large x |g| is lost to
    # rounding (a 0-d tensor's gradient is g)
    one = self.ndim and self.shape[axis] == 1
    derivation = kept_scan(self.node, axis, "logaddexp") if one else None
    return record("logcumsumexp", out, self.device, [self], derivation=derivation)


def _running_extreme(op: str, combine: str, result):
    """cummax or cummin: the running values and where each was found (PyTorch's: the last
    element equal to it; once a NaN has come, the last NaN)."""
    def method(self, dim: int):
        from .tensor import Tensor
        node = _compared(self.node)
        values, axis = _scanned(op, self, dim, node, combine)
        row, running = (node, values) if self.ndim else (node.reshape((1,)), values.reshape((1,)))
        indices = extreme_positions(row, running, axis).reshape(self.shape)
        return result(record(op, values, self.device, [self]), Tensor(indices, self.device))
    method.__name__ = op
    return method


METHODS = [
    ("cumsum", _accumulated("cumsum", "add")),
    ("cumprod", _accumulated("cumprod", "mul")),
    ("cummax", _running_extreme("cummax", "max", CummaxResult)),
    ("cummin", _running_extreme("cummin", "min", CumminResult)),
    ("logcumsumexp", logcumsumexp),
]
