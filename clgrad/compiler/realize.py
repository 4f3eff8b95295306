"""Runs graphs: schedules them, lowers each kernel (cached by kernel structure), builds the new
kernels together as one program, and launches them all without waiting. The whole schedule is
cached by graph structure too, so a training loop's repeated steps only bind new buffers."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace

from ..config import config
from ..runtime import dump_source
from .ir import BufferRef, Node, structural_key
from .kernel import KernelSpec
from .lower import LoweredKernel, lower
from .ops import Op
from .schedule import buffer_of, schedule
from .target import Target

_lowered: dict[tuple, tuple[LoweredKernel, list[tuple[int, bool]]]] = {}
_programs: dict[tuple[str, str], object] = {}     # (device spec, kernel name) -> Program
_plans: dict[tuple, "Plan"] = {}                  # (graph key, device spec) -> Plan
# Callbacks that see every schedule run, as (plan, buffers read, buffers written): a jit
# capture. While one listens, outputs get fresh buffers (no donation), so that a replay of
# the launches never writes over a buffer that existed before it.
_listeners: list = []


# Intel's CPU compiler vectorises loops inside a work-item wrongly (sums that subtract lose
# terms; builtins in loops with a remainder crash it): its loops stay scalar. Its vectoriser
# across work-items, which clgrad relies on, is unaffected.
_INTEL_LOOPS = ("vectorize(disable)",)


def codegen_target(device) -> Target:
    """GPUs get their parallelism from work-items. CPUs need explicit vectors: PoCL does not
    recover them (8 lanes measured best there), and Intel's compiler does not widen them, so
    it gets the device's native width (16 floats with AVX-512: W4 1.5x, sum 2x, softmax 1.2x
    faster than 8)."""
    if device.kind == "gpu":
        return Target(width=1, cores=device.compute_units)
    if device.runtime == "intel":
        width = min(16, device.native_float_width)
        return Target(width=width, loop_hints=_INTEL_LOOPS, vector_hint=True,
                      accumulators=width, cores=device.compute_units)
    return Target(width=8, cores=device.compute_units)


def structure(spec: KernelSpec) -> tuple[tuple, list[Node]]:
    """A key equal for kernels that differ only in which buffers they read, and the input
    nodes in the order the key numbers them."""
    outputs = [node for node, _ in spec.outputs]
    key, _, inputs = structural_key(outputs, lambda n: n if n in spec.inputs else None)
    return (spec.kind, spec.shape, spec.axes, key), inputs


def lowered(spec: KernelSpec, target: Target) -> tuple[LoweredKernel, list]:
    """The kernel for spec and its arguments, as buffer references."""
    key, inputs = structure(spec)
    key = (key, target)
    if key not in _lowered:
        kernel = lower(spec, target)
        outputs = [n for n, _ in spec.outputs]
        positions = [(outputs.index(n) if out else inputs.index(n), out) for n, out in kernel.params]
        # The cache must not hold graph nodes: they would keep every first result realized
        # (and its buffer allocated) for the life of the process.
        _lowered[key] = (replace(kernel, params=[]), positions)
    kernel, positions = _lowered[key]
    refs = [spec.outputs[i][1] if out else spec.inputs[inputs[i]] for i, out in positions]
    return kernel, refs


@dataclass
class Plan:
    """A schedule recorded once per graph structure and replayed with new buffers. Buffers
    are named by position: leaf i is the i-th buffer the graph reads, output j the j-th the
    plan writes; nodes are named by their position in the graph walk."""
    launches: list[tuple[object, LoweredKernel, list[tuple[bool, int]]]]  # (kernel, code, args)
    outputs: list[tuple[int, int]]          # (node position, nbytes) per written buffer
    targets: list[tuple[bool, int]]         # where each target's value ends up
    # (output j, leaf i, position of the one node reading leaf i, its uses in the graph):
    # output j may overwrite leaf i, when nothing outside the graph still reads the leaf
    donors: list[tuple[int, int, int, int]] = field(default_factory=list)


def graph_key(targets: list[Node]) -> tuple[tuple, list[Node], list[BufferRef]]:
    """A key equal for graphs that differ only in the buffers they read; the graph's nodes in
    walk order; and the buffers read, in order of first use."""
    return structural_key(targets, buffer_of)


def _record(specs, outputs, nodes, leaves, targets, device) -> Plan:
    position = {node: i for i, node in enumerate(nodes)}
    leaf_index = {ref.id: i for i, ref in enumerate(leaves)}
    out_index = {ref.id: j for j, ref in enumerate(outputs.values())}
    target = codegen_target(device)
    work = [lowered(spec, target) for spec in specs]
    _build_new(device, [k for k, _ in work])
    if config.DEBUG >= 2:
        print(describe(specs, [k for k, _ in work], config.DEBUG), file=sys.stderr)

    def where(ref: BufferRef) -> tuple[bool, int]:
        return (False, out_index[ref.id]) if ref.id in out_index else (True, leaf_index[ref.id])

    launches = [(_programs[(device.spec, k.name)][k.name], k, [where(r) for r in refs])
                for k, refs in work]
    written = [(position[node], ref.nbytes) for node, ref in outputs.items()]
    return Plan(launches, written, [where(outputs.get(t) or buffer_of(t)) for t in targets],
                _donors(specs, list(outputs), nodes, leaves, targets))


def _donors(specs, written: list[Node], nodes, leaves, targets) -> list[tuple[int, int, int, int]]:
    """Leaves whose buffers outputs may take: an elementwise kernel's output of the leaf's size,
    computed from the leaf read at its own index, where no other node reads the leaf (no
    other kernel, no other view of it). Writing results over their inputs (an optimizer's
    p, m and v) moves 40% fewer bytes than writing fresh buffers, whose lines the CPU reads
    before it writes them. The leaf is loaded before the store that depends on it, so the
    kernel's restrict pointers stay correct. Candidates in order of preference."""
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
                    donors.append((out_index[out], leaf_index[lref.id], pos[0], uses[leaf]))
    return donors


def _aligned_inputs(spec: KernelSpec) -> dict[Node, list[Node]]:
    """Per output of spec, the inputs it is computed from at its own index (through
    elementwise ops only), when no output of spec reads them at any other index."""
    reads = {root: spec.input_reads(root) for root, _ in spec.outputs}
    elsewhere = set().union(*(other for _, other in reads.values()))
    return {root: [n for n in same if n not in elsewhere] for root, (same, _) in reads.items()}


def _build_new(device, kernels: list[LoweredKernel]) -> None:
    """Compiles the kernels not built yet, together as one program (one build is cheaper
    than several)."""
    fresh = {k.name: k for k in kernels if (device.spec, k.name) not in _programs}
    if not fresh:
        return
    for kernel in fresh.values():
        dump_source(kernel.name, kernel.source)
    source = "\n".join(k.source for k in fresh.values())
    program = device.build("_".join(sorted(fresh))[:80], source)
    for name in fresh:
        _programs[(device.spec, name)] = program


def _replay(plan: Plan, nodes: list[Node], leaves: list[BufferRef], device) -> list[BufferRef]:
    donated: dict[int, BufferRef] = {}
    for j, i, pos, uses in plan.donors if not _listeners else ():
        if j not in donated and leaves[i] not in donated.values() \
                and _unshared(nodes[pos], uses, leaves[i]):
            donated[j] = leaves[i]
    written = [donated.get(j) or BufferRef(device, nbytes)
               for j, (_, nbytes) in enumerate(plan.outputs)]
    launch(plan, leaves, written)
    for listener in _listeners:
        listener(plan, leaves, written)
    for (pos, _), ref in zip(plan.outputs, written):
        nodes[pos].buffer = ref
    return [leaves[i] if leaf else written[i] for leaf, i in plan.targets]


def launch(plan: Plan, leaves: list[BufferRef], written: list[BufferRef]) -> None:
    """Enqueues plan's kernels reading leaves and writing written."""
    for kernel, code, args in plan.launches:
        buffers = [(leaves[i] if leaf else written[i]).ensure_allocated() for leaf, i in args]
        kernel(code.global_size, code.local_size, buffers)


# The counts below are CPython's up to 3.13; 3.14 may borrow stack references, so a count
# could come out right with an outside holder: there, buffers are never given away.
REFCOUNTS_VERIFIED = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


def _unshared(node: Node, uses: int, ref: BufferRef) -> bool:
    """Whether the graph holds the only references to node and its buffer: no tensor, view
    or other lazy graph could read the old value after a kernel overwrites it. Counted
    references: node's uses in the graph, the graph's node list and this call; the buffer's
    own node (its arg and buffer), the graph's leaf list and this call."""
    if not REFCOUNTS_VERIFIED:
        return False
    held_by_node = 2 if node.op is Op.BUFFER else 1
    return sys.getrefcount(node) == uses + 3 and sys.getrefcount(ref) == held_by_node + 3


def describe(specs: list[KernelSpec], kernels: list[LoweredKernel], level: int) -> str:
    """The schedule as text: one line per kernel, with its IR (level 3) and source (level 4)."""
    from .inspect import kernel_ir
    lines = [f"schedule: {len(specs)} kernel(s)"]
    for spec, kernel in zip(specs, kernels):
        outs = ", ".join(f"{n.dtype.short}{list(n.shape)}" for n, _ in spec.outputs)
        lines.append(f"  {kernel.name}  global={kernel.global_size}  "
                     f"inputs={len(spec.inputs)} -> {outs}")
        if level >= 3:
            lines.append("    " + kernel_ir(spec).replace("\n", "\n    ").rstrip())
        if level >= 4:
            lines.append(kernel.source)
    return "\n".join(lines)


def realize(targets: list[Node], device) -> list[BufferRef]:
    """Computes targets, returning the buffer holding each."""
    key, nodes, leaves = graph_key(targets)
    plan = _plans.get((key, device.spec))
    if plan is None or config.DEBUG >= 2:
        specs, outputs = schedule(targets, device)
        plan = _record(specs, outputs, nodes, leaves, targets, device)
        _plans[(key, device.spec)] = plan
    return _replay(plan, nodes, leaves, device)
