"""The gradient PyTorch gives lobpcg's k < m eigenpairs (D, U) of a symmetric A
(torch/_lobpcg.py's _symeig_backward). The part of A's gradient in U's span is eigh's formula
on the k pairs; the part outside it solves a Sylvester equation U_o^T A U_o dX - dX D =
-U_o^T A U, U_o a basis of the orthogonal complement, by the polynomial solution of Hu and
Cheng (2006): with p the characteristic polynomial of D, dX is p(U_o^T A U_o)^-1 times a
series in A and D, which takes only products with A, a Cholesky factorization and its
solve."""
from __future__ import annotations

from . import creation
from .generator import Generator
from .joining import cat
from .shape_functions import diag_embed
from .triangular import cholesky_solve, linalg_cholesky

# PyTorch draws U_o's directions from a generator of fixed seed, so that the gradient is
# repeatable; any draw of full rank gives the same gradient, to rounding
_COMPLEMENT_SEED = 67280421310721


def _complete_eigenspace(D_grad, U_grad, D, U):
    """U (diag(D_grad) + (U^T U_grad) * F) U^T with F_ij = 1 / (d_j - d_i), F_ii = 0."""
    differences = D.unsqueeze(-2) - D.unsqueeze(-1)
    on_diagonal = creation.eye(D.shape[-1], dtype=D.dtype, device=D.device) != 0
    F = differences.reciprocal().masked_fill(on_diagonal, 0.0)
    Ut = U.mT
    return U @ ((diag_embed(D_grad) + (Ut @ U_grad) * F) @ Ut)


def _characteristic_polynomial(roots):
    """(..., k + 1): the coefficients a_0, ..., a_k = 1 of prod (x - r_i), lowest first."""
    coefficients = roots.new_ones(*roots.shape[:-1], 1)
    zero = roots.new_zeros(*roots.shape[:-1], 1)
    for i in range(roots.shape[-1]):
        shifted = cat([zero, coefficients], -1)             # x p(x)
        coefficients = shifted - roots[..., i:i + 1] * cat([coefficients, zero], -1)
    return coefficients


def _polynomial_of_values(coefficients, x):
    """sum_i c_i x^i elementwise over x (..., k), by Horner's rule; c's last is 1."""
    value = x.new_ones(*x.shape)
    for i in range(coefficients.shape[-1] - 2, -1, -1):
        value = coefficients[..., i:i + 1] + x * value
    return value


def _polynomial_of_matrix(coefficients, A):
    """sum_i c_i A^i by Horner's rule; c's last is 1."""
    identity = creation.eye(A.shape[-1], dtype=A.dtype, device=A.device)
    value = identity.expand(*A.shape)
    for i in range(coefficients.shape[-1] - 2, -1, -1):
        value = A @ value + coefficients[..., i, None, None] * identity
    return value


def symeig_backward(D_grad, U_grad, A, D, U, largest: bool):
    """A's gradient for the gradients of k < m of its eigenpairs (D, U) (lobpcg's m >= 3 k
    leaves no other case)."""
    m, k = U.shape[-2:]
    Ut = U.mT
    projection = creation.eye(m, dtype=A.dtype, device=A.device) - U @ Ut
    generator = Generator(A.device).manual_seed(_COMPLEMENT_SEED)
    U_ortho = projection @ creation.randn(*A.shape[:-1], m - k, dtype=A.dtype, device=A.device,
                                          generator=generator)
    U_ortho_t = U_ortho.mT
    polynomial = _characteristic_polynomial(D)
    # the series sum_j A^(j-1) U_grad p_j(D), p_j(D) = c_j + c_(j+1) D + ... + D^(k-j)
    projected, series = U_grad, U_grad.new_zeros(*U_grad.shape)
    for j in range(1, k + 1):
        series = series + projected * _polynomial_of_values(polynomial[..., j:], D).unsqueeze(-2)
        projected = A @ projected
    restricted = U_ortho_t @ (_polynomial_of_matrix(polynomial, A) @ U_ortho)
    # p(U_o^T A U_o) is positive definite, or negative definite for the largest eigenvalues
    # of an odd k (A's eigenvalues distinct)
    sign = -1 if largest and k % 2 == 1 else 1
    L = linalg_cholesky(sign * restricted)
    solved = sign * cholesky_solve(U_ortho_t @ series, L)
    return _complete_eigenspace(D_grad, U_grad, D, U) - (U_ortho @ solved) @ Ut
