"""Views of a schedule for people: each kernel's own IR, and the graph with kernel boundaries."""
from __future__ import annotations

from . import ir
from .ir import Node
from .kernel import KernelSpec
from .textir import dump


def kernel_nodes(spec: KernelSpec) -> list[Node]:
    """The nodes a kernel computes, sources first; its inputs are not among them."""
    order, seen = [], set()
    stack = [(node, False) for node, _ in spec.outputs]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
        elif node not in seen and node not in spec.inputs:
            seen.add(node)
            stack.append((node, True))
            stack.extend((s, False) for s in node.src)
    return order


def kernel_ir(spec: KernelSpec) -> str:
    """The kernel's graph as text IR, its inputs shown as the buffers they are read from."""
    rebuilt: dict[Node, Node] = {n: ir.buffer(ref, n.dtype, n.shape) for n, ref in spec.inputs.items()}
    for node in kernel_nodes(spec):
        rebuilt[node] = ir.Node(node.op, node.dtype, node.shape,
                                tuple(rebuilt[s] for s in node.src), node.arg)
    return dump([rebuilt[n] for n, _ in spec.outputs])


def to_dot(specs: list[KernelSpec], names: list[str]) -> str:
    """Graphviz DOT of the op graph, one cluster per kernel."""
    ids: dict[Node, str] = {}
    lines = ["digraph clgrad {", "  rankdir=TB;", '  node [shape=box, fontname="monospace"];']

    def node_id(node: Node) -> str:
        if node not in ids:
            ids[node] = f"n{len(ids)}"
        return ids[node]

    edges = []
    for k, (spec, name) in enumerate(zip(specs, names)):
        lines.append(f"  subgraph cluster_{k} {{")
        lines.append(f'    label="{name}"; style=rounded; color=blue;')
        for node in kernel_nodes(spec):
            label = f"{node.op.name.lower()}\\n{node.dtype.short}{list(node.shape)}"
            lines.append(f'    {node_id(node)} [label="{label}"];')
            edges += [(node_id(s), node_id(node)) for s in node.src]
        lines.append("  }")
        for node in spec.inputs:
            if node.op is ir.Op.BUFFER:
                label = f"buffer {node.arg!r}\\n{node.dtype.short}{list(node.shape)}"
                lines.append(f'  {node_id(node)} [label="{label}", shape=ellipse];')
    lines += [f"  {a} -> {b};" for a, b in dict.fromkeys(edges)]
    lines.append("}")
    return "\n".join(lines) + "\n"
