"""What the scheduler hands to codegen: one kernel's outputs, inputs and iteration space."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .ir import BufferRef, Node


@dataclass
class KernelSpec:
    kind: str                                  # "elementwise", "reduce" or "matmul"
    shape: tuple[int, ...]                     # iteration shape (a reduction's input shape)
    axes: tuple[int, ...]                      # reduced axes of `shape`
    outputs: list[tuple[Node, BufferRef]]      # nodes stored, each into its buffer
    inputs: dict[Node, BufferRef]              # nodes read from buffers
    reductions: list[Node] = field(default_factory=list)   # fused, in dependency order

    @property
    def rows(self) -> int:
        return math.prod(s for i, s in enumerate(self.shape) if i not in self.axes)
