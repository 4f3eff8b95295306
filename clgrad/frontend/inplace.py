"""Changing a tensor's value in place: the one way the package does it.

Every write ends in `_commit`: the tensor takes a new IR node, its version counter goes up
(autograd compares versions to refuse saved values that changed since), and a value that is
still a lazy graph is remembered, so that the next schedule computes it too (a loop of
`w -= lr * w.grad` never builds an ever longer chain). A view writes its new value back into
its base; views of a tensor that changed read it again when next used (views.py). A tensor
whose memory NumPy shares takes its new value at once, in that memory (`_write_through`).

- `assign(t, value)`: t takes value outside autograd, as `with no_grad(): t.copy_(value)`
  would: initialisers, load_state_dict, optimizers, step counters.
- The in-place Tensor methods (`add_`, `mul_`, `fill_`, `copy_`, `t[i] = v`, ...), which
  autograd sees: the result is recorded on a snapshot of the old value.
- The in-place shape methods (`squeeze_`, `unsqueeze_`, `t_`, `transpose_`): t keeps its
  elements in another shape; views made of t before still read it in its old layout.
- `move(t, value)`: t becomes value, on another device or of another dtype (Module.to).
- `restore(t, node, versions)`: a jit replay leaves t as the captured call left it.
"""
from __future__ import annotations

import weakref

from .. import engine
from ..compiler import dtype as dt
from ..compiler.ir import BufferRef, Node, buffer
from ..compiler.ops import Op
from . import elementwise as ew
from . import grad_mode, indexing, jit_protocol, views
from .backward import record
from .grad_mode import is_grad_enabled
from .operands import normalize_dim, normalize_dims

_BUFFER, _CONST = Op.BUFFER, Op.CONST    # globals read faster than Enum members

# Tensors changed in place whose new value is still a lazy graph, and the outputs a backward()
# started from: the next schedule takes them.
_PENDING: dict[int, weakref.ref] = {}
_stepped = [False]      # whether a backward() ran since the last schedule


def take_pending() -> list:
    """The tensors remembered since the last schedule whose value is still lazy."""
    pending = []
    for ref in _PENDING.values():
        t = ref()
        if t is not None and t._node.op is not _BUFFER and t._node.op is not _CONST:
            pending.append(t)
    _PENDING.clear()
    _stepped[0] = False
    return pending


def remember(t) -> None:
    """t's lazy value chains from an earlier value: the next schedule computes it."""
    _PENDING[id(t)] = weakref.ref(t)


def backward_ran(outputs) -> None:
    """backward() ran from outputs: the step's schedule computes them too (the loss a loop
    reads later would otherwise recompute the forward pass, and keep its graph alive)."""
    for t in outputs:
        remember(t)
    _stepped[0] = True


def _step_ended() -> None:
    """A no_grad block that changed parameters in place ended after a backward(): a
    hand-written optimizer step. Its schedule runs now, with the loss and the gradients
    still alive, so that every step (the last, read by the user, too) is one schedule of
    the same structure and K steps compile one step's kernels."""
    if _stepped[0] and not jit_protocol.capturing():
        tensor.realize()


grad_mode.on_leaf_updates = _step_ended


def _shares_numpy_memory(t) -> bool:
    """Whether t's value is memory NumPy shares (a view's changes reach it through its base)."""
    node = t._node
    return t._view is None and node.op is _BUFFER and node.arg.buffer is not None \
        and node.arg.buffer.shared and not jit_protocol.capturing()


def _commit(t, node: Node) -> None:
    jit_protocol.changing(t)
    shared = _shares_numpy_memory(t)
    old, t._node = t._node, node
    t._counter += 1
    if shared:
        _write_through(t, old.arg)
        return
    op = node.op
    if op is _BUFFER:
        jit_protocol.holds_buffer(t)
    if op is not _CONST:
        remember(t)


def _write_through(t, shared: BufferRef) -> None:
    """t's memory is shared with NumPy (from_numpy, numpy()): its new value is computed now,
    into that memory, since NumPy reading it cannot start a computation. PyTorch's in-place
    ops write there at once too. A jit capture's steps give their results new buffers, whose
    replays launch the same kernels each step: there t leaves the shared memory instead."""
    ref = engine.write_through(t._node, shared, t.device)
    t._node = buffer(ref, t.dtype, t.shape)
    jit_protocol.holds_buffer(t)


def assign(t, value, op: str = "assign"):
    """t takes value in place, outside autograd: a tensor, or an IR node made of tensors'
    nodes (an optimizer's update). Returns t."""
    node = value if isinstance(value, Node) else value.node
    view = t._view
    old = t._node if view is None else t.node
    if node.shape != old.shape:
        raise RuntimeError(f"{op}: a value of shape {node.shape} cannot be assigned to a tensor "
                           f"of shape {t.shape}")
    if view is not None:
        views.check_writable(t, op)
    _commit(t, node if node.dtype is old.dtype else node.cast(old.dtype))
    if view is not None:
        views.written(t)
    return t


def move(t, value) -> None:
    """t becomes value, a computed tensor that may be on another device or of another dtype,
    keeping its identity (Module.to: an optimizer made before still holds the parameter)."""
    views.check_writable(t, "to")
    jit_protocol.changing(t)
    t._node, t.device = value.node, value.device
    t._counter += 1
    if t._node.op is Op.BUFFER:
        jit_protocol.holds_buffer(t)


def restore(t, node: Node, versions: int) -> None:
    """t holds node, versions later: what a jit replay does for each tensor its step changed
    (the views of t read it again when used, as after any change)."""
    t._node = node
    t._counter += versions
    if node.op is Op.BUFFER:
        jit_protocol.holds_buffer(t)


def assign_result(t, result, op: str):
    """t takes result's value and history: the common end of every in-place op."""
    leaf = _check_leaf(t, op)
    node, old = result.node, t.node
    if node.shape != old.shape:
        raise RuntimeError(f"{op}: output with shape {t.shape} doesn't match the "
                           f"broadcast shape {result.shape}")
    views.check_writable(t, op)
    _commit(t, node if node.dtype is old.dtype else node.cast(old.dtype))
    if leaf:
        grad_mode.note_leaf_write()
    if result.grad_fn is not None:
        t.grad_fn, t.requires_grad = result.grad_fn, True
        t._output_nr = result._output_nr
    if t._view is not None:
        views.written(t)
    return t


def overwrite(t, value) -> None:
    """t takes value without autograd seeing it: an in-place write through detach()."""
    _commit(t, value.node.cast(t.dtype).detach())
    if t.is_leaf and t.requires_grad:
        t.realize()      # a leaf's gradient is found by its node: give it its own
    if t._view is not None:
        views.written(t)


def _check_leaf(t, op: str) -> bool:
    """Whether t is a leaf that requires grad, which only a block with grad off may change
    in place (refused otherwise, as PyTorch does)."""
    if not (t.requires_grad and t.is_leaf):
        return False
    if is_grad_enabled():
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    return True


def relayout(t, op: str, redo, undo):
    """t becomes redo(t), its own elements in another shape (undo(redo(x)) is x): a new
    version, with op's grad_fn; views of t read it through undo, and a view t stays one."""
    _check_leaf(t, op)
    if _shares_numpy_memory(t):
        # NumPy's memory keeps its layout: t reads and writes it through a tensor holding it
        views.held(t, tensor.Tensor(t._node, t.device))
    snap = snapshot(t)
    node = redo(snap).node          # (its grad_fn is replaced by op's)
    result = record(op, node, t.device, [snap])
    _commit(t, node)
    if result.grad_fn is not None:
        t.grad_fn, t._output_nr = result.grad_fn, 0
    t._relayouts = (*views.relayouts(t), undo)
    if t._view is not None:     # one version counter for a view and its base, as PyTorch's
        jit_protocol.changing(t._view.base)
        t._view.base._counter += 1
        views.relaid(t, redo, undo)
    return t


def snapshot(t):
    """A tensor standing for t's current value, for ops that are about to replace it."""
    snap = tensor.Tensor(t.node, t.device, t.requires_grad)
    snap.grad_fn, snap._accumulator, snap._counter = t.grad_fn, t._accumulator, t._version
    snap._output_nr = t._output_nr
    return snap


def computed_result(t, result, op: str):
    """assign_result for an op that computes t's new value from it (not copy_ or fill_,
    which cast what they are given): the result's type must be one PyTorch casts to t's in
    place, no float into an integer tensor, no number into a bool one."""
    if (result.dtype.is_float and not t.dtype.is_float) or \
            (t.dtype == dt.bool_ and result.dtype != dt.bool_):
        raise RuntimeError(f"{op}: result type {result.dtype.name} can't be cast to the "
                           f"desired output type {t.dtype.name}")
    return assign_result(t, result, op)


# ---- the in-place Tensor methods ----

def add_(self, other, alpha=1):
    return computed_result(self, snapshot(self) + (other * alpha if alpha != 1 else other),
                           "add_")


def sub_(self, other, alpha=1):
    return computed_result(self, snapshot(self) - (other * alpha if alpha != 1 else other),
                           "sub_")


def mul_(self, other):
    return computed_result(self, snapshot(self) * other, "mul_")


def div_(self, other, *, rounding_mode=None):
    return computed_result(self, snapshot(self).div(other, rounding_mode=rounding_mode), "div_")


def clamp_(self, min=None, max=None):
    return computed_result(self, snapshot(self).clamp(min, max), "clamp_")


def zero_(self):
    return fill_(self, 0, "zero_")


def fill_(self, value, _op: str = "fill_"):
    # recorded on the old value, so autograd sees the overwrite (its gradient is zero)
    node = self.node.const_like(value)
    return assign_result(self, record(_op, node, self.device, [snapshot(self)]), _op)


def copy_(self, src):
    if not isinstance(src, tensor.Tensor):
        raise TypeError(f"copy_: expected a Tensor, got {type(src).__name__}")
    from .operands import broadcast_to
    if src.device != self.device:
        src = src.to(self.device)
    shape = ew.broadcast_shape("copy_", self.shape, src.shape)
    if shape != self.shape:
        raise RuntimeError(f"copy_: cannot copy a tensor of shape {src.shape} into one of "
                           f"shape {self.shape}")
    moved = record("copy_", broadcast_to(src.node.cast(self.dtype), self.shape),
                   self.device, [snapshot(self), src])   # the old value gets zero
    return assign_result(self, moved, "copy_")


def _reshaped_(self, op: str, shape: tuple[int, ...]):
    old = self.shape
    return relayout(self, op, lambda x: x.reshape(shape), lambda x: x.reshape(old))


def squeeze_(self, dim=None):
    axes = normalize_dims("squeeze_", dim, self.ndim)
    shape = tuple(s for i, s in enumerate(self.shape) if not (i in axes and s == 1))
    # PyTorch's overloads: squeeze_(), squeeze_(int), squeeze_(tuple)
    op = "squeeze_" if dim is None else "squeeze__dims" if isinstance(dim, (tuple, list)) \
        else "squeeze__dim"
    return _reshaped_(self, op, shape)


def unsqueeze_(self, dim: int):
    axis = normalize_dim("unsqueeze_", dim, self.ndim + 1)
    return _reshaped_(self, "unsqueeze_", self.shape[:axis] + (1,) + self.shape[axis:])


def transpose_(self, dim0: int, dim1: int):
    a, b = normalize_dim("transpose_", dim0, self.ndim), normalize_dim("transpose_", dim1,
                                                                        self.ndim)
    swap = lambda x: x.transpose(a, b)     # noqa: E731  (its own inverse)
    return relayout(self, "transpose_", swap, swap)


def t_(self):
    if self.ndim > 2:
        raise RuntimeError(f"t_() expects a tensor with <= 2 dimensions, but self is "
                           f"{self.ndim}D")
    swap = (lambda x: x.t()) if self.ndim == 2 else (lambda x: x)
    return relayout(self, "t_", swap, swap)


def setitem(self, index, value) -> None:
    assign_result(self, indexing.setitem(snapshot(self), index, value), "setitem")


METHODS = [("add_", add_), ("sub_", sub_), ("mul_", mul_), ("div_", div_), ("clamp_", clamp_),
           ("zero_", zero_), ("fill_", fill_), ("copy_", copy_), ("__setitem__", setitem),
           ("squeeze_", squeeze_), ("unsqueeze_", unsqueeze_), ("transpose_", transpose_),
           ("swapaxes_", transpose_), ("swapdims_", transpose_), ("t_", t_),
           ("__iadd__", add_), ("__isub__", sub_), ("__imul__", mul_), ("__itruediv__", div_),
           ("_assign", assign_result), ("_overwrite", overwrite), ("_snapshot", snapshot)]

# last: tensor.py imports this module
from . import tensor  # noqa: E402
