"""Gradient graphs derived once per structure. A training loop differentiates graphs of the
same shape at every step, over new buffers; gradients.derive's rules run on the first, and
later ones rebuild the nodes it made, recorded as a template over the nodes it was given.

A template is sound when derive's choices depend only on what the key records. The key is a
transcript of a deterministic walk: every node below out (down to the inputs), the inputs,
the incoming gradient and their direct sources, each with its (op, dtype, shape, arg) and
its position at first sight (a buffer's head leaves its buffer out, so new buffers match).
The rules and constructors look at most one level beneath a node they are handed (a permute
of a permute is one permute); a result that reaches further, into nodes made before this
call, is not recorded. Inputs that are views are left to derive: it looks down their chains.

`cached` is the template store itself, for any computation of nodes from described ones: the
frontend's backward pass keys a whole pass of GradFns with it (frontend/backward.py).
"""
from __future__ import annotations

from . import gradients, ir
from .ir import Node
from .ops import Op

_VIEWS = (Op.RESHAPE, Op.PERMUTE)
_templates: dict[tuple, tuple[list, list, object]] = {}  # key -> (made nodes, results, extra)
_MAX_TEMPLATES = 10_000


class _NotRecordable(Exception):
    """A result reaches a node the key does not describe."""


def derive(out: Node, wrt: tuple[Node, ...], grad: Node, given=()) -> list[Node | None]:
    """gradients.derive(out, wrt, grad, given), from the template of out's structure when
    there is one."""
    for w in wrt:
        if w.op in _VIEWS:
            return gradients.derive(out, wrt, grad, given)
    key, known = _signature(out, wrt, grad, given)
    return cached(key, known, lambda: (gradients.derive(out, wrt, grad, given), None))[0]


def cached(key: tuple, known: list[Node], compute) -> tuple[list[Node | None], object]:
    """compute()'s (result nodes, extra), from the template recorded under key when there is
    one. key must describe known (nodes by position) and everything compute's choices depend
    on; the template records the nodes compute made from the known ones, and extra as is.
    known is extended by the rebuild."""
    template = _templates.get(key)
    if template is not None:
        return _rebuild(template, known), template[2]
    first = ir.made_count()
    result, extra = compute()
    try:
        made, positions = _template(result, known, first)
    except _NotRecordable:
        return result, extra
    if len(_templates) >= _MAX_TEMPLATES:
        _templates.clear()
    _templates[key] = (made, positions, extra)
    return result, extra


def _signature(out: Node, wrt, grad: Node, given) -> tuple[tuple, list[Node]]:
    """The key of derive's arguments, and the nodes it describes by position."""
    stop_kind = {n: 1 for n in given} if given else {}
    for n in wrt:
        stop_kind[n] = 2
    # every node derive walks, out's graph down to the stops; a stop (and a buffer) keyed
    # first by its place alone, then below with what it is
    positions: dict[Node, int] = {}
    walk, known, leaves = ir.structural_key([out], stops=stop_kind, ids=positions)
    parts: list[int] = []
    expanded = set()            # the boundary, one level down: known as far as stated
    for node in [*(n for n in leaves if n in stop_kind), grad, *wrt, *given]:
        if node in expanded:
            continue
        expanded.add(node)
        for s in (node, *node.src):
            pos = positions.get(s)
            if pos is None:
                positions[s] = pos = len(known)
                known.append(s)
            parts += (pos, s.head, stop_kind.get(s, 0), len(s.src))
    parts += (len(wrt), len(given), positions[out], positions[grad],
              *(positions[n] for n in wrt), *(positions[n] for n in given))
    return (walk, tuple(parts)), known


def _template(result: list, known: list[Node], first: int) -> tuple[list, list]:
    """The nodes derive made for result, as (op, dtype, shape, arg, source positions) after
    the known ones, and result as positions."""
    index = {node: i for i, node in enumerate(known)}
    made: list[tuple] = []
    for root in result:
        stack = [] if root is None else [root]
        while stack:
            node = stack[-1]
            if node in index:
                stack.pop()
                continue
            if node.op is Op.BUFFER or (node.src and node.serial <= first):
                raise _NotRecordable    # beneath what the key describes
            missing = [s for s in node.src if s not in index]
            if missing:
                stack += missing
                continue
            stack.pop()
            index[node] = len(known) + len(made)
            made.append((node.op, node.dtype, node.shape, node.arg,
                         tuple([index[s] for s in node.src])))
    return made, [None if r is None else index[r] for r in result]


def _rebuild(template: tuple[list, list, object], known: list[Node]) -> list[Node | None]:
    made, result, _ = template
    nodes = known
    for op, dtype, shape, arg, src in made:
        nodes.append(Node(op, dtype, shape, tuple([nodes[i] for i in src]), arg))
    return [None if r is None else nodes[r] for r in result]
