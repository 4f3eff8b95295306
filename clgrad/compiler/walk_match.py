"""A graph checked against the recorded walk of an earlier one, instead of walked for its key.

A training step's graphs have the same structure at every step, over new buffers. Walking
one for its structural key (ir.structural_key: a dict lookup and store per node, a record per
step, then the key hashed to find what was recorded under it) costs more than checking it
against the walk recorded for the last graph of that structure: each node is read from a
known node's sources by index and its head compared; an edge to a node reached before is
an identity test; one set tells the nodes apart.

A graph that passes the check has the recorded graph's key, exactly: its nodes stand in the
same positions with the same heads (op, dtype, shape, arg and source count), read as leaves
or walked into alike, every edge meets the node at the recorded position, no two positions
hold one node, and its leaves are numbered alike. A graph that fails is walked for its key.
A walk holds no nodes or buffers, only numbers.
"""
from __future__ import annotations

from .ir import Node
from .ops import Op


class Walk:
    """A graph's walk as positions (0 is the list of roots, 1 the first node walked):
    `entries` per node in walk order (position of the node whose source it is first read
    as, source index, head, whether it is walked into), `shared` per other edge (position,
    source index, position of the node it meets), `leaves` (position, leaf number) per leaf.
    by_buffer: leaves are the nodes holding a buffer, numbered by buffer (the engine's
    plans); else the BUFFER nodes, numbered by node (templates of derived gradients)."""
    __slots__ = ("roots", "entries", "shared", "leaves", "by_buffer")

    def __init__(self, roots: list[Node], nodes: list[Node], by_buffer: bool):
        """The walk of roots, whose nodes in walk order ir.structural_key gave (with
        leaf_of left out when by_buffer, else stops empty)."""
        position = {node: k for k, node in enumerate(nodes, 1)}
        entries: list = [None] * len(nodes)
        self.shared: list[tuple[int, int, int]] = []
        for k, sources in enumerate([roots, *(_walked_sources(n, by_buffer) for n in nodes)]):
            for i, s in enumerate(sources):
                p = position[s]
                if p > k and entries[p - 1] is None:    # its parent comes before it
                    leaf = s.buffer is not None if by_buffer else s.op is Op.BUFFER
                    # (a computed node read as a leaf is held to its own head, stricter
                    # than the key's (dtype, shape): a graph it turns away is walked)
                    entries[p - 1] = (k, i, s.head, not leaf)
                else:
                    self.shared.append((k, i, p))
        numbers: dict = {}      # numbered in walk order, as structural_key numbers them
        self.leaves = [(p, numbers.setdefault(n.buffer if by_buffer else n, len(numbers)))
                       for p, n in enumerate(nodes, 1) if not entries[p - 1][3]]
        self.roots = len(roots)
        self.entries = entries
        self.by_buffer = by_buffer

    def match(self, roots: list[Node]) -> tuple[list[Node], list] | None:
        """roots' nodes in walk order and their leaves (buffers or BUFFER nodes), as
        structural_key gives them, when roots have this walk's key; else None."""
        if len(roots) != self.roots:
            return None
        nodes: list = [_Roots(roots)]
        append = nodes.append
        # (a node's sources are read once its head, which tells their count, matched)
        if self.by_buffer:
            for parent, i, head, walked in self.entries:
                node = nodes[parent].src[i]
                if node.head != head or (node.buffer is None) is not walked:
                    return None
                append(node)
        else:
            for parent, i, head, _ in self.entries:
                node = nodes[parent].src[i]
                if node.head != head:       # a BUFFER node's head is a leaf's alone
                    return None
                append(node)
        for parent, i, p in self.shared:
            if nodes[parent].src[i] is not nodes[p]:
                return None
        leaves: list = []
        if self.by_buffer:
            numbers: dict = {}
            for p, number in self.leaves:
                buffer = nodes[p].buffer
                known = numbers.get(buffer)
                if known is None:
                    if number != len(leaves):
                        return None     # a buffer the recorded graph read twice, read once
                    numbers[buffer] = number
                    leaves.append(buffer)
                elif known != number:
                    return None         # one buffer where the recorded graph read two
        else:
            leaves = [nodes[p] for p, _ in self.leaves]
        del nodes[0]
        if len(set(nodes)) != len(nodes):
            return None                 # one node where the recorded graph had two
        return nodes, leaves


class RecentWalks:
    """Walks recorded lately and what each one's key found (a plan, a template's key), by a
    probe that is cheap to take from a graph (its roots' heads): the latest first, a few per
    probe (the graphs a loop alternates between)."""

    def __init__(self, by_buffer: bool, per_probe: int = 4, probes: int = 1000):
        self.by_buffer = by_buffer
        self.per_probe, self.probes = per_probe, probes
        self.walks: dict[object, list[tuple[Walk, object]]] = {}

    def find(self, probe, roots: list[Node]) -> tuple[object, list[Node], list] | None:
        """(what the key found, roots' nodes in walk order, their leaves) for the first walk
        under probe that roots match; None when none does."""
        recent = self.walks.get(probe)
        for k, (walk, value) in enumerate(recent or ()):
            found = walk.match(roots)
            if found is not None:
                if k:
                    recent.insert(0, recent.pop(k))
                return value, *found
        return None

    def add(self, probe, roots: list[Node], nodes: list[Node], value) -> None:
        """Records the walk of roots (whose nodes in walk order structural_key gave) and what
        its key found."""
        recent = self.walks.get(probe)
        if recent is None:
            if len(self.walks) >= self.probes:
                self.walks.clear()
            recent = self.walks[probe] = []
        recent.insert(0, (Walk(roots, nodes, self.by_buffer), value))
        del recent[self.per_probe:]


class _Roots:
    """Position 0 of a walk: its sources are the roots."""
    __slots__ = ("src",)

    def __init__(self, roots):
        self.src = roots


def _walked_sources(node: Node, by_buffer: bool) -> tuple:
    leaf = node.buffer is not None if by_buffer else node.op is Op.BUFFER
    return () if leaf else node.src
