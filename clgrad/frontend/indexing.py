"""Reading and writing through t[index]: ints, slices with steps, None, ..., boolean masks
and integer index tensors, as in PyTorch."""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from . import index_inputs, views
from .accumulated import accumulated
from .backward import record
from .jit_protocol import in_jit
from .operands import broadcast_shape, broadcast_to, is_tensor, lift, result_dtype
from .scalar_inputs import number_node


def _expand_index(x, index) -> list:
    """index as a list with Ellipsis expanded, one entry per consumed dim (None consumes none)."""
    items = list(index) if isinstance(index, tuple) else [index]
    consumed = sum(_dims_used(i) for i in items)
    ellipses = [k for k, i in enumerate(items) if i is Ellipsis]
    if len(ellipses) > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if consumed > x.ndim:
        raise IndexError(f"too many indices for tensor of dimension {x.ndim} "
                         f"(got {consumed} indexed dims for shape {x.shape})")
    if ellipses:
        at = ellipses[0]
        items[at:at + 1] = [slice(None)] * (x.ndim - consumed)
    return items + [slice(None)] * (x.ndim - sum(_dims_used(i) for i in items))


def _dims_used(item) -> int:
    if item is None or item is Ellipsis:
        return 0
    if is_tensor(item) and item.dtype == dt.bool_:
        return max(item.ndim, 1)
    if isinstance(item, np.ndarray) and item.dtype == np.bool_:
        return max(item.ndim, 1)
    return 1


def _as_index_tensor(x, item):
    from .creation import tensor
    if is_tensor(item):
        if item.device != x.device:
            raise RuntimeError(f"index: indices on {item.device.spec} cannot index a tensor on "
                               f"{x.device.spec}")
        return item
    return tensor(item, device=x.device)


def _basic(x, items) -> tuple[ir.Node, list]:
    """Applies ints, slices and None; returns the view and the advanced entries left, each as
    (output axis, index tensor) in order. The view is one shrink, one stride and one reshape,
    a node each whatever the number of dims (x[t] of a 3-d tensor: 20 -> 12 us)."""
    node = x.node
    dims = node.shape
    bounds, steps = [], []      # per dim of x
    shape, advanced = [], []    # the view's
    axis = 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        if type(item) is slice:
            start, stop, step = item.indices(dims[axis])
            if step <= 0:
                raise ValueError("step must be greater than zero")
            stop = max(stop, start)
            shape.append(-(-(stop - start) // step))
        elif _is_advanced(item):
            advanced.append((len(shape), item))     # the view keeps these dims; resolved later
            for n in dims[axis:axis + _dims_used(item)]:
                bounds.append((0, n))
                steps.append(1)
                shape.append(n)
                axis += 1
            continue
        else:
            if isinstance(item, (bool, np.bool_)):
                raise IndexError("indexing with a Python bool is not supported; use a bool "
                                 "tensor")
            n, i = dims[axis], _as_int(item)
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for dimension {axis} with size {n}")
            start = i % n
            stop, step = start + 1, 1
        bounds.append((start, stop))
        steps.append(step)
        axis += 1
    return node.shrink(tuple(bounds)).stride(tuple(steps)).reshape(tuple(shape)), advanced


def _is_bool(item) -> bool:
    return (is_tensor(item) and item.dtype == dt.bool_) or \
        (isinstance(item, np.ndarray) and item.dtype == np.bool_)


def _as_int(item) -> int:
    if is_tensor(item):
        return int(item.item())
    if isinstance(item, (int, np.integer)):
        return int(item)
    raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or bool "
                     f"tensors are valid indices (got {type(item).__name__})")


def _advanced_positions(x, node: ir.Node, advanced,
                        checked: bool = True) -> tuple[list[int], list]:
    """The axes of node the advanced entries cover and an int64 index tensor for each; boolean
    masks become the positions of their True entries (this reads the mask back). Index
    tensors are read back to check their bounds unless not checked."""
    axes, indices = [], []
    for out_axis, item in advanced:
        if _is_bool(item):
            mask = item.numpy() if is_tensor(item) else np.asarray(item)
            covered = node.shape[out_axis:out_axis + mask.ndim]
            if mask.shape != covered:
                raise IndexError(f"index: the shape of the mask {mask.shape} does not match the "
                                 f"shape of the indexed tensor {covered} at dimension {out_axis}")
            for k, positions in enumerate(np.nonzero(mask)):
                axes.append(out_axis + k)
                indices.append(_as_index_tensor(x, positions.astype(np.int64)))
        else:
            t = _as_index_tensor(x, item)
            if t.dtype.is_float or t.dtype == dt.bool_:
                raise IndexError(f"tensors used as indices must be long, int or bool tensors, "
                                 f"got {t.dtype.name}")
            if checked:
                _check_bounds(t, node.shape[out_axis], out_axis)
            axes.append(out_axis)
            indices.append(t)
    return axes, indices


def _check_bounds(t, n: int, axis: int) -> None:
    values = t.numpy()
    if values.size and (values.min() < -n or values.max() >= n):
        bad = values[(values < -n) | (values >= n)].flat[0]
        raise IndexError(f"index {bad} is out of bounds for dimension {axis} with size {n}")


def _inside(node: ir.Node, axes: list[int], indices: list, index_shape: tuple) -> ir.Node:
    """Where every index lies in its axis (negative ones counting from the end), over
    index_shape."""
    inside = None
    for axis, t in zip(axes, indices):
        n = node.shape[axis]
        idx = broadcast_to(t.node.cast(dt.int64), index_shape)
        ok = (idx >= -n) & (idx < n)
        inside = ok if inside is None else inside & ok
    return inside


def _flat_rows(node: ir.Node, axes: list[int], indices: list) -> tuple[ir.Node, ir.Node, tuple, tuple]:
    """node with the indexed axes moved to the front and flattened into rows, and the row
    number each index combination selects."""
    rest = [i for i in range(len(node.shape)) if i not in axes]
    moved = node.permute(tuple(axes) + tuple(rest))
    n_rows = int(np.prod([node.shape[a] for a in axes]))
    rest_shape = tuple(node.shape[i] for i in rest)
    rows = moved.reshape((n_rows, int(np.prod(rest_shape))))
    index_shape = broadcast_shape("index", *(t.shape for t in indices))
    row, stride = None, 1
    for axis, t in reversed(list(zip(axes, indices))):
        n = node.shape[axis]
        idx = broadcast_to(t.node.cast(dt.int64), index_shape)
        idx = (idx < 0).where(idx + n, idx)
        term = idx * stride
        row = term if row is None else row + term
        stride *= n
    return rows, row, index_shape, rest_shape


def getitem(x, index, partials_in_type: bool = True):
    """x[index]. Indexed by tensors, a 16-bit float's gradient sums the rows each index
    picked rounding to the type at each step, as PyTorch's index_put_ with accumulate (the
    backward of indexing, embedding and take), or unless partials_in_type in float32, rounded
    once, as its scatter_add_ (the backward of gather and take_along_dim)."""
    items = _expand_index(x, index)
    node, advanced = _basic(x, items)
    if not advanced:
        ints = index if isinstance(index, tuple) else (index,)
        name = "select" if all(type(i) is int for i in ints) else "slice"
        gathered = index_inputs.gathered(x.node, items, x.device)
        node = node if gathered is None else gathered
        return views.indexed(record(name, node, x.device, [x]), x, index)
    before = x.node
    # A jitted step's replays get new indices, which it does not read back: there an index out
    # of range picks a row of NaN from a float tensor (an Embedding's loss turns NaN), never
    # memory past its rows. Other dtypes are checked, and the step then runs eagerly.
    guarded = x.dtype.is_float and in_jit()
    axes, indices = _advanced_positions(x, node, advanced, checked=not guarded)
    if x.node is not before:    # reading the indices computed x (changed in place, still lazy)
        node, _ = _basic(x, items)
    rows, row, index_shape, rest_shape = _flat_rows(node, axes, indices)
    if guarded:
        inside = _inside(node, axes, indices, index_shape)
        row = inside.where(row, 0)
    picked = rows.gather(row, partials_in_type)     # index_shape + (rest,)
    if guarded:
        inside = inside.reshape(index_shape + (1,)).expand(picked.shape)
        picked = inside.where(picked, math.nan)
    out = picked.reshape(index_shape + rest_shape)
    order = _in_place_order(axes, len(index_shape), len(out.shape))
    if order:
        out = out.permute(order)
    return record("index", out, x.device, [x])


def _in_place_order(axes: list[int], k: int, ndim: int) -> tuple[int, ...] | None:
    """PyTorch keeps an indexing result's k index dims in place of the indexed axes when
    those are adjacent (and not first): the permutation of (index dims, other dims) that puts
    them there, else None (they lead)."""
    if axes == list(range(axes[0], axes[0] + len(axes))) and axes[0] > 0:
        return tuple(range(k, k + axes[0])) + tuple(range(k)) + tuple(range(k + axes[0], ndim))
    return None


def setitem(x, index, value, accumulate: bool = False):
    """x with the indexed elements replaced by value (added to them when accumulate), as a
    new tensor (the caller assigns it)."""
    if is_tensor(value) and value.device != x.device:
        raise RuntimeError(f"setitem: value on {value.device.spec} cannot be written into a "
                           f"tensor on {x.device.spec}")
    result_dtype("setitem", [x, value])     # rejects values that are not numbers or tensors
    inputs = [x] + ([value] if is_tensor(value) else [])
    node = x.node
    # a mask of x's shape (x not 0-d: such a mask is refused below as too many indices) takes
    # every dim, so there is no index to expand or check: the common `g[x < 0] = 0`
    if is_tensor(index) and index.dtype is dt.bool_ and node.shape and not accumulate \
            and index.node.shape == node.shape:
        filled = lift(value, node.dtype, node.shape) if is_tensor(value) else \
            _value_as(value, node.dtype, node.shape, x.device)
        out = index.node.where(filled, node)
        return record("masked_fill", out, x.device, inputs)
    items = _expand_index(x, index)
    if any(_is_advanced(i) for i in items):
        return record("index_put", _scatter(x, items, value, accumulate), x.device, inputs)
    if accumulate:
        raise NotImplementedError("index_put: accumulate=True needs index tensors")
    region, _ = _basic(x, items)
    v = _value_as(value, x.dtype, region.shape, x.device)
    marked = index_inputs.written_where(node, items, x.device)
    if marked is not None:
        placed = broadcast_to(v.reshape(_kept_as_ones(items, x.shape)), x.shape)
    else:
        placed = _unview(v, items, x.shape)
        marked = _unview(ir.const(True, dt.bool_, region.shape), items, x.shape)
    return record("copy_slices", marked.where(placed, node), x.device, inputs)


def _kept_as_ones(items, shape) -> tuple[int, ...]:
    """shape with a 1 for each dim an int indexes (x[items] with those dims kept)."""
    return tuple(1 if type(item) is not slice else n for item, n in zip(items, shape))


def _is_advanced(item) -> bool:
    return is_tensor(item) or isinstance(item, (list, np.ndarray))


def _value_as(value, dtype, shape, device) -> ir.Node:
    """The value written, as a node of dtype and shape. A number is read from a buffer
    (scalar_inputs), so that a loop writing a changing one keeps its kernels."""
    if not is_tensor(value):
        return lift(value, dtype, shape) if dtype == dt.bool_ else \
            number_node(value, dtype, shape, device)
    if broadcast_shape("setitem", value.shape, shape) != tuple(shape):
        raise RuntimeError(f"setitem: shape mismatch: value of shape {value.shape} cannot be "
                           f"broadcast to indexing result of shape {tuple(shape)}")
    return broadcast_to(value.node.cast(dtype), tuple(shape))


def _unview(v: ir.Node, items, full_shape) -> ir.Node:
    """Puts a value shaped like x[items] back where those elements live in x (zeros elsewhere)."""
    node = v
    # walk the index from the last dim so earlier axes keep their numbering
    shape_axis = len(full_shape)
    out_axis = len(v.shape)
    for item in reversed(items):
        if item is None:
            out_axis -= 1
            node = node.reshape(node.shape[:out_axis] + node.shape[out_axis + 1:])
            continue
        shape_axis -= 1
        n = full_shape[shape_axis]
        if isinstance(item, slice):
            out_axis -= 1
            start, stop, step = item.indices(n)
            stop = max(stop, start)
            node = _place(node, out_axis, start, stop, step, n)
        else:
            i = _as_int(item) % n
            node = node.reshape(node.shape[:out_axis] + (1,) + node.shape[out_axis:])
            node = _place(node, out_axis, i, i + 1, 1, n)
    return node


def _place(node: ir.Node, axis: int, start: int, stop: int, step: int, n: int) -> ir.Node:
    m = node.shape[axis]
    if step > 1:
        before, after = node.shape[:axis], node.shape[axis + 1:]
        node = node.reshape(before + (m, 1) + after)
        pads = tuple((0, step - 1) if i == axis + 1 else (0, 0) for i in range(len(node.shape)))
        node = node.pad(pads, 0).reshape(before + (m * step,) + after)
        node = node.shrink(tuple((0, stop - start) if i == axis else (0, s)
                                 for i, s in enumerate(node.shape)))
    pads = tuple((start, n - stop) if i == axis else (0, 0) for i in range(len(node.shape)))
    fill = False if node.dtype == dt.bool_ else 0
    return node.pad(pads, fill)


def _scatter(x, items, value, accumulate: bool) -> ir.Node:
    """x[index tensors] = value: the rows the index picks are replaced (of rows written twice
    one write wins, as in PyTorch), or added to when accumulate. Scatters, linear in the
    number of indices: the values, and to replace, a mark on each row written."""
    if any(not (_is_advanced(i) or i == slice(None)) for i in items):
        raise NotImplementedError("setitem: index tensors mixed with ints, steps or None are not "
                                  "supported; index those dims with tensors or use a mask")
    node, advanced = _basic(x, items)
    axes, indices = _advanced_positions(x, node, advanced)
    rows, row, index_shape, rest_shape = _flat_rows(node, axes, indices)
    n_rows, row_len = rows.shape
    # value broadcasts against x[index], whose index dims may be in place (getitem)
    shape = index_shape + rest_shape
    order = _in_place_order(axes, len(index_shape), len(shape))
    if order:
        v = _value_as(value, x.dtype, tuple(shape[i] for i in order), x.device).unpermute(order)
    else:
        v = _value_as(value, x.dtype, shape, x.device)
    v = v.reshape(index_shape + (row_len,))
    if accumulate:
        new_rows = accumulated(rows, row, v)
    else:
        placed = ir.scatter(row, v, n_rows, "replace")
        written = ir.scatter(row, ir.const(True, dt.bool_, index_shape + (1,)), n_rows, "replace")
        new_rows = written.expand((n_rows, row_len)).where(placed, rows)
    rest = [i for i in range(x.ndim) if i not in axes]
    moved_shape = tuple(x.shape[a] for a in axes) + tuple(x.shape[i] for i in rest)
    inverse = tuple(int(i) for i in np.argsort(list(axes) + rest))
    return new_rows.reshape(moved_shape).permute(inverse)
