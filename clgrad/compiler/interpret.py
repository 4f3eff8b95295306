"""A NumPy interpreter of the IR, to tell a wrong rewrite from a wrong kernel.

It follows the semantics of the generated OpenCL C (render.py, lower.py), not NumPy's:
integer division and modulo truncate toward zero, float modulo is fmod, a NaN wins in float
max/min (PyTorch's maximum/minimum), float-to-int casts truncate, ROUND rounds half to even, and
half-precision values are computed in float32 registers and rounded when a node is done
(bfloat16 to nearest even, narrow integers wrapped).
Ops the renderer rejects for a dtype (exp of an int, pow of ints) raise TypeError here too.
"""
from __future__ import annotations

import numpy as np

from .dtype import (DType, bfloat16, bool_, decode, encode, float16, round_bfloat16,
                    storage_numpy)
from . import factorizations, ir, recurrences
from .ir import BufferRef, Node, toposort
from .ops import (COMPARISON, FACTORIZATIONS, FLOAT_BINARY, FLOAT_UNARY, INT_UNARY, MOVEMENT,
                  RECURRENCES, REDUCE, SCAN_COMBINES, UNARY, Op)

def _safe(b: np.ndarray) -> np.ndarray:
    """The divisor the kernels use: 1 where it is 0 or -1 (render.Renderer._int_divide)."""
    return np.where((b == 0) | (b == -1), 1, b).astype(b.dtype)


def _c_remainder(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.fmod(a, _safe(b))


def _c_divide(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """C integer division: the quotient truncated toward zero; by -1 the negation (wrapping),
    by 0 the dividend itself, as the kernels compute it."""
    a, b = np.broadcast_arrays(a, b)
    negated = np.negative(a)
    b_safe = _safe(b)
    q = np.floor_divide(a, b_safe)
    inexact = np.remainder(a, b_safe) != 0
    q = q + (inexact & ((a < 0) != (b_safe < 0))).astype(q.dtype)
    return np.where(b == -1, negated, q)


_INT_BINARY = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: _c_divide,
    Op.MAX: np.maximum, Op.MIN: np.minimum, Op.MOD: _c_remainder,
    Op.AND: np.bitwise_and, Op.OR: np.bitwise_or, Op.XOR: np.bitwise_xor,
    Op.SHL: np.left_shift, Op.SHR: np.right_shift,
}


def evaluate(roots: list[Node] | Node,
             buffers: dict[BufferRef, np.ndarray] | None = None) -> list[np.ndarray]:
    """The value of each root, computed with NumPy. A BUFFER node reads `buffers[ref]`
    when given, otherwise the device buffer behind its reference."""
    roots = [roots] if isinstance(roots, Node) else list(roots)
    buffers = buffers or {}
    values: dict[Node, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for node in toposort(roots):
            srcs = [values[s] for s in node.src]
            if node.op is Op.BUFFER:
                value = _load(node, buffers)
            else:
                value = _compute(node, srcs)
            values[node] = _settle(value, node)
    return [np.array(values[r]) for r in roots]


def _settle(value: np.ndarray, node: Node) -> np.ndarray:
    value = np.asarray(value)
    assert value.shape == node.shape, f"interpreter bug: {node} computed {value.shape}"
    if value.dtype != node.dtype.np:
        value = value.astype(node.dtype.np)
    return decode(round_bfloat16(value), bfloat16) if node.dtype == bfloat16 else value


def _load(node: Node, buffers: dict[BufferRef, np.ndarray]) -> np.ndarray:
    ref, dtype = node.arg, node.dtype
    if ref in buffers:
        return np.asarray(buffers[ref], dtype=dtype.np).reshape(node.shape)
    if ref.buffer is None and node.numel == 0:
        return np.empty(node.shape, dtype.np)
    if ref.buffer is None:
        raise ValueError(f"buffer @{ref.id} ({dtype.short}{list(node.shape)}) holds no data: "
                         f"pass its contents in `buffers`")
    return decode(ref.buffer.read(np.empty(node.shape, storage_numpy(dtype))), dtype)


def _compute(node: Node, srcs: list[np.ndarray]) -> np.ndarray:
    op = node.op
    if op is Op.CONST:
        return np.full(node.shape, _scalar(node.arg, node.dtype), node.dtype.np)
    if op is Op.CONTIGUOUS:
        return srcs[0]
    if op in MOVEMENT:
        return _movement(node, srcs[0])
    if op is Op.IOTA:
        return np.arange(node.shape[0], dtype=node.dtype.np)
    if op in REDUCE:
        return _reduce(node, srcs[0])
    if op is Op.SCAN:
        axis, combine = node.arg
        x = _registers(srcs[0])
        if x.dtype == np.float32 and combine in ("add", "mul", "logaddexp"):
            x = x.astype(np.float64)    # PyTorch's CPU scans' accumulator (lower_scan)
        return SCAN_COMBINES[combine].accumulate(x, axis=axis)
    if op in (Op.SORT, Op.ARGSORT):
        order = _sort_order(srcs[0], node.arg)
        return order if op is Op.ARGSORT else np.take_along_axis(srcs[0], order, -1)
    if op is Op.ARGTOPK:
        k, descending = node.arg
        return _sort_order(srcs[0], descending)[..., :k]
    if op in FACTORIZATIONS:
        return factorizations.numpy_meaning(node, [_registers(s) for s in srcs])
    if op in RECURRENCES:
        return recurrences.numpy_meaning(node, [_registers(s) for s in srcs])
    if op is Op.GATHER:                      # out[i..., r] = src[idx[i...], r]
        return np.take(srcs[0], srcs[1].astype(np.int64), axis=0)
    if op is Op.SCATTER:
        return _scatter(node, srcs[0], srcs[1])
    if op is Op.MATMUL:
        a, b = (_registers(s) for s in srcs)
        if ir.reads_absent(node.src[0]) or ir.reads_absent(node.src[1]):
            return _matmul_present(node, a, b)
        if node.dtype == bool_:
            return np.matmul(a.astype(np.int32), b.astype(np.int32)) != 0
        return np.matmul(a, b)
    if op is Op.WHERE:
        return np.where(srcs[0], srcs[1], srcs[2])
    if op is Op.CAST:
        return _cast(srcs[0], node.dtype)
    if op is Op.BITCAST:
        bits = encode(srcs[0], node.src[0].dtype).view(storage_numpy(node.dtype))
        return decode(bits, node.dtype)
    if op is Op.DETACH:
        return srcs[0]
    if op in UNARY:
        return _unary(op, srcs[0], node.src[0].dtype)
    return _binary(op, srcs[0], srcs[1], node.src[0].dtype)


_SCATTER_COMBINE = {"add": np.add, "add_to": np.add, "prod": np.multiply, "amax": np.maximum,
                    "amin": np.minimum}


def _scatter(node: Node, index: np.ndarray, src: np.ndarray) -> np.ndarray:
    """out[index[i...], r] combined with src[i..., r]; where values collide, "replace" keeps
    the last (the kernel keeps any one of them)."""
    out = np.full(node.shape, ir.scatter_identity(node.dtype, node.arg), node.dtype.np)
    rows, values = index.reshape(-1).astype(np.int64), src.reshape(-1, node.shape[1])
    if node.arg == "replace":
        out[rows] = values
    elif node.dtype == bfloat16:    # a sum in the type (ir.scatter), rounded at each step
        for row, value in zip(rows, values):
            out[row] = decode(round_bfloat16(out[row] + value), bfloat16)
    else:       # (float16's NumPy sums round at each step themselves)
        _SCATTER_COMBINE[node.arg].at(out, rows, values)
    return out


def _scalar(value, dtype: DType):
    """A literal as the renderer writes it in `dtype`."""
    if dtype == bool_:
        return bool(value)
    return float(value) if dtype.is_float else int(value)


def _registers(x: np.ndarray) -> np.ndarray:
    """Half values live in float registers (the DType's ctype)."""
    return x.astype(np.float32) if x.dtype == np.float16 else x


def _cast(x: np.ndarray, dtype: DType) -> np.ndarray:
    if dtype == bool_:
        return x != 0
    if not dtype.is_float and x.dtype.kind == "f":
        return np.trunc(x).astype(np.int64).astype(dtype.np)   # wrapped, as the kernels
    return x.astype(dtype.np)


def _unary(op: Op, x: np.ndarray, dtype: DType) -> np.ndarray:
    if op is Op.NOT:     # logical on bools (C's `!`), bitwise on integers (`~`), as rendered
        return np.logical_not(x) if dtype == bool_ else np.invert(x)
    if dtype == bool_:
        x = x.astype(np.int32)              # registers hold bools as int
    table = FLOAT_UNARY if dtype.is_float else INT_UNARY
    if op not in table:
        raise TypeError(f"{op.name.lower()} is not defined for {dtype.name}")
    return table[op](_registers(x))


def _binary(op: Op, a: np.ndarray, b: np.ndarray, dtype: DType) -> np.ndarray:
    a, b = _registers(a), _registers(b)
    if op in COMPARISON:
        return np.less(a, b) if op is Op.CMPLT else np.equal(a, b)
    if dtype == bool_:
        if op is Op.DIV:
            raise TypeError("div is not defined for bool")
        result = _INT_BINARY[op](a.astype(np.int32), b.astype(np.int32))
        return result != 0
    table = FLOAT_BINARY if dtype.is_float else _INT_BINARY
    if op not in table:
        raise TypeError(f"{op.name.lower()} is not defined for {dtype.name}")
    return table[op](a, b)


def _reduce(node: Node, x: np.ndarray) -> np.ndarray:
    axes, dtype = node.arg, node.dtype
    if dtype == bool_:                       # int accumulator, stored as nonzero-or-not
        if node.op is Op.PROD:
            return np.all(x, axis=axes, keepdims=True)
        return np.any(x, axis=axes, keepdims=True)
    x = _registers(x)
    acc = np.float32 if dtype == float16 else dtype.np
    if node.op is Op.SUM:
        return np.sum(x, axis=axes, keepdims=True, dtype=acc)
    if node.op is Op.PROD:
        return np.prod(x, axis=axes, keepdims=True, dtype=acc)
    if dtype.is_float:                       # from -INFINITY; a NaN is the max
        return np.max(x, axis=axes, keepdims=True, initial=-np.inf)
    return np.max(x, axis=axes, keepdims=True, initial=np.iinfo(dtype.np).min)


def _sort_order(x: np.ndarray, descending: bool) -> np.ndarray:
    """The stable sorting permutation of each row (last axis), a NaN the largest value."""
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    if descending:
        reversed_ = -x if x.dtype.kind == "f" else ~x
        return np.lexsort((np.where(nan, 0, reversed_), ~nan))
    return np.lexsort((np.where(nan, 0, x), nan))


def _matmul_present(node: Node, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """a @ b without the products of an ABSENT element (ir.ABSENT)."""
    present = _present(node.src[0])[..., :, :, None] & _present(node.src[1])[..., None, :, :]
    with np.errstate(invalid="ignore", over="ignore"):
        products = a[..., :, :, None] * b[..., None, :, :]
    return np.where(present, products, 0).sum(-2)


def _present(node: Node) -> np.ndarray:
    """Which of node's elements are no ABSENT fill, seen through its views."""
    if node.op not in MOVEMENT:
        return np.ones(node.shape, bool)
    inner = _present(node.src[0])
    if node.op is not Op.PAD:
        return _movement(node, inner)
    pads, fill = node.arg
    out = np.full(node.shape, fill != ir.ABSENT)
    out[tuple(slice(b, b + n) for (b, _), n in zip(pads, inner.shape))] = inner
    return out


def _movement(node: Node, x: np.ndarray) -> np.ndarray:
    op, arg = node.op, node.arg
    if op is Op.RESHAPE:
        return x.reshape(node.shape)
    if op is Op.PERMUTE:
        return np.transpose(x, arg)
    if op is Op.EXPAND:
        return np.broadcast_to(x, node.shape)
    if op is Op.PAD:
        pads, fill = arg
        fill = 0 if fill == ir.ABSENT else fill
        out = np.full(node.shape, _scalar(fill, node.dtype), node.dtype.np)
        out[tuple(slice(b, b + n) for (b, _), n in zip(pads, x.shape))] = x
        return out
    if op is Op.SHRINK:
        return x[tuple(slice(b, e) for b, e in arg)]
    if op is Op.WINDOW:
        axis, k, s, d = arg
        o = node.shape[axis]
        picks = np.arange(o)[:, None] * s + np.arange(k)[None, :] * d   # (o, k) source positions
        return np.take(x, picks, axis=axis)
    if op is Op.STRIDE:                      # a negative step starts from the last element
        return x[tuple(slice(None, None, s) for s in arg)]
    raise AssertionError(op)


__all__ = ["evaluate"]
