"""quantile and nanquantile, as PyTorch computes them: each row sorted (the SORT primitive),
the q-th quantile read at rank q (n - 1) (n the count of non-NaN values for nanquantile; a
row with a NaN gives NaN for quantile), rounded or interpolated as `interpolation` says. The
gradient reaches the one or two elements read, through the sort's, and q through the
interpolation weight. Installed on Tensor by tensor.py from METHODS."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir, special
from ..compiler.ir import Node
from .backward import record
from .operands import is_tensor, normalize_dim
from .sorting import _read_at, _sorted_nodes

_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _check(op: str, self, q, interpolation: str) -> None:
    if self.dtype not in (dt.float32, dt.float64):
        raise RuntimeError(f"{op}() input tensor must be either float or double dtype, got "
                           f"{self.dtype.name}")
    if not self.numel():
        raise RuntimeError(f"{op}() input tensor must be non-empty")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{op}() interpolation must be one of linear, lower, higher, "
                           f"midpoint or nearest, but got {interpolation}")
    if not is_tensor(q):
        if not 0 <= q <= 1:
            raise RuntimeError(f"{op}() q must be in the range [0, 1] but got {q}")
        return
    if q.ndim > 1:
        raise RuntimeError(f"{op}() q must be a scalar or 1D tensor, got shape {tuple(q.shape)}")
    if q.dtype != self.dtype:
        raise RuntimeError(f"{op}() q tensor must be same dtype as the input tensor "
                           f"({q.dtype.name} vs {self.dtype.name})")
    values = q.detach().numpy()         # read back, to raise PyTorch's error here
    if ((values < 0) | (values > 1) | (values != values)).any():
        raise RuntimeError(f"{op}() q values must be in the range [0, 1]")


def _ranks(rows: Node, q: Node, ignore_nan: bool) -> Node:
    """For each q (leading axis) and row (last axis kept as 1), the position to read."""
    last = len(rows.shape) - 1
    n = rows.shape[last]
    if ignore_nan:
        count = rows.eq(rows).cast(rows.dtype).sum((last,))
        rank = q * (count - 1)
        return (rank < 0).where(0, rank)    # a row of NaNs only reads its first NaN
    has_nan = rows.ne(rows).cast(dt.int32).sum((last,)) > 0
    return has_nan.where(float(n - 1), q * float(n - 1))


def _quantile(op: str, self, q, dim, keepdim: bool, interpolation: str, ignore_nan: bool):
    _check(op, self, q, interpolation)
    x = self if dim is not None else self.reshape(-1)
    axis = normalize_dim(op, dim, x.ndim) if dim is not None else 0
    values, _ = _sorted_nodes(x, axis, False)
    order = tuple(a for a in range(len(values.shape)) if a != axis) + (axis,)
    rows = values.permute(order)
    k = q.numel() if is_tensor(q) else 1
    wide = (k,) + rows.shape
    ranks_shape = wide[:-1] + (1,)
    if is_tensor(q):
        q_node = q.node.reshape((k,) + (1,) * len(rows.shape)).expand(ranks_shape)
    else:
        q_node = ir.const(q, rows.dtype, ranks_shape)
    rows = rows.reshape((1,) + rows.shape).expand(wide)
    rank = _ranks(rows, q_node, ignore_nan)
    rounded = {"lower": rank.floor, "higher": rank.ceil, "nearest": rank.round}
    if interpolation in rounded:
        rank = rounded[interpolation]()
    last = len(wide) - 1
    below = rank.floor()
    out = _read_at(rows, last, below.cast(dt.int64))
    if interpolation in ("linear", "midpoint"):
        above = _read_at(rows, last, rank.ceil().cast(dt.int64))
        weight = rank.const_like(0.5) if interpolation == "midpoint" else rank - below
        out = special.lerp(out, above, weight)
    shape = _result_shape(self, x, axis, dim, keepdim, k if is_tensor(q) and q.ndim else None)
    inputs = [self, q] if is_tensor(q) else [self]
    return record(op, out.reshape(shape), self.device, inputs)


def _result_shape(self, x, axis: int, dim, keepdim: bool, k: int | None) -> tuple[int, ...]:
    """The reduced shape (kept as 1s when keepdim), after a leading axis for a 1-d q."""
    if not self.ndim:
        shape = ()
    elif dim is None:
        shape = (1,) * self.ndim if keepdim else ()
    else:
        shape = tuple(1 if a == axis else n for a, n in enumerate(x.shape) if keepdim or a != axis)
    return shape if k is None else (k,) + shape


def quantile(self, q, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear"):
    return _quantile("quantile", self, q, dim, keepdim, interpolation, False)


def nanquantile(self, q, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear"):
    return _quantile("nanquantile", self, q, dim, keepdim, interpolation, True)


METHODS = [("quantile", quantile), ("nanquantile", nanquantile)]
