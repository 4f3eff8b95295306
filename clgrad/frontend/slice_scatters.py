"""Writing a whole part of a tensor at once, out of place: select_scatter, slice_scatter and
diagonal_scatter (the inverses of select, slicing and diagonal), masked_scatter (a source's
elements, in order, where a mask holds) and fill_diagonal_. Each is a `where` between self
and the source padded out to self's shape, so both gradients come from the primitives."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from . import inplace
from .backward import record
from .composite_methods import _in_place
from .operands import broadcast_shape, broadcast_to, is_tensor, lift, normalize_dim


def _check_src(self, src, expected: tuple[int, ...]) -> None:
    if not is_tensor(src):
        raise TypeError(f"expected src to be a Tensor, got {type(src).__name__}")
    if tuple(src.shape) != tuple(expected):
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = "
                           f"{list(src.shape)}, slice size = {list(expected)}")


def _pads(ndim: int, axis: int, before: int, after: int) -> tuple[tuple[int, int], ...]:
    return tuple((before, after) if a == axis else (0, 0) for a in range(ndim))


def _placed(node: Node, shape: tuple[int, ...], dim: int, start: int, step: int, fill) -> Node:
    """node, the elements start::step along dim of a tensor of shape, put where they came
    from; fill elsewhere."""
    k, nd = node.shape[dim], len(shape)
    if step > 1:        # each element followed by step - 1 fills, the last one's cut off
        spread = node.shape[:dim + 1] + (1,) + node.shape[dim + 1:]
        node = node.reshape(spread).pad(_pads(nd + 1, dim + 1, 0, step - 1), fill)
        node = node.reshape(node.shape[:dim] + (k * step,) + node.shape[dim + 2:])
        node = node.shrink(tuple((0, (k - 1) * step + 1) if a == dim else (0, n)
                                 for a, n in enumerate(node.shape)))
    return node.pad(_pads(nd, dim, start, shape[dim] - start - node.shape[dim]), fill)


def _scattered(op: str, self, src, dim: int, start: int, step: int):
    """self with src written into its elements start::step along dim."""
    if not src.numel():
        return record(op, self.node, self.device, [self, src])
    values = _placed(src.node.cast(self.dtype), self.shape, dim, start, step, 0)
    written = _placed(ir.const(True, dt.bool_, src.shape), self.shape, dim, start, step, False)
    return record(op, written.where(values, self.node), self.device, [self, src])


def _dim(op: str, input, dim: int) -> int:
    if not input.ndim:
        raise IndexError(f"{op}() cannot be applied to a 0-dim tensor.")
    return normalize_dim(f"{op}_scatter", dim, input.ndim)


def select_scatter(input, src, dim: int, index: int):
    dim = _dim("select", input, dim)
    n = input.shape[dim]
    if not -n <= index < n:
        raise IndexError(f"select(): index {index} out of range for tensor of size "
                         f"{list(input.shape)} at dimension {dim}")
    _check_src(input, src, input.shape[:dim] + input.shape[dim + 1:])
    return _scattered("select_scatter", input, src.unsqueeze(dim), dim, index % n, 1)


def slice_scatter(input, src, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1):
    dim = _dim("slice", input, dim)
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    start, end, _ = slice(start, end, step).indices(input.shape[dim])
    k = len(range(start, end, step))
    _check_src(input, src, input.shape[:dim] + (k,) + input.shape[dim + 1:])
    return _scattered("slice_scatter", input, src, dim, start, step)


def diagonal_scatter(input, src, offset: int = 0, dim1: int = 0, dim2: int = 1):
    d1 = normalize_dim("diagonal_scatter", dim1, input.ndim)
    d2 = normalize_dim("diagonal_scatter", dim2, input.ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    shape = tuple(input.shape)
    others = [a for a in range(input.ndim) if a not in (d1, d2)]
    # the diagonal runs along dim1 from row 0 (offset >= 0), or along dim2 from column 0
    along, across = (d1, d2) if offset >= 0 else (d2, d1)
    length = max(0, min(shape[d1], shape[d2] - offset) if offset >= 0 else
                 min(shape[d1] + offset, shape[d2]))
    _check_src(input, src, tuple(shape[a] for a in others) + (length,))
    if not length:
        return record("diagonal_scatter", input.node, input.device, [input, src])
    values = src.node.cast(input.dtype).reshape(tuple(src.shape) + (1,))
    values = values.pad(_pads(len(others) + 2, len(others), 0, shape[along] - length))
    order = tuple(others.index(a) if a in others else len(others) + (a == across)
                  for a in range(input.ndim))
    values = values.permute(order).expand(shape)
    row, column = _coordinate(shape, d1), _coordinate(shape, d2)
    on_diagonal = (row + offset).eq(column) if offset else row.eq(column)
    return record("diagonal_scatter", on_diagonal.where(values, input.node), input.device,
                  [input, src])


def _coordinate(shape: tuple[int, ...], axis: int) -> Node:
    """Each element's index along axis."""
    n = shape[axis]
    ones = tuple(n if a == axis else 1 for a in range(len(shape)))
    return ir.iota(n, dt.int64).reshape(ones).expand(shape)


def masked_scatter(self, mask, source):
    if not is_tensor(mask) or mask.dtype != dt.bool_:
        got = mask.dtype.name.title() if is_tensor(mask) else type(mask).__name__
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with "
                           f"dtype {got}")
    if source.dtype != self.dtype:
        raise RuntimeError(f"masked_scatter: expected self and source to have same dtypes but "
                           f"got {self.dtype.name} and {source.dtype.name}")
    shape = broadcast_shape("masked_scatter", self.shape, mask.shape)
    ones = int(mask.expand(shape).sum().item())      # read back, to raise PyTorch's error
    if ones > source.numel():
        raise RuntimeError(f"masked_scatter: Number of elements of source ({source.numel()}) "
                           f"< number of ones in mask ({ones})")
    base = broadcast_to(self.node, shape)
    if not ones:
        return record("masked_scatter", base, self.device, [self, source])
    flat = broadcast_to(mask.node, shape).reshape((base.numel,))
    # the k-th true element of the mask takes source's k-th element
    taken = flat.where(ir.scan(flat.cast(dt.int64), 0, "add") - 1, 0)
    values = source.node.reshape((source.numel(), 1)).gather(taken).reshape(shape)
    out = flat.reshape(shape).where(values, base)
    return record("masked_scatter", out, self.device, [self, source])


def fill_diagonal_(self, fill_value, wrap: bool = False):
    """The elements (i, i, ...) take fill_value; a tall matrix's diagonal starts again after
    each block of columns + 1 rows when wrap, as NumPy's fill_diagonal."""
    shape = tuple(self.shape)
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(shape)) > 1:
        raise RuntimeError(f"all dimensions of input must be of equal length, got {shape}")
    numel = self.numel()
    if not numel:
        return self
    step = sum(shape[-1] ** k for k in range(self.ndim)) if self.ndim > 2 else shape[1] + 1
    end = numel if wrap and self.ndim == 2 and shape[0] > shape[1] else min(shape) * step
    flat = ir.iota(numel, dt.int64)
    on_diagonal = ((flat % step).eq(0) & (flat < end)).reshape(shape)
    old = inplace.snapshot(self)
    filled = on_diagonal.where(lift(fill_value, self.dtype, shape), old.node)
    return inplace.assign_result(self, record("copy_slices", filled, self.device, [old]),
                                 "fill_diagonal_")


METHODS = [("select_scatter", select_scatter), ("slice_scatter", slice_scatter),
           ("diagonal_scatter", diagonal_scatter), ("masked_scatter", masked_scatter),
           ("masked_scatter_", _in_place("masked_scatter")), ("fill_diagonal_", fill_diagonal_)]
