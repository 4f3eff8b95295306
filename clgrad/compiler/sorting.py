"""The gradient of a sort: each element gets the gradient of the place it was sorted to,
found by sorting twice (the sorting permutation, then its inverse: each element's rank) and
read with a gather, O(n log n), never a one-hot product."""
from __future__ import annotations

from . import ir
from .ir import Node
from .scans import along


def ranks(x: Node, descending: bool) -> Node:
    """Where each element of x's rows lands in sort(x, descending), int64."""
    return ir.argsort(ir.argsort(x, descending), False)


def sort_rule(node: Node, g: Node):
    (x,) = node.src
    return (along(g, len(x.shape) - 1, ranks(x, node.arg)),)
