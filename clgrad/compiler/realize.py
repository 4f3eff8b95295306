"""Runs graphs: schedules them, lowers each kernel (cached by kernel structure), builds the new
kernels together as one program, and launches them all without waiting. The whole schedule is
cached by graph structure too, so a training loop's repeated steps only bind new buffers."""
from __future__ import annotations

import sys
from dataclasses import dataclass, replace

from ..config import config
from ..runtime import dump_source
from .ir import BufferRef, Node, structural_key
from .kernel import KernelSpec
from .lower import LoweredKernel, lower
from .schedule import buffer_of, schedule

_lowered: dict[tuple, tuple[LoweredKernel, list[tuple[int, bool]]]] = {}
_programs: dict[tuple[str, str], object] = {}     # (device spec, kernel name) -> Program
_plans: dict[tuple, "Plan"] = {}                  # (graph key, device spec) -> Plan


def vector_width(device) -> int:
    """Lanes per work-item: CPUs need explicit vectors (PoCL does not recover them), GPUs
    get their parallelism from work-items."""
    return 1 if device.kind == "gpu" else 8


def structure(spec: KernelSpec) -> tuple[tuple, list[Node]]:
    """A key equal for kernels that differ only in which buffers they read, and the input
    nodes in the order the key numbers them."""
    outputs = [node for node, _ in spec.outputs]
    key, _, inputs = structural_key(outputs, lambda n: n if n in spec.inputs else None)
    return (spec.kind, spec.shape, spec.axes, key), inputs


def lowered(spec: KernelSpec, width: int) -> tuple[LoweredKernel, list]:
    """The kernel for spec and its arguments, as buffer references."""
    key, inputs = structure(spec)
    key = (key, width)
    if key not in _lowered:
        kernel = lower(spec, width)
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


def graph_key(targets: list[Node]) -> tuple[tuple, list[Node], list[BufferRef]]:
    """A key equal for graphs that differ only in the buffers they read; the graph's nodes in
    walk order; and the buffers read, in order of first use."""
    return structural_key(targets, buffer_of)


def _record(specs, outputs, nodes, leaves, targets, device) -> Plan:
    position = {node: i for i, node in enumerate(nodes)}
    leaf_index = {ref.id: i for i, ref in enumerate(leaves)}
    out_index = {ref.id: j for j, ref in enumerate(outputs.values())}
    width = vector_width(device)
    work = [lowered(spec, width) for spec in specs]
    _build_new(device, [k for k, _ in work])
    if config.DEBUG >= 2:
        print(describe(specs, [k for k, _ in work], config.DEBUG), file=sys.stderr)

    def where(ref: BufferRef) -> tuple[bool, int]:
        return (False, out_index[ref.id]) if ref.id in out_index else (True, leaf_index[ref.id])

    launches = [(_programs[(device.spec, k.name)][k.name], k, [where(r) for r in refs])
                for k, refs in work]
    written = [(position[node], ref.nbytes) for node, ref in outputs.items()]
    return Plan(launches, written, [where(outputs.get(t) or buffer_of(t)) for t in targets])


def _build_new(device, kernels: list[LoweredKernel]) -> None:
    """Compiles the kernels not built yet, together as one program (one build is cheaper
    than several)."""
    fresh = {k.name: k for k in kernels if (device.spec, k.name) not in _programs}
    if not fresh:
        return
    for kernel in fresh.values():
        dump_source(kernel.name, kernel.source)
    source = "\n".join(k.source for k in fresh.values())
    program = device.build("_".join(sorted(fresh))[:80], source, options=("-w",))
    for name in fresh:
        _programs[(device.spec, name)] = program


def _replay(plan: Plan, nodes: list[Node], leaves: list[BufferRef], device) -> list[BufferRef]:
    written = [BufferRef(device, nbytes) for _, nbytes in plan.outputs]
    for kernel, code, args in plan.launches:
        buffers = [(leaves[i] if leaf else written[i]).ensure_allocated() for leaf, i in args]
        kernel(code.global_size, code.local_size, buffers)
    for (pos, _), ref in zip(plan.outputs, written):
        nodes[pos].buffer = ref
    return [leaves[i] if leaf else written[i] for leaf, i in plan.targets]


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
