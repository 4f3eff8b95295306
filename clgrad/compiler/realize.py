"""Runs a schedule: lowers each kernel (cached by graph structure, so a training loop's
repeated steps skip codegen), builds the new ones together as one program, and launches
them all without waiting."""
from __future__ import annotations

import sys

from ..config import config
from .ir import BufferRef, Node
from .kernel import KernelSpec
from .lower import LoweredKernel, lower
from .ops import Op
from .schedule import REALIZED, buffer_of, schedule

_lowered: dict[tuple, tuple[LoweredKernel, list[tuple[int, bool]]]] = {}
_programs: dict[tuple[str, str], object] = {}     # (device spec, kernel name) -> Program


def vector_width(device) -> int:
    """Lanes per work-item: CPUs need explicit vectors (PoCL does not recover them), GPUs
    get their parallelism from work-items."""
    return 1 if device.kind == "gpu" else 8


def structure(spec: KernelSpec) -> tuple[tuple, list[Node]]:
    """A key equal for kernels that differ only in which buffers they read, and the input
    nodes in the order the key numbers them."""
    ids: dict[Node, int] = {}
    inputs: list[Node] = []
    parts = [spec.kind, spec.shape, spec.axes]

    def visit(node: Node) -> int:
        if node in ids:
            return ids[node]
        if node in spec.inputs:
            inputs.append(node)
            parts.append(("in", node.dtype, node.shape))
        else:
            srcs = tuple(visit(s) for s in node.src)
            arg = node.arg if node.op is not Op.BUFFER else None
            parts.append((node.op, node.dtype, node.shape, arg, srcs))
        ids[node] = len(ids)
        return ids[node]

    for node, _ in spec.outputs:
        parts.append(("out", visit(node)))
    return tuple(parts), inputs


def lowered(spec: KernelSpec, width: int) -> tuple[LoweredKernel, list]:
    """The kernel for spec and its arguments, as buffer references."""
    key, inputs = structure(spec)
    key = (key, width)
    if key not in _lowered:
        kernel = lower(spec, width)
        outputs = [n for n, _ in spec.outputs]
        positions = [(outputs.index(n) if out else inputs.index(n), out) for n, out in kernel.params]
        _lowered[key] = (kernel, positions)
    kernel, positions = _lowered[key]
    refs = [spec.outputs[i][1] if out else spec.inputs[inputs[i]] for i, out in positions]
    return kernel, refs


def run(specs: list[KernelSpec], device) -> None:
    width = vector_width(device)
    work = [lowered(spec, width) for spec in specs]
    fresh = {k.name: k for k, _ in work if (device.spec, k.name) not in _programs}
    if fresh:
        source = "\n".join(k.source for k in fresh.values())
        program = device.build("_".join(sorted(fresh))[:80], source, options=("-w",))
        for name in fresh:
            _programs[(device.spec, name)] = program
    if config.DEBUG >= 2:
        print(f"schedule: {len(specs)} kernels", file=sys.stderr)
    for (kernel, refs), spec in zip(work, specs):
        if config.DEBUG >= 4:
            print(kernel.source, file=sys.stderr)
        buffers = [ref.ensure_allocated() for ref in refs]
        _programs[(device.spec, kernel.name)][kernel.name](kernel.global_size, None, buffers)


def realize(targets: list[Node], device) -> list[BufferRef]:
    """Computes targets, returning the buffer holding each."""
    specs, outputs = schedule(targets, device)
    run(specs, device)
    for node, ref in outputs.items():
        REALIZED[node] = ref
    return [buffer_of(t) for t in targets]
