"""LowRankMultivariateNormal(loc, cov_factor, cov_diag): a multivariate normal whose
covariance is W W^T + D, W of low rank and D diagonal, computed through the small
capacitance matrix I + W^T D^-1 W (Woodbury's identity, the matrix determinant lemma)."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from ..frontend.triangular import linalg_cholesky, solve_triangular
from . import constraints
from .distribution import Distribution, LocationFamily
from .multivariate_normal import batch_mahalanobis, batch_mv
from .utils import lazy_property, standard_normal


def _plus_identity(matrix):
    return matrix + ops.eye(matrix.shape[-1], dtype=matrix.dtype, device=matrix.device)


def batch_capacitance_tril(W, D):
    """The lower Cholesky factor of I + W^T D^-1 W, for batches of matrices W and vectors D."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    return linalg_cholesky(_plus_identity(Wt_Dinv.matmul(W)))


def batch_lowrank_logdet(W, D, capacitance_tril):
    """log |W W^T + D| = log |C| + log |D| (the matrix determinant lemma), C the
    capacitance matrix."""
    return 2 * capacitance_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1) + D.log().sum(-1)


def batch_lowrank_mahalanobis(W, D, x, capacitance_tril):
    """x^T (W W^T + D)^-1 x, by Woodbury's identity
    (W W^T + D)^-1 = D^-1 - D^-1 W C^-1 W^T D^-1."""
    Wt_Dinv = W.mT / D.unsqueeze(-2)
    Wt_Dinv_x = batch_mv(Wt_Dinv, x)
    mahalanobis_term1 = (x.pow(2) / D).sum(-1)
    mahalanobis_term2 = batch_mahalanobis(capacitance_tril, Wt_Dinv_x)
    return mahalanobis_term1 - mahalanobis_term2


class LowRankMultivariateNormal(LocationFamily, Distribution):
    """The multivariate normal of mean loc and covariance cov_factor @ cov_factor.mT +
    diag(cov_diag): loc of shape batch_shape + event_shape, cov_factor batch_shape +
    event_shape + (rank,), cov_diag batch_shape + event_shape."""
    arg_constraints = {"loc": constraints.real_vector,
                       "cov_factor": constraints.independent(constraints.real, 2),
                       "cov_diag": constraints.independent(constraints.positive, 1)}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, loc, cov_factor, cov_diag, validate_args=None):
        if loc.dim() < 1:
            raise ValueError("loc must be at least one-dimensional.")
        event_shape = loc.shape[-1:]
        if cov_factor.dim() < 2:
            raise ValueError("cov_factor must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if cov_factor.shape[-2:-1] != event_shape:
            raise ValueError(f"cov_factor must be a batch of matrices with shape "
                             f"{event_shape[0]} x m")
        if cov_diag.shape[-1:] != event_shape:
            raise ValueError(f"cov_diag must be a batch of vectors with shape {event_shape}")
        try:
            loc_, self.cov_factor, cov_diag_ = ops.broadcast_tensors(
                loc.unsqueeze(-1), cov_factor, cov_diag.unsqueeze(-1))
        except RuntimeError as error:
            raise ValueError(f"Incompatible batch shapes: loc {loc.shape}, cov_factor "
                             f"{cov_factor.shape}, cov_diag {cov_diag.shape}") from error
        self.loc = loc_[..., 0]
        self.cov_diag = cov_diag_[..., 0]
        self._unbroadcasted_cov_factor = cov_factor
        self._unbroadcasted_cov_diag = cov_diag
        self._capacitance_tril = batch_capacitance_tril(cov_factor, cov_diag)
        super().__init__(self.loc.shape[:-1], event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LowRankMultivariateNormal, _instance)
        batch_shape = Size(batch_shape)
        loc_shape = batch_shape + self.event_shape
        new.loc = self.loc.expand(loc_shape)
        new.cov_diag = self.cov_diag.expand(loc_shape)
        new.cov_factor = self.cov_factor.expand(loc_shape + self.cov_factor.shape[-1:])
        new._unbroadcasted_cov_factor = self._unbroadcasted_cov_factor
        new._unbroadcasted_cov_diag = self._unbroadcasted_cov_diag
        new._capacitance_tril = self._capacitance_tril
        return self._expanded_init(new, batch_shape)

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape + self._event_shape

    @lazy_property
    def variance(self):
        variance = self._unbroadcasted_cov_factor.pow(2).sum(-1) + self._unbroadcasted_cov_diag
        return variance.expand(self._batch_shape + self._event_shape)

    @lazy_property
    def scale_tril(self):
        # D^1/2 times the Cholesky factor of I + D^-1/2 W W^T D^-1/2
        cov_diag_sqrt_unsqueeze = self._unbroadcasted_cov_diag.sqrt().unsqueeze(-1)
        Dinvsqrt_W = self._unbroadcasted_cov_factor / cov_diag_sqrt_unsqueeze
        K = _plus_identity(Dinvsqrt_W.matmul(Dinvsqrt_W.mT))
        return (cov_diag_sqrt_unsqueeze * linalg_cholesky(K)).expand(self._matrix_shape())

    @lazy_property
    def covariance_matrix(self):
        factor = self._unbroadcasted_cov_factor
        covariance = factor.matmul(factor.mT) + self._unbroadcasted_cov_diag.diag_embed()
        return covariance.expand(self._matrix_shape())

    @lazy_property
    def precision_matrix(self):
        Wt_Dinv = self._unbroadcasted_cov_factor.mT / self._unbroadcasted_cov_diag.unsqueeze(-2)
        A = solve_triangular(self._capacitance_tril, Wt_Dinv, upper=False)
        precision = self._unbroadcasted_cov_diag.reciprocal().diag_embed() - A.mT.matmul(A)
        return precision.expand(self._matrix_shape())

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        W_shape = shape[:-1] + self.cov_factor.shape[-1:]
        eps_W = standard_normal(W_shape, self.loc.dtype, self.loc.device)
        eps_D = standard_normal(shape, self.loc.dtype, self.loc.device)
        return (self.loc + batch_mv(self._unbroadcasted_cov_factor, eps_W)
                + self._unbroadcasted_cov_diag.sqrt() * eps_D)

    def _log_det(self):
        """log |covariance|."""
        return batch_lowrank_logdet(self._unbroadcasted_cov_factor,
                                    self._unbroadcasted_cov_diag, self._capacitance_tril)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        M = batch_lowrank_mahalanobis(self._unbroadcasted_cov_factor,
                                      self._unbroadcasted_cov_diag, value - self.loc,
                                      self._capacitance_tril)
        return -0.5 * (self._event_shape[0] * math.log(2 * math.pi) + self._log_det() + M)

    def entropy(self):
        H = 0.5 * (self._event_shape[0] * (1.0 + math.log(2 * math.pi)) + self._log_det())
        return H if len(self._batch_shape) == 0 else H.expand(self._batch_shape)
