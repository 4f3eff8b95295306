"""Runs of plain backward nodes derived from one template (compiler/derived.py's `cached`).

A training step's backward pass has the same structure at every step. A run of consecutive
nodes of the graph order made only of GradFns and leaves (no hooks, no retained gradients, no
saved value changed since, not freed) is keyed by one walk of its incoming gradients and of
every GradFn's output and inputs down to buffers, plus its wiring: which node of the run each
edge feeds, or that it leaves the run. That walk describes everything each GradFn's
derivation reads (a superset of the per-GradFn keys, which stop at the inputs), so the
gradients leaving the run are rebuilt in one go: no per-GradFn signature, no intermediate
Tensors, no additions as Tensor ops inside the run. A pass without custom Functions is one
run; a custom Function's backward (user code) runs between two.

Gradients only flow forward in the graph order, so a run's incoming gradients are all there
when it starts, and what it sends on goes to nodes after it.
"""
from __future__ import annotations

from ..compiler import derived, ir
from ..compiler.walk_match import RecentWalks
from .backward import AccumulateGrad, GradFn, _add, accumulate_node
from . import tensor


def segment_end(order: list, start: int) -> int:
    """The end of the run of plain backward nodes that starts at order[start] with a GradFn
    (start itself when there is none)."""
    if not _plain_gradfn(order[start]):
        return start
    end = start + 1
    while end < len(order):
        fn = order[end]
        if type(fn) is AccumulateGrad:
            if fn.hooks:
                break
        elif not _plain_gradfn(fn):
            break
        end += 1
    return end


def _plain_gradfn(fn) -> bool:
    if type(fn) is not GradFn or fn.hooks or fn.retained or fn.freed:
        return False
    for t, version in zip(fn.inputs, fn.versions):
        if t._version != version:
            return False        # derived one at a time: its apply says whether that matters
    return True


def run_segment(segment: list, grads: dict, push, retain_graph: bool) -> None:
    """Propagates the gradients pending in grads (id(node) -> one per output) through the
    plain nodes of segment: pushes what leaves it with push(node, output nr, gradient) and
    accumulates its leaves' gradients."""
    incoming = []
    for fn in segment:
        slot = grads.pop(id(fn), None)
        incoming.append(None if slot is None else slot[0])
    inside = {id(fn): k for k, fn in enumerate(segment)}
    results, reached = _derived(segment, incoming, inside)
    found = iter(results)
    for fn in segment:
        if type(fn) is AccumulateGrad:
            node = next(found)
            if node is not None:
                accumulate_node(fn.variable, node)
            continue
        for (nxt, nr), t in zip(fn.next_functions, fn.inputs):
            if nxt is not None and id(nxt) not in inside:
                node = next(found)
                if node is not None:
                    push(nxt, nr, tensor.Tensor(node, t.device))
    if not retain_graph:
        for fn, got in zip(segment, reached):
            if got and type(fn) is GradFn:
                fn.release()


def _propagate(segment: list, incoming: list, inside: dict) -> tuple[list, list]:
    """The segment's gradients one GradFn at a time, as nodes: per leaf its gradient, per
    GradFn one per edge leaving the segment (None where none flows); and whether each node
    received a gradient."""
    pending = {k: g for k, g in enumerate(incoming) if g is not None}
    results, reached = [], []
    for k, fn in enumerate(segment):
        g = pending.pop(k, None)
        reached.append(g is not None)
        if type(fn) is AccumulateGrad:
            results.append(None if g is None else g.node)
            continue
        grads = [None] * len(fn.next_functions) if g is None else fn.apply([g], False)
        for (nxt, _), ng in zip(fn.next_functions, grads):
            if nxt is None:
                continue
            j = inside.get(id(nxt))
            if j is None:
                results.append(None if ng is None else ng.node)
            elif ng is not None:
                pending[j] = _add(pending.get(j), ng)
    return results, reached


def _derived(segment: list, incoming: list, inside: dict) -> tuple[list, list]:
    """_propagate's results, from the template of the segment's structure when there is one.
    The key (derived.cached's) is the segment's wiring and the walk of its described nodes:
    the incoming gradients, then each GradFn's output and inputs, down to buffers. Described
    nodes that match the walk of a segment of the same wiring seen lately have its key
    (compiler/walk_match.py): they are checked, not walked for it."""
    wiring = _wiring(segment, incoming, inside)
    described = [g.node for g in incoming if g is not None]
    for fn in segment:
        if type(fn) is GradFn:
            described.append(fn.output)
            described += fn.input_nodes
    found = _recent.find(wiring, described)
    if found is not None:
        key, known, _ = found
    else:
        walked, known, _ = ir.structural_key(described, stops=_NO_STOPS)
        key = ("backward", wiring, walked)
        _recent.add(wiring, described, known, key)     # (before the rebuild extends known)
    return derived.cached(key, known, lambda: _propagate(segment, incoming, inside))


def _wiring(segment: list, incoming: list, inside: dict) -> tuple:
    """Per node of the segment: whether a gradient comes in, whether it is a leaf, and for a
    GradFn its input and edge counts and where each edge goes (the run's node, or -3: out of
    it)."""
    parts = []
    for fn, g in zip(segment, incoming):
        parts.append(0 if g is None else 1)
        if type(fn) is AccumulateGrad:
            parts.append(-2)
            continue
        parts += (len(fn.input_nodes), len(fn.next_functions))
        for nxt, nr in fn.next_functions:
            parts += (-1, 0) if nxt is None else (inside.get(id(nxt), -3), nr)
    return tuple(parts)


_NO_STOPS = frozenset()     # structural_key's leaves are then the buffers alone
# wiring -> the walks of runs' described nodes seen lately, and the keys they have
_recent = RecentWalks(by_buffer=False)
