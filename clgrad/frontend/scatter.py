"""Writing values at indices, as PyTorch's: scatter, scatter_add, scatter_reduce, index_add,
index_reduce, index_copy, index_fill, index_put, put and take. Each is a scatter of the source into the
flat elements of self its indices name (ir.scatter: a kernel whose cost is linear in the
number of indices), then an elementwise combine with self. Indices are read back when the op
is recorded, to raise PyTorch's errors for those out of range."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from ..compiler.ops import Op
from . import indexing
from .accumulated import accumulated
from .backward import record
from .composite_methods import _in_place
from .formula_steps import gradient_steps
from .grad_mode import is_grad_enabled
from .operands import from_opmath, is_tensor, lift, normalize_dim, opmath

_MODES = {"sum": "add", "prod": "prod", "amax": "amax", "amin": "amin"}


# ---- checks ----

def _index_dtype(op: str, index) -> None:
    if not is_tensor(index) or index.dtype not in (dt.int32, dt.int64):
        got = index.dtype.name if is_tensor(index) else type(index).__name__
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index but got: {got}")


def _first_outside(index, low: int, high: int) -> int | None:
    """The first index value outside [low, high), or None (this reads the index back)."""
    if not index.numel():
        return None
    values = index.numpy().reshape(-1)
    bad = values[(values < low) | (values >= high)]
    return int(bad[0]) if bad.size else None


def _check_along(op: str, self, dim: int, index, src) -> None:
    """scatter's rules: index, self and src have one rank; index fits in src, and in self
    apart from dim; its values lie in [0, self.size(dim))."""
    _index_dtype(op, index)
    if index.numel() and index.ndim != self.ndim:
        raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions as "
                           f"self tensor ({index.ndim} vs {self.ndim})")
    if is_tensor(src):
        if src.dtype != self.dtype:
            raise RuntimeError(f"{op}(): Expected self.dtype to be equal to src.dtype "
                               f"({self.dtype.name} vs {src.dtype.name})")
        if index.numel() and src.ndim != index.ndim:
            raise RuntimeError(f"{op}(): Index tensor must have the same number of dimensions "
                               f"as src tensor ({index.ndim} vs {src.ndim})")
    fits = all(i <= n for a, (i, n) in enumerate(zip(index.shape, self.shape)) if a != dim)
    if is_tensor(src):
        fits = fits and all(i <= s for i, s in zip(index.shape, src.shape))
    if index.numel() and not fits:
        src_text = f" and to be smaller size than src {list(src.shape)}" if is_tensor(src) else ""
        raise RuntimeError(f"{op}(): Expected index {list(index.shape)} to be smaller than self "
                           f"{list(self.shape)} apart from dimension {dim}{src_text}")
    _check_in_dim(op, self, dim, index, RuntimeError)


def _check_in_dim(op: str, self, dim: int, index, error, negative: bool = False) -> int:
    """Raises error unless index's values lie in [0, n), or [-n, n) when negative, for n
    self's size along dim; returns n."""
    n = self.shape[dim] if self.ndim else 1
    bad = _first_outside(index, -n if negative else 0, n)
    if bad is not None:
        raise error(f"{op}(): index {bad} is out of bounds for dimension {dim} with size {n}")
    return n


# ---- a source scattered into self's elements ----

def _destinations(shape: tuple[int, ...], dim: int, index: Node) -> Node:
    """For each position of index, the flat offset into shape of that position with its
    coordinate along dim replaced by the index there."""
    flat, stride = None, 1
    for axis in reversed(range(len(index.shape))):
        n = index.shape[axis]
        if axis == dim:
            coord = index.cast(dt.int64)
        else:
            ones = tuple(n if a == axis else 1 for a in range(len(index.shape)))
            coord = ir.iota(n, dt.int64).reshape(ones).expand(index.shape)
        term = coord * stride if stride != 1 else coord
        flat = term if flat is None else flat + term
        stride *= shape[axis]
    return flat


def _flat(self, dim: int, index) -> Node:
    """_destinations for self and index, a 0-d one taken as one of shape (1,)."""
    node = index.node if index.ndim else index.node.reshape((1,))
    return _destinations(self.shape or (1,), dim, node)


def _scattered(shape: tuple[int, ...], flat: Node, values: Node, mode: str) -> Node:
    """values combined by mode into the elements of shape that flat names."""
    rows = math.prod(shape)
    return ir.scatter(flat, values.reshape(flat.shape + (1,)), rows, mode).reshape(shape)


def _added_onto(x: Node, flat: Node, values: Node) -> Node:
    """x plus the values summed into the elements flat names, as PyTorch's index_add_,
    scatter_add_ and scatter_reduce's sum: a 16-bit float's in float32, x among the terms,
    rounded once (not the values' sum rounded, then added to x: fuzz seed 99002097)."""
    return from_opmath(opmath(x) + _scattered(x.shape, flat, opmath(values), "add_to"), x)


def _accumulated_flat(x: Node, flat: Node, values: Node) -> Node:
    """x with values (flat's shape) added onto the elements flat names, as PyTorch's put_ and
    index_put_ with accumulate (accumulated)."""
    rows = x.reshape((x.numel, 1))
    return accumulated(rows, flat, values.reshape(flat.shape + (1,))).reshape(x.shape)


def _marked(shape: tuple[int, ...], flat: Node) -> Node:
    """Whether flat names each element of shape."""
    return _scattered(shape, flat, ir.const(True, dt.bool_, flat.shape), "replace")


def _replaced(x: Node, flat: Node, values: Node) -> Node:
    """x with the elements flat names replaced by values (one of those landing on an element
    wins, as in PyTorch)."""
    placed = _scattered(x.shape, flat, values, "replace")
    return _marked(x.shape, flat).where(placed, x)


def _landed(value: Node, flat: Node) -> Node:
    """value (self's shape) at the elements flat names: what each source element landed on."""
    rows = value.reshape((value.numel, 1))
    return rows.gather(flat).reshape(flat.shape)


def _source(self, index, src, flat: Node) -> Node:
    """src (a tensor, read where index lies, or a number) as a node of flat's shape."""
    if not is_tensor(src):
        return lift(src, self.dtype, flat.shape)
    return src.node.shrink(tuple((0, n) for n in index.shape)).reshape(flat.shape)


def _dim(op: str, self, dim: int) -> int:
    return normalize_dim(op, dim, self.ndim) if self.ndim else 0


# ---- scatter, scatter_add, scatter_reduce ----

def scatter(self, dim: int, index, src=None, *, value=None, reduce=None):
    src = value if src is None else src
    if src is None:
        raise TypeError("scatter() missing 1 required positional argument: 'src' or 'value'")
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(f"scatter(): reduce argument must be either add or multiply, "
                               f"got {reduce}")
        if not is_tensor(src):
            src = self.new_full(index.shape, src)
        return scatter_reduce(self, dim, index, src, "sum" if reduce == "add" else "prod")
    dim = _dim("scatter", self, dim)
    _check_along("scatter", self, dim, index, src)
    flat = _flat(self, dim, index)
    out = _replaced(self.node, flat, _source(self, index, src, flat))
    if not is_tensor(src):
        return record("scatter_value", out, self.device, [self])
    return record("scatter", out, self.device, [self, src])


def scatter_add(self, dim: int, index, src):
    dim = _dim("scatter_add", self, dim)
    _check_along("scatter_add", self, dim, index, src)
    flat = _flat(self, dim, index)
    added = _added_onto(self.node, flat, _source(self, index, src, flat))
    return record("scatter_add", added, self.device, [self, src])


def scatter_reduce(self, dim: int, index, src, reduce: str, *, include_self: bool = True):
    reduce = {"max": "amax", "min": "amin"}.get(reduce, reduce)    # PyTorch's aliases
    if reduce not in ("sum", "prod", "mean", "amax", "amin"):
        raise RuntimeError(f"reduce argument must be either sum, prod, mean, amax or amin, "
                           f"got {reduce}")
    dim = _dim("scatter_reduce", self, dim)
    _check_along("scatter_reduce", self, dim, index, src)
    flat = _flat(self, dim, index)
    values = _source(self, index, src, flat)
    return _reduce_into("scatter_reduce", self, src, flat, values, reduce, include_self)


def _reduce_into(op: str, self, src, flat: Node, values: Node, reduce: str,
                 include_self: bool):
    """self with values (src's, in flat's shape) reduced into the elements flat names."""
    written = _marked(self.shape, flat)
    out = _reduced(self.node, flat, values, reduce, include_self, written)
    if reduce in ("prod", "amax", "amin") and is_grad_enabled() and \
            (self.requires_grad or src.requires_grad):
        # the primitives' gradient is not PyTorch's here: a zero carrying PyTorch's is added
        # (where the carrier is finite: inf - inf would make the value NaN)
        carrier = _carrier(self.node, flat, values, reduce, include_self, written, out)
        value, fixed = ir.detach(out), ir.detach(carrier)
        out = (fixed - fixed).eq(0).where(value + (carrier - fixed), value)
    return record(op, out, self.device, [self, src])


def _reduced(x: Node, flat: Node, values: Node, reduce: str, include_self: bool,
             written: Node) -> Node:
    """x with values reduced into the elements flat names, self's value among them when
    include_self; elements nothing lands on keep x's."""
    if reduce == "mean":     # (a sum without self starts from +0.0, as PyTorch's)
        total = _added_onto(x, flat, values) if include_self else \
            _scattered(x.shape, flat, values, "add")
        count = _scattered(x.shape, flat, ir.const(1, x.dtype, flat.shape), "add")
        if include_self:
            count = count + 1
        return written.where(total / count if x.dtype.is_float else _floor_divide(total, count), x)
    if reduce == "sum" and include_self:
        return _added_onto(x, flat, values)
    combined = _scattered(x.shape, flat, values, _MODES[reduce])
    if not include_self:
        return written.where(combined, x)
    if reduce == "prod":
        return x * combined
    keeps_self = (combined < x) if reduce == "amax" else (x < combined)
    return (keeps_self | x.ne(x)).where(x, combined)    # a NaN in self stays, as in PyTorch


def _floor_divide(a: Node, b: Node) -> Node:
    """a // b rounded toward -inf (PyTorch's integer mean), from C's truncating division."""
    q = a / b
    return ((a % b).ne(0) & (a < 0).ne(b < 0)).where(q - 1, q)


def _carrier(x: Node, flat: Node, values: Node, reduce: str, include_self: bool,
             written: Node, out: Node) -> Node:
    """x and values times constant weights, summed where the values land: its gradient is
    PyTorch's scatter_reduce gradient, each weight the derivative of the result by that
    element. amax/amin share the gradient evenly among the elements equal to the result;
    prod's is the product of the others, built without dividing by a zero."""
    landed = _landed(out, flat)
    if reduce == "prod":
        one = ir.const(1, x.dtype, x.shape)
        nonzero_self = x.eq(0).where(one, x)
        w_self = _reduced(nonzero_self, flat, values, "prod", include_self, written) / nonzero_self
        zero = values.eq(0)
        zeros = _landed(_scattered(x.shape, flat, zero.cast(dt.int32), "add"), flat)
        single = zero & zeros.eq(1)     # a lone zero: its weight is the product of the rest
        ones = ir.const(1, x.dtype, values.shape)
        others = _reduced(x, flat, single.where(ones, values), "prod", include_self, written)
        w_src = single.where(_landed(others, flat), landed / zero.where(ones, values))
    else:
        hit_src = values.eq(landed).cast(x.dtype)
        # an equal self counts even when not included, as in PyTorch (then it gets none)
        hit_self = x.eq(out).cast(x.dtype)
        count = hit_self + _scattered(x.shape, flat, hit_src, "add")
        w_self, w_src = hit_self / count, hit_src / _landed(count, flat)
    if not include_self:
        w_self = written.where(0, w_self)
    return x * ir.detach(w_self) + _scattered(x.shape, flat, values * ir.detach(w_src),
                                              "add_to")


# ---- index_add, index_copy, index_fill: whole slices along dim ----

def _vector_index(op: str, index) -> None:
    _index_dtype(op, index)
    if index.ndim > 1:
        raise IndexError(f"{op}(): Index is supposed to be a vector, but got dim: {index.ndim} "
                         f"with size: {list(index.shape)}")


def _check_slices(op: str, self, dim: int, index, source, out_of_range) -> None:
    """index_add's and index_copy's rules: a vector of indices in [0, self.size(dim)), one per
    slice of source, which is shaped like self elsewhere. An index out of range raises
    out_of_range (PyTorch's type differs between the two)."""
    _vector_index(op, index)
    if source.dtype != self.dtype:
        raise RuntimeError(f"{op}(): self ({self.dtype.name}) and source ({source.dtype.name}) "
                           f"must have the same scalar type")
    along = source.shape[dim] if source.ndim else 1
    if index.numel() != along:
        raise RuntimeError(f"{op}(): Number of indices ({index.numel()}) should be equal to "
                           f"source.size(dim): ({along}), for dim: {dim}")
    others = [n for a, n in enumerate(self.shape) if a != dim]
    if source.ndim and [n for a, n in enumerate(source.shape) if a != dim] != others:
        raise RuntimeError(f"{op}(): source tensor shape must match self tensor shape, "
                           f"excluding the specified dimension. Got self.shape = "
                           f"{list(self.shape)} source.shape = {list(source.shape)}")
    _check_in_dim(op, self, dim, index, out_of_range)


def _slices(self, dim: int, index: Node) -> Node:
    """The flat offsets into self of the elements of a source shaped like self but with
    index.numel slices along dim, slice k going to slice index[k] of self."""
    k = index.numel
    shape = tuple(k if a == dim else n for a, n in enumerate(self.shape)) or (1,)
    picked = index.reshape(tuple(k if a == dim else 1 for a in range(len(shape))))
    return _destinations(self.shape or (1,), dim, picked.expand(shape))


def index_add(self, dim: int, index, source, *, alpha=1):
    dim = _dim("index_add", self, dim)
    _check_slices("index_add_", self, dim, index, source, RuntimeError)
    # PyTorch's kernel adds slice by slice (each step rounded, alpha times a value rounded
    # first), but as its scatter_add_ along the first or last of 2 dims or more by an int64
    # index with alpha 1. (Where a slice's elements lie side by side, those in whole vectors
    # of its CPU's width take a + alpha * b rounded once: a 16-bit float's an ulp apart there)
    by_slices = not (alpha == 1 and self.ndim > 1 and dim in (0, self.ndim - 1)
                     and index.dtype == dt.int64)

    def added(values: Node) -> Node:
        if by_slices:
            return _accumulated_slices(self.node, dim, index.node, values)
        flat = _slices(self, dim, index.node)
        return _added_onto(self.node, flat, values.reshape(flat.shape))
    if alpha == 1:
        return record("index_add", added(source.node), self.device, [self, source])
    # (alpha rounded to a 16-bit type as the values' is; source's gradient is g's slices
    # times alpha whole, rounded once, as PyTorch's)
    derivation = added(gradient_steps(source.node, [(Op.MUL, alpha)], source.dtype)) \
        if source.dtype.is_16_bit_float else None
    return record("index_add", added(source.node * alpha), self.device, [self, source],
                  derivation=derivation)


def _accumulated_slices(x: Node, dim: int, index: Node, source: Node) -> Node:
    """x with slice k of source added onto slice index[k] along dim (accumulated), the
    slices as rows: each column of them is walked on its own."""
    index = index.reshape((index.numel,))       # (a 0-d index is one)
    if not x.shape:
        return _accumulated_flat(x, index, source.reshape((1,)))
    order = (dim,) + tuple(a for a in range(len(x.shape)) if a != dim)
    rows = x.permute(order)
    width = rows.numel // x.shape[dim]
    added = accumulated(rows.reshape((x.shape[dim], width)), index,
                        source.permute(order).reshape((index.numel, width)))
    return added.reshape(rows.shape).unpermute(order)


def index_reduce(self, dim: int, index, source, reduce: str, *, include_self: bool = True):
    if reduce not in ("prod", "mean", "amax", "amin"):
        raise RuntimeError(f"index_reduce(): Expected reduce to be one of prod, mean, amax or "
                           f"amin but got {reduce}.")
    dim = _dim("index_reduce", self, dim)
    _check_slices("index_reduce_", self, dim, index, source, IndexError)
    flat = _slices(self, dim, index.node)
    values = source.node.reshape(flat.shape)
    return _reduce_into("index_reduce", self, source, flat, values, reduce, include_self)


def index_copy(self, dim: int, index, source):
    dim = _dim("index_copy", self, dim)
    _check_slices("index_copy_", self, dim, index, source, IndexError)
    flat = _slices(self, dim, index.node)
    out = _replaced(self.node, flat, source.node.reshape(flat.shape))
    return record("index_copy", out, self.device, [self, source])


def index_fill(self, dim: int, index, value):
    dim = _dim("index_fill", self, dim)
    _vector_index("index_fill_", index)
    if is_tensor(value) and value.ndim:
        raise RuntimeError(f"index_fill_ only supports a 0-dimensional value tensor, but got "
                           f"tensor with {value.ndim} dimension(s).")
    n = _check_in_dim("index_fill_", self, dim, index, IndexError, negative=True)
    flat = _slices(self, dim, _wrapped(index, n))
    out = _marked(self.shape, flat).where(lift(value, self.dtype, self.shape), self.node)
    if is_tensor(value):
        return record("index_fill_tensor", out, self.device, [self, value])
    return record("index_fill", out, self.device, [self])


# ---- index_put, put, take: flat or advanced indices ----

def index_put(self, indices, values, accumulate: bool = False):
    if not isinstance(indices, (tuple, list)) or not all(is_tensor(i) for i in indices):
        raise TypeError("index_put(): argument 'indices' must be tuple of Tensors")
    if is_tensor(values) and values.dtype != self.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got "
                           f"{self.dtype.name} for the destination and {values.dtype.name} "
                           f"for the source.")
    return indexing.setitem(self, tuple(indices), values, accumulate=accumulate)


def _flat_index(op: str, self, index) -> Node:
    """index into self's flat elements, negative ones counted from the end."""
    _index_dtype(op, index)
    n = self.numel()
    bad = _first_outside(index, -n, n)
    if bad is not None:
        raise IndexError(f"out of range: tried to access index {bad} on a tensor of {n} "
                         f"elements.")
    flat = _wrapped(index, n)
    return flat if index.ndim else flat.reshape((1,))


def _wrapped(index, n: int) -> Node:
    """index's values, negative ones counted back from n."""
    i = index.node.cast(dt.int64)
    return (i < 0).where(i + n, i)


def put(self, index, source, accumulate: bool = False):
    if source.numel() != index.numel():
        raise IndexError(f"put_(): Expected source and index to have the same number of "
                         f"elements, but got source.numel() = {source.numel()}, "
                         f"index.numel() = {index.numel()}")
    if source.dtype != self.dtype:
        raise RuntimeError(f"put_(): self and source expected to have the same dtype, but got "
                           f"self.dtype = {self.dtype.name} and source.dtype = "
                           f"{source.dtype.name}")
    flat = _flat_index("put_", self, index)
    values = source.node.reshape(flat.shape)
    if accumulate:
        out = _accumulated_flat(self.node, flat, values)
    else:
        out = _replaced(self.node, flat, values)
    return record("put", out, self.device, [self, source])


def take(self, index):
    flat = _flat_index("take", self, index)
    # the gradient is PyTorch's put_ with accumulate: a 16-bit float's rounded at each step
    picked = self.node.reshape((self.numel(), 1)).gather(flat, partials_in_type=True)
    return record("take", picked.reshape(index.shape), self.device, [self])


_OUT_OF_PLACE = ("scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy",
                 "index_fill", "index_put", "put", "index_reduce")

METHODS = [
    ("scatter", scatter), ("scatter_add", scatter_add), ("scatter_reduce", scatter_reduce),
    ("index_add", index_add), ("index_reduce", index_reduce), ("index_copy", index_copy), ("index_fill", index_fill),
    ("index_put", index_put), ("put", put), ("take", take),
] + [(f"{name}_", _in_place(name)) for name in _OUT_OF_PLACE]
