"""Plans: a schedule recorded once per graph structure, with its kernels built, and how to
print one for CLGRAD_DEBUG."""
from __future__ import annotations

import sys
from dataclasses import dataclass, field

from ..compiler.textir import kernel_ir
from ..compiler.ir import BufferRef, Node, structural_key
from ..compiler.kernel import KernelSpec
from ..compiler.lower import LoweredKernel, lowered
from ..compiler.schedule import buffer_of, schedule
from ..compiler.walk_match import RecentWalks
from ..config import config
from ..runtime.program import bind
from .donation import Donor, donors
from .targets import codegen_target


@dataclass
class Plan:
    """A schedule recorded once per graph structure and replayed with new buffers. Buffers
    are named by position: leaf i is the i-th buffer the graph reads, output j the j-th the
    plan writes, and a launch's arguments index the leaves followed by the outputs; nodes are
    named by their position in the graph walk."""
    # (kernel, global size, local size, arguments)
    launches: list[tuple[object, tuple, tuple | None, list[int]]]
    used: list[int]                         # the buffers the launches read or write
    outputs: list[tuple[int, int]]          # (node position, nbytes) per written buffer
    targets: list[tuple[bool, int]]         # where each target's value ends up
    # output j may overwrite leaf i when nothing outside the graph still reads the leaf
    # (engine/donation.py)
    donors: list[Donor] = field(default_factory=list)
    # the launches as runtime.program.enqueue_all takes them, and the numbers that begin the
    # list of slots it reads them from (runtime.program.bind)
    bound: list = field(init=False)
    numbers: list[int] = field(init=False)

    def __post_init__(self):
        self.bound, self.numbers = bind(self.launches)


_plans: dict[tuple, Plan] = {}          # (graph key, device spec) -> Plan
# (device spec, the roots' heads) -> the walks of graphs run lately and their plans: a graph
# that matches a walk has its key (compiler/walk_match.py), so it is checked, not walked for it
_recent = RecentWalks(by_buffer=True)


def plan_for(targets: list[Node], device) -> tuple[Plan, list[Node], list[BufferRef]]:
    """The plan computing targets on device (scheduled and recorded when the graph's
    structure is new); the graph's nodes in walk order; and the buffers it reads, in order of
    first use."""
    probe = (device.spec, *[t.head for t in targets])
    if config.DEBUG < 2:
        found = _recent.find(probe, targets)
        if found is not None:
            return found
    # the key is equal for graphs that differ only in the buffers they read (buffer_of)
    key, nodes, leaves = structural_key(targets)
    plan = _plans.get((key, device.spec))
    if plan is None or config.DEBUG >= 2:
        specs, outputs = schedule(targets, device)
        plan = _plans[(key, device.spec)] = record(specs, outputs, nodes, leaves, targets,
                                                   device)
    _recent.add(probe, targets, nodes, plan)
    return plan, nodes, leaves


def record(specs, outputs, nodes, leaves, targets, device) -> Plan:
    """The plan of a schedule: its kernels lowered for device and built, the buffers each
    reads and writes named by position."""
    position = {node: i for i, node in enumerate(nodes)}
    leaf_index = {ref.id: i for i, ref in enumerate(leaves)}
    out_index = {ref.id: j for j, ref in enumerate(outputs.values())}
    target = codegen_target(device)
    work = [_lowered(spec, target) for spec in specs]
    kernels = device.kernels({k.name: k.source for k, _ in work})
    if config.DEBUG >= 2:
        print(describe(specs, [k for k, _ in work], config.DEBUG), file=sys.stderr)

    def where(ref: BufferRef) -> tuple[bool, int]:
        return (False, out_index[ref.id]) if ref.id in out_index else (True, leaf_index[ref.id])

    def argument(ref: BufferRef) -> int:
        leaf, i = where(ref)
        return i if leaf else len(leaves) + i

    launches = [(kernels[k.name], tuple(k.global_size),
                 None if k.local_size is None else tuple(k.local_size),
                 [argument(r) for r in refs]) for k, refs in work]
    used = sorted({i for *_, args in launches for i in args})
    written = [(position[node], ref.nbytes) for node, ref in outputs.items()]
    return Plan(launches, used, written, [where(outputs.get(t) or buffer_of(t)) for t in targets],
                donors(specs, list(outputs), nodes, leaves, targets))


def _lowered(spec: KernelSpec, target):
    """lowered(spec, target); under CLGRAD_DEBUG >= 2 a kernel that fails to lower is
    printed first, as its IR: the schedule is never printed when lowering fails."""
    try:
        return lowered(spec, target)
    except Exception:
        if config.DEBUG >= 2:
            print(f"lowering failed for the kernel of IR:\n{kernel_ir(spec)}", file=sys.stderr)
        raise


def describe(specs: list[KernelSpec], kernels: list[LoweredKernel], level: int) -> str:
    """The schedule as text: one line per kernel, with its IR (level 3) and source (level 4)."""
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
