"""linalg.ldl_factor, ldl_factor_ex and ldl_solve for real symmetric matrices: LAPACK's sytrf
(Bunch-Kaufman pivoting, the lower triangle) and sytrs, one kernel each
(compiler/ldl.py), with the compact LD and 1-based pivots PyTorch returns (a 2x2 block's two
pivots are the same negative number). For real matrices hermitian=True is the same
factorization. PyTorch differentiates neither: a result of an input that requires grad has
a grad_fn that refuses backward, as PyTorch's NotImplemented node does (no_derivative.py).

clgrad is lazy, so a singular matrix raises nothing when recorded (PyTorch's ldl_factor
raises an internal assert there): its D holds a zero block and ldl_solve gives inf or NaN.
ldl_factor_ex returns LAPACK's info (1 + the first zero pivot column) and raises with
check_errors=True (which waits for the values). ldl_solve reads the pivots back when it is
recorded, to refuse those out of range as PyTorch does."""
from __future__ import annotations

from collections import namedtuple

from ..compiler.dtype import float32, float64, int32
from ..compiler.ldl import ldl as ldl_node
from ..compiler.ldl import ldl_parts
from ..compiler.ldl import ldl_solve as ldl_solve_node
from .matrices import first_failure, raise_on_error, tensor_of, torch_name
from .no_derivative import record_without_derivative
from .operands import broadcast_shape, broadcast_to, common_device

LDLFactorResult = namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])


def _check_square(op: str, a, name: str = "A") -> None:
    """PyTorch's squareCheckInputs, then its dtype checks (a 16-bit float passes them and is
    refused by the CPU kernel's dispatch)."""
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")
    if not a.dtype.is_float:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got "
                           f"{torch_name(a.dtype)}")


def _kernel_dtype(kernel: str, a) -> None:
    if a.dtype not in (float32, float64):
        raise NotImplementedError(f'"{kernel}" not implemented for \'{torch_name(a.dtype)}\' '
                                  f"(an input of shape {tuple(a.shape)})")


def ldl_factor_ex(A, *, hermitian: bool = False, check_errors: bool = False):
    op = "torch.linalg.ldl_factor_ex"
    _check_square(op, A)
    _kernel_dtype("ldl_factor_kernel_cpu", A)
    ld, pivots, zero = ldl_parts(ldl_node(A.node))
    info = tensor_of(first_failure(zero.ne(0)), A.device)
    if check_errors:
        raise_on_error(op, info, A.ndim == 2)
    factors = record_without_derivative("linalg_ldl_factor_ex", ld, A.device, [A])
    return LDLFactorExResult(factors, tensor_of(pivots.cast(int32), A.device), info)


def ldl_factor(A, *, hermitian: bool = False):
    """ldl_factor_ex's (LD, pivots); a singular A is not refused (see the module's note)."""
    ld, pivots, _ = ldl_factor_ex(A, hermitian=hermitian)
    return LDLFactorResult(ld, pivots)


def _check_solve(op: str, LD, pivots, B) -> tuple:
    """PyTorch's checks of ldl_solve's operands, in its order; the batch shape."""
    _check_square(op, LD)
    if B.dtype != LD.dtype:
        raise RuntimeError(f"{op}: Expected b and A to have the same dtype, but found b of type "
                           f"{torch_name(B.dtype)} and A of type {torch_name(LD.dtype)} "
                           f"instead.")
    if B.ndim < 2:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-max(B.ndim, 1)}, {max(B.ndim, 1) - 1}], but got -2): B of shape "
                         f"{tuple(B.shape)} is no matrix")
    n = LD.shape[-1]
    if B.shape[-2] != n:
        raise RuntimeError(f"Incompatible matrix sizes for {op}: each A matrix is {n} by {n} "
                           f"but each b matrix is {B.shape[-2]} by {B.shape[-1]}")
    if tuple(pivots.shape) != tuple(LD.shape[:-1]):
        raise RuntimeError(f"{op}: Expected LD.shape[:-1] and pivots.shape to be the same, but "
                           f"got pivots with shape {list(pivots.shape)} instead")
    if pivots.dtype.kind != "i":
        raise RuntimeError(f"{op}: Expected pivots to be integers. Got "
                           f"{torch_name(pivots.dtype)}")
    return broadcast_shape(op, tuple(B.shape[:-2]), tuple(LD.shape[:-2]))


def _check_pivot_values(pivots, n: int) -> None:
    """PyTorch's check of the pivots' values (this reads them back); a 0, which PyTorch does
    not check, is refused too (no row is numbered 0)."""
    if not pivots.numel():
        return
    values = pivots.numpy().reshape(-1)
    if (abs(values.astype("int64")) > n).any():
        raise RuntimeError("Pivots given to ldl_solve must all satisfy |pivot| <= LD.size(-2). "
                           "Did you properly pass the result of ldl_factor?")
    if (values == 0).any():
        raise RuntimeError("Pivots given to ldl_solve must all satisfy 1 <= |pivot|: LAPACK's "
                           "rows count from 1. Did you properly pass the result of ldl_factor?")


def ldl_solve(LD, pivots, B, *, hermitian: bool = False):
    """X with A X = B for A's factorization (LD, pivots) by ldl_factor; the batch dims of B
    and of LD (and its pivots) broadcast."""
    op = "torch.linalg.ldl_solve"
    batch = _check_solve(op, LD, pivots, B)
    device = common_device(op, [LD, pivots, B])
    _kernel_dtype("ldl_solve_kernel_cpu", LD)
    _check_pivot_values(pivots, LD.shape[-1])
    ld = broadcast_to(LD.node, batch + tuple(LD.shape[-2:]))
    piv = broadcast_to(pivots.node.cast(int32), batch + tuple(LD.shape[-1:]))
    b = broadcast_to(B.node, batch + tuple(B.shape[-2:]))
    x = ldl_solve_node(ld, piv, b)
    return record_without_derivative("linalg_ldl_solve", x, device, [LD, B])
