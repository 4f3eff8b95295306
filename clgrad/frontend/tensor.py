"""The user-facing Tensor: a lazy value that records ops into the IR until it is needed."""
from __future__ import annotations

import weakref

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..engine import run as run_graph
from . import elementwise as ew
from . import indexing, linalg, movement, reductions, views
from .backward import record, register_hook
from .grad_mode import is_grad_enabled


# Tensors changed in place whose new value is still a lazy graph. The next schedule computes
# them too, so a loop of in-place updates (w -= lr * w.grad) never builds an ever longer chain.
_PENDING: dict[int, weakref.ref] = {}


class Tensor:
    __array_priority__ = 1000      # NumPy defers to our reflected operators

    def __init__(self, node: ir.Node, device, requires_grad: bool = False):
        self.node = node
        self.device = device
        self.requires_grad = requires_grad
        self.grad: Tensor | None = None
        self.grad_fn = None
        self._version = 0
        self._accumulator = None
        self._retains_grad = False
        self._view = None         # (base, write_back) when this tensor is a view of base
        self._output_nr = 0             # which output of grad_fn this is

    # ---- metadata ----
    @property
    def shape(self) -> tuple[int, ...]:
        return self.node.shape

    @property
    def dtype(self) -> dt.DType:
        return self.node.dtype

    @property
    def ndim(self) -> int:
        return len(self.node.shape)

    def dim(self) -> int:
        return self.ndim

    def numel(self) -> int:
        return self.node.numel

    def size(self, dim: int | None = None):
        if dim is None:
            return self.shape
        return self.shape[movement.normalize_dim("size", dim, self.ndim)]

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

    # ---- running ----
    def realize(self) -> Tensor:
        realize(self)
        return self

    def numpy(self) -> np.ndarray:
        self.realize()
        out = np.empty(self.shape, dtype=np.uint8 if self.dtype == dt.bool_ else self.dtype.np)
        if out.size:
            self.node.arg.buffer.read(out)
        return out.view(np.bool_) if self.dtype == dt.bool_ else out

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"item: a Tensor with {self.numel()} elements cannot be converted "
                               "to a Python scalar")
        return self.numpy().reshape(()).item()

    def tolist(self):
        return self.numpy().tolist()

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
            # a leaf needs a node of its own for its gradient: lazy nodes are interned, so two
            # zeros(3) would otherwise be one node (and a constant folds into its users)
            self.realize()
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
        self.node = self.node.detach()
        self.grad_fn, self.requires_grad = None, False
        return self

    def backward(self, gradient=None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs=None) -> None:
        from .backward import backward
        backward([self], None if gradient is None else [gradient], retain_graph,
                 create_graph, inputs)

    # ---- in-place ----
    def _assign(self, result: Tensor, op: str) -> Tensor:
        """Makes self hold result's value: the common end of every in-place op."""
        if self.requires_grad and self.is_leaf and is_grad_enabled():
            raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                               "in-place operation.")
        if result.shape != self.shape:
            raise RuntimeError(f"{op}: output with shape {self.shape} doesn't match the "
                               f"broadcast shape {result.shape}")
        self.node = result.node.cast(self.dtype)
        if result.grad_fn is not None:
            self.grad_fn, self.requires_grad = result.grad_fn, True
            self._output_nr = result._output_nr
        self._version += 1
        if self.node.op is not Op.CONST:
            _PENDING[id(self)] = weakref.ref(self)
        if self._view is not None:
            base, write_back = self._view
            write_back(base, self)
        return self

    def _overwrite(self, value: Tensor) -> None:
        """Takes value without autograd seeing it: an in-place write through detach()."""
        self.node = value.node.cast(self.dtype).detach()
        self._version += 1
        if self.is_leaf and self.requires_grad:
            self.realize()      # a leaf's gradient is found by its node: give it its own
        else:
            _PENDING[id(self)] = weakref.ref(self)

    def _snapshot(self) -> Tensor:
        """A tensor standing for self's current value, for ops that are about to replace it."""
        snap = Tensor(self.node, self.device, self.requires_grad)
        snap.grad_fn, snap._accumulator, snap._version = self.grad_fn, self._accumulator, self._version
        snap._output_nr = self._output_nr
        return snap

    def add_(self, other, alpha=1) -> Tensor:
        return self._assign(self._snapshot() + (other * alpha if alpha != 1 else other), "add_")

    def sub_(self, other, alpha=1) -> Tensor:
        return self._assign(self._snapshot() - (other * alpha if alpha != 1 else other), "sub_")

    def mul_(self, other) -> Tensor:
        return self._assign(self._snapshot() * other, "mul_")

    def div_(self, other) -> Tensor:
        return self._assign(self._snapshot() / other, "div_")

    def clamp_(self, min=None, max=None) -> Tensor:
        return self._assign(self._snapshot().clamp(min, max), "clamp_")

    def zero_(self) -> Tensor:
        return self.fill_(0, "zero_")

    def fill_(self, value, _op: str = "fill_") -> Tensor:
        # recorded on the old value, so autograd sees the overwrite (its gradient is zero)
        node = self.node.const_like(value)
        return self._assign(record(_op, node, self.device, [self._snapshot()]), _op)

    def copy_(self, src) -> Tensor:
        if not isinstance(src, Tensor):
            raise TypeError(f"copy_: expected a Tensor, got {type(src).__name__}")
        from .operands import broadcast_to
        if src.device != self.device:
            src = src.to(self.device)
        shape = ew.broadcast_shape("copy_", self.shape, src.shape)
        if shape != self.shape:
            raise RuntimeError(f"copy_: cannot copy a tensor of shape {src.shape} into one of "
                               f"shape {self.shape}")
        moved = record("copy_", broadcast_to(src.node.cast(self.dtype), self.shape),
                       self.device, [self._snapshot(), src])   # the old value gets zero
        return self._assign(moved, "copy_")

    def __iadd__(self, other):
        return self.add_(other)

    def __isub__(self, other):
        return self.sub_(other)

    def __imul__(self, other):
        return self.mul_(other)

    def __itruediv__(self, other):
        return self.div_(other)

    def __setitem__(self, index, value) -> None:
        self._assign(indexing.setitem(self._snapshot(), index, value), "setitem")

    def __getitem__(self, index) -> Tensor:
        return indexing.getitem(self, index)

    # ---- conversions ----
    def to(self, *args, **kwargs) -> Tensor:
        from .creation import to
        return to(self, *args, **kwargs)

    def float(self) -> Tensor:
        return ew.cast(self, dt.float32)

    def double(self) -> Tensor:
        return ew.cast(self, dt.float64)

    def half(self) -> Tensor:
        return ew.cast(self, dt.float16)

    def int(self) -> Tensor:
        return ew.cast(self, dt.int32)

    def long(self) -> Tensor:
        return ew.cast(self, dt.int64)

    def bool(self) -> Tensor:
        return ew.cast(self, dt.bool_)

    def type(self, dtype) -> Tensor:
        return ew.cast(self, dtype)

    def clone(self) -> Tensor:
        return record("clone", self.node, self.device, [self])

    def contiguous(self) -> Tensor:
        return self     # views are index arithmetic: every tensor reads as contiguous

    def cpu(self) -> Tensor:
        return self.to("cpu")

    # ---- arithmetic ----
    def __add__(self, other):
        return ew.binary("add", Op.ADD, self, other)

    def __radd__(self, other):
        return ew.binary("add", Op.ADD, other, self)

    def __sub__(self, other):
        return ew.binary("sub", Op.SUB, self, other)

    def __rsub__(self, other):
        return ew.binary("rsub", Op.SUB, other, self)

    def __mul__(self, other):
        return ew.binary("mul", Op.MUL, self, other)

    def __rmul__(self, other):
        return ew.binary("mul", Op.MUL, other, self)

    def __truediv__(self, other):
        return ew.binary("div", Op.DIV, self, other, float_only=True)

    def __rtruediv__(self, other):
        return ew.binary("rdiv", Op.DIV, other, self, float_only=True)

    def __floordiv__(self, other):
        return ew.floor_divide(self, other)

    def __rfloordiv__(self, other):
        return ew.floor_divide(other, self)

    def __mod__(self, other):
        return ew.remainder(self, other)

    def __pow__(self, exponent):
        return ew.power(self, exponent)

    def __rpow__(self, base):
        return ew.power(base, self)

    def __neg__(self):
        return ew.unary("neg", Op.NEG, self) if self.dtype.is_float else \
            record("neg", -self.node, self.device, [self])

    def __pos__(self):
        return self

    def __abs__(self):
        return self.abs()

    def __invert__(self):
        return ew.bitwise_not(self)

    def __and__(self, other):
        return ew.binary("and", Op.AND, self, other)

    def __or__(self, other):
        return ew.binary("or", Op.OR, self, other)

    def __matmul__(self, other):
        return linalg.matmul(self, other)

    def __rmatmul__(self, other):
        return linalg.matmul(other, self)

    # ---- comparisons ----
    def __lt__(self, other):
        return ew.binary("lt", Op.CMPLT, self, other)

    def __gt__(self, other):
        return ew.binary("gt", Op.CMPLT, other, self)

    def __le__(self, other):
        return ew.compare("le", self, other)

    def __ge__(self, other):
        return ew.compare("ge", self, other)

    def __eq__(self, other):
        return ew.binary("eq", Op.CMPEQ, self, other)

    def __ne__(self, other):
        return ew.logical_not(self == other)

    # ---- math ----
    def neg(self):
        return -self

    def abs(self):
        return ew.unary("abs", Op.ABS, self) if self.dtype.is_float else \
            record("abs", self.node.abs(), self.device, [self])

    def exp(self):
        return ew.unary("exp", Op.EXP, self)

    def log(self):
        return ew.unary("log", Op.LOG, self)

    def sqrt(self):
        return ew.unary("sqrt", Op.SQRT, self)

    def rsqrt(self):
        return ew.rsqrt(self)

    def sin(self):
        return ew.unary("sin", Op.SIN, self)

    def cos(self):
        return ew.unary("cos", Op.COS, self)

    def tanh(self):
        return ew.unary("tanh", Op.TANH, self)

    def sigmoid(self):
        return ew.sigmoid(self)

    def relu(self):
        return ew.relu(self)

    def reciprocal(self):
        return ew.unary("reciprocal", Op.RECIP, self)

    def floor(self):
        return ew.unary("floor", Op.FLOOR, self) if self.dtype.is_float else self

    def ceil(self):
        return ew.unary("ceil", Op.CEIL, self) if self.dtype.is_float else self

    def round(self):
        return ew.unary("round", Op.ROUND, self) if self.dtype.is_float else self

    def sign(self):
        return ew.sign(self)

    def pow(self, exponent):
        return ew.power(self, exponent)

    def square(self):
        return ew.power(self, 2)

    def clamp(self, min=None, max=None):
        return ew.clamp(self, min, max)

    clip = clamp

    def maximum(self, other):
        return ew.binary("maximum", Op.MAX, self, other)

    def minimum(self, other):
        return ew.binary("minimum", Op.MIN, self, other)

    def where(self, condition, other):
        return ew.where(condition, self, other)

    def add(self, other, alpha=1):
        return self + (other * alpha if alpha != 1 else other)

    def sub(self, other, alpha=1):
        return self - (other * alpha if alpha != 1 else other)

    def mul(self, other):
        return self * other

    def div(self, other):
        return self / other

    def logical_not(self):
        return ew.logical_not(self)

    # ---- reductions ----
    def sum(self, dim=None, keepdim=False, dtype=None):
        return reductions.sum_(self, dim, keepdim, dtype)

    def mean(self, dim=None, keepdim=False):
        return reductions.mean(self, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        return reductions.max_(self, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return reductions.min_(self, dim, keepdim)

    def amax(self, dim=None, keepdim=False):
        return reductions.amax(self, dim, keepdim)

    def amin(self, dim=None, keepdim=False):
        return reductions.amin(self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        return reductions.argmax(self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return reductions.argmin(self, dim, keepdim)

    def prod(self, dim=None, keepdim=False):
        return reductions.prod(self, dim, keepdim)

    def var(self, dim=None, unbiased=True, keepdim=False, correction=None):
        return reductions.var(self, dim, unbiased, keepdim, correction)

    def std(self, dim=None, unbiased=True, keepdim=False, correction=None):
        return reductions.std(self, dim, unbiased, keepdim, correction)

    def logsumexp(self, dim, keepdim=False):
        return reductions.logsumexp(self, dim, keepdim)

    def softmax(self, dim):
        return reductions.softmax(self, dim)

    def log_softmax(self, dim):
        return reductions.log_softmax(self, dim)

    def all(self):
        return reductions.all_(self)

    def any(self):
        return reductions.any_(self)

    # ---- movement ----
    def reshape(self, *shape):
        return movement.reshape(self, shape, "reshape")

    def view(self, *shape):
        return movement.reshape(self, shape, "view")

    def view_as(self, other):
        return self.view(other.shape)

    def reshape_as(self, other):
        return self.reshape(other.shape)

    def permute(self, *dims):
        return movement.permute(self, dims)

    def transpose(self, dim0, dim1):
        return movement.transpose(self, dim0, dim1)

    def t(self):
        return movement.t(self)

    def expand(self, *sizes):
        return movement.expand(self, sizes)

    def expand_as(self, other):
        return movement.expand(self, other.shape)

    def unsqueeze(self, dim):
        return movement.unsqueeze(self, dim)

    def squeeze(self, dim=None):
        return movement.squeeze(self, dim)

    def flatten(self, start_dim=0, end_dim=-1):
        return movement.flatten(self, start_dim, end_dim)

    def flip(self, dims):
        return movement.flip(self, dims)

    def repeat(self, *sizes):
        return movement.repeat(self, sizes)

    def matmul(self, other):
        return linalg.matmul(self, other)

    def mm(self, other):
        return linalg.mm(self, other)

    def bmm(self, other):
        return linalg.bmm(self, other)


def realize(*tensors: Tensor) -> None:
    """Computes several tensors in one schedule."""
    pending = [t for t in (r() for r in _PENDING.values())
               if t is not None and t.node.op not in (Op.BUFFER, Op.CONST)]
    _PENDING.clear()
    lazy = list({id(t): t for t in [*tensors, *pending] if t.node.op is not Op.BUFFER}.values())
    by_device: dict = {}
    for t in lazy:
        by_device.setdefault(t.device, []).append(t)
    for device, group in by_device.items():
        refs = run_graph([t.node for t in group], device)
        for t, ref in zip(group, refs):
            t.node = ir.buffer(ref, t.dtype, t.shape)
