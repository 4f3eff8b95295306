"""Changing a tensor's value in place: the one way the package does it.

Every write ends in `_commit`: the tensor takes a new IR node, its version counter goes up
(autograd compares versions to refuse saved values that changed since), and a value that is
still a lazy graph is remembered, so that the next schedule computes it too (a loop of
`w -= lr * w.grad` never builds an ever longer chain). A view writes its new value back into
its base; views of a tensor that changed read it again when next used (views.py).

- `assign(t, value)`: t takes value outside autograd, as `with no_grad(): t.copy_(value)`
  would: initialisers, load_state_dict, optimizers, step counters.
- The in-place Tensor methods (`add_`, `mul_`, `fill_`, `copy_`, `t[i] = v`, ...), which
  autograd sees: the result is recorded on a snapshot of the old value.
- `move(t, value)`: t becomes value, on another device or of another dtype (Module.to).
- `restore(t, node, versions)`: a jit replay leaves t as the captured call left it.
"""
from __future__ import annotations

import weakref

from ..compiler.ir import Node
from ..compiler.ops import Op
from . import elementwise as ew
from . import indexing, jit_protocol, views
from .backward import record
from .grad_mode import is_grad_enabled

# Tensors changed in place whose new value is still a lazy graph; the next schedule takes them.
_PENDING: dict[int, weakref.ref] = {}


def take_pending() -> list:
    """The tensors changed in place since the last schedule whose value is still lazy."""
    pending = [t for t in (r() for r in _PENDING.values())
               if t is not None and t._node.op not in (Op.BUFFER, Op.CONST)]
    _PENDING.clear()
    return pending


def _commit(t, node: Node) -> None:
    jit_protocol.changing(t)
    t._node = node
    t._counter += 1
    if node.op is Op.BUFFER:
        jit_protocol.holds_buffer(t)
    if node.op is not Op.CONST:
        _PENDING[id(t)] = weakref.ref(t)


def assign(t, value, op: str = "assign"):
    """t takes value in place, outside autograd: a tensor, or an IR node made of tensors'
    nodes (an optimizer's update). Returns t."""
    node = value if isinstance(value, Node) else value.node
    if node.shape != t.node.shape:
        raise RuntimeError(f"{op}: a value of shape {node.shape} cannot be assigned to a tensor "
                           f"of shape {t.shape}")
    views.check_writable(t, op)
    _commit(t, node.cast(t.dtype))
    if t._view is not None:
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
    if t.requires_grad and t.is_leaf and is_grad_enabled():
        raise RuntimeError(f"{op}: a leaf Variable that requires grad is being used in an "
                           "in-place operation.")
    if result.shape != t.shape:
        raise RuntimeError(f"{op}: output with shape {t.shape} doesn't match the "
                           f"broadcast shape {result.shape}")
    views.check_writable(t, op)
    _commit(t, result.node.cast(t.dtype))
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


def snapshot(t):
    """A tensor standing for t's current value, for ops that are about to replace it."""
    snap = tensor.Tensor(t.node, t.device, t.requires_grad)
    snap.grad_fn, snap._accumulator, snap._counter = t.grad_fn, t._accumulator, t._version
    snap._output_nr = t._output_nr
    return snap


# ---- the in-place Tensor methods ----

def add_(self, other, alpha=1):
    return assign_result(self, snapshot(self) + (other * alpha if alpha != 1 else other), "add_")


def sub_(self, other, alpha=1):
    return assign_result(self, snapshot(self) - (other * alpha if alpha != 1 else other), "sub_")


def mul_(self, other):
    return assign_result(self, snapshot(self) * other, "mul_")


def div_(self, other, *, rounding_mode=None):
    return assign_result(self, snapshot(self).div(other, rounding_mode=rounding_mode), "div_")


def clamp_(self, min=None, max=None):
    return assign_result(self, snapshot(self).clamp(min, max), "clamp_")


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


def setitem(self, index, value) -> None:
    assign_result(self, indexing.setitem(snapshot(self), index, value), "setitem")


METHODS = [("add_", add_), ("sub_", sub_), ("mul_", mul_), ("div_", div_), ("clamp_", clamp_),
           ("zero_", zero_), ("fill_", fill_), ("copy_", copy_), ("__setitem__", setitem),
           ("__iadd__", add_), ("__isub__", sub_), ("__imul__", mul_), ("__itruediv__", div_),
           ("_assign", assign_result), ("_overwrite", overwrite), ("_snapshot", snapshot)]

# last: tensor.py imports this module
from . import tensor  # noqa: E402
