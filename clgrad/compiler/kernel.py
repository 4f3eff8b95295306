"""What the scheduler hands to codegen: one kernel's outputs, inputs and iteration space."""
from __future__ import annotations

from dataclasses import dataclass, field

from .ir import BufferRef, Node
from .ops import ELEMENTWISE, Op


@dataclass
class KernelSpec:
    kind: str           # elementwise, reduce, matmul, scan, sort, scatter, linalg, recurrence
    shape: tuple[int, ...]                     # iteration shape (a reduction's or scatter's input)
    axes: tuple[int, ...]                      # reduced axes of `shape`
    outputs: list[tuple[Node, BufferRef]]      # nodes stored, each into its buffer
    inputs: dict[Node, BufferRef]              # nodes read from buffers
    reductions: list[Node] = field(default_factory=list)   # fused, in dependency order

    def input_reads(self, root: Node, reshapes: bool = False) -> tuple[list[Node], set[Node]]:
        """The inputs root is computed from at its own index (through elementwise ops only,
        and reshapes when asked: their flat index is root's), in the order met, and those it
        reads at some other index (through a movement op or a reduction)."""
        same: dict[Node, None] = {}
        elsewhere: set[Node] = set()
        stack, seen = [(root, True)], set()
        while stack:
            node, at_index = stack.pop()
            if (node, at_index) in seen:
                continue
            seen.add((node, at_index))
            if node in self.inputs:
                if at_index:
                    same[node] = None
                else:
                    elsewhere.add(node)
                continue
            keeps = node.op in ELEMENTWISE or (reshapes and node.op is Op.RESHAPE)
            stack.extend((s, at_index and keeps) for s in node.src)
        return list(same), elsewhere

    def nodes(self) -> list[Node]:
        """The nodes the kernel computes, sources first; its inputs are not among them."""
        order, seen = [], set()
        stack = [(node, False) for node, _ in self.outputs]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
            elif node not in seen and node not in self.inputs:
                seen.add(node)
                stack.append((node, True))
                stack.extend((s, False) for s in node.src)
        return order
