"""The IR: one small immutable node type, interned so that equal graphs are the same objects.

A node is (op, dtype, shape, src, arg). Constructors here check the invariants that the
compiler relies on and fold movement that does nothing, so later passes see fewer nodes.
"""
from __future__ import annotations

import itertools
import math
import weakref
from typing import Any

from .dtype import DType, bool_, float32, int32, int64, scalar
from .mathtrait import MathTrait
from .ops import (BINARY, COMPARISON, ELEMENTWISE, MOVEMENT, REDUCE, SCAN_COMBINES,
                  SCATTER_MODES, UNARY, Op)

Shape = tuple[int, ...]


class BufferRef:
    """Names a device buffer inside the graph. It keeps the buffer alive as long as any
    node refers to it; `buffer`, the device memory, is the engine's to fill in (when a kernel
    or an upload first writes it)."""
    _ids = itertools.count()

    def __init__(self, device, nbytes: int, buffer=None):
        self.id = next(BufferRef._ids)
        self.device = device
        self.nbytes = nbytes
        self.buffer = buffer

    def __repr__(self) -> str:
        return f"@{self.id}"


class Node(MathTrait):
    """Interned: constructing an equal node returns the live one, so nodes compare and hash
    by identity. `buffer` is the buffer holding the node's value once one does (a BUFFER
    node's own; a computed node's after a schedule wrote it), else None. Operators build
    nodes (MathTrait): `a * b + 1`."""
    __slots__ = ("op", "dtype", "shape", "src", "arg", "buffer", "head", "serial", "__weakref__")

    def __new__(cls, op: Op, dtype: DType, shape: Shape, src: tuple["Node", ...] = (), arg: Any = None):
        global _made
        if op is _CONST:
            arg_key = (type(arg), repr(arg))    # keeps 0.0 and -0.0 apart, NaN equal to itself
        elif op is _BUFFER:
            arg_key = id(arg)
        else:
            arg_key = arg
        key = (op, dtype, shape, src, arg_key)
        ref = _interned.get(key)
        node = None if ref is None else ref()
        if node is None:
            _made += 1
            node = object.__new__(cls)
            node.serial = _made     # nodes made so far: which are newer than a point in time
            node.op, node.dtype, node.shape, node.src, node.arg = op, dtype, shape, src, arg
            # the number of (op, dtype, shape, arg, source count), for structural keys: nearly
            # every node is walked by one, and numbering it here costs less than asking later.
            # A buffer's is its leaf's (dtype, shape), its buffer left out: graphs that differ
            # only in their buffers key alike.
            if op is _BUFFER:
                node.buffer, head = arg, (dtype, shape)
            else:
                node.buffer, head = None, (op, dtype, shape, arg_key, len(src))
            number = _heads.get(head)
            node.head = head_number(head) if number is None else number
            ref = _interned[key] = _Ref(node, _forget)
            ref.key = key
            if op is _CONST:
                _keep(node)
        return node

    def __reduce__(self):
        raise TypeError("IR nodes are not picklable; use clgrad.ir.dump for a text form")

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    def __repr__(self) -> str:
        return f"<{self.op.name.lower()} {self.dtype.short}{list(self.shape)}>"


class _Ref(weakref.ref):
    """A weak reference that knows its key: one callback serves every node (no closure each)."""
    __slots__ = ("key",)


# key -> weak reference to the live node; a plain dict with the reference's callback removing
# the entry is several times cheaper than a WeakValueDictionary (all of whose methods are Python)
_interned: dict[tuple, _Ref] = {}
_made = 0
_CONST, _BUFFER = Op.CONST, Op.BUFFER      # a global reads faster than an Enum member


# Constants made lately, kept alive: a training step makes the same few (a momentum, a mean's
# 1/n, a gradient's 2) at every step, and finding a live node costs a third of making one.
# They hold no memory; the set is emptied when full, so constants that change every step
# (a Python float learning rate) cost one entry each until then.
_kept_consts: set = set()
_MAX_KEPT_CONSTS = 4096


def _keep(node: Node) -> None:
    if len(_kept_consts) >= _MAX_KEPT_CONSTS:
        _kept_consts.clear()
    _kept_consts.add(node)


def _forget(dead: _Ref) -> None:
    ref = _interned.pop(dead.key, None)     # one hash of the key: every node made dies here
    if ref is not dead and ref is not None:     # a newer node interned under the same key
        _interned[dead.key] = ref


def toposort(roots, stop=None) -> list[Node]:
    """Every node reachable from roots, each after its sources. Nodes for which stop(node)
    holds are listed but not looked beneath."""
    # a node stays on the stack until its sources are done: no (node, state) pairs to build
    order, done = [], set()
    for root in roots:
        stack = [root]
        while stack:
            node = stack[-1]
            if node in done:
                stack.pop()
                continue
            if stop is None or not stop(node):
                missing = [s for s in node.src if s not in done]
                if missing:
                    missing.reverse()
                    stack += missing
                    continue
            stack.pop()
            done.add(node)
            order.append(node)
    return order


def structural_key(roots: list[Node], leaf_of=None, stops=None,
                   ids: dict | None = None) -> tuple[tuple, list[Node], list]:
    """A key equal for graphs that differ only in their leaves; the nodes in walk order (each
    at its first sight from the roots: not sources first); and the leaves, numbered in order
    of first use. leaf_of(node) names the leaf a node reads (several nodes may name one), or
    gives None for a node computed from its sources; stops instead makes the nodes in it and
    every BUFFER node their own leaves (no call per node); without either, a node's leaf is
    the buffer holding its value. The key is the walk's transcript, one record per step: a
    node seen before by its position (negative), a computed node by its head number (numbered
    when the node was made; it tells the source count), its sources' records following, a
    leaf by the number of its (dtype, shape) and its own number. ids, when given, is filled
    with each node's position in walk order."""
    if ids is None:
        ids = {}
    nodes: list[Node] = []
    numbers: dict = {}
    leaves: list = []
    parts: list[int] = []
    record = parts.append
    stack = roots[::-1]
    pop, push = stack.pop, stack.extend
    while stack:
        node = pop()
        pos = ids.get(node)
        if pos is not None:
            record(-1 - pos)
            continue
        ids[node] = len(nodes)
        nodes.append(node)
        if stops is not None:
            leaf = node if node in stops or node.op is _BUFFER else None
        else:
            leaf = node.buffer if leaf_of is None else leaf_of(node)
        if leaf is None:
            record(node.head)
            push(node.src[::-1])
        else:
            number = numbers.get(leaf)
            if number is None:
                number = numbers[leaf] = len(leaves)
                leaves.append(leaf)
            record(leaf_head(node))
            record(number)
    return tuple(parts), nodes, leaves


# Numbers for the structural parts of nodes: (op, dtype, shape, arg) of a computed node,
# (dtype, shape) of a leaf. Never reused, so that forgetting them all (when there are too
# many, e.g. a constant that changes every step) can only make a key miss, never collide.
_heads: dict[tuple, int] = {}
_next_head = itertools.count()
_MAX_HEADS = 1 << 20


def head_number(head: tuple) -> int:
    """A number equal for equal heads (while remembered)."""
    number = _heads.get(head)
    if number is None:
        if len(_heads) >= _MAX_HEADS:
            _heads.clear()
        number = _heads[head] = next(_next_head)
    return number


def leaf_head(node: Node) -> int:
    """The number of node's (dtype, shape): how a key records a node read as a leaf."""
    return node.head if node.op is _BUFFER else head_number((node.dtype, node.shape))


def made_count() -> int:
    """Nodes made so far: a node whose serial is above the count at some point is newer."""
    return _made


# ---- constructors -------------------------------------------------------------------------

def buffer(ref: BufferRef, dtype: DType, shape: Shape) -> Node:
    return Node(Op.BUFFER, dtype, tuple(shape), (), ref)


def const(value, dtype: DType, shape: Shape = ()) -> Node:
    return Node(Op.CONST, dtype, tuple(shape), (), scalar(value, dtype))


def iota(n: int, dtype: DType) -> Node:
    return Node(Op.IOTA, dtype, (n,))


def unary(op: Op, x: Node, dtype: DType | None = None) -> Node:
    assert op in UNARY, op
    return Node(op, dtype or x.dtype, x.shape, (x,))


def detach(x: Node) -> Node:
    """x's value as a node of its own: graphs are interned, so without it a detached copy
    would be the very node autograd differentiates."""
    if x.op in (Op.DETACH, Op.CONST, Op.IOTA):
        return x
    return Node(Op.DETACH, x.dtype, x.shape, (x,))


def sloped(x: Node, slope: Node, divides: bool = False) -> Node:
    """A node for autograd only, never computed: its gradient with respect to x is g * slope
    (g / slope where divides: a formula's division, which a product by the reciprocal
    would round otherwise), slope itself not differentiated through, but kept in the
    gradient's graph, so a second derivative reaches x through it. A frontend op whose value
    is computed one way and differentiated by a formula of PyTorch's derives from it
    (frontend.backward.record)."""
    assert x.shape == slope.shape and x.dtype == slope.dtype, (x.shape, slope.shape)
    return Node(Op.SLOPED, x.dtype, x.shape, (x, slope), True if divides else None)


def cast(x: Node, dtype: DType) -> Node:
    if x.dtype == dtype:
        return x
    if x.op is Op.CONST:
        return const(x.arg, dtype, x.shape)
    return Node(Op.CAST, dtype, x.shape, (x,))


def bitcast(x: Node, dtype: DType) -> Node:
    """x's bits read as dtype, of the same size (register_bitcast tells which pairs)."""
    assert x.dtype.itemsize == dtype.itemsize, (x.dtype, dtype)
    return x if x.dtype == dtype else Node(Op.BITCAST, dtype, x.shape, (x,))


def binary(op: Op, a: Node, b: Node) -> Node:
    assert op in BINARY, op
    assert a.shape == b.shape, f"{op}: {a.shape} vs {b.shape}"
    assert a.dtype == b.dtype, f"{op}: {a.dtype} vs {b.dtype}"
    return Node(op, bool_ if op in COMPARISON else a.dtype, a.shape, (a, b))


def where(cond: Node, a: Node, b: Node) -> Node:
    assert cond.dtype == bool_ and cond.shape == a.shape == b.shape and a.dtype == b.dtype
    return Node(Op.WHERE, a.dtype, a.shape, (cond, a, b))


def reduce(op: Op, x: Node, axes: tuple[int, ...]) -> Node:
    assert op in REDUCE, op
    axes = tuple(sorted(a for a in set(axes) if x.shape[a] != 1))
    if not axes:
        return x
    shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
    return Node(op, x.dtype, shape, (x,), axes)


def matmul(a: Node, b: Node) -> Node:
    assert a.shape[:-2] == b.shape[:-2] and a.shape[-1] == b.shape[-2], (a.shape, b.shape)
    return Node(Op.MATMUL, a.dtype, a.shape[:-1] + b.shape[-1:], (a, b))


def gather(src: Node, index: Node, partials_in_type: bool = False) -> Node:
    """out[i..., r] = src[index[i...], r] for a 2-d src. Its gradient sums the rows of g that
    picked each row: a 16-bit float's in float32, rounded once (PyTorch's scatter_add_, the
    backward of gather), or with partials_in_type rounded to the type at each step (its
    index_put_ with accumulate, the backward of indexing); arg True marks the latter."""
    assert len(src.shape) == 2 and not index.dtype.is_float, (src.shape, index.dtype)
    arg = True if partials_in_type and src.dtype.is_16_bit_float else None
    return Node(Op.GATHER, src.dtype, index.shape + src.shape[1:], (src, index), arg)


def scan(x: Node, axis: int, combine: str) -> Node:
    """The running combine of x along axis (ops.SCAN_COMBINES); of one element, x itself."""
    assert combine in SCAN_COMBINES and 0 <= axis < len(x.shape), (combine, axis, x.shape)
    if x.shape[axis] <= 1:
        return x
    return Node(Op.SCAN, x.dtype, x.shape, (x,), (axis, combine))


def sort(x: Node, descending: bool) -> Node:
    """x's rows (its last axis) sorted, a NaN the largest value."""
    return Node(Op.SORT, x.dtype, x.shape, (x,), bool(descending))


def argsort(x: Node, descending: bool) -> Node:
    """Where each value of sort(x)'s rows was in x's (int64); equal values keep their order."""
    return Node(Op.ARGSORT, int64, x.shape, (x,), bool(descending))


def argtopk(x: Node, k: int, descending: bool) -> Node:
    """argsort(x, descending)[..., :k], found without sorting the whole row (int64)."""
    assert 0 < k <= x.shape[-1], (k, x.shape)
    return Node(Op.ARGTOPK, int64, x.shape[:-1] + (k,), (x,), (int(k), bool(descending)))


def scatter(index: Node, src: Node, rows: int, mode: str,
            partials_in_type: bool = False) -> Node:
    """GATHER's inverse, a (rows, R) result: out[index[i...], r] combines src[i..., r] by mode
    (ops.SCATTER_MODES); elements no index names hold the mode's identity (0 for add and
    replace, -0.0 for a float add_to, -inf/+inf for amax/amin, 1 for prod). "add" sums from
    zeros, as PyTorch's gradients and index_add into zeros do; "add_to" is a sum to be added
    onto a tensor (scatter_add, index_add), whose -0.0s must stay where nothing lands. A
    16-bit float combines in float32 and rounds once, or with partials_in_type rounds to the
    type at each step, in index order (the ordered kernel needs no atomics)."""
    assert mode in SCATTER_MODES and not index.dtype.is_float, (mode, index.dtype)
    assert src.shape[:-1] == index.shape, (index.shape, src.shape)
    if mode != "replace" and src.dtype.itemsize < 4 and not (partials_in_type and
                                                             src.dtype.is_float):
        # no atomics this narrow: combined in float32 (int32 for integers; a bool "add" is
        # an any)
        wide = float32 if src.dtype.is_float else int32
        return cast(scatter(index, cast(src, wide), rows, mode), src.dtype)
    return Node(Op.SCATTER, src.dtype, (rows, src.shape[-1]), (index, src), mode)


def scatter_identity(dtype: DType, mode: str):
    """What an element of a SCATTER no index names holds. add_to's is -0.0, addition's
    identity: x + -0.0 is x for every x, -0.0 included."""
    if mode == "add_to" and dtype.is_float:
        return -0.0
    if mode in ("add", "add_to", "replace"):
        return 0
    if mode == "prod":
        return 1
    if dtype.is_float:
        return -math.inf if mode == "amax" else math.inf
    if dtype == bool_:
        return mode == "amin"
    bits = 8 * dtype.itemsize
    return -2 ** (bits - 1) if mode == "amax" else 2 ** (bits - 1) - 1


def contiguous(x: Node) -> Node:
    if x.op in (Op.BUFFER, Op.CONTIGUOUS):
        return x
    return Node(Op.CONTIGUOUS, x.dtype, x.shape, (x,))


def reshape(x: Node, shape: Shape) -> Node:
    shape = tuple(shape)
    if shape == x.shape:            # before the check: the common no-op costs no product
        return x
    assert math.prod(shape) == x.numel, (x.shape, shape)
    if x.op is Op.RESHAPE:          # reshape of a reshape is one reshape
        return reshape(x.src[0], shape)
    if x.op is Op.CONST:
        return const(x.arg, x.dtype, shape)
    return Node(Op.RESHAPE, x.dtype, shape, (x,), shape)


def permute(x: Node, order: tuple[int, ...]) -> Node:
    order = tuple(order)
    assert sorted(order) == list(range(len(x.shape))), (x.shape, order)
    if order == tuple(range(len(order))):
        return x
    if x.op is Op.PERMUTE:          # compose the two orders
        return permute(x.src[0], tuple(x.arg[i] for i in order))
    shape = tuple(x.shape[i] for i in order)
    if x.op is Op.CONST:
        return const(x.arg, x.dtype, shape)
    return Node(Op.PERMUTE, x.dtype, shape, (x,), order)


def inverse_order(order: tuple[int, ...]) -> tuple[int, ...]:
    """The order that permutes x.permute(order) back to x."""
    return tuple(sorted(range(len(order)), key=order.__getitem__))


def expand(x: Node, shape: Shape) -> Node:
    shape = tuple(shape)
    if shape == x.shape:
        return x
    assert len(shape) == len(x.shape) and all(s == t or s == 1 for s, t in zip(x.shape, shape))
    if x.op is Op.CONST:
        return const(x.arg, x.dtype, shape)
    return Node(Op.EXPAND, x.dtype, shape, (x,), shape)


# A PAD's fill that is no value: read as 0, but a matmul skips its products with an absent
# element instead of multiplying them by 0 (0 * inf would be NaN), as PyTorch's convolution
# input gradient never forms them (compiler/convolutions.py). Views may lie between the pad
# and the matmul; any other op reads the zeros.
ABSENT = "absent"


def pad(x: Node, pads: tuple[tuple[int, int], ...], fill=0.0) -> Node:
    pads = tuple((int(b), int(e)) for b, e in pads)
    assert len(pads) == len(x.shape) and all(b >= 0 and e >= 0 for b, e in pads)
    if all(b == 0 and e == 0 for b, e in pads):
        return x
    shape = tuple(s + b + e for s, (b, e) in zip(x.shape, pads))
    return Node(Op.PAD, x.dtype, shape, (x,), (pads, fill))


def shrink(x: Node, bounds: tuple[tuple[int, int], ...]) -> Node:
    bounds = tuple((int(b), int(e)) for b, e in bounds)
    assert len(bounds) == len(x.shape) and all(0 <= b <= e <= s for (b, e), s in zip(bounds, x.shape))
    if all(b == 0 and e == s for (b, e), s in zip(bounds, x.shape)):
        return x
    shape = tuple(e - b for b, e in bounds)
    if x.op is Op.CONST:
        return const(x.arg, x.dtype, shape)
    return Node(Op.SHRINK, x.dtype, shape, (x,), bounds)


def stride(x: Node, steps: tuple[int, ...]) -> Node:
    steps = tuple(int(s) for s in steps)
    assert len(steps) == len(x.shape) and all(s != 0 for s in steps)
    if all(s == 1 for s in steps):
        return x
    shape = tuple(-(-n // abs(s)) for n, s in zip(x.shape, steps))
    return Node(Op.STRIDE, x.dtype, shape, (x,), steps)


def window(x: Node, axis: int, k: int, s: int = 1, d: int = 1) -> Node:
    """Sliding windows along axis (size i): it becomes two axes (o, k) with
    out[.., o, kk, ..] = x[.., o*s + kk*d, ..], o = (i - d*(k-1) - 1) // s + 1. Convolution
    and pooling read their inputs through it: plain index arithmetic, no copy."""
    i = x.shape[axis]
    o = (i - d * (k - 1) - 1) // s + 1
    assert o >= 1 and k >= 1 and s >= 1 and d >= 1, (x.shape, axis, k, s, d)
    shape = x.shape[:axis] + (o, k) + x.shape[axis + 1:]
    return Node(Op.WINDOW, x.dtype, shape, (x,), (axis, k, s, d))


def reads_absent(node: Node) -> bool:
    """Whether node's views reach an ABSENT fill."""
    while node.op in MOVEMENT:
        if node.op is Op.PAD and node.arg[1] == ABSENT:
            return True
        node = node.src[0]
    return False


def reshaped_from(node: Node) -> Node:
    """The node beneath a chain of reshapes: the same elements in the same row-major order."""
    while node.op is Op.RESHAPE:
        node = node.src[0]
    return node


def base_of(node: Node) -> Node:
    """The node beneath a chain of movement ops."""
    while node.op in MOVEMENT:
        node = node.src[0]
    return node


__all__ = ["Node", "BufferRef", "Op", "toposort", "structural_key", "buffer", "const", "unary", "cast", "binary",
           "where", "reduce", "matmul", "iota", "gather", "scan", "sort", "argsort", "argtopk", "scatter", "scatter_identity", "detach", "window", "contiguous", "reshape", "permute", "expand", "pad",
           "shrink", "stride", "reshaped_from", "base_of", "ABSENT", "reads_absent", "ELEMENTWISE", "MOVEMENT", "REDUCE", "UNARY", "BINARY"]
