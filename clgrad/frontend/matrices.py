"""What the linear algebra functions share: the checks PyTorch makes of their matrix
operands (raised when the op is recorded, with PyTorch's messages), batch broadcasting,
and torch.linalg.LinAlgError for the `_ex` functions' check_errors."""
from __future__ import annotations

import numpy as np

from ..compiler import ir
from ..compiler.dtype import float32, float64, int32
from ..compiler.ir import Node
from .operands import broadcast_shape, broadcast_to

# PyTorch's names of dtypes in linear algebra messages (c10's ScalarType names)
_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "int8": "Char", "uint8": "Byte",
                "int16": "Short", "int32": "Int", "int64": "Long", "bool": "Bool",
                "float32": "Float", "float64": "Double"}


def torch_name(dtype) -> str:
    """PyTorch's name of a dtype in its linear algebra messages: Float, Double, Long, ..."""
    return _TORCH_NAMES.get(dtype.name, dtype.name)


class LinAlgError(RuntimeError):
    """torch.linalg.LinAlgError: a matrix was singular or not positive-definite."""


def tensor_of(node: Node, device):
    """A result autograd does not see (pivots, info, permutations)."""
    from .tensor import Tensor
    return Tensor(node, device)


def square(op: str, a, name: str = "A") -> None:
    """Raises as PyTorch does unless a is a batch of square float32/float64 matrices."""
    check_matrix(op, a, name)
    if a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                           f"{a.shape[-2]} by {a.shape[-1]} matrices")


def check_matrix(op: str, a, name: str = "A") -> None:
    if a.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions.")
    if a.dtype not in (float32, float64):
        kind = "Low precision dtypes not supported." if a.dtype.is_float else \
            "Expected a floating point or complex tensor as input."
        raise RuntimeError(f"{op}: {kind} Got {_TORCH_NAMES.get(a.dtype.name, a.dtype.name)}")


def same_dtype(op: str, a, b) -> None:
    if a.dtype != b.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of "
                           f"type {_TORCH_NAMES[a.dtype.name]} and B of type "
                           f"{_TORCH_NAMES[b.dtype.name]} instead")


def broadcast_batches(op: str, a: Node, b: Node) -> tuple[Node, Node]:
    """a and b with their batch dims (all but the last two) broadcast together."""
    try:
        batch = broadcast_shape(op, a.shape[:-2], b.shape[:-2])
    except RuntimeError:
        raise RuntimeError(f"{op}: the batch dimensions of shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)} cannot be broadcast together") from None
    return broadcast_to(a, batch + a.shape[-2:]), broadcast_to(b, batch + b.shape[-2:])


def first_failure(bad: Node) -> Node:
    """LAPACK's info from a (..., n) bool mask of failed pivots: 1 + the index of the first,
    0 if none, int32."""
    *batch, n = bad.shape
    if bad.numel == 0:
        return ir.const(0, int32, tuple(batch))
    position = ir.iota(n, int32).reshape((1,) * len(batch) + (n,)).expand(bad.shape) + 1
    first = -(bad.where(-position, -(n + 1)).max((len(batch),)))
    return first.eq(n + 1).where(first.const_like(0), first).reshape(tuple(batch))


def raise_on_error(op: str, info, is_matrix: bool) -> None:
    """check_errors=True, as PyTorch's _linalg_check_errors: realizes info (a wait for the
    device) and raises for its first nonzero code with PyTorch's message for op (naming the
    batch element unless is_matrix), a LinAlgError where PyTorch raises one."""
    codes = info.numpy().reshape(-1)
    failed = np.flatnonzero(codes)
    if not failed.size:
        return
    element, code = int(failed[0]), int(codes[failed[0]])
    op_where = op if is_matrix else f"{op}: (Batch element {element})"
    if "solve" in op:
        raise LinAlgError(f"{op_where}: The solver failed because the input matrix is singular.")
    if "cholesky" in op:
        raise LinAlgError(f"{op_where}: The factorization could not be completed because the "
                          f"input is not positive-definite (the leading minor of order {code} "
                          f"is not positive-definite).")
    if "lu_factor" in op:
        raise RuntimeError(f"{op_where}: U[{code},{code}] is zero and using it on lu_solve "
                           f"would result in a division by zero. If you still want to perform "
                           f"the factorization, consider calling linalg.lu(A, pivot) or "
                           f"linalg.lu_factor_ex(A, pivot)")
    if "inv" in op:
        raise LinAlgError(f"{op_where}: The diagonal element {code} is zero, the inversion "
                          f"could not be completed because the input matrix is singular.")
    # (ldl_factor_ex: PyTorch raises sytrf's code for a zero pivot column as an internal assert)
    batch = "" if is_matrix else f" in batch element {element}"
    raise RuntimeError(f"{op}: Unknown error code: {code}. (LAPACK's info {code}{batch}: the "
                       f"factorization met a zero pivot column, the matrix is singular.)")
