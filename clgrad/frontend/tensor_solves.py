"""linalg.tensorinv and linalg.tensorsolve: a tensor's dims split into two groups of equal
size, reshaped into a square matrix that inv or solve (lu.py) takes, and the result
reshaped back, as PyTorch writes them; the gradients are inv's and solve's. As there, a
singular matrix raises nothing when recorded (lu.py): its inverse or solution holds inf or
NaN (PyTorch's raise torch.linalg.LinAlgError)."""
from __future__ import annotations

import math

from .lu import inv, solve


def tensorinv(A, ind: int = 2):
    """The inverse of A for tensordot over ind dims: shape A.shape[ind:] + A.shape[:ind]."""
    if isinstance(ind, bool) or not isinstance(ind, int):
        raise TypeError(f"linalg_tensorinv(): argument 'ind' must be int, not "
                        f"{type(ind).__name__}")
    if ind <= 0:
        raise RuntimeError(f"Expected a strictly positive integer for 'ind', but got {ind}")
    shape = tuple(A.shape)
    if ind > len(shape):
        raise RuntimeError(f"linalg.tensorinv: ArrayRef: invalid slice, N = {ind}; size = "
                           f"{len(shape)} (ind {ind} is more than the dims of A of shape "
                           f"{shape})")
    rows, columns = math.prod(shape[ind:]), math.prod(shape[:ind])
    if rows != columns:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[ind:]) == "
                           f"prod(self.shape[:ind]), but got {rows} != {columns} (A of shape "
                           f"{shape}, ind={ind})")
    return inv(A.reshape(rows, rows)).reshape(shape[ind:] + shape[:ind])


def tensorsolve(A, B, dims=None):
    """X with tensordot(A, X, X.ndim) = B: A's dims in `dims` moved to its end first, and
    X shaped as A's dims after B.ndim."""
    x = A
    if dims is not None:
        if isinstance(dims, int):
            raise TypeError(f"linalg_tensorsolve(): argument 'dims' must be tuple of ints, not "
                            f"int")
        dims = tuple(dims)
        x = x.movedim(dims, tuple(range(A.ndim - len(dims), A.ndim)))
    if B.ndim > A.ndim:
        raise RuntimeError(f"linalg.tensorsolve: B of shape {tuple(B.shape)} has more dims "
                           f"than A of shape {tuple(A.shape)}")
    result_shape = tuple(x.shape[B.ndim:])
    size, b_size = math.prod(result_shape), math.prod(B.shape)
    if size != b_size:
        raise RuntimeError(f"Expected self to satisfy the requirement prod(self.shape[other.ndim:])"
                           f" == prod(self.shape[:other.ndim]), but got {size} != {b_size} (A "
                           f"of shape {tuple(A.shape)}, B of shape {tuple(B.shape)})")
    return solve(x.reshape(size, size), B.flatten()).reshape(result_shape)
