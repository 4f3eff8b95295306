"""The LU family, batched over leading dims: lu_factor(_ex), lu, lu_unpack, lu_solve,
solve(_ex), inv(_ex), det, slogdet, logdet, matrix_power. Each is one LU kernel (partial
pivoting, compiler/factorizations.py) and triangular solves, with gradients from those
primitives.

clgrad is lazy, so a singular matrix raises nothing when recorded: its U has a zero on the
diagonal, det is 0, slogdet gives (0, -inf), and inv and solve give inf or NaN. inv_ex,
solve_ex and lu_factor_ex return LAPACK's info (1 + the first zero pivot), and raise
PyTorch's errors with check_errors=True (which waits for the values)."""
from __future__ import annotations

from collections import namedtuple

from ..compiler import ir
from ..compiler.dtype import int32
from ..compiler.factorizations import band, diagonal, eye, lu_parts, mT, permutation_matrix
from ..compiler.factorizations import lu as lu_node
from ..compiler.factorizations import trisolve
from ..compiler.ir import Node
from .backward import record
from .matrices import (broadcast_batches, check_matrix, first_failure, raise_on_error,
                       same_dtype, square, tensor_of)
from .operands import broadcast_to, common_device

LUFactorResult = namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = namedtuple("linalg_lu", ["P", "L", "U"])
UnpackResult = namedtuple("lu_unpack", ["P", "L", "U"])
SlogdetResult = namedtuple("slogdet", ["sign", "logabsdet"])
InvExResult = namedtuple("linalg_inv_ex", ["inverse", "info"])
SolveExResult = namedtuple("linalg_solve_ex", ["result", "info"])



def _factor(op: str, a, pivot: bool = True) -> Node:
    square(op, a)
    if not pivot:
        raise RuntimeError(f"{op}: LU without pivoting is not implemented on the CPU")
    return lu_node(a.node)


def _singular(factors: Node) -> Node:
    """info: 1 + the first exact zero on U's diagonal, 0 if none (a NaN is none, as LAPACK's
    getrf counts it)."""
    return first_failure(diagonal(factors).eq(0))


def _pivots(packed: Node) -> Node:
    """LAPACK's 1-based int32 pivots, (..., n)."""
    return (lu_parts(packed)[1].cast(int32) + 1).reshape(packed.shape[:-1])


def lu_factor(A, *, pivot: bool = True):
    packed = _factor("linalg.lu_factor", A, pivot)
    factors = record("linalg_lu_factor", lu_parts(packed)[0], A.device, [A])
    return LUFactorResult(factors, tensor_of(_pivots(packed), A.device))


def lu_factor_ex(A, *, pivot: bool = True, check_errors: bool = False):
    packed = _factor("linalg.lu_factor_ex", A, pivot)
    factors = record("linalg_lu_factor_ex", lu_parts(packed)[0], A.device, [A])
    info = tensor_of(_singular(lu_parts(packed)[0]), A.device)
    if check_errors:
        raise_on_error("torch.linalg.lu_factor_ex", info, A.ndim == 2)
    return LUFactorExResult(factors, tensor_of(_pivots(packed), A.device), info)


def lu(self, pivot: bool = True, get_infos: bool = False):
    """Deprecated in PyTorch (torch.lu, Tensor.lu): lu_factor's (LU, pivots), and the
    info when get_infos."""
    factors, pivots, info = lu_factor_ex(self, pivot=pivot)
    return (factors, pivots, info) if get_infos else (factors, pivots)


def _unpacked(factors: Node, perm_rows: Node) -> tuple[Node, Node, Node]:
    """(P, L, U) with A = P L U from packed factors and the permutation matrix of P A = L U."""
    n = factors.shape[-1]
    return mT(perm_rows), band(factors, -1, True) + eye(n, factors), band(factors, 0, False)


def linalg_lu(A, *, pivot: bool = True):
    packed = _factor("linalg.lu", A, pivot)
    factors, _, perm = lu_parts(packed)
    p, lower, upper = _unpacked(factors, permutation_matrix(perm))
    return LUResult(tensor_of(p, A.device), record("linalg_lu", lower, A.device, [A]),
                    record("linalg_lu", upper, A.device, [A]))


def _rows_from_pivots(pivots: Node, dtype) -> Node:
    """The permutation matrix P (P A = L U) of LAPACK's sequential 1-based row swaps: each
    swap exchanges two rows of the identity, as a select of one-hot rows (n elementwise
    steps, which fuse)."""
    *batch, n = pivots.shape
    rows = eye(n, ir.const(0, dtype, (*batch, n, n)))
    index = ir.iota(n, int32).reshape((1,) * len(batch) + (n, 1)).expand((*batch, n, n))
    for k in range(n):
        target = pivots.shrink(tuple((0, s) for s in batch) + ((k, k + 1),)) - 1
        target = target.reshape((*batch, 1, 1)).expand((*batch, n, n))
        row_k = rows.shrink(tuple((0, s) for s in batch) + ((k, k + 1), (0, n))).expand(rows.shape)
        is_target = index.eq(target)
        row_target = is_target.where(rows, 0).sum((len(batch),)).expand(rows.shape)
        rows = index.eq(k).where(row_target, is_target.where(row_k, rows))
    return rows


def _check_pivots(op: str, lu_data, pivots) -> None:
    check_matrix(op, lu_data, "LU_data")
    if pivots.dtype != int32:
        raise RuntimeError(f"{op}: LU_pivots is expected to be a contiguous tensor of "
                           f"torch.int32 dtype. Note: this function is intended to be used "
                           f"with the output produced by torch.linalg.lu_factor")
    if tuple(pivots.shape) != tuple(lu_data.shape[:-1]):
        raise RuntimeError(f"{op}: the shape of LU_pivots {tuple(pivots.shape)} does not match "
                           f"LU_data's {tuple(lu_data.shape)} (expected "
                           f"{tuple(lu_data.shape[:-1])})")


def lu_unpack(LU_data, LU_pivots, unpack_data: bool = True, unpack_pivots: bool = True):
    _check_pivots("lu_unpack", LU_data, LU_pivots)
    square("lu_unpack", LU_data, "LU_data")
    p, lower, upper = _unpacked(LU_data.node, _rows_from_pivots(LU_pivots.node, LU_data.dtype))
    empty = tensor_of(ir.const(0, LU_data.dtype, (0,)), LU_data.device)
    return UnpackResult(
        tensor_of(p, LU_data.device) if unpack_pivots else empty,
        record("lu_unpack", lower, LU_data.device, [LU_data]) if unpack_data else empty,
        record("lu_unpack", upper, LU_data.device, [LU_data]) if unpack_data else empty)


def _lu_solve_nodes(factors: Node, rows: Node, b: Node, adjoint: bool = False) -> Node:
    """X with A X = b (A^T X = b when adjoint) for P A = L U."""
    factors, b = broadcast_batches("linalg.lu_solve", factors, b)
    rows = broadcast_to(rows, factors.shape)
    if adjoint:         # A^T = U^T L^T P: X = P^T L^-T U^-T b
        y = trisolve(factors, trisolve(factors, b, upper=True, transposed=True), upper=False,
                     unit=True, transposed=True)
        return mT(rows) @ y
    y = trisolve(factors, rows @ b, upper=False, unit=True)
    return trisolve(factors, y, upper=True)


def _sided(op: str, a_node: Node, b, left: bool, solve_left) -> Node:
    """solve_left(B) for left, else X A = B as (A^T X^T = B^T) through solve_left's adjoint."""
    if b.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor B must have at least 2 dimensions.")
    n = a_node.shape[-1]
    if (b.shape[-2] if left else b.shape[-1]) != n:
        raise RuntimeError(f"{op}: Incompatible shapes of A and B for the equation "
                           f"{'AX = B' if left else 'XA = B'} ({n}x{n} and "
                           f"{b.shape[-2]}x{b.shape[-1]})")
    return solve_left(b.node, False) if left else mT(solve_left(mT(b.node), True))


def lu_solve(LU, pivots, B, *, left: bool = True, adjoint: bool = False):
    _check_pivots("linalg.lu_solve", LU, pivots)
    square("linalg.lu_solve", LU, "LU")
    same_dtype("linalg.lu_solve", LU, B)
    device = common_device("linalg.lu_solve", [LU, B])
    rows = _rows_from_pivots(pivots.node, LU.dtype)
    x = _sided("linalg.lu_solve", LU.node, B, left,
               lambda b, transposed: _lu_solve_nodes(LU.node, rows, b, transposed != adjoint))
    return record("linalg_lu_solve", x, device, [LU, B])


def lu_solve_deprecated(b, LU_data, LU_pivots):
    """Deprecated in PyTorch (torch.lu_solve(b, LU_data, LU_pivots), Tensor.lu_solve)."""
    return lu_solve(LU_data, LU_pivots, b)


def _solve_nodes(a: Node, b: Node, adjoint: bool = False) -> Node:
    factors, _, perm = lu_parts(lu_node(a))
    return _lu_solve_nodes(factors, permutation_matrix(perm), b, adjoint)


def _solved(A, B, left: bool, name: str):
    """A X = B (X A = B when not left); B is a vector (a column) when it is 1-d or A's
    shape less its last dim, as PyTorch decides, which X A = B refuses."""
    square("linalg.solve", A)
    same_dtype("linalg.solve", A, B)
    device = common_device("linalg.solve", [A, B])
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and B.shape == A.shape[:-1])
    b = B.unsqueeze(-1) if vector else B
    if vector and not left and A.shape[-1] == 1:     # (other sizes: _sided's shape error)
        raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not "
                           "supported for left=False. In this case linalg.solve is equivalent "
                           "to B / A.squeeze(-1)")
    x = _sided("linalg.solve", A.node, b, left,
               lambda rhs, transposed: _solve_nodes(A.node, rhs, transposed))
    if vector:
        x = x.reshape(x.shape[:-1])
    return record(name, x, device, [A, B])


def solve(A, B, *, left: bool = True):
    return _solved(A, B, left, "linalg_solve")


def solve_ex(A, B, *, left: bool = True, check_errors: bool = False):
    """solve and LAPACK's getrf info of A's LU (its own batch dims: B's are not broadcast
    in), which check_errors=True raises (waiting for the values)."""
    result = _solved(A, B, left, "linalg_solve_ex")
    info = tensor_of(_singular(lu_parts(lu_node(A.node))[0]), A.device)
    if check_errors:
        raise_on_error("torch.linalg.solve_ex", info, A.ndim == 2)
    return SolveExResult(result, info)


def _inverse_node(a: Node) -> Node:
    return _solve_nodes(a, eye(a.shape[-1], a)) if a.numel else a


def inv(A):
    square("linalg.inv", A)
    return record("linalg_inv", _inverse_node(A.node), A.device, [A])


def inverse(self):
    square("inverse", self)
    return record("inverse", _inverse_node(self.node), self.device, [self])


def inv_ex(A, *, check_errors: bool = False):
    square("linalg.inv_ex", A)
    info = tensor_of(_singular(lu_parts(lu_node(A.node))[0]), A.device)
    if check_errors:
        raise_on_error("linalg.inv_ex", info, A.ndim == 2)
    return InvExResult(record("linalg_inv_ex", _inverse_node(A.node), A.device, [A]), info)


def _sign_and_diagonal(a: Node) -> tuple[Node, Node]:
    """(the permutation's sign, U's diagonal) of a's LU factorization."""
    factors, pivots, _ = lu_parts(lu_node(a))
    *batch, n = a.shape[:-1]
    steps = ir.iota(n, int32).cast(a.dtype).reshape((1,) * len(batch) + (n, 1))
    if a.numel:
        swapped = pivots.ne(steps.expand(pivots.shape)).cast(a.dtype)
        swaps = swapped.sum((len(batch),)).reshape(tuple(batch))
    else:
        swaps = ir.const(0, a.dtype, tuple(batch))
    return 1 - (swaps % 2) * 2, diagonal(factors)


def _last_reduced(x: Node, op: str) -> Node:
    *batch, n = x.shape
    if x.numel == 0:        # the empty product or sum (no kernel reduces nothing)
        return ir.const(1 if op == "prod" else 0, x.dtype, tuple(batch))
    return getattr(x, op)((len(batch),)).reshape(tuple(batch))


def det(A):
    square("linalg.det", A)
    sign, u = _sign_and_diagonal(A.node)
    return record("linalg_det", sign * _last_reduced(u, "prod"), A.device, [A])


def _slogdet_nodes(a: Node) -> tuple[Node, Node]:
    sign, u = _sign_and_diagonal(a)
    signs = u.eq(0).where(u.const_like(0), (u < 0).where(u.const_like(-1), u.const_like(1)))
    return sign * _last_reduced(signs, "prod"), _last_reduced(u.abs().log(), "sum")


def slogdet(A):
    square("linalg.slogdet", A)
    sign, logabs = _slogdet_nodes(A.node)
    # the sign takes part in autograd as PyTorch's does, with a zero gradient
    return SlogdetResult(record("linalg_slogdet", sign, A.device, [A], derivation=sign.detach()),
                         record("linalg_slogdet", logabs, A.device, [A]))


def logdet(self):
    """log(det): NaN for a negative determinant, -inf for a zero one, as PyTorch."""
    square("logdet", self)
    sign, logabs = _slogdet_nodes(self.node)
    return record("logdet", (sign < 0).where(logabs.const_like(float("nan")), logabs),
                  self.device, [self])


def matrix_power(self, n: int):
    """A^n by repeated squaring; a negative n powers the inverse; n = 0 the identity."""
    square("linalg.matrix_power", self)
    if not isinstance(n, int):
        raise TypeError(f"matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    a = self.node if n >= 0 else _inverse_node(self.node)
    result, power, k = None, a, abs(n)
    while k and a.numel:
        if k & 1:
            result = power if result is None else result @ power
        k >>= 1
        if k:
            power = power @ power
    if result is None:
        result = eye(a.shape[-1], a) if a.numel else a
    return record("linalg_matrix_power", result, self.device, [self])


METHODS = [("lu", lu), ("lu_solve", lu_solve_deprecated), ("inverse", inverse),
           ("det", lambda self: det(self)), ("slogdet", lambda self: slogdet(self)),
           ("logdet", logdet), ("matrix_power", matrix_power)]
