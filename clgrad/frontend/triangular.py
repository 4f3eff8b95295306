"""Triangular solves and the Cholesky family, batched over leading dims: solve_triangular,
triangular_solve, cholesky (torch.cholesky and linalg.cholesky), cholesky_ex,
cholesky_solve, cholesky_inverse. One TRISOLVE or CHOLESKY kernel each
(compiler/factorizations.py), gradients from those primitives.

clgrad is lazy: cholesky of a matrix that is not positive-definite raises nothing when
recorded; its factor holds NaN (or inf) from the failing column on. cholesky_ex returns
LAPACK's info (the order of the first failing leading minor) and raises LinAlgError with
check_errors=True (which waits for the values)."""
from __future__ import annotations

from collections import namedtuple

from ..compiler.factorizations import cholesky as cholesky_node
from ..compiler.factorizations import diagonal, eye, mT, trisolve
from ..compiler import ir
from ..compiler.ir import Node
from .backward import record
from .matrices import (broadcast_batches, check_matrix, first_failure, raise_on_error,
                       same_dtype, square, tensor_of)
from .operands import common_device


TriangularSolveResult = namedtuple("triangular_solve", ["solution", "cloned_coefficient"])
CholeskyExResult = namedtuple("linalg_cholesky_ex", ["L", "info"])


def _solve_nodes(op: str, a: Node, b: Node, upper: bool, left: bool, unit: bool) -> Node:
    n = a.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    a, b = broadcast_batches(op, a, b)
    if left:
        return trisolve(a, b, upper, unit)
    return mT(trisolve(a, mT(b), upper, unit, transposed=True))      # X A = B: A^T X^T = B^T


def _operands(op: str, a, b) -> object:
    square(op, a)
    check_matrix(op, b, "B")
    same_dtype(op, a, b)
    return common_device(op, [a, b])


def solve_triangular(A, B, *, upper: bool, left: bool = True, unitriangular: bool = False):
    device = _operands("linalg.solve_triangular", A, B)
    x = _solve_nodes("linalg.solve_triangular", A.node, B.node, upper, left, unitriangular)
    return record("linalg_solve_triangular", x, device, [A, B])


def triangular_solve(b, A, upper: bool = True, transpose: bool = False,
                     unitriangular: bool = False):
    """Deprecated in PyTorch: op(A) X = b, with A's copy as the second result."""
    device = _operands("triangular_solve", A, b)
    a_node, b_node = broadcast_batches("triangular_solve", A.node, b.node)
    if b.shape[-2] != A.shape[-1]:
        raise RuntimeError(f"triangular_solve: Incompatible matrix sizes for A and b: "
                           f"{tuple(A.shape)} and {tuple(b.shape)}")
    x = trisolve(a_node, b_node, upper, unitriangular, transpose)
    return TriangularSolveResult(record("triangular_solve", x, device, [b, A]),
                                 record("clone", a_node, device, [A]))


def _factor(op: str, a, upper: bool) -> Node:
    square(op, a)
    lower = cholesky_node(a.node)
    return mT(lower) if upper else lower


def linalg_cholesky(A, *, upper: bool = False):
    return record("linalg_cholesky", _factor("linalg.cholesky", A, upper), A.device, [A])


def cholesky(self, upper: bool = False):
    return record("cholesky", _factor("cholesky", self, upper), self.device, [self])


def cholesky_ex(A, *, upper: bool = False, check_errors: bool = False):
    factor = _factor("linalg.cholesky_ex", A, upper)
    diag = diagonal(factor)
    info = tensor_of(first_failure((diag > 0).logical_not()), A.device)
    if check_errors:
        raise_on_error("linalg.cholesky_ex", info, A.ndim == 2)
    return CholeskyExResult(record("linalg_cholesky_ex", factor, A.device, [A]), info)


def _cholesky_solve_nodes(b: Node, factor: Node, upper: bool) -> Node:
    """X with (L L^T) X = b, L the lower factor (factor^T when upper)."""
    y = trisolve(factor, b, upper, transposed=upper)
    return trisolve(factor, y, upper, transposed=not upper)


def cholesky_solve(B, L, upper: bool = False):
    device = _operands("cholesky_solve", L, B)
    factor, b = broadcast_batches("cholesky_solve", L.node, B.node)
    if B.shape[-2] != L.shape[-1]:
        raise RuntimeError(f"cholesky_solve: Incompatible matrix sizes for A and b: "
                           f"{tuple(L.shape)} and {tuple(B.shape)}")
    x = _cholesky_solve_nodes(b, factor, upper)
    return record("cholesky_solve", x, device, [B, L],
                  derivation=_full_factor_derivation(x, b, factor, upper))


def _full_factor_derivation(x: Node, b: Node, factor: Node, upper: bool) -> Node:
    """A graph worth x whose derivative is PyTorch's cholesky_solve_backward: the factor's
    gradient is that of (F F^T)^-1 b (F^T F upper) over all of F, the triangle the solve
    never reads included, where the solves' own gradients reach the triangle alone. The
    residual b - A x is 0, its derivative -dA x, solved with the detached factor."""
    fixed, x = factor.detach(), x.detach()
    product = ir.matmul(mT(factor), factor) if upper else ir.matmul(factor, mT(factor))
    return x + _cholesky_solve_nodes(b - ir.matmul(product, x), fixed, upper)


def cholesky_inverse(L, upper: bool = False):
    square("cholesky_inverse", L)
    n = L.shape[-1]
    x = _cholesky_solve_nodes(eye(n, L.node), L.node, upper) if L.numel() else L.node
    return record("cholesky_inverse", x, L.device, [L])


METHODS = [("cholesky", cholesky), ("cholesky_solve", cholesky_solve),
           ("cholesky_inverse", cholesky_inverse), ("triangular_solve", triangular_solve)]
# torch.* spellings whose parameter names are not a method's (torch.cholesky_solve(B, L))
FUNCTIONS = {"cholesky_solve": cholesky_solve, "cholesky_inverse": cholesky_inverse,
             "triangular_solve": triangular_solve}
