"""Seeing what clgrad will run: cg.compile, cg.ir.dump / cg.ir.parse, cg.viz."""
from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from ..compiler import textir
from ..compiler.graphviz import to_dot
from ..compiler.textir import kernel_ir
from ..compiler.lower import lowered
from ..compiler.schedule import schedule
from ..engine import codegen_target


@dataclass
class Kernel:
    name: str
    kind: str                 # elementwise, reduce, matmul or scatter
    source: str               # OpenCL C
    ir: str                   # this kernel's graph as text IR
    global_size: tuple[int, ...]
    local_size: tuple[int, ...] | None = None     # the work-group's; None: the driver's choice

    def __repr__(self) -> str:
        return f"Kernel({self.name}, global={self.global_size})"


class Schedule:
    """The kernels that computing some tensors would run, in order. Nothing has run."""

    def __init__(self, kernels: list[Kernel], specs):
        self.kernels = kernels
        self._specs = specs

    def __len__(self) -> int:
        return len(self.kernels)

    def __iter__(self):
        return iter(self.kernels)

    def __getitem__(self, i) -> Kernel:
        return self.kernels[i]

    @property
    def names(self) -> list[str]:
        return [k.name for k in self.kernels]

    def dot(self) -> str:
        return to_dot(self._specs, self.names)

    def __repr__(self) -> str:
        rows = "\n".join(f"  {k.name}  global={k.global_size}" for k in self.kernels)
        return f"Schedule({len(self.kernels)} kernels)\n{rows}"


def _by_device(tensors):
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        raise RuntimeError("compile: all tensors must be on one device, got "
                           + ", ".join(sorted(d.spec for d in devices)))
    return devices.pop()


def compile(*tensors) -> Schedule:  # noqa: A001 - the public name, like torch.compile
    """The schedule that realizing tensors would run, without running it."""
    if not tensors:
        raise TypeError("compile: expected at least one tensor")
    device = _by_device(tensors)
    specs, _ = schedule([t.node for t in tensors], device)
    kernels = []
    for spec in specs:
        kernel, _ = lowered(spec, codegen_target(device))
        kernels.append(Kernel(kernel.name, spec.kind, kernel.source, kernel_ir(spec),
                              kernel.global_size, kernel.local_size))
    return Schedule(kernels, specs)


def dump(*tensors) -> str:
    """Prints and returns the IR of the tensors' graphs, one node per line."""
    text = textir.dump([t.node for t in tensors])
    print(text, end="")
    return text


def parse(text: str):
    """IR nodes from the text dump prints (an equal graph; unknown buffers get fresh ids)."""
    return textir.parse(text)


def viz(*tensors, path: str = "graph.dot") -> str:
    """Writes the op graph with kernel boundaries as Graphviz DOT; as SVG or PNG too when
    path ends so and the `dot` program is installed. Returns the path written."""
    dot = compile(*tensors).dot()
    stem, _, ext = path.rpartition(".")
    if ext in ("svg", "png") and shutil.which("dot"):
        subprocess.run(["dot", f"-T{ext}", "-o", path], input=dot.encode(), check=True)
        return path
    target = path if ext == "dot" else f"{stem or path}.dot"
    with open(target, "w") as f:
        f.write(dot)
    return target
