"""torch.linalg: norms, products, and dense factorizations with gradients (frontend/lu.py,
frontend/triangular.py, frontend/ldl.py, frontend/tensor_solves.py). Not here: eig and
eigvals, whose results are complex (clgrad has no complex tensors; a symmetric matrix's are
eigh's and eigvalsh's)."""
from .frontend.lu import (det, inv, inv_ex, linalg_lu as lu, lu_factor, lu_factor_ex, lu_solve,
                          slogdet, solve, solve_ex)
from .frontend.lu import matrix_power
from .frontend.eigen import eigh, eigvalsh, svd, svdvals
from .frontend.matrices import LinAlgError
from .frontend.householder import householder_product
from .frontend.ldl import ldl_factor, ldl_factor_ex, ldl_solve
from .frontend.matrix_functions import matrix_exp
from .frontend.matrix_norms import cond, matrix_norm, matrix_rank, multi_dot, norm
from .frontend.qr import linalg_qr as qr, lstsq, pinv
from .frontend.products import linalg_cross as cross, vecdot
from .frontend.statistics import vector_norm
from .frontend.triangular import cholesky_ex, linalg_cholesky as cholesky, solve_triangular
from .frontend.tensor_solves import tensorinv, tensorsolve
from .frontend.linalg import matmul
from .frontend.array_functions import linalg_diagonal as diagonal, linalg_vander as vander

__all__ = ["vector_norm", "cross", "det", "inv", "inv_ex", "lu", "lu_factor", "lu_factor_ex",
           "lu_solve", "slogdet", "solve", "matrix_power", "LinAlgError", "cholesky_ex",
           "cholesky", "solve_triangular", "matrix_exp", "qr", "lstsq", "pinv", "eigh",
           "eigvalsh", "svd", "svdvals", "matrix_norm", "cond", "matrix_rank", "multi_dot",
           "householder_product", "ldl_factor", "ldl_factor_ex", "ldl_solve", "norm", "solve_ex",
           "tensorinv", "tensorsolve", "vecdot", "matmul", "diagonal", "vander"]
