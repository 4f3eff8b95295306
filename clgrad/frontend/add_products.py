"""addmm, addmv, addr, baddbmm, addbmm: beta * input + alpha * a product, with the NaN, inf and
signs of zero of PyTorch's CPU routines, which follow from what each routine reads:

- BLAS (gemm: addmm, addbmm, a baddbmm of 400 multiply-adds or more, linalg.bmm_runs_gemm; gemv:
  addmv) reads no side whose factor is 0: beta = 0 ignores input (its NaN and inf do not
  show), alpha = 0 the product, and so does a product of no terms (K = 0 or no batches).
- Their own loops (addr, a smaller baddbmm) ignore input at beta = 0 too, but scale the
  product by alpha whatever alpha is (0 * inf is NaN).
A side not read is still an input of the op: its gradient is zeros, as PyTorch's (which
scales it by the zero factor). The sign of a product of one term (K = 1) follows the table in
linalg.py: onto an input, and from a gemm of more than one row and column, it stays; at
beta = 0 a gemv, a batched gemm or the loops add it to +0.0. (A batched gemm onto an input
adds it to +0.0 first on Intel CPUs; MKL on an AMD EPYC adds it to the input itself, so
PyTorch's sign there depends on the CPU: clgrad gives Intel's.)
"""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from ..compiler.ops import Op
from . import linalg
from .backward import record
from .formula_steps import gradient_steps
from .operands import common_device, opmath, result_dtype, rounded_once
from .reductions import reduce_node


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    _check_dims("addmm", mat1=(mat1, 2), mat2=(mat2, 2))
    return _scaled_sum("addmm", input, mat1, mat2, beta, alpha, blas=True, batched=False)


def addmv(input, mat, vec, *, beta=1, alpha=1):
    _check_dims("addmv", mat=(mat, 2), vec=(vec, 1))
    return _scaled_sum("addmv", input, mat, vec, beta, alpha, blas=True, batched=False)


def addr(input, vec1, vec2, *, beta=1, alpha=1):
    _check_dims("addr", vec1=(vec1, 1), vec2=(vec2, 1))
    device = common_device("addr", [input, vec1, vec2])
    dtype = result_dtype("addr", [input, vec1, vec2])     # (PyTorch's addr promotes)
    a, b = vec1.node.cast(dtype), vec2.node.cast(dtype)
    shape = a.shape + b.shape
    outer = a.reshape(a.shape + (1,)).expand(shape) * b.reshape((1,) + b.shape).expand(shape)
    start = _start("addr", input, input.node.cast(dtype), shape, beta)
    out = start + _scaled(outer, alpha)
    return record("addr", out, device, [input, vec1, vec2])


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    _check_dims("baddbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    batches, m, k = batch1.shape
    gemm = linalg.bmm_runs_gemm(m, batch2.shape[-1], k)
    return _scaled_sum("baddbmm", input, batch1, batch2, beta, alpha, blas=gemm,
                       batched=batches > 1)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """An addmm per batch, in order (beta for the first only): a chain of additions; of
    16-bit floats each addmm's sum in float32, rounded once, as PyTorch's (its gradients
    those of the chain in the type)."""
    _check_dims("addbmm", batch1=(batch1, 3), batch2=(batch2, 3))
    device, a, b = _operands("addbmm", input, batch1, batch2)
    batches, m, k = a.shape
    shape = (m, b.shape[-1])

    def chained(start: Node, a: Node, b: Node, rounded_to: dt.DType | None = None) -> Node:
        derived = a.dtype.is_16_bit_float       # (see _scaled_sum)
        products = _product(a, b, alpha if derived else 1, sole_sign=True)
        start = _start("addbmm", input, start, shape, beta, derived)
        if not (k and batches and alpha != 0):
            total = reduce_node(Op.SUM, products, (0,)).reshape(shape)
            return _nothing_read(start + _unread(total, [batch1, batch2]), beta)
        if beta == 0 and not linalg.gemm_keeps_sign(*shape):
            start = start + 0.0     # the first addmm, a gemv: onto zeros
        if derived:     # (the chain's gradients: g to the input and to each product)
            return start + reduce_node(Op.SUM, products, (0,)).reshape(shape)
        if rounded_to is None:
            return _chain(start, _scaled(products, alpha))
        for batch in range(batches):
            term = products.shrink(((batch, batch + 1), (0, m), (0, shape[1]))).reshape(shape)
            start = (start.cast(term.dtype) + _scaled(term, alpha)).cast(rounded_to)
        return start
    nodes = (input.node, a, b)
    out, derivation = chained(*nodes), None
    if a.dtype.is_16_bit_float:
        wide = chained(*(opmath(n) for n in nodes), rounded_to=a.dtype)
        out, derivation = wide.cast(a.dtype), out
    return record("addbmm", out, device, [input, batch1, batch2], derivation=derivation)


def _scaled_sum(op: str, input, left, right, beta, alpha, blas: bool, batched: bool):
    """beta * input + alpha * (left @ right), input not read at beta = 0 and the product
    not where BLAS reads none of it (at alpha = 0, or of no terms). BLAS's gemv (a row or
    column of outputs) adds the scaled product onto zeros at beta = 0; a batched gemm and the
    loops add a sole term to +0.0. 16-bit floats: all of it in float32, rounded once, as
    PyTorch's routines compute beta * c + alpha * dot (rounded_once)."""
    device, a, b = _operands(op, input, left, right)

    def combined(start: Node, a: Node, b: Node) -> Node:
        # of 16-bit nodes, rounded_once's derivation: PyTorch's formulas scale the gradients
        # by beta and alpha whole, alpha after g's product with the other operand
        derived = a.dtype.is_16_bit_float
        product = _product(a, b, alpha if derived else 1, sole_sign=blas and not batched)
        if right.ndim == 1:
            product = product.reshape(product.shape[:-1])
        start = _start(op, input, start, product.shape, beta, derived)
        if not a.shape[-1] or (blas and alpha == 0):
            return _nothing_read(start + _unread(product, [left, right]), beta)
        product = _scaled(product, 1 if derived else alpha)
        if blas and beta == 0 and not linalg.gemm_keeps_sign(a.shape[-2], b.shape[-1]):
            return start + (product + 0.0)
        return start + product
    out, derivation = rounded_once(combined, input.node, a, b)
    return record(op, out, device, [input, left, right], derivation=derivation)


def _operands(op: str, input, left, right) -> tuple:
    """(device, left's node, right's node as a matrix); one dtype for all three, as PyTorch
    requires of these routines."""
    device = common_device(op, [input, left, right])
    if not input.dtype == left.dtype == right.dtype:
        raise RuntimeError(f"{op}: expected input and operands of one dtype, got "
                           f"{input.dtype.name}, {left.dtype.name} and {right.dtype.name}")
    a, b = left.node, right.node
    if len(b.shape) == 1:
        b = b.reshape(b.shape + (1,))
    if a.shape[-1] != b.shape[-2] or a.shape[:-2] != b.shape[:-2]:
        raise RuntimeError(f"{op}: shapes {tuple(left.shape)} and {tuple(right.shape)} cannot "
                           f"be multiplied")
    return device, a, b


def _start(op: str, input, node: Node, shape: tuple, beta, derived: bool = False) -> Node:
    """beta * input, expanded to the result's shape (which it may not change, as PyTorch's
    expand of it), or where beta is 0 an input not read; derived: in a 16-bit derivation,
    g times beta whole, then summed to the input's shape, as PyTorch's formula."""
    lead = len(shape) - len(node.shape)
    if lead < 0 or any(s not in (1, t) for s, t in zip(node.shape, shape[lead:])):
        raise RuntimeError(f"{op}: input of shape {tuple(input.shape)} cannot be expanded to "
                           f"the result's shape {shape}")
    node = node.reshape((1,) * lead + node.shape).expand(shape)
    if beta == 0:
        return _unread(node, [input])
    return _formula_scaled(node, beta) if derived else _scaled(node, beta)


def _product(a: Node, b: Node, gradient_factor, **kwargs) -> Node:
    """a @ b (linalg.product); with a gradient_factor other than 1, a 16-bit derivation
    whose gradients are g's products with the other operand, then times the factor whole,
    as PyTorch's formulas (maybe_multiply(grad.mm(mat2.t()), alpha))."""
    if gradient_factor == 1:
        return linalg.product(a, b, **kwargs)
    return (linalg.product(_formula_scaled(a, gradient_factor), b.detach(), **kwargs)
            + linalg.product(a.detach(), _formula_scaled(b, gradient_factor), **kwargs))


def _formula_scaled(node: Node, factor) -> Node:
    """A derivation of node whose gradient is g times factor, the number whole and the
    product rounded once to node's 16-bit type."""
    return node if factor == 1 else gradient_steps(node, [(Op.MUL, factor)], node.dtype)


def _nothing_read(out: Node, beta) -> Node:
    """out, a sum of sides not read: with beta 0, none was, and BLAS writes zeros."""
    return out if beta != 0 else out + 0.0


def _scaled(node: Node, factor) -> Node:
    return node if factor == 1 else node * factor


def _unread(node: Node, tensors) -> Node:
    """-0.0 (x + -0.0 is x for every x) in node's place, which reads none of its values; for
    tensors that require grad it is still a function of node, whose gradient is zeros."""
    nothing = node.const_like(-0.0)
    if not any(t.requires_grad for t in tensors):
        return nothing
    return ir.where(ir.const(False, dt.bool_, node.shape), node, nothing)


def _chain(start: Node, terms: Node) -> Node:
    """start + terms[0] + terms[1] + ... in that order: the sum kernel's total, which starts
    at +0.0, except where every term is -0.0, which the chain adds without changing start.
    There the total is +0.0, and start - (0 - total) is start, with total's gradient."""
    rows = terms.shape[1:]
    if terms.shape[0] == 1:
        return start + terms.reshape(rows)
    total = reduce_node(Op.SUM, terms, (0,)).reshape(rows)
    not_minus_zero = terms.ne(0) | (ir.binary(Op.COPYSIGN, terms.const_like(1), terms) > 0)
    moved = reduce_node(Op.RMAX, not_minus_zero.cast(terms.dtype), (0,)).reshape(rows) > 0
    return moved.where(start + total, start - (total.const_like(0.0) - total))


def _check_dims(op: str, **tensors) -> None:
    for name, (t, ndim) in tensors.items():
        if t.ndim != ndim:
            raise RuntimeError(f"{op}: expected {name} to be a {ndim}-D tensor, but got a "
                               f"{t.ndim}-D tensor of shape {tuple(t.shape)}")


METHODS = [("addmm", addmm), ("addmv", addmv), ("addr", addr), ("baddbmm", baddbmm),
           ("addbmm", addbmm)]
