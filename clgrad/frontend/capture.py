"""Capturing a step for cg.jit: running it once eagerly while recording every schedule it
launches, as a trace whose buffers are named by role (an argument's, a tensor's that existed
before the call, one the call wrote), and replaying that trace over new buffers.

Code a capture runs can talk to it: `guard()` declares Python values its kernels were built
from, `each_call()` hands it host work that replays must redo, and `in_jit()` tells code that
would read tensor values on the host to build the graph that fits every value instead.
"""
from __future__ import annotations

import contextlib
import gc

from .. import engine
from ..compiler import ir
from ..compiler.ir import BufferRef
from ..compiler.ops import Op
from ..runtime.buffer import Buffer
from . import inplace
from .operands import is_tensor
from .tensor import Tensor, realize


class _Recording:
    """What the code a capture runs tells it: (value_of, value) pairs its replays rely on
    (guard), and host work they must redo, as (key, work, host transfers) (each_call)."""

    def __init__(self):
        self.guards: list[tuple] = []
        self.prologue: list[tuple] = []
        self.owned: set[int] = set()        # ids of tensors the prologue's work changes


_recording: _Recording | None = None    # while a capture runs


_steps_running = 0      # jitted steps whose Python runs now (a warm-up, capture or eager call)


def capturing() -> bool:
    """Whether a capture is running."""
    return _recording is not None


def in_jit() -> bool:
    """Whether a jitted step's Python is running: code that would read tensor values on the
    host to pick its graph builds the graph that fits every value instead, so the step's
    eager calls, captures and replays share one set of kernels."""
    return _steps_running > 0


@contextlib.contextmanager
def running_step():
    global _steps_running
    _steps_running += 1
    try:
        yield
    finally:
        _steps_running -= 1


def guard(value_of) -> None:
    """Declares, to a capture running now, Python values its kernels were built from (an
    optimizer's hyperparameters): a replay that finds value_of() changed captures anew.
    Outside a capture it does nothing."""
    if _recording is not None:
        _recording.guards.append((value_of, value_of()))


def each_call(key, work) -> None:
    """Runs work: host-side preparation of the kernels a step launches after it, such as an
    optimizer writing this step's scalars into a buffer it keeps. work returns the tensors
    it changes (step counts). Under a capture, every replay runs work again before its
    kernels, and the tensors work changes are left to it; key names work when two captures
    are compared."""
    if _recording is None:
        work()
        return
    transfers = Buffer.transfers
    _recording.owned.update(id(t) for t in work())
    _recording.prologue.append((key, work, Buffer.transfers - transfers))


class _NotReplayable(Exception):
    """Why a step cannot be replayed."""


STALE = object()         # a replay's answer when a tensor it reads no longer fits the trace


def flatten(result) -> tuple[type | None, list]:
    """A step's result as its kind (None, Tensor, tuple or list) and its tensors."""
    if result is None:
        return None, []
    if is_tensor(result):
        return Tensor, [result]
    if isinstance(result, (tuple, list)) and all(is_tensor(t) for t in result):
        return type(result), list(result)
    raise TypeError(f"jit: a step must return a tensor, a tuple or list of tensors, or None; "
                    f"got {type(result).__name__}")


def restore(kind, items: list, convert):
    if kind is None:
        return None
    converted = [convert(t) for t in items]
    return converted[0] if kind is Tensor else kind(converted)


def detached(t: Tensor) -> Tensor:
    """t's value as a tensor outside autograd. A leaf that requires grad keeps its node to
    itself (its gradient is found by it); other values share theirs, so no copy is made."""
    if t.node.op is Op.BUFFER and not (t.is_leaf and t.requires_grad):
        return Tensor(t.node, t.device)
    return t.detach()


def _live_tensors() -> list[Tensor]:
    """Every live tensor (a set of their types is several times faster than isinstance)."""
    kinds, more = set(), [Tensor]
    while more:
        kind = more.pop()
        kinds.add(kind)
        more += kind.__subclasses__()
    return [o for o in gc.get_objects() if type(o) in kinds]


def _lazy(tensors) -> list[Tensor]:
    return [t for t in tensors if t is not None and t.node.op not in (Op.BUFFER, Op.CONST)]


def capture(fn, args, kwargs, inputs) -> tuple:
    """Runs fn once eagerly, recording its schedules: its trace (or why it has none) and its
    result."""
    # A lazy tensor made earlier reads the buffers its sources had then, which a trace would
    # name by the tensors holding them now: compute such tensors first, so each is a buffer
    # of its own.
    tensors = _live_tensors()
    realize(*_lazy(tensors))
    before = {id(t): (t, t.node, t.grad, t._version, t.grad_fn, t.requires_grad)
              for t in tensors}
    del tensors
    watermark = next(BufferRef._ids)
    transfers = Buffer.transfers
    global _recording
    _recording = recording = _Recording()
    try:
        with engine.listen() as log:
            kind, outputs = flatten(fn(*args, **kwargs))
            realize(*outputs)
            outputs = [detached(t) for t in outputs]
            changed = _changed(before, recording.owned)
            if not isinstance(changed, str):
                realize(*_lazy(t for t, *_ in changed), *_lazy(t.grad for t, *_ in changed))
    finally:
        _recording = None
    result = restore(kind, outputs, lambda t: t)
    try:
        if Buffer.transfers - transfers != sum(n for *_, n in recording.prologue):
            raise _NotReplayable("copies data between host and device (item(), numpy(), "
                                 "tensors made from host data)")
        if isinstance(changed, str):
            raise _NotReplayable(changed)
        trace = Trace(inputs, before, watermark, log, changed, kind, outputs, recording)
        if _kept(before, trace, outputs) is not None:
            gc.collect()    # perhaps only cycles of the step's garbage still hold it
            kept = _kept(before, trace, outputs)
            if kept is not None:
                raise _NotReplayable(f"keeps a {list(kept.shape)} tensor it made somewhere "
                                     "other than its return value or a .grad: return it instead")
    except _NotReplayable as why:
        return str(why), result
    return trace, result


def _changed(before: dict, owned: set[int]) -> list[tuple] | str:
    """The tensors that existed before the call and were changed by it (other than by the
    work of each_call), with their node and version before it; or why such a change cannot
    be replayed."""
    changed = []
    for t, node, grad, version, grad_fn, requires_grad in before.values():
        if (t.node is node and t.grad is grad) or id(t) in owned:
            continue
        if t.grad_fn is not grad_fn or t.requires_grad != requires_grad:
            return f"changes the autograd history of a {list(t.shape)} tensor it did not make"
        changed.append((t, node, version))
    return changed


def _kept(before: dict, trace: Trace, outputs: list[Tensor]) -> Tensor | None:
    """A tensor the step made and kept where a replay would not update it (it would keep
    the captured call's value), if there is one."""
    known = set()
    for t in [*outputs, *(s.grad for s in trace.slots)]:
        while t is not None:        # with the tensors it is a view of (detach() makes views)
            known.add(id(t))
            t = t._view and t._view.base
    return next((t for t in _live_tensors() if id(t) not in before and id(t) not in known),
                None)


def _grad_buffer(t: Tensor) -> BufferRef | None:
    """The buffer of t's .grad, if it has one of t's shape and dtype (what a trace reads)."""
    g = t.grad
    if g is None or g.node.op is not Op.BUFFER or (g.shape, g.dtype) != (t.shape, t.dtype):
        return None
    return g.node.arg


class Trace:
    """One captured call, with its buffers named by role: ("slot", k) is the k-th tensor
    read or changed (the arguments first, then tensors that existed before the call),
    ("grad", k) its .grad (whichever tensor that is by then), ("fresh", n) the n-th buffer
    the call wrote, ("ref", r) a buffer no tensor holds; ("node", c) names a constant."""

    def __init__(self, inputs, before, watermark, log, changed, kind, outputs, recording):
        self.guards = recording.guards
        self.prologue = [(key, work) for key, work, _ in recording.prologue]
        self.slots: list[Tensor] = list(inputs)
        self.arity = len(inputs)
        slot_index = {id(t): k for k, t in enumerate(inputs)}
        owners = {id(t.node.arg): k for k, t in enumerate(inputs)}
        held = {id(node.arg): t for t, node, *_ in before.values() if node.op is Op.BUFFER}
        grad_of = {id(grad): t for t, _, grad, *_ in before.values() if grad is not None}
        self.fresh: list[tuple[object, int]] = []          # (device, nbytes) per written buffer
        fresh_index: dict[int, int] = {}

        def slot(t: Tensor) -> int:
            if id(t) not in slot_index:
                slot_index[id(t)] = len(self.slots)
                self.slots.append(t)
            return slot_index[id(t)]

        def name(ref: BufferRef) -> tuple:
            if id(ref) in fresh_index:
                return ("fresh", fresh_index[id(ref)])
            if id(ref) not in owners and id(ref) in held:
                holder = held[id(ref)]
                if id(holder) in grad_of:   # a .grad gets a new tensor each accumulation
                    return ("grad", slot(grad_of[id(holder)]))
                owners[id(ref)] = slot(holder)
            if id(ref) in owners:
                return ("slot", owners[id(ref)])
            if ref.id >= watermark:
                raise _NotReplayable("uploads data inside the step: pass it as an argument")
            return ("ref", ref)

        def value(node) -> tuple:
            return name(node.arg) if node.op is Op.BUFFER else ("node", node)

        self.schedules = []
        self.grads_read = set()         # slots whose .grad buffer the trace reads
        for plan, leaves, written in log:
            read = tuple(name(r) for r in leaves)
            self.grads_read.update(k for kind, k in read if kind == "grad")
            for ref in written:
                fresh_index[id(ref)] = len(self.fresh)
                self.fresh.append((ref.device, ref.nbytes))
            self.schedules.append((plan, read, tuple(name(r) for r in written)))
        self.exits = [(slot(t), value(t.node), t._version - version)
                      for t, node, version in changed if t.node is not node]
        self.grads = [(slot(t), None if t.grad is None else value(t.grad.node))
                      for t, *_ in changed if t.grad is not before[id(t)][2]]
        entry = {id(t): node for t, node, _ in changed}
        self.entries = [entry.get(id(t), t.node) for t in self.slots]
        self.requires = [t.requires_grad for t in self.slots]    # frozen layers stay frozen
        self.kind = kind
        self.outputs = [(value(t.node), t.dtype, t.shape, t.device) for t in outputs]

    def signature(self) -> tuple:
        """Equal for captures that launch the same plans over buffers in the same roles.
        Tensors are compared by identity (arguments by position), and what is unordered
        by nature as sets: the order of tensors found by the garbage collector may vary."""
        def ident(name):
            if name is None or name[0] == "fresh":
                return name
            kind, x = name
            if kind in ("slot", "grad"):
                return kind, (x if x < self.arity else id(self.slots[x]))
            return kind, id(x)

        def slot(k):
            return ident(("slot", k))
        return ([(id(p), tuple(map(ident, r)), w) for p, r, w in self.schedules],
                [(id(d), n) for d, n in self.fresh],
                frozenset((slot(k), n.op, n.dtype, n.shape, None if n.op is Op.BUFFER else id(n),
                           self.requires[k]) for k, n in enumerate(self.entries)),
                frozenset((slot(k), ident(v), d) for k, v, d in self.exits),
                frozenset((slot(k), ident(v)) for k, v in self.grads),
                self.kind, [(ident(v), *rest[:2]) for v, *rest in self.outputs],
                [value for _, value in self.guards], [key for key, _ in self.prologue])

    def replay(self, inputs):
        if any(value_of() != value for value_of, value in self.guards):
            return STALE
        slots = [*inputs, *self.slots[self.arity:]]
        held = []
        for t, entry, requires in zip(slots, self.entries, self.requires):
            node = t.node
            if t.requires_grad != requires:
                return STALE
            if entry.op is Op.BUFFER:
                if node.op is not Op.BUFFER or (node.shape, node.dtype) != (entry.shape,
                                                                           entry.dtype):
                    return STALE
                held.append(node.arg)
            elif node is not entry:
                return STALE
            else:
                held.append(None)
        grads = {k: _grad_buffer(slots[k]) for k in self.grads_read}
        if None in grads.values():
            return STALE
        tables = {"slot": held, "grad": grads,
                  "fresh": [BufferRef(d, n) for d, n in self.fresh]}
        for _, work in self.prologue:
            work()

        def ref(name):
            return name[1] if name[0] == "ref" else tables[name[0]][name[1]]

        def node(name, dtype, shape):
            return name[1] if name[0] == "node" else ir.buffer(ref(name), dtype, shape)

        for plan, read, written in self.schedules:
            engine.launch(plan, [ref(n) for n in read], [ref(n) for n in written])
        for k, value, versions in self.exits:
            t = slots[k]
            inplace.restore(t, node(value, t.dtype, t.shape), versions)
        for k, value in self.grads:
            t = slots[k]
            t.grad = None if value is None else Tensor(node(value, t.dtype, t.shape), t.device)
        # a returned value that a tensor also holds gets a node of its own, as detach() does
        return restore(self.kind, self.outputs, lambda o: Tensor(
            node(*o[:3]) if o[0][0] != "slot" else ir.detach(node(*o[:3])), o[3]))
