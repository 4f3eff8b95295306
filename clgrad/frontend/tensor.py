"""The user-facing Tensor: a lazy value that records ops into the IR until it is needed.

The methods that only hand the tensor to an op's function are installed from tables at the
end of this module (METHODS, and inplace.METHODS for the in-place ones): each entry names the
method and the function, whose signature and docstring `help(Tensor.sum)` shows.
"""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from .. import engine
from ..engine import run as run_graph
from . import elementwise as ew
from . import indexing, jit_protocol, linalg, movement, reductions, views
from .host_copies import read_host
from . import scans, size, sorting, statistics, variance
from .backward import record, register_hook


class Tensor:
    __array_priority__ = 1000      # NumPy defers to our reflected operators
    grad: Tensor | None = None     # these three are read from the class until set: every op
    _accumulator = None            # makes a tensor, and few tensors set them
    _retains_grad = False

    def __init__(self, node: ir.Node, device, requires_grad: bool = False):
        self._node = node
        self.device = device
        self.requires_grad = requires_grad
        self.grad_fn = None
        self._counter = 0               # the version: in-place changes so far
        self._view: views.View | None = None    # how this tensor is a view of another
        self._output_nr = 0             # which output of grad_fn this is
        jit_protocol.made(self)

    # ---- value ----
    @property
    def node(self) -> ir.Node:
        """The IR node of this tensor's value (a buffer once computed). Read only: values
        change through frontend.inplace."""
        if self._view is not None and self._view.stale():
            views.refresh(self)
        return self._node

    @property
    def _version(self) -> int:
        """In-place changes so far (a view's include its base's since it was made)."""
        if self._view is not None and self._view.stale():
            views.refresh(self)
        return self._counter

    # ---- metadata ----
    # metadata reads skip the node property's call unless this tensor is a view: the
    # recording path reads them several times per op
    @property
    def shape(self) -> size.Size:
        return size.of((self._node if self._view is None else self.node).shape)

    @property
    def dtype(self) -> dt.DType:
        return (self._node if self._view is None else self.node).dtype

    @property
    def ndim(self) -> int:
        return len((self._node if self._view is None else self.node).shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.node.numel

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        return self.node.shape[movement.normalize_dim("size", dim, self.ndim)]

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    @property
    def is_leaf(self) -> bool:
        return self.grad_fn is None

    @property
    def T(self) -> Tensor:
        return self.permute(*reversed(range(self.ndim)))

    @property
    def data(self) -> Tensor:
        """The value outside autograd, a view: in-place changes reach this tensor."""
        return self.detach()

    @data.setter
    def data(self, value: Tensor) -> None:
        inplace.assign(self, value.detach(), "data")

    # ---- running ----
    def realize(self) -> Tensor:
        realize(self)
        return self

    def numpy(self, *, force: bool = False) -> np.ndarray:
        """The value as a NumPy array. On a CPU device it is this tensor's memory, as
        PyTorch's is: NumPy's writes change the tensor, and the tensor's in-place ops change
        the array (computed at once, inplace.py). It is a copy on a GPU and for a view other
        than detach() (a slice, a reshape: clgrad would give it memory of its own, not its
        base's). A tensor that requires grad is refused, as PyTorch refuses it; force=True
        detaches first."""
        if force:
            return self.detach().numpy()
        if self.requires_grad:
            raise RuntimeError("Can't call numpy() on Tensor that requires grad. "
                               "Use tensor.detach().numpy() instead.")
        if self.dtype == dt.bfloat16:
            raise TypeError("numpy: Got unsupported ScalarType BFloat16 (NumPy has no bfloat16; "
                            "convert with .float() first)")
        _compute_detached_base(self)
        if not self.device.shares_host_memory:
            return host_values(self)
        return shared_values(self)

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        """np.asarray(t) and np.array(t): numpy()'s array (so refused for a tensor that
        requires grad, as PyTorch's is), in dtype when one is asked for."""
        values = self.numpy()
        if dtype is not None:
            values = values.astype(dtype, copy=False)
        return values.copy() if copy else values

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"item: a Tensor with {self.numel()} elements cannot be converted "
                               "to a Python scalar")
        return host_values(self).reshape(()).item()

    def tolist(self):
        return host_values(self).tolist()

    def __float__(self) -> float:
        return float(self.item())

    def __int__(self) -> int:
        return int(self.item())

    def __bool__(self) -> bool:
        return bool(self.item())

    def __index__(self) -> int:
        if self.dtype.is_float or self.dtype == dt.bool_:
            raise TypeError("only integer tensors of a single element can be used as an index")
        return int(self.item())

    def __repr__(self) -> str:
        from .printing import tensor_repr
        return tensor_repr(self)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __hash__(self) -> int:
        return id(self)

    # ---- autograd ----
    def requires_grad_(self, requires_grad: bool = True) -> Tensor:
        if not self.is_leaf and not requires_grad:
            raise RuntimeError("requires_grad_: you can only change requires_grad flags of leaf "
                               "variables; use detach() for a non-leaf")
        if requires_grad and not self.dtype.is_float:
            raise RuntimeError(f"requires_grad_: only floating point tensors can require "
                               f"gradients, got {self.dtype.name}")
        if requires_grad and self.is_leaf and self.node.op is not Op.BUFFER:
            # a leaf's gradient needs a node of its own: two zeros(3) are one node, one buffer
            self.realize()
            if (ref := engine.own_buffer(self.node, self.device)) is not self.node.buffer:
                self._node = ir.buffer(ref, self.dtype, self.shape)
                jit_protocol.holds_buffer(self)
        self.requires_grad = requires_grad
        return self

    def retain_grad(self) -> None:
        if not self.requires_grad:
            raise RuntimeError("retain_grad: can't retain_grad on a Tensor that has "
                               "requires_grad=False")
        if self.grad_fn is not None:
            self.grad_fn.retain(self)
        self._retains_grad = True

    def register_hook(self, hook):
        """hook(grad) -> None or a tensor replacing grad, run when this tensor's gradient is
        computed; returns a handle whose remove() unregisters it."""
        return register_hook(self, hook)

    @property
    def retains_grad(self) -> bool:
        return self._retains_grad and not self.is_leaf

    def detach(self) -> Tensor:
        return views.detached(Tensor(self.node.detach(), self.device), self)

    def detach_(self) -> Tensor:
        self._node = self.node.detach()
        self.grad_fn, self.requires_grad = None, False
        return self

    def backward(self, gradient=None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        from .backward import backward
        backward([self], None if gradient is None else [gradient], retain_graph,
                 create_graph, inputs)

    def __getitem__(self, index) -> Tensor:
        return indexing.getitem(self, index)

    def __neg__(self):
        return ew.unary("neg", Op.NEG, self) if self.dtype.is_float else \
            record("neg", -self.node, self.device, [self])

    def __pos__(self):
        return self

    def abs(self):
        return ew.unary("abs", Op.ABS, self) if self.dtype.is_float else \
            record("abs", self.node.abs(), self.device, [self])

    def clone(self) -> Tensor:
        return record("clone", self.node, self.device, [self])

    def __deepcopy__(self, memo) -> Tensor:
        """A graph leaf's copy (copy.deepcopy of a model copies its parameters): its value,
        type (a Parameter stays one), requires_grad and gradient. As in PyTorch, only leaves."""
        if not self.is_leaf:
            raise RuntimeError("Only Tensors created explicitly by the user (graph leaves) "
                               "support the deepcopy protocol at the moment")
        out = object.__new__(type(self))
        Tensor.__init__(out, self.node.detach(), self.device, self.requires_grad)
        memo[id(self)] = out
        if self.grad is not None:
            out.grad = self.grad.__deepcopy__(memo)
        return out

    def contiguous(self) -> Tensor:
        return self     # views are index arithmetic: every tensor reads as contiguous

    def to(self, *args, **kwargs) -> Tensor:
        """to(device), to(dtype), to(device, dtype) or to(other)."""
        from .creation import to
        return to(self, *args, **kwargs)


# ---- the methods that hand the tensor to an op's function ----

def _binary(name: str, op: Op, reflected: bool = False, float_only: bool = False):
    if reflected:
        return lambda self, other: ew.binary(name, op, other, self, float_only=float_only)
    return lambda self, other: ew.binary(name, op, self, other, float_only=float_only)


def _unary(name: str, op: Op, ints_unchanged: bool = False):
    """An elementwise C builtin (floor of an integer tensor is the tensor itself)."""
    if ints_unchanged:
        return lambda self: ew.unary(name, op, self) if self.dtype.is_float else self
    return lambda self: ew.unary(name, op, self)


def _round(self, *, decimals: int = 0):
    """To the nearest integer (ties to even), or to decimals places as PyTorch scales it."""
    if not self.dtype.is_float:
        return self
    if decimals == 0:
        return ew.unary("round", Op.ROUND, self)
    scale = 10.0 ** abs(decimals)
    if decimals > 0:
        return ew.unary("round", Op.ROUND, self * scale) / scale
    return ew.unary("round", Op.ROUND, self / scale) * scale


def _cast(dtype: dt.DType):
    return lambda self: ew.cast(self, dtype)


def _view(self, *shape_or_dtype) -> Tensor:
    """view(*shape), or view(dtype): the bits read as another dtype."""
    if len(shape_or_dtype) == 1 and isinstance(shape_or_dtype[0], dt.DType):
        if shape_or_dtype[0] != self.dtype:
            return type_functions.view_as_dtype(self, shape_or_dtype[0])
        shape_or_dtype = self.shape
    return movement.reshape(self, shape_or_dtype, "view")


def _with_alpha(name: str):
    op = {"add": Op.ADD, "sub": Op.SUB}[name]
    return lambda self, other, alpha=1: ew.binary(
        name, op, self, other * alpha if alpha != 1 else other)


def _as_dtype(x, dtype):
    """x cast to dtype first, as reductions' dtype= asks (None keeps it)."""
    return x if dtype is None else x.to(dtype)


METHODS = [
    # arithmetic and logic
    ("__add__", _binary("add", Op.ADD)), ("__radd__", _binary("add", Op.ADD, True)),
    ("__sub__", _binary("sub", Op.SUB)), ("__rsub__", _binary("rsub", Op.SUB, True)),
    ("__mul__", _binary("mul", Op.MUL)), ("__rmul__", _binary("mul", Op.MUL, True)),
    ("__truediv__", _binary("div", Op.DIV, float_only=True)),
    # number / t is PyTorch's reciprocal(t) * number, rounded twice
    ("__rtruediv__", lambda self, other: self.reciprocal() * other),
    ("__floordiv__", ew.floor_divide),
    ("__rfloordiv__", lambda self, other: ew.floor_divide(other, self)),
    ("__mod__", ew.remainder), ("__pow__", ew.power),
    ("__rpow__", lambda self, base: ew.power(base, self)),
    ("__abs__", lambda self: self.abs()), ("__invert__", ew.bitwise_not),
    ("__matmul__", linalg.matmul), ("__rmatmul__", lambda self, other: linalg.matmul(other, self)),
    ("add", _with_alpha("add")), ("sub", _with_alpha("sub")),
    ("mul", lambda self, other: self * other),
    ("div", lambda self, other, *, rounding_mode=None: ew.divide(self, other, rounding_mode)),
    ("neg", lambda self: -self), ("logical_not", ew.logical_not),
    # comparisons
    ("__lt__", _binary("lt", Op.CMPLT)), ("__gt__", _binary("gt", Op.CMPLT, True)),
    ("__le__", lambda self, other: ew.compare("le", self, other)),
    ("__ge__", lambda self, other: ew.compare("ge", self, other)),
    ("__eq__", _binary("eq", Op.CMPEQ)),
    ("__ne__", lambda self, other: ew.logical_not(self == other)),
    # elementwise maths
    ("exp", _unary("exp", Op.EXP)), ("log", _unary("log", Op.LOG)),
    ("sqrt", _unary("sqrt", Op.SQRT)), ("sin", _unary("sin", Op.SIN)),
    ("cos", _unary("cos", Op.COS)), ("tanh", _unary("tanh", Op.TANH)),
    ("reciprocal", _unary("reciprocal", Op.RECIP)),
    ("floor", _unary("floor", Op.FLOOR, True)), ("ceil", _unary("ceil", Op.CEIL, True)),
    ("round", _round),
    ("rsqrt", ew.rsqrt), ("sigmoid", ew.sigmoid), ("relu", ew.relu), ("sign", ew.sign),
    ("pow", ew.power), ("square", lambda self: ew.power(self, 2)),
    ("clamp", ew.clamp),
    ("maximum", _binary("maximum", Op.MAX)), ("minimum", _binary("minimum", Op.MIN)),
    ("where", lambda self, condition, other: ew.where(condition, self, other)),
    # reductions
    ("sum", lambda self, dim=None, keepdim=False, dtype=None:
        reductions.sum_(self, dim, keepdim, dtype)),
    ("mean", lambda self, dim=None, keepdim=False, *, dtype=None:
        reductions.mean(_as_dtype(self, dtype), dim, keepdim)),
    ("max", lambda self, dim=None, keepdim=False: reductions.max_(self, dim, keepdim)),
    ("min", lambda self, dim=None, keepdim=False: reductions.min_(self, dim, keepdim)),
    ("amax", lambda self, dim=None, keepdim=False: reductions.amax(self, dim, keepdim)),
    ("amin", lambda self, dim=None, keepdim=False: reductions.amin(self, dim, keepdim)),
    ("argmax", lambda self, dim=None, keepdim=False: reductions.argmax(self, dim, keepdim)),
    ("argmin", lambda self, dim=None, keepdim=False: reductions.argmin(self, dim, keepdim)),
    ("prod", lambda self, dim=None, keepdim=False, *, dtype=None:
        reductions.prod(_as_dtype(self, dtype), dim, keepdim)),
    ("var", lambda self, dim=None, unbiased=True, keepdim=False, correction=None:
        variance.var(self, dim, unbiased, keepdim, correction)),
    ("std", lambda self, dim=None, unbiased=True, keepdim=False, correction=None:
        variance.std(self, dim, unbiased, keepdim, correction)),
    ("logsumexp", lambda self, dim, keepdim=False: reductions.logsumexp(self, dim, keepdim)),
    ("softmax", lambda self, dim, dtype=None: reductions.softmax(_as_dtype(self, dtype), dim)),
    ("log_softmax", lambda self, dim, dtype=None:
        reductions.log_softmax(_as_dtype(self, dtype), dim)),
    ("all", reductions.all_), ("any", reductions.any_),
    # movement
    ("reshape", lambda self, *shape: movement.reshape(self, shape, "reshape")),
    ("view", _view),
    ("view_as", lambda self, other: self.view(other.shape)),
    ("reshape_as", lambda self, other: self.reshape(other.shape)),
    ("permute", lambda self, *dims: movement.permute(self, dims)),
    ("transpose", movement.transpose), ("t", movement.t),
    ("expand", lambda self, *sizes: movement.expand(self, sizes)),
    ("expand_as", lambda self, other: movement.expand(self, other.shape)),
    ("unsqueeze", movement.unsqueeze), ("squeeze", movement.squeeze),
    ("flatten", movement.flatten), ("flip", movement.flip),
    ("repeat", lambda self, *sizes: movement.repeat(self, sizes)),
    # products
    ("matmul", linalg.matmul), ("mm", linalg.mm), ("bmm", linalg.bmm),
    # conversions
    ("float", _cast(dt.float32)), ("double", _cast(dt.float64)), ("half", _cast(dt.float16)),
    ("int", _cast(dt.int32)), ("long", _cast(dt.int64)), ("bool", _cast(dt.bool_)),
    ("byte", _cast(dt.uint8)), ("char", _cast(dt.int8)), ("short", _cast(dt.int16)),
    ("bfloat16", _cast(dt.bfloat16)), ("cpu", lambda self: self.to("cpu")),
]


def _install(methods) -> None:
    """Puts each (name, function) on Tensor; a lambda takes the method's name, so that
    tracebacks and help() say which method it is."""
    for name, fn in methods:
        if getattr(fn, "__name__", None) == "<lambda>":     # (properties have no name)
            fn.__name__, fn.__qualname__ = name, f"Tensor.{name}"
        setattr(Tensor, name, fn)


def host_values(t: Tensor) -> np.ndarray:
    """t's value as a NumPy array of t.dtype.np (float32 for bfloat16, which NumPy lacks)."""
    t.realize()
    return read_host(t.node.arg, t.dtype, t.shape)


def shared_values(t: Tensor) -> np.ndarray:
    """t's value as a NumPy array over the memory of the buffer holding it (a CPU device's):
    the one t detaches, or t's own, made first where another value could name it. A view's
    memory of its own would not be its base's, so a view other than a detach gets a copy."""
    node = _memory_node(t)
    view = t._view
    if view is not None and (node is None or node is not _memory_node(view.base)):
        return host_values(t)
    if node is None:
        t.realize()
        node = t.node
    ref = engine.own_buffer(node, t.device)
    if ref is not node.buffer:      # the same value, in memory of t's own
        if view is not None:
            return host_values(t)
        t._node = ir.buffer(ref, t.dtype, t.shape)
        jit_protocol.holds_buffer(t)
    memory = engine.storage(ref).host_view()
    jit_protocol.downloaded()
    storage = np.dtype(dt.storage_numpy(t.dtype))
    values = memory[:t.numel() * storage.itemsize].view(storage).reshape(t.shape)
    return dt.decode(values, t.dtype)


def _compute_detached_base(t: Tensor) -> None:
    """A detach of a tensor still to compute computes that tensor itself and reads its
    buffer, as reading the tensor did: `y.detach().numpy()` does not leave y to be computed
    again, and shares y's memory where y's can be shared."""
    view = t._view
    if view is None or _memory_node(view.base) is not None:
        return
    if t.node is view.base.node.detach():
        view.base.realize()
        t._node = view.base.node.detach()


def _memory_node(t: Tensor) -> ir.Node | None:
    """The buffer node whose memory holds t's value as it is (t's own, or the one t
    detaches), or None while t is a graph still to compute."""
    node = t.node
    while node.op is Op.DETACH:
        node = node.src[0]
    return node if node.op is Op.BUFFER else None


def realize(*tensors: Tensor) -> None:
    """Computes several tensors in one schedule, with the tensors changed in place whose new
    value is still lazy."""
    compute([*tensors, *inplace.take_pending()])


def compute(tensors: list[Tensor]) -> None:
    """Computes tensors in one schedule (and only them)."""
    by_device: dict = {}        # device -> (tensors, their nodes), each tensor once
    seen = set()
    device = group = None
    for t in tensors:
        node = t.node
        if node.op is not Op.BUFFER and id(t) not in seen:
            seen.add(id(t))
            if t.device is not device:      # a Device hashes in Python: once per run of them
                device = t.device
                group = by_device.setdefault(device, ([], []))
            group[0].append(t)
            group[1].append(node)
    for device, (group, nodes) in by_device.items():
        refs = run_graph(nodes, device)
        for t, node, ref in zip(group, nodes, refs):
            t._node = ir.buffer(ref, node.dtype, node.shape)
            jit_protocol.holds_buffer(t)


# last: inplace.py and composite_methods.py import this module
from . import bitwise, composite_methods, inplace, math_functions, scatter  # noqa: E402

_install(METHODS)
_install(inplace.METHODS)
_install(composite_methods.METHODS)
from . import array_functions, copies, host_functions, products, shape_functions  # noqa: E402
from . import quantiles, slice_scatters, special_functions, type_functions  # noqa: E402
for _module in (shape_functions, products, type_functions, host_functions, array_functions,
                copies, slice_scatters, special_functions, quantiles):
    _install(_module.METHODS)
for _module in (scans, sorting, statistics, scatter, math_functions, bitwise):
    _install(_module.METHODS)
from . import legacy_types, random_fills  # noqa: E402
_install(legacy_types.METHODS)
_install(random_fills.METHODS)
from . import eigen, incomplete_gamma, legacy_linalg, lu, matrix_functions, qr  # noqa: E402
from . import householder, triangular  # noqa: E402
for _module in (lu, triangular, matrix_functions, qr, eigen, legacy_linalg, incomplete_gamma,
                householder):
    _install(_module.METHODS)
from . import histograms, host_callables, layouts, real_tensors, strided_views  # noqa: E402
for _module in (histograms, host_callables, layouts, real_tensors, strided_views):
    _install(_module.METHODS)
