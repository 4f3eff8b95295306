"""The op graph of a schedule as Graphviz DOT, one cluster per kernel (cg.viz)."""
from __future__ import annotations

from .ir import Node
from .ops import Op
from .kernel import KernelSpec


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
        for node in spec.nodes():
            label = f"{node.op.name.lower()}\\n{node.dtype.short}{list(node.shape)}"
            lines.append(f'    {node_id(node)} [label="{label}"];')
            edges += [(node_id(s), node_id(node)) for s in node.src]
        lines.append("  }")
        for node in spec.inputs:
            if node.op is Op.BUFFER:
                label = f"buffer {node.arg!r}\\n{node.dtype.short}{list(node.shape)}"
                lines.append(f'  {node_id(node)} [label="{label}", shape=ellipse];')
    lines += [f"  {a} -> {b};" for a, b in dict.fromkeys(edges)]
    lines.append("}")
    return "\n".join(lines) + "\n"
