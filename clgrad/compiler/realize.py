"""Runs a schedule: lowers each kernel (cached by graph structure, so a training loop's
repeated steps skip codegen), builds the new ones together as one program, and launches
them all without waiting."""
from __future__ import annotations

import sys
from dataclasses import replace

from ..config import config
from ..runtime import dump_source
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
    for node, _ in spec.outputs:
        parts.append(("out", _number(node, spec, ids, inputs, parts)))
    return tuple(parts), inputs


def _number(node: Node, spec: KernelSpec, ids: dict, inputs: list, parts: list) -> int:
    """node's number in the structure key, appending its part (and its sources') first.
    A module function, not a closure: a recursive closure is a reference cycle that would
    keep the graph (and the buffers of its realized nodes) alive until the next gc pass."""
    if node in ids:
        return ids[node]
    if node in spec.inputs:
        inputs.append(node)
        parts.append(("in", node.dtype, node.shape))
    else:
        srcs = tuple(_number(s, spec, ids, inputs, parts) for s in node.src)
        arg = node.arg if node.op is not Op.BUFFER else None
        parts.append((node.op, node.dtype, node.shape, arg, srcs))
    ids[node] = len(ids)
    return ids[node]


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


def run(specs: list[KernelSpec], device) -> None:
    width = vector_width(device)
    work = [lowered(spec, width) for spec in specs]
    fresh = {k.name: k for k, _ in work if (device.spec, k.name) not in _programs}
    if fresh:
        for kernel in fresh.values():
            dump_source(kernel.name, kernel.source)
        source = "\n".join(k.source for k in fresh.values())
        program = device.build("_".join(sorted(fresh))[:80], source, options=("-w",))
        for name in fresh:
            _programs[(device.spec, name)] = program
    if config.DEBUG >= 2:
        print(describe(specs, [k for k, _ in work], config.DEBUG), file=sys.stderr)
    for kernel, refs in work:
        buffers = [ref.ensure_allocated() for ref in refs]
        _programs[(device.spec, kernel.name)][kernel.name](kernel.global_size, None, buffers)


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
    specs, outputs = schedule(targets, device)
    run(specs, device)
    for node, ref in outputs.items():
        REALIZED[node] = ref
    return [buffer_of(t) for t in targets]
