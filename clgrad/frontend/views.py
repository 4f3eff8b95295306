"""Views: tensors standing for a part or a rearrangement of another tensor (reshape, permute,
basic indexing, detach). Values are lazy graphs, so a view does not share memory with its
base; PyTorch's shared storage is kept up in both directions instead:

- an in-place op on a view writes its new value back into the base, through the base's own
  in-place path (version counter, autograd);
- a view whose base changed since the view last read it (the base's version moved on) reads
  it again, by the op that made it, the next time its value or version is asked for.
"""
from __future__ import annotations

from ..compiler import ir
from .grad_mode import enable_grad, no_grad


class View:
    """How a tensor is a view of base: `read(base)` makes the view again (a tensor) from the
    base's current value, `write(base, view)` puts the view's new value into the base, and
    `seen` is the base's version the view's value was read at."""
    __slots__ = ("base", "read", "write", "seen", "refuses", "custom", "layouts")

    def __init__(self, base, read, write, refuses: str | None = None):
        self.base, self.read, self.write = base, read, write
        self.seen = base._counter
        self.refuses = refuses      # why in-place ops on this view are refused, if they are
        self.custom = False         # a custom Function's output: its history is its own
        # the base's in-place shape changes (squeeze_, t_, ...) so far: read and write take
        # the base in the layout it had when the view was made
        self.layouts = len(relayouts(base))

    def source(self):
        """The base as the view was made from it: seen through the undoing of each in-place
        shape change since (a view of it, so that writes reach the base)."""
        base = self.base
        for undo in reversed(relayouts(base)[self.layouts:]):
            base = undo(base)
        return base

    def stale(self) -> bool:
        base = self.base
        return base._counter != self.seen or (base._view is not None and base._view.stale())


def refresh(t) -> None:
    """t reads its base again (the base changed in place since t last did): its value, and its
    history when it has one (a view of a tensor that requires grad follows the base's)."""
    view = t._view
    base = view.base
    base.node                   # noqa: B018  (a stale base reads its own base first)
    with enable_grad() if t.requires_grad and t.grad_fn is not None else no_grad():
        fresh = view.read(view.source())
    t._node = fresh._node
    if t.grad_fn is not None and not view.custom:
        t.grad_fn, t._output_nr = fresh.grad_fn, fresh._output_nr
        t.requires_grad = fresh.requires_grad
        if t._retains_grad and t.grad_fn is not None:
            t.grad_fn.retain(t)
    t._counter += 1
    view.seen = base._counter


def written(t) -> None:
    """t, a view, took a new value in place: the base takes it too."""
    view = t._view
    view.write(view.source(), t)
    view.seen = view.base._counter


def relayouts(t) -> tuple:
    """The functions undoing t's in-place shape changes, oldest first."""
    return getattr(t, "_relayouts", ())


def held(t, holder) -> None:
    """t becomes a view of holder, which has its value: reads and writes pass through."""
    t._view = View(holder, lambda b: b, _write)


def relaid(t, redo, undo) -> None:
    """t, which changed shape in place (redo, undone by undo), stays a view of its base:
    reading it rearranges what it read before, writing it undoes that first."""
    old = t._view
    write = None if old.write is None else (lambda b, v: old.write(b, undo(v)))
    t._view = View(old.base, lambda b: redo(old.read(b)), write, old.refuses)
    t._view.custom, t._view.layouts = old.custom, old.layouts


def check_writable(t, op: str) -> None:
    view = t._view
    if view is not None and view.refuses is not None:
        raise RuntimeError(f"{op}: {view.refuses}")


def _write(base, value, op: str = "in-place write through a view") -> None:
    base._assign(value, op)


def reshaped(out, base):
    shape = out.shape
    out._view = View(base, lambda b: b.reshape(shape),
                     lambda b, v: _write(b, v.reshape(b.shape)))
    return out


def permuted(out, base, order: tuple[int, ...]):
    inverse = ir.inverse_order(order)
    out._view = View(base, lambda b: b.permute(*order),
                     lambda b, v: _write(b, v.permute(*inverse)))
    return out


def indexed(out, base, index):
    out._view = View(base, lambda b: b[index], lambda b, v: b.__setitem__(index, v))
    return out


def detached(out, base):
    out._view = View(base, lambda b: b.detach(), lambda b, v: b._overwrite(v))
    return out


def expanded(out, base):
    shape = out.shape
    out._view = View(base, lambda b: b.expand(*shape), None,
                     f"in-place operation on an expanded view of a tensor of shape "
                     f"{tuple(base.shape)}: several elements of the view are one element of "
                     "the base; clone() the view first")
    return out


def function_output(out, base, index: int, name: str):
    """out, an output of a custom Function recorded for autograd that is one of its inputs
    (base) or a view made by its forward: PyTorch refuses to change it in place, since the
    custom backward would not see the change."""
    if out._view is None:
        out._view = View(base, lambda b: b.detach(), None)
    out._view.custom = True
    out._view.refuses = (
        f"Output {index} of {name} is a view and is being modified inplace. This view was "
        "created inside a custom Function (or because an input was returned as-is) and the "
        "autograd logic to handle view+inplace would override the custom backward associated "
        "with the custom Function, leading to incorrect gradients. This behavior is "
        "forbidden. You can fix this by cloning the output of the custom Function.")
    return out
