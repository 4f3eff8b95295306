"""Running graphs: a schedule's plan (recorded once per graph structure), its buffers, and its
launches, all without waiting. A training loop's repeated steps find their plan by the graph's
structure and only bind new buffers."""
from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from ..compiler.ir import BufferRef, Node
from ..compiler.ops import Op
from ..runtime.buffer import REFCOUNTS_VERIFIED
from ..runtime.program import enqueue_all
from .donation import unshared
from .plan import Plan, plan_for

# Lists that see every schedule run, as (plan, buffers read, buffers written, the computed
# nodes whose values it read from buffers): a jit capture. While one listens, outputs get
# fresh buffers (no donation), so that a replay of the launches never writes over a buffer
# that existed before it.
_listeners: list[list] = []


def run(targets: list[Node], device) -> list[BufferRef]:
    """Computes targets on device, returning the buffer holding each."""
    plan, nodes, leaves = plan_for(targets, device)
    if any(ref.device is not device for ref in leaves):
        leaves = _here(nodes, leaves, device)
    return _replay(plan, nodes, leaves, device)


def _here(nodes: list[Node], leaves: list[BufferRef], device) -> list[BufferRef]:
    """leaves, those of another device copied to device. A graph of constants alone
    (`cg.ones(3)`) is one node whatever the device its tensors are on, holding the buffer of
    the device that computed it last: it takes the copy, so that the next run here reads the
    same buffer (a jit capture sees the same leaves at every step)."""
    moved = {}
    for node in nodes:
        ref = node.buffer
        if ref is not None and ref.device is not device and node.op is not Op.BUFFER:
            node.buffer = moved[ref.id] = copied(ref, device)
    return [moved.get(ref.id) or (ref if ref.device is device else copied(ref, device))
            for ref in leaves]


@contextlib.contextmanager
def listen() -> Iterator[list]:
    """Records every schedule run inside the block as (plan, buffers read, buffers written,
    the computed nodes, not buffer nodes, whose values it read from buffers) in the list it
    yields; outputs get fresh buffers meanwhile."""
    heard: list = []
    _listeners.append(heard)
    try:
        yield heard
    finally:
        _listeners.remove(heard)


def _replay(plan: Plan, nodes: list[Node], leaves: list[BufferRef], device) -> list[BufferRef]:
    donated: dict[int, BufferRef] = {}
    given: set[int] = set()         # the leaves donated (an optimizer's step: hundreds)
    for donor in plan.donors if not _listeners else ():
        j, i = donor[:2]
        if j not in donated and i not in given and unshared(donor, nodes, leaves[i]):
            donated[j] = leaves[i]
            given.add(i)
    alloc = device.pool.alloc
    # a donated buffer gets a new ref: a buffer node stands for values that never change, and
    # nodes are interned by their ref, so the output must not come back as the leaf's node
    written = [BufferRef(device, nbytes, donated[j].buffer if j in donated else alloc(nbytes))
               for j, (_, nbytes) in enumerate(plan.outputs)]
    launch(plan, leaves, written)
    if _listeners:
        recalled = [n for n in nodes if n.buffer is not None and n.op is not Op.BUFFER]
        for heard in _listeners:
            heard.append((plan, leaves, written, recalled))
    for (pos, _), ref in zip(plan.outputs, written):
        nodes[pos].buffer = ref
    return [leaves[i] if leaf else written[i] for leaf, i in plan.targets]


def launch(plan: Plan, leaves: list[BufferRef], written: list[BufferRef]) -> None:
    """Enqueues plan's kernels reading leaves and writing written."""
    refs = leaves + written
    slots: list = plan.numbers + [None] * len(refs)     # (runtime.program.bind)
    width = len(plan.numbers)
    for i in plan.used:
        ref = refs[i]
        buffer = ref.buffer
        slots[width + i] = (storage(ref) if buffer is None else buffer).mem
    enqueue_all(plan.bound, slots)


def write_through(target: Node, ref: BufferRef, device) -> BufferRef:
    """Computes target now into the memory of ref's buffer, which NumPy shares (an in-place
    change of a tensor over an array), waiting until it is there, and returns a new ref to
    that memory for the changed tensor. The graphs still naming ref keep its old value: ref
    takes a copy of it first."""
    shared = ref.buffer
    ref.buffer = None
    storage(ref).copy_from(shared)
    value = run([target], device)[0]
    shared.copy_from(storage(value))
    device.synchronize()    # NumPy reads the memory without asking the queue
    return BufferRef(device, ref.nbytes, shared)


def own_buffer(node: Node, device) -> BufferRef:
    """A buffer holding a buffer node's value that nothing else names, whose memory NumPy may
    write without changing another value: the node's own, or a copy where another node names
    it too (a computed node keeps its buffer, and equal nodes are one: `cg.ones(3)` again)."""
    if (REFCOUNTS_VERIFIED and node.buffer.device is device
            and sys.getrefcount(node.buffer) == 3):     # node.arg, node.buffer
        return node.buffer
    return copied(node.buffer, device)


def copied(ref: BufferRef, device) -> BufferRef:
    """A new buffer on device holding ref's value (which may be another device's: _here)."""
    copy = BufferRef(device, ref.nbytes)
    storage(copy).copy_from(storage(ref))
    return copy


def storage(ref: BufferRef):
    """The device memory ref names, allocated on first use."""
    if ref.buffer is None:
        ref.buffer = ref.device.alloc(ref.nbytes)
    return ref.buffer
