"""Matrix products: matmul with PyTorch's broadcasting of 1-d and batched operands, mm, bmm."""
from __future__ import annotations

from ..compiler.ir import Node
from .backward import record
from .operands import broadcast_shape, broadcast_to, common_device, is_tensor
from .reductions import collapse


def matmul(a, b):
    if not (is_tensor(a) and is_tensor(b)):
        raise TypeError("matmul: both operands must be tensors")
    device = common_device("matmul", [a, b])
    if a.ndim == 0 or b.ndim == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{a.shape} and {b.shape}")
    if a.dtype != b.dtype:
        raise RuntimeError(f"matmul: expected both operands to have the same dtype, got "
                           f"{a.dtype.name} and {b.dtype.name}")
    an = a.node.reshape((1,) + a.shape) if a.ndim == 1 else a.node
    bn = b.node.reshape(b.shape + (1,)) if b.ndim == 1 else b.node
    if an.shape[-1] != bn.shape[-2]:
        raise RuntimeError(f"matmul: shapes {a.shape} and {b.shape} cannot be multiplied "
                           f"({an.shape[-2]}x{an.shape[-1]} and {bn.shape[-2]}x{bn.shape[-1]})")
    try:
        batch = broadcast_shape("matmul", an.shape[:-2], bn.shape[:-2])
    except RuntimeError:
        raise RuntimeError(f"matmul: the batch dimensions of shapes {a.shape} and {b.shape} "
                           f"cannot be broadcast together ({an.shape[:-2]} and "
                           f"{bn.shape[:-2]})") from None
    an = broadcast_to(an, batch + an.shape[-2:])
    bn = broadcast_to(bn, batch + bn.shape[-2:])
    out = an @ bn if an.numel and bn.numel else _empty_product(an, bn)
    shape = out.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    name = "mm" if a.ndim == 2 and b.ndim == 2 else "bmm" if a.ndim == 3 and b.ndim == 3 else \
        "matmul"
    return record(name, out.reshape(shape), device, [a, b])


def _empty_product(a: Node, b: Node) -> Node:
    """a @ b where an operand has no elements, with no matmul (no kernel loops over nothing):
    (..., M, 1) and (..., 1, N) pieces of a and b, broadcast and added. When K is 0 they are
    sums over nothing, so zeros, the product; otherwise M, N or a batch dim is 0 and so is the
    result. The gradients reach a and b with their shapes, zeros as in PyTorch."""
    rows = collapse(a, (len(a.shape) - 1,))
    cols = collapse(b, (len(b.shape) - 2,))
    shape = a.shape[:-1] + b.shape[-1:]
    return rows.expand(shape) + cols.expand(shape)


def mm(input, mat2):
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: expected 2-D tensors, got shapes {input.shape} and "
                           f"{mat2.shape}")
    return matmul(input, mat2)


def bmm(input, mat2):
    if input.ndim != 3 or mat2.ndim != 3 or input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: expected 3-D tensors with equal batch size, got shapes "
                           f"{input.shape} and {mat2.shape}")
    return matmul(input, mat2)
