"""Capturing a step for cg.jit: running it once eagerly while recording every schedule it
launches, as a trace whose buffers are named by role (an argument's, a tensor's that existed
before the call, one the call wrote), and replaying that trace over new buffers.

What the code a capture runs tells it (guard, each_call) and what the rest of the frontend
reports to it (tensors holding buffers, made, or changed; host transfers) goes through
jit_protocol.
"""
from __future__ import annotations

import gc
import sys

from .. import engine
from ..compiler import ir
from ..compiler.ir import BufferRef
from ..compiler.ops import Op
from ..engine.donation import may_give
from . import inplace, jit_protocol
from .operands import is_tensor
from .tensor import Tensor, realize


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


def _lazy(tensors) -> list[Tensor]:
    return [t for t in tensors if t is not None and t.node.op not in (Op.BUFFER, Op.CONST)]


def capture(fn, args, kwargs, inputs, made_since_first_call) -> tuple:
    """Runs fn once eagerly, recording its schedules: its trace (or why it has none) and its
    result. made_since_first_call(node): whether node was made since the step's first call
    (by a call, or between calls)."""
    with jit_protocol.recording(jit_protocol.holders()) as recording, \
            engine.listen() as log:
        recording.log = log
        kind, outputs = flatten(fn(*args, **kwargs))
        realize(*outputs)
        outputs = [detached(t) for t in outputs]
        changed = _changed(recording.before, recording.owned)
        if not isinstance(changed, str):
            realize(*_lazy(t for t, *_ in changed), *_lazy(t.grad for t, *_ in changed))
    result = restore(kind, outputs, lambda t: t)
    before = recording.before
    try:
        host_transfers = sum(entry.transfers for entry in recording.log
                             if isinstance(entry, jit_protocol.HostWork))
        if recording.transfers != sum(n for *_, n in recording.prologue) + host_transfers:
            raise _NotReplayable("copies data between host and device (item(), numpy(), "
                                 "tensors made from host data)")
        if isinstance(changed, str):
            raise _NotReplayable(changed)
        trace = Trace(inputs, before, log, changed, kind, outputs, recording,
                      made_since_first_call)
        if _kept(recording, trace, outputs) is not None:
            gc.collect()    # perhaps only cycles of the step's garbage still hold it
            kept = _kept(recording, trace, outputs)
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
        if (t._node is node and t.grad is grad) or id(t) in owned:
            continue
        if t.grad_fn is not grad_fn or t.requires_grad != requires_grad:
            return f"changes the autograd history of a {list(t.shape)} tensor it did not make"
        changed.append((t, node, version))
    return changed


def _kept(recording, trace: Trace, outputs: list[Tensor]) -> Tensor | None:
    """A tensor the step made and kept where a replay would not update it (it would keep
    the captured call's value), if there is one."""
    known = set()
    for t in [*outputs, *(s.grad for s in trace.slots)]:
        while t is not None:        # with the tensors it is a view of (detach() makes views)
            known.add(id(t))
            t = t._view and t._view.base
    made = (r() for r in recording.made)
    return next((t for t in made if t is not None and id(t) not in known), None)


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

    def __init__(self, inputs, before, log, changed, kind, outputs, recording,
                 made_since_first_call):
        self.guards = recording.guards
        self.prologue = [(key, work) for key, work, _ in recording.prologue]
        self.slots: list[Tensor] = list(inputs)
        self.arity = len(inputs)
        self.grads_read = set()         # slots whose .grad buffer the trace reads
        slot_index = {id(t): k for k, t in enumerate(inputs)}
        owners = {}     # buffer -> slot: the arguments' buffers as the call found them
        for k, t in enumerate(inputs):
            node = before[id(t)][1] if id(t) in before else t.node
            if node.op is Op.BUFFER:
                owners.setdefault(id(node.arg), k)
        grad_of = {id(grad): t for t, _, grad, *_ in before.values() if grad is not None}
        changed_ids = {id(t) for t, *_ in changed}

        def preference(t: Tensor) -> tuple:
            """Which of the tensors holding one buffer names it: no .grad where another does,
            and one the call changes (its state, the same tensor at every call) where another
            only aliases it (a result of the last call the caller still holds)."""
            return id(t) in grad_of, id(t) not in changed_ids

        held = {}       # buffer -> the tensor holding it
        for t, node, *_ in before.values():
            if node.op is Op.BUFFER:
                other = held.get(id(node.arg))
                if other is None or preference(t) <= preference(other):
                    held[id(node.arg)] = t
        self.fresh: list[tuple[object, int]] = []          # (device, nbytes) per written buffer
        fresh_index: dict[int, int] = {}

        def slot(t: Tensor) -> int:
            if id(t) not in slot_index:
                slot_index[id(t)] = len(self.slots)
                self.slots.append(t)
            return slot_index[id(t)]

        reused: set[int] = set()        # buffers of values reused from earlier calls
        self._reused_from: list[tuple[tuple, BufferRef]] = []   # (name, buffer) they came from

        def name(ref: BufferRef) -> tuple:
            if id(ref) in fresh_index:
                return ("fresh", fresh_index[id(ref)])
            if id(ref) in reused:
                return ("ref", ref)
            if id(ref) not in owners and id(ref) in held:
                holder = held[id(ref)]
                if id(holder) in grad_of:   # a .grad gets a new tensor each accumulation
                    return ("grad", slot(grad_of[id(holder)]))
                owners[id(ref)] = slot(holder)
            if id(ref) in owners:
                return ("slot", owners[id(ref)])
            if id(ref) in recording.uploads:
                raise _NotReplayable("uploads data inside the step: pass it as an argument")
            return ("ref", ref)

        def recall(node) -> None:
            """A value computed from buffers before this call but since the step's first:
            eagerly, a graph over the same buffers as an earlier call's finds the value that
            call computed while a tensor still holds it (nodes are interned). A replay reads
            that buffer itself only while the buffers it came from are the ones this call
            found (_reused_from); over others it captures anew. (A value made before the first
            call is that of a tensor the step reads; a constant's is the same at every call.)"""
            if id(node.buffer) in fresh_index or not made_since_first_call(node):
                return
            sources = [n.arg for n in ir.toposort([node]) if n.op is Op.BUFFER]
            if sources:
                reused.add(id(node.buffer))
                for ref in sources:
                    source = name(ref)
                    if source[0] == "grad":
                        self.grads_read.add(source[1])
                    if source[0] != "ref":
                        self._reused_from.append((source, ref))

        def value(node) -> tuple:
            if node.op is Op.BUFFER:
                return name(node.arg)
            if node.buffer is not None:         # a computed node's value
                recall(node)
                return name(node.buffer)
            return ("node", node)

        self.schedules = []
        for entry in log:
            if isinstance(entry, jit_protocol.HostWork):
                plan, leaves, written, recalled = entry, entry.reads, entry.writes, ()
            else:
                plan, leaves, written, recalled = entry
            for node in recalled:
                recall(node)
            read = tuple(name(r) for r in leaves)
            self.grads_read.update(k for kind, k in read if kind == "grad")
            for ref in written:
                fresh_index[id(ref)] = len(self.fresh)
                self.fresh.append((ref.device, ref.nbytes))
            self.schedules.append((plan, read, tuple(name(r) for r in written)))
        self.exits = [(slot(t), value(t._node), t._counter - version)
                      for t, node, version in changed if t._node is not node]
        self.grads = [(slot(t), None if t.grad is None else value(t.grad.node))
                      for t, *_ in changed if t.grad is not before[id(t)][2]]
        entry = {id(t): node for t, node, _ in changed}
        self.entries = [entry.get(id(t), t._node) for t in self.slots]
        self.requires = [t.requires_grad for t in self.slots]    # frozen layers stay frozen
        self.kind = kind
        self.outputs = [(value(t.node), t.dtype, t.shape, t.device) for t in outputs]
        # A written buffer that no tensor holds after the call (a value passed from one of
        # its kernels to the next) is the same buffer at every replay: the queue runs the
        # replays in order, and allocating and releasing each one anew cost more than a small
        # step's launches (a GPT's one-character step: 55 of them).
        kept = {name[1] for name in [*(v for _, v, _ in self.exits), *(v for _, v in self.grads),
                                     *(v for v, *_ in self.outputs)]
                if name is not None and name[0] == "fresh"}
        self._scratch = [None if n in kept else BufferRef(*self.fresh[n])
                         for n in range(len(self.fresh))]
        self._donors = self._find_donors()

    def _find_donors(self) -> dict[int, int]:
        """Written buffers a replay may place over the buffer of the slot whose new value they
        are (fresh n -> slot k), as eager runs donate (engine/donation.py): where the
        schedule writing it may write over that input (its plan's donors), and nothing the
        trace does after that schedule reads the slot's old buffer. Whether something outside
        still can is for each replay to tell (_unshared)."""
        new_value = {value[1]: k for k, value, _ in self.exits if value[0] == "fresh"}
        last_read = {name: s for s, (_, read, _) in enumerate(self.schedules) for name in read}
        read_after = {v for v, *_ in self.outputs} | {v for _, v in self.grads}
        found: dict[int, int] = {}
        for s, (plan, read, written) in enumerate(self.schedules):
            for j, i, *_ in plan.donors:
                out, leaf = written[j], read[i]
                if (out[0] == "fresh" and leaf[0] == "slot" and new_value.get(out[1]) == leaf[1]
                        and last_read[leaf] == s and leaf not in read_after):
                    found.setdefault(out[1], leaf[1])
        return found

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

        def step(p):
            return ("host", p.key) if isinstance(p, jit_protocol.HostWork) else id(p)
        return ([(step(p), tuple(map(ident, r)), w) for p, r, w in self.schedules],
                [(id(d), n) for d, n in self.fresh],
                frozenset((slot(k), n.op, n.dtype, n.shape, None if n.op is Op.BUFFER else id(n),
                           self.requires[k]) for k, n in enumerate(self.entries)),
                frozenset((slot(k), ident(v), d) for k, v, d in self.exits),
                frozenset((slot(k), ident(v)) for k, v in self.grads),
                self.kind, [(ident(v), *rest[:2]) for v, *rest in self.outputs],
                [value for _, value in self.guards], [key for key, _ in self.prologue],
                frozenset(ident(n) for n, _ in self._reused_from))

    def replay(self, inputs):
        if any(value_of() != value for value_of, value in self.guards):
            return STALE
        slots = [*inputs, *self.slots[self.arity:]]
        held = self._held(slots)
        grads = {k: _grad_buffer(slots[k]) for k in self.grads_read}
        if held is None or None in grads.values():
            return STALE
        tables = {"slot": held, "grad": grads}
        if any(tables[kind][k] is not ref for (kind, k), ref in self._reused_from):
            return STALE
        for _, work in self.prologue:
            work()
        fresh = [BufferRef(*made) if scratch is None else scratch
                 for made, scratch in zip(self.fresh, self._scratch)]
        for n, k in self._donors.items():
            if _unshared(slots[k], held[k]):
                # a new ref, as an eager donation's: the old one's node stands for the old value
                fresh[n] = BufferRef(held[k].device, held[k].nbytes, held[k].buffer)
        tables["fresh"] = fresh

        def ref(name):
            return name[1] if name[0] == "ref" else tables[name[0]][name[1]]

        def node(name, dtype, shape):
            return name[1] if name[0] == "node" else ir.buffer(ref(name), dtype, shape)

        for plan, read, written in self.schedules:
            if isinstance(plan, jit_protocol.HostWork):
                plan.run([ref(n) for n in read], [ref(n) for n in written])
            else:
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

    def _held(self, slots: list[Tensor]) -> list[BufferRef | None] | None:
        """The buffer each slot's tensor holds (None for a slot the trace reads as a lazy
        node), or None where a slot no longer fits the trace."""
        held = []
        for t, entry, requires in zip(slots, self.entries, self.requires):
            node = t.node
            if t.requires_grad != requires:
                return None
            if entry.op is Op.BUFFER:
                if node.op is not Op.BUFFER or (node.shape, node.dtype) != (entry.shape,
                                                                           entry.dtype):
                    return None
                held.append(node.arg)
            elif node is not entry:
                return None
            else:
                held.append(None)
        return held


def _unshared(t: Tensor, ref: BufferRef) -> bool:
    """Whether t alone holds its buffer node, and that node (with the replay's table of
    buffers) the buffer: no other tensor, view or lazy graph could read the old value after
    a kernel wrote over it. NumPy's view of the memory counts too (runtime/buffer.py)."""
    if t._view is not None or ref.buffer is None or not may_give(ref):
        return False
    # t._node and getrefcount's argument; node.arg, node.buffer, the table, this call's
    # argument and getrefcount's
    return sys.getrefcount(t._node) == 2 and sys.getrefcount(ref) == 5
