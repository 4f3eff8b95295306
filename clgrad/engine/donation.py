"""Buffer donation: which outputs of a schedule may be written over a buffer it reads.

Writing results over their inputs (an optimizer's p, m and v) moves 40% fewer bytes than
writing fresh buffers, whose lines the CPU reads before it writes them. A buffer is given away
only when nothing outside the graph can still read its old value, which Python's reference
counts tell.
"""
from __future__ import annotations

import sys
import weakref

from ..compiler.ir import BufferRef, Node, toposort
from ..compiler.kernel import KernelSpec
from ..compiler.ops import Op
from ..compiler.schedule import buffer_of
from ..runtime.buffer import REFCOUNTS_VERIFIED     # where it is not: never given away


Donor = tuple[int, int, int, int, tuple[tuple[int, int], ...], tuple[int, ...]]

# nodes whose graphs are read again after a schedule wrote them: autograd derives an op's
# gradients from the op's subgraph (a GradFn's output), not from the output's buffer
_rederived: weakref.WeakSet = weakref.WeakSet()


def keep_graph(node: Node) -> None:
    """No buffer node's graph reads is given away to an output while node lives."""
    _rederived.add(node)


def donors(specs, written: list[Node], nodes, leaves, targets) -> list[Donor]:
    """Leaves whose buffers outputs may take, as (output j, leaf i, position of the one node
    reading leaf i, its uses in the graph, (position, uses) of each node computed from that
    one that the schedule does not write, positions of those it writes): an elementwise
    kernel's output of the leaf's size, computed from the leaf read at its own index, where
    no other node reads the leaf (no other kernel, no other view of it). The leaf is loaded
    before the store that depends on it; kernels of several outputs, where another output can
    read the leaf after that store, have no restrict pointers (compiler/kernel_writer.py).
    Candidates in order of preference."""
    readers: dict[int, list[int]] = {}          # leaf id -> positions of the nodes reading it
    uses: dict[Node, int] = {}                  # node -> references to it from graph nodes
    sources = set()                             # (nodes may share one tuple of sources)
    for pos, node in enumerate(nodes):
        ref = buffer_of(node)
        if ref is not None:
            readers.setdefault(ref.id, []).append(pos)
        elif id(node.src) not in sources:
            sources.add(id(node.src))
            for s in node.src:
                uses[s] = uses.get(s, 0) + 1
    kernels_reading: dict[int, int] = {}
    for spec in specs:
        for ref_id in {r.id for r in spec.inputs.values()}:
            kernels_reading[ref_id] = kernels_reading.get(ref_id, 0) + 1
    leaf_index = {ref.id: i for i, ref in enumerate(leaves)}
    out_index = {node: j for j, node in enumerate(written)}
    position = {node: i for i, node in enumerate(nodes)}
    donors = []
    for spec in specs:
        if spec.kind != "elementwise":
            continue
        aligned = _aligned_inputs(spec)
        for out, ref in spec.outputs:
            for leaf in aligned[out] if out in out_index else ():
                lref = spec.inputs[leaf]
                pos = readers.get(lref.id, ())   # none: another kernel's output, not a leaf
                if (len(pos) == 1 and lref.nbytes == ref.nbytes and leaf not in targets
                        and kernels_reading[lref.id] == 1):
                    lazy, computed = _computed_from(leaf, nodes, out_index)
                    donors.append((out_index[out], leaf_index[lref.id], pos[0], uses[leaf],
                                   tuple((position[n], uses.get(n, 0)) for n in lazy),
                                   tuple(position[n] for n in computed)))
    return donors


def _computed_from(leaf: Node, nodes: list[Node], written) -> tuple[list[Node], list[Node]]:
    """The nodes computed from leaf that the schedule does not write, and those it writes. A
    lazy graph holding one of the first would read the leaf's buffer again after an output
    has overwritten it (one that does not lead to that output too: `doubled = w * 2` still
    lazy when `w.add_(x)` is computed). A written node is read from its own buffer afterwards,
    except by autograd, which derives gradients from its graph (keep_graph)."""
    from_leaf = {leaf}
    lazy, computed = [], []
    # nodes, sources first (the graph stops at the nodes a buffer holds, as its walk does)
    for node in toposort(nodes, stop=lambda n: buffer_of(n) is not None):
        if any(s in from_leaf for s in node.src):
            if node in written:
                computed.append(node)
            else:
                from_leaf.add(node)
                lazy.append(node)
    return lazy, computed


def _aligned_inputs(spec: KernelSpec) -> dict[Node, list[Node]]:
    """Per output of spec, the inputs it is computed from at its own index (through
    elementwise ops only), when no output of spec reads them at any other index."""
    reads = {root: spec.input_reads(root) for root, _ in spec.outputs}
    elsewhere = set().union(*(other for _, other in reads.values()))
    return {root: [n for n in same if n not in elsewhere] for root, (same, _) in reads.items()}


def may_give(ref: BufferRef) -> bool:
    """Whether ref's memory may be given to an output at all: reference counts can tell who
    holds it, and NumPy cannot see it (runtime/buffer.py)."""
    return REFCOUNTS_VERIFIED and not (ref.buffer is not None and ref.buffer.shared)


def unshared(donor: Donor, nodes: list[Node], ref: BufferRef) -> bool:
    """Whether the graph holds the only references to the donor's leaf node, its buffer and
    the nodes computed from it that stay lazy: no tensor, view or other lazy graph could read
    the old value after a kernel overwrites it. Counted references: a node's uses in the graph,
    the graph's node list and this call; the buffer's own node (its arg and buffer), the
    graph's leaf list and this call. And no node it writes from the leaf has its graph read
    again by autograd (keep_graph)."""
    if not may_give(ref):
        return False
    _, _, pos, uses, readers_of, computed = donor
    held_by_node = 2 if nodes[pos].op is Op.BUFFER else 1     # (no local name: one more ref)
    return (_only_in_graph(nodes[pos], uses) and sys.getrefcount(ref) == held_by_node + 3
            and all(_only_in_graph(nodes[p], n) for p, n in readers_of)
            and not any(nodes[p] in _rederived for p in computed))


def _only_in_graph(node: Node, uses: int) -> bool:
    """node's references: its uses in the graph, the node list, this call and getrefcount's."""
    return sys.getrefcount(node) == uses + 3
