"""MultivariateNormal(loc, covariance_matrix | precision_matrix | scale_tril), computed
through the lower Cholesky factor of the covariance (linalg.cholesky, solve_triangular)."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from ..frontend.triangular import cholesky_inverse, linalg_cholesky, solve_triangular
from . import constraints
from .distribution import Distribution, LocationFamily
from .utils import lazy_property, standard_normal


def batch_mv(bmat, bvec):
    """Matrix-vector products, batched and broadcast."""
    return bmat.matmul(bvec.unsqueeze(-1)).squeeze(-1)


def batch_mahalanobis(bL, bx):
    """The squared Mahalanobis distance x^T (L L^T)^-1 x for each x of bx, with L of bL
    broadcast over bx's batch. bx's batch dimensions are folded so that one triangular solve
    per L covers every x that L meets (PyTorch's reshaping)."""
    n = bx.size(-1)
    bx_batch_shape = tuple(bx.shape[:-1])
    bx_batch_dims = len(bx_batch_shape)
    bL_batch_dims = bL.dim() - 2
    outer_batch_dims = bx_batch_dims - bL_batch_dims
    old_batch_dims = outer_batch_dims + bL_batch_dims
    new_batch_dims = outer_batch_dims + 2 * bL_batch_dims
    # split each of bx's batch sizes that L's batch meets into (sx // sL, sL)
    bx_new_shape = tuple(bx.shape[:outer_batch_dims])
    for sL, sx in zip(bL.shape[:-2], bx.shape[outer_batch_dims:-1]):
        bx_new_shape += (sx // sL, sL)
    bx = bx.reshape(bx_new_shape + (n,))
    permute_dims = (list(range(outer_batch_dims))
                    + list(range(outer_batch_dims, new_batch_dims, 2))
                    + list(range(outer_batch_dims + 1, new_batch_dims, 2)) + [new_batch_dims])
    bx = bx.permute(permute_dims)
    flat_L = bL.reshape(-1, n, n)                       # (b, n, n)
    flat_x = bx.reshape(-1, flat_L.size(0), n)          # (c, b, n)
    flat_x_swap = flat_x.permute(1, 2, 0)               # (b, n, c)
    m_swap = solve_triangular(flat_L, flat_x_swap, upper=False).pow(2).sum(-2)   # (b, c)
    permuted_m = m_swap.t().reshape(bx.shape[:-1])
    permute_inv_dims = list(range(outer_batch_dims))
    for i in range(bL_batch_dims):
        permute_inv_dims += [outer_batch_dims + i, old_batch_dims + i]
    return permuted_m.permute(permute_inv_dims).reshape(bx_batch_shape)


def precision_to_scale_tril(precision):
    """The lower Cholesky factor of precision's inverse, through the Cholesky factor of
    precision with its rows and columns reversed (no explicit inverse of precision)."""
    flipped_factor = linalg_cholesky(precision.flip((-2, -1)))
    inverse_of_factor = flipped_factor.flip((-2, -1)).transpose(-2, -1)
    identity = ops.eye(precision.shape[-1], dtype=precision.dtype, device=precision.device)
    return solve_triangular(inverse_of_factor, identity, upper=False)


class CholeskyParameterized:
    """A distribution whose matrix parameter is given by one of covariance_matrix,
    precision_matrix and scale_tril (MultivariateNormal, Wishart): it keeps the lower Cholesky
    factor, and the matrices derived from it expanded to _matrix_shape()."""
    _MATRICES = ("covariance_matrix", "scale_tril", "precision_matrix")

    def _set_factor(self, covariance_matrix, precision_matrix, scale_tril) -> None:
        if scale_tril is not None:
            self._unbroadcasted_scale_tril = scale_tril
        elif covariance_matrix is not None:
            self._unbroadcasted_scale_tril = linalg_cholesky(covariance_matrix)
        else:
            self._unbroadcasted_scale_tril = precision_to_scale_tril(precision_matrix)

    def _expand_matrices(self, new, matrix_shape) -> None:
        """new (an expanded copy) with the matrices computed so far, expanded too."""
        for name in self._MATRICES:
            if name in self.__dict__:
                setattr(new, name, self.__dict__[name].expand(matrix_shape))

    @lazy_property
    def scale_tril(self):
        return self._unbroadcasted_scale_tril.expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        factor = self._unbroadcasted_scale_tril
        return factor.matmul(factor.mT).expand(self._matrix_shape())


class MultivariateNormal(CholeskyParameterized, LocationFamily, Distribution):
    """The multivariate normal of mean loc, its covariance given by exactly one of
    covariance_matrix, precision_matrix or scale_tril (lower triangular, positive diagonal)."""
    arg_constraints = {"loc": constraints.real_vector,
                       "covariance_matrix": constraints.positive_definite,
                       "precision_matrix": constraints.positive_definite,
                       "scale_tril": constraints.lower_cholesky}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
        if sum(given) != 1:
            raise ValueError("Exactly one of covariance_matrix or precision_matrix or "
                             "scale_tril may be specified.")
        name, matrix = next((n, m) for n, m in (("scale_tril", scale_tril),
                                                 ("covariance_matrix", covariance_matrix),
                                                 ("precision_matrix", precision_matrix))
                            if m is not None)
        if matrix.dim() < 2:
            label = "scale_tril matrix" if name == "scale_tril" else name
            raise ValueError(f"{label} must be at least two-dimensional, with optional leading "
                             "batch dimensions")
        batch_shape = ops.broadcast_shapes(matrix.shape[:-2], loc.shape[:-1])
        setattr(self, name, matrix.expand(tuple(batch_shape) + (-1, -1)))
        self.loc = loc.expand(tuple(batch_shape) + (-1,))
        super().__init__(batch_shape, self.loc.shape[-1:], validate_args=validate_args)
        self._set_factor(covariance_matrix, precision_matrix, scale_tril)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(MultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape + self.event_shape
        new.loc = self.loc.expand(batch_shape + self.event_shape)
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril
        self._expand_matrices(new, cov_shape)
        return self._expanded_init(new, batch_shape)

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def precision_matrix(self):
        return cholesky_inverse(self._unbroadcasted_scale_tril).expand(self._matrix_shape())

    @property
    def variance(self):
        return self._unbroadcasted_scale_tril.pow(2).sum(-1).expand(
            self._batch_shape + self._event_shape)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = standard_normal(shape, self.loc.dtype, self.loc.device)
        return self.loc + batch_mv(self._unbroadcasted_scale_tril, eps)

    def _half_log_det(self):
        return self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        m = batch_mahalanobis(self._unbroadcasted_scale_tril, value - self.loc)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + m) - self._half_log_det()

    def entropy(self):
        h = 0.5 * self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._half_log_det()
        return h if len(self._batch_shape) == 0 else h.expand(self._batch_shape)
