"""torch.*'s linear algebra from before torch.linalg, as PyTorch 2.13 has it: matrix_rank,
lstsq, solve, symeig and eig were removed and raise, naming their torch.linalg replacement;
nuclear_norm and frobenius_norm are deprecated (a warning) and still work, as
linalg.matrix_norm(A, "nuc") and linalg.vector_norm(A, 2) over dim."""
from __future__ import annotations

import warnings

from .matrices import check_matrix
from .matrix_norms import matrix_norm
from .operands import normalize_dims
from .statistics import vector_norm

_REMOVED = "This function was deprecated since version 1.9 and is now removed."
# each removed function's message after _REMOVED: what replaces it, as PyTorch's says
_REPLACEMENTS = {
    "matrix_rank": "\nPlease use the `torch.linalg.matrix_rank` function instead. The parameter "
                   "'symmetric' was renamed in `torch.linalg.matrix_rank()` to 'hermitian'.",
    "solve": " `torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` "
             "has its arguments reversed and does not return the LU factorization.\n\nTo get "
             "the LU factorization see `torch.lu`, which can be used with `torch.lu_solve` or "
             "`torch.lu_unpack`.\nX = torch.solve(B, A).solution should be replaced with:\n"
             "X = torch.linalg.solve(A, B)",
    "lstsq": " `torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` "
             "has reversed arguments and does not return the QR decomposition in the returned "
             "tuple (although it returns other information about the problem).\n\nTo get the "
             "QR decomposition consider using `torch.linalg.qr`.\n\nThe returned solution in "
             "`torch.lstsq` stored the residuals of the solution in the last m - n columns of "
             "the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in "
             "the field 'residuals' of the returned named tuple.\n\nThe unpacking of the "
             "solution, as in\nX, _ = torch.lstsq(B, A).solution[:A.size(1)]\nshould be "
             "replaced with:\nX = torch.linalg.lstsq(A, B).solution",
    "symeig": " The default behavior has changed from using the upper triangular portion of the "
              "matrix by default to using the lower triangular portion.\n\nL, _ = "
              "torch.symeig(A, upper=upper) should be replaced with:\nL = "
              "torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
              "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = "
              "torch.linalg.eigh(A, UPLO='U' if upper else 'L')",
    "eig": " `torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather "
           "than real tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be "
           "replaced with:\nL_complex = torch.linalg.eigvals(A)\n\nand\n\nL, V = "
           "torch.eig(A, eigenvectors=True) should be replaced with:\nL_complex, V_complex = "
           "torch.linalg.eig(A)\n(clgrad has no complex tensors: for a symmetric A, "
           "cg.linalg.eigh(A))",
}


def _removed(name: str):
    raise RuntimeError(_REMOVED + _REPLACEMENTS[name])


def matrix_rank(input, tol=None, symmetric: bool = False, *, out=None):
    _removed("matrix_rank")


def solve(input, A, *, out=None):
    _removed("solve")


def lstsq(input, A, *, out=None):
    _removed("lstsq")


def symeig(input, eigenvectors: bool = False, upper: bool = True, *, out=None):
    _removed("symeig")


def eig(self, eigenvectors: bool = False, *, e=None, v=None):
    _removed("eig")


def _deprecated(name: str, replacement: str) -> None:
    warnings.warn(f"at::{name} is deprecated and it is just left for JIT compatibility. It will "
                  f"be removed in a future PyTorch release. Please use `{replacement}` instead",
                  UserWarning, stacklevel=3)


def nuclear_norm(input, dim=None, keepdim: bool = False):
    """The sum of the singular values of the matrices over dim (the last two by default);
    torch.nuclear_norm(input, keepdim) is the overload without dim."""
    if isinstance(dim, bool):
        dim, keepdim = None, dim
    _deprecated("nuclear_norm", "linalg.matrix_norm(A, 'nuc', dim, keepdim)")
    check_matrix("linalg.matrix_norm", input)
    dim = (-2, -1) if dim is None else tuple(dim)
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got "
                           f"{' '.join(map(str, dim))}")
    if normalize_dims("linalg.matrix_norm", dim[:1], input.ndim) == \
            normalize_dims("linalg.matrix_norm", dim[1:], input.ndim):
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got {dim}")
    return matrix_norm(input, "nuc", dim, keepdim)


def frobenius_norm(input, dim, keepdim: bool = False):
    """The 2-norm over dim (at most two dims; () is all of them)."""
    _deprecated("frobenius_norm", "linalg.vector_norm(A, 2., dim, keepdim)")
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if len(dims) > 2:
        raise RuntimeError(f"Expected at most 2 dimensions, but got {len(dims)} dimensions "
                           f"instead.")
    if not input.dtype.is_float:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {input.dtype.name} instead.")
    return vector_norm(input, 2, dims or None, keepdim)


FUNCTIONS = {fn.__name__: fn for fn in (matrix_rank, solve, lstsq, symeig, eig, nuclear_norm,
                                        frobenius_norm)}

# Tensor.lstsq(A), Tensor.solve(A), Tensor.symeig(eigenvectors), Tensor.eig(eigenvectors)
METHODS = [("lstsq", lstsq), ("solve", solve), ("symeig", symeig), ("eig", eig)]
