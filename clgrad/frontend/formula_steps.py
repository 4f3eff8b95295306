"""PyTorch's backward formulas taken step by step in the dtypes it computes them in: a mixed
op in the dtype its operands promote to, an in-place op's result kept in its tensor's dtype,
and a gradient multiplied by each factor in turn (a derivation for backward.record), so that
16-bit floats round where PyTorch's do."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from .operands import opmath


def promoted(op: Op, a: ir.Node, b) -> ir.Node:
    """a op b in the dtype the two promote to (b a node of a's shape or a Python number)."""
    if not isinstance(b, ir.Node):
        return ir.binary(op, a, a.const_like(b))
    dtype = dt.promote(a.dtype, b.dtype)
    return ir.binary(op, a.cast(dtype), b.cast(dtype))


def in_place(a: ir.Node, b: ir.Node, op: Op) -> ir.Node:
    """PyTorch's a.op_(b): computed in the dtype the two promote to, kept in a's."""
    return promoted(op, a, b).cast(a.dtype)


def gradient_steps(x: ir.Node, steps: list, dtype: dt.DType,
                   out_dtype: dt.DType | None = None) -> ir.Node:
    """A derivation of x (backward.record) whose gradient is g (of out_dtype, x's by default)
    put through steps in turn, each (Op.MUL or Op.DIV, a node of x's shape or a number), as
    PyTorch's backward formulas compute it on a tensor of dtype (grad * result,
    grad_input.mul_(weight), grad / (self + 1), .div_(n)): each step in the dtype it promotes
    to (float32 for 16-bit floats, a number whole) and rounded to dtype, the result cast to
    x's. The graph's outermost op is the first one applied to g, so the steps nest from the
    last."""
    node = x.cast(dtype)
    for k in range(len(steps) - 1, -1, -1):
        op, operand = steps[k]
        if isinstance(operand, ir.Node):
            wide = opmath(node.cast(dt.promote(dtype, operand.dtype)))
            node = ir.sloped(wide, operand.cast(wide.dtype), divides=op is Op.DIV)
        elif op is Op.DIV:
            node = opmath(node) / operand
        else:
            wide = opmath(node)
            node = ir.sloped(wide, wide.const_like(operand))
        node = node.cast((out_dtype or x.dtype) if k == 0 else dtype)
    return node
