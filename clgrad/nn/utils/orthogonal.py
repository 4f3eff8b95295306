"""The orthogonal parametrization (torch.nn.utils.parametrizations.orthogonal): a matrix, or a
batch of them, with orthonormal columns (rows, when wide) computed from an unconstrained one by
the matrix exponential or the Cayley map of a skew-symmetric matrix, or as a product of
Householder reflectors. With use_trivialization the result multiplies a stored orthogonal
`base`, which assigning the weight replaces (the "dynamic trivialization")."""
from __future__ import annotations

from ...frontend import creation
from ...frontend.functions import allclose
from ...frontend.elementwise import where
from ...frontend.grad_mode import no_grad
from ...frontend.householder import geqrf, householder_product
from ...frontend.joining import cat
from ...frontend.lu import solve
from ...frontend.matrix_functions import matrix_exp
from ...frontend.qr import linalg_qr
from ...frontend.tensor import Tensor
from ...frontend.type_info import finfo
from ..module import Module
from . import parametrize

MAPS = ("matrix_exp", "cayley", "householder")


def _is_orthogonal(Q: Tensor) -> bool:
    n, k = Q.shape[-2:]
    identity = creation.eye(k, dtype=Q.dtype, device=Q.device)
    return allclose(Q.mT @ Q, identity, atol=10.0 * n * finfo(Q.dtype).eps)


def _make_orthogonal(A: Tensor) -> Tensor:
    """The Q of the tall A = QR with R's diagonal made non-negative (unique where A has full
    rank, so whichever QR algorithm computed it)."""
    Q, R = linalg_qr(A)
    return Q * R.diagonal(dim1=-2, dim2=-1).sgn().unsqueeze(-2)


class _Orthogonal(Module):
    def __init__(self, weight: Tensor, orthogonal_map: str, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X = X.mT
            n, k = k, n
        if self.orthogonal_map == "householder":
            A = X.tril(diagonal=-1)
            tau = 2.0 / (1.0 + (A * A).sum(dim=-2))
            # X's diagonal holds each column's sign (+-1), not differentiated through
            Q = householder_product(A, tau) * X.diagonal(dim1=-2, dim2=-1).int().unsqueeze(-2)
        else:
            Q = self._skew_map(X.tril(), n, k)
        if hasattr(self, "base"):
            Q = self.base @ Q
        return Q.mT if transposed else Q

    def _skew_map(self, X: Tensor, n: int, k: int) -> Tensor:
        """exp(A) or the Cayley map of the skew-symmetric A = X - X^T (X padded to n x n),
        its first k columns."""
        if n != k:
            X = cat([X, X.new_zeros(n, n - k).expand(*X.shape[:-2], -1, -1)], dim=-1)
        A = X - X.mT
        if self.orthogonal_map == "matrix_exp":
            Q = matrix_exp(A)
        else:       # (I + A/2)(I - A/2)^-1
            identity = creation.eye(n, dtype=A.dtype, device=A.device)
            Q = solve(identity - 0.5 * A, identity + 0.5 * A)
        return Q[..., :k] if n != k else Q

    @no_grad()
    def right_inverse(self, Q: Tensor) -> Tensor:
        if Q.shape != self.shape:
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {Q.shape}.")
        Q_init = Q
        n, k = Q.shape[-2:]
        transpose = n < k
        if transpose:
            Q = Q.mT
            n, k = k, n
        if not hasattr(self, "base"):
            return self._householder_inverse(Q, transpose)
        if n == k:
            Q = Q.clone() if _is_orthogonal(Q) else _make_orthogonal(Q)
        else:       # completed to an n x n orthogonal matrix by random columns
            N = creation.randn(*Q.shape[:-2], n, n - k, dtype=Q.dtype, device=Q.device)
            Q = _make_orthogonal(cat([Q, N], dim=-1))
        self.base = Q
        # -I: its diagonal makes householder(zeros) the identity, and every map of it is base
        neg_identity = creation.zeros_like(Q_init)
        neg_identity.diagonal(dim1=-2, dim2=-1).fill_(-1.0)
        return neg_identity

    def _householder_inverse(self, Q: Tensor, transpose: bool) -> Tensor:
        """Reflectors whose product is Q (made orthogonal): geqrf's, the diagonal holding the
        signs of R's (flipped where a reflector was skipped, tau = 0)."""
        if self.orthogonal_map != "householder":
            raise NotImplementedError("It is not possible to assign to the matrix exponential "
                                      "or the Cayley parametrizations when "
                                      "use_trivialization=False.")
        A, tau = geqrf(Q)
        signs = A.diagonal(dim1=-2, dim2=-1).sign()
        A.diagonal(dim1=-2, dim2=-1).copy_(where(tau == 0.0, -signs, signs))
        return A.mT if transpose else A


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """Parametrizes module.<name> (a matrix or a batch of them) as orthogonal. orthogonal_map:
    "matrix_exp" (default for square matrices), "cayley" or "householder" (default otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else "householder"
    if orthogonal_map not in MAPS:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orthogonal_map, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module
