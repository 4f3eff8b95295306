"""Matrix products: matmul with PyTorch's broadcasting of 1-d and batched operands, mm, bmm.

A product over K = 1 is its one term, and PyTorch (CPU) writes that term's sign as its
routine for the product has it: a BLAS gemm of more than one row and column writes a -0.0
product as -0.0, while gemv and bmm's own loops add it to a +0.0 start, which makes it +0.0
(addmm adds it to its input: add_products.py). Longer sums start at +0.0, as clgrad's matmul
kernels do (except an addmm of one row, whose BLAS adds the terms onto its input one by one:
not followed), and an empty one is +0.0. So the K = 1 products run no kernel: the product of
a's column and b's row, plus +0.0 where PyTorch's path adds one (`sole_sign` below).
"""
from __future__ import annotations

import math

from ..compiler.ir import Node
from .backward import record
from .operands import broadcast_shape, broadcast_to, common_device, from_opmath, is_tensor, opmath
from .reductions import collapse

# bmm runs its batches as gemms (one each) only for one batch of at least this many
# multiply-adds; smaller ones go through its own loops, several batches to a batched gemm
_BMM_GEMM_WORK = 400


def matmul(a, b):
    device, an, bn, batches = _operands(a, b)
    sole_sign = _matmul_keeps_sign(a, b, batches)
    if _folds(a, b):
        return _recorded(a, b, _folded(a.node, b.node, sole_sign), device)
    return _recorded(a, b, product(an, bn, sole_sign), device)


def _folded(a: Node, b: Node, sole_sign: bool) -> Node:
    """a @ b as at::matmul folds a batched operand (_folds): its rows (a's, or b's columns)
    as one matrix times the other operand, so that the other's gradient is one product over
    all of them (a 16-bit one rounded once, not each batch's and then their sum: fuzz seed
    99200049); shaped (..., M, N), a vector's dim of size 1."""
    if len(a.shape) < len(b.shape):
        a_t = a if len(a.shape) == 1 else a.permute((1, 0))     # (a vector is its own)
        return _transpose_last(_folded(_transpose_last(b), a_t, sole_sign))
    column = b.reshape(b.shape + (1,)) if len(b.shape) == 1 else b
    rows = a.reshape((math.prod(a.shape[:-1]), a.shape[-1]))
    return product(rows, column, sole_sign).reshape(a.shape[:-1] + column.shape[-1:])


def _transpose_last(x: Node) -> Node:
    return x.permute(tuple(range(len(x.shape) - 2)) + (len(x.shape) - 1, len(x.shape) - 2))


def _operands(a, b) -> tuple:
    """(device, a's node, b's node, the number of batches): a vector as a matrix of one row
    (a) or column (b), and the batch dims broadcast."""
    if not (is_tensor(a) and is_tensor(b)):
        raise TypeError("matmul: both operands must be tensors")
    device = common_device("matmul", [a, b])
    an, bn = a.node, b.node     # read once: shapes and dtypes come from the nodes
    a_dims, b_dims = len(an.shape), len(bn.shape)
    if a_dims == 0 or b_dims == 0:
        raise RuntimeError(f"matmul: both arguments need at least 1 dimension, got shapes "
                           f"{a.shape} and {b.shape}")
    if an.dtype is not bn.dtype:
        raise RuntimeError(f"matmul: expected both operands to have the same dtype, got "
                           f"{a.dtype.name} and {b.dtype.name}")
    if a_dims == 1:
        an = an.reshape((1,) + an.shape)
    if b_dims == 1:
        bn = bn.reshape(bn.shape + (1,))
    if an.shape[-1] != bn.shape[-2]:
        raise RuntimeError(f"matmul: shapes {a.shape} and {b.shape} cannot be multiplied "
                           f"({an.shape[-2]}x{an.shape[-1]} and {bn.shape[-2]}x{bn.shape[-1]})")
    if a_dims <= 2 and b_dims <= 2:     # no batch to broadcast
        return device, an, bn, 1
    try:
        batch = broadcast_shape("matmul", an.shape[:-2], bn.shape[:-2])
    except RuntimeError:
        raise RuntimeError(f"matmul: the batch dimensions of shapes {a.shape} and {b.shape} "
                           f"cannot be broadcast together ({an.shape[:-2]} and "
                           f"{bn.shape[:-2]})") from None
    an = broadcast_to(an, batch + an.shape[-2:])
    bn = broadcast_to(bn, batch + bn.shape[-2:])
    return device, an, bn, math.prod(batch)


def _recorded(a, b, out: Node, device):
    """The product out of a and b with a vector's dim dropped again, recorded."""
    shape = out.shape
    if a.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if b.ndim == 1:
        shape = shape[:-1]
    name = "mm" if a.ndim == 2 and b.ndim == 2 else "bmm" if a.ndim == 3 and b.ndim == 3 else \
        "matmul"
    return record(name, out.reshape(shape), device, [a, b])


def product(a: Node, b: Node, sole_sign: bool) -> Node:
    """a @ b for nodes of equal batch dims. sole_sign: whether a product over K = 1 keeps a
    -0.0 term's sign (gemm_keeps_sign), else adds it to +0.0 as PyTorch's path does."""
    if not (a.numel and b.numel):
        return _empty_product(a, b)
    if a.shape[-1] != 1:
        return a @ b
    # a 16-bit product in float32, rounded once: its gradient then sums the products of g in
    # float32, as PyTorch's matmul does, not each rounded to the type first
    shape = a.shape[:-1] + b.shape[-1:]
    term = opmath(a).expand(shape) * opmath(b).expand(shape)
    return from_opmath(term if sole_sign or not term.dtype.is_float else term + 0.0, a)


def product_onto(a: Node, b: Node) -> Node:
    """a @ b to be added onto a start (addmm's input, linear's bias), exact where it has at
    most one term, as PyTorch's addmm adds it: one term keeps its sign, and none adds -0.0
    (x + -0.0 is x for every x, -0.0 included), so that the sum is the start itself."""
    out = product(a, b, sole_sign=True)
    return -out if a.shape[-1] == 0 else out


def gemm_keeps_sign(m: int, n: int) -> bool:
    """Whether PyTorch's mm of M x N outputs runs as a gemm, which writes a sole term as it is
    (a row or column of outputs runs as a gemv)."""
    return m > 1 and n > 1


def _matmul_keeps_sign(a, b, batches: int) -> bool:
    """Whether torch.matmul(a, b) writes a sole term as it is: at::matmul's dispatch to dot,
    mv, mm (a batched operand folded into rows, _folds), else bmm over the batches."""
    if a.ndim <= 2 and b.ndim <= 2:
        return a.ndim == b.ndim == 2 and gemm_keeps_sign(a.shape[0], b.shape[1])
    if _folds(a, b):
        if min(a.ndim, b.ndim) == 1:
            return False                                           # an mv
        if a.ndim > b.ndim:
            return gemm_keeps_sign(math.prod(a.shape[:-1]), b.shape[1])
        return gemm_keeps_sign(math.prod(b.shape[:-2]) * b.shape[-1], a.shape[0])
    m, n = a.shape[-2], b.shape[-1]
    return batches == 1 and bmm_runs_gemm(m, n, a.shape[-1]) and gemm_keeps_sign(m, n)


def bmm_runs_gemm(m: int, n: int, k: int) -> bool:
    """Whether PyTorch's bmm and baddbmm of M x K by K x N matrices run BLAS's gemm (one
    per batch, or batched), not their own loops."""
    return m * n * k >= _BMM_GEMM_WORK


def _folds(a, b) -> bool:
    """at::matmul's should_fold: a batched operand and a vector or matrix run as one mm or mv
    of the batched one's rows, unless the other is a matrix on the left that requires no
    grad. (Nor does PyTorch fold rows that are not contiguous in memory; a clgrad
    tensor's always are.)"""
    larger, smaller = (a, b) if a.ndim >= b.ndim else (b, a)
    return larger.ndim >= 3 and smaller.ndim <= 2 and (smaller.requires_grad or a.ndim != 2)


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
