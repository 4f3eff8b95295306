"""Wishart(df, covariance_matrix | precision_matrix | scale_tril): the distribution of
positive-definite matrices X = Σ x_i x_i^T for df draws x_i ~ Normal(0, Σ)."""
from __future__ import annotations

import math
import warnings

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .chi2 import Chi2
from .exp_family import ExponentialFamily
from .multivariate_normal import CholeskyParameterized
from .utils import is_number, lazy_property, where

_log_2 = math.log(2)


def _mvdigamma(x, p: int):
    """The multivariate digamma function: Σ_i<p digamma(x - i / 2)."""
    if not x.gt((p - 1) / 2).all().item():
        raise AssertionError("Wrong domain for multivariate digamma function.")
    halves = ops.arange(p, dtype=x.dtype, device=x.device).div(2)
    return (x.unsqueeze(-1) - halves.expand(tuple(x.shape) + (-1,))).digamma().sum(-1)


class Wishart(CholeskyParameterized, ExponentialFamily):
    """The Wishart distribution of df degrees of freedom (more than the dimension less one)
    and scale matrix Σ, given by exactly one of covariance_matrix, precision_matrix (its
    inverse) or scale_tril (its lower Cholesky factor). rsample is Bartlett's decomposition
    X = L A A^T L^T for L the scale_tril and A lower triangular: the roots of Chi2(df - i)
    draws on its diagonal (differentiable in df), standard normals below."""
    support = constraints.positive_definite
    has_rsample = True
    _mean_carrier_measure = 0

    @property
    def arg_constraints(self):
        return {"covariance_matrix": constraints.positive_definite,
                "precision_matrix": constraints.positive_definite,
                "scale_tril": constraints.lower_cholesky,
                "df": constraints.greater_than(self.event_shape[-1] - 1)}

    def __init__(self, df, covariance_matrix=None, precision_matrix=None, scale_tril=None,
                 validate_args=None):
        given = [m is not None for m in (covariance_matrix, scale_tril, precision_matrix)]
        if sum(given) != 1:
            raise AssertionError("Exactly one of covariance_matrix or precision_matrix or "
                                 "scale_tril may be specified.")
        name, param = next((n, m) for n, m in (("covariance_matrix", covariance_matrix),
                                                ("precision_matrix", precision_matrix),
                                                ("scale_tril", scale_tril)) if m is not None)
        if param.dim() < 2:
            raise ValueError("scale_tril must be at least two-dimensional, with optional "
                             "leading batch dimensions")
        if is_number(df):
            batch_shape = Size(param.shape[:-2])
            self.df = ops.tensor(df, dtype=param.dtype, device=param.device)
        else:
            batch_shape = ops.broadcast_shapes(param.shape[:-2], df.shape)
            self.df = df.expand(batch_shape)
        p = param.shape[-1]
        if self.df.le(p - 1).any().item():
            raise ValueError(f"Value of df={df} expected to be greater than ndim - 1 = {p - 1}.")
        setattr(self, name, param.expand(tuple(batch_shape) + (-1, -1)))
        if self.df.lt(p).any().item():
            warnings.warn("Low df values detected. Singular samples are highly likely to "
                          "occur for ndim - 1 < df < ndim.", stacklevel=2)
        super().__init__(batch_shape, param.shape[-2:], validate_args=validate_args)
        self._batch_dims = [-(x + 1) for x in range(len(self._batch_shape))]
        self._set_factor(covariance_matrix, precision_matrix, scale_tril)
        # Bartlett's diagonal: the i-th of Chi2(df - i)
        degrees = ops.arange(p, dtype=self._unbroadcasted_scale_tril.dtype,
                             device=self._unbroadcasted_scale_tril.device)
        self._dist_chi2 = Chi2(self.df.unsqueeze(-1) - degrees.expand(tuple(batch_shape)
                                                                      + (-1,)))

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Wishart, _instance)
        batch_shape = Size(batch_shape)
        cov_shape = batch_shape + self.event_shape
        new._unbroadcasted_scale_tril = self._unbroadcasted_scale_tril.expand(cov_shape)
        new.df = self.df.expand(batch_shape)
        new._batch_dims = [-(x + 1) for x in range(len(batch_shape))]
        self._expand_matrices(new, cov_shape)
        new._dist_chi2 = self._dist_chi2.expand(batch_shape + self.event_shape[-1:])
        return self._expanded_init(new, batch_shape)

    def _matrix_shape(self):
        return self._batch_shape + self._event_shape

    @lazy_property
    def precision_matrix(self):
        # (PyTorch's Wishart solves for it, its MultivariateNormal inverts: their gradients)
        factor = self._unbroadcasted_scale_tril
        identity = ops.eye(self._event_shape[-1], dtype=factor.dtype, device=factor.device)
        return ops.cholesky_solve(identity, factor).expand(self._matrix_shape())

    def _df_matrix(self, df):
        return df.reshape(tuple(self._batch_shape) + (1, 1))

    @property
    def mean(self):
        return self._df_matrix(self.df) * self.covariance_matrix

    @property
    def mode(self):
        factor = self.df - self.covariance_matrix.shape[-1] - 1
        factor = where(factor <= 0, math.nan, factor)
        return self._df_matrix(factor) * self.covariance_matrix

    @property
    def variance(self):
        V = self.covariance_matrix
        diag_V = V.diagonal(dim1=-2, dim2=-1)
        return self._df_matrix(self.df) * (V.pow(2) + diag_V.unsqueeze(-1) * diag_V.unsqueeze(-2))

    def _bartlett_sampling(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = ops.finfo(self.df.dtype).eps
        diagonal = self._dist_chi2.rsample(sample_shape).sqrt().clamp(min=eps).diag_embed()
        below = ops.randn(*shape, dtype=diagonal.dtype, device=diagonal.device).tril(-1)
        chol = self._unbroadcasted_scale_tril.matmul(diagonal + below)
        return chol.matmul(chol.mT)

    def _singular(self, sample):
        """Per sample index, whether any matrix of its batch is not positive definite."""
        singular = ~self.support.check(sample)
        return singular.amax(self._batch_dims) if self._batch_shape else singular

    def rsample(self, sample_shape=Size(), max_try_correction=None):
        """Bartlett's draws; a sample index whose batch holds a singular draw (possible
        where df is close to the dimension less one) is drawn again, up to
        max_try_correction (10) times, with a warning. PyTorch means to do the same, but
        its test is inverted: it warns "Singular sample detected." for regular draws."""
        max_try_correction = 10 if max_try_correction is None else max_try_correction
        sample_shape = Size(sample_shape)
        sample = self._bartlett_sampling(sample_shape)
        singular = self._singular(sample)
        if not singular.any().item():
            return sample
        warnings.warn("Singular sample detected.", stacklevel=2)
        for _ in range(max_try_correction):
            again = singular.reshape(tuple(singular.shape) + (1,) * (sample.dim()
                                                                     - singular.dim()))
            sample = where(again, self._bartlett_sampling(sample_shape), sample)
            singular = self._singular(sample)
            if not singular.any().item():
                break
        return sample

    def _log_det_scale(self):
        """log |Σ| / 2 plus p log 2 / 2."""
        p = self._event_shape[-1]
        half_log_det = self._unbroadcasted_scale_tril.diagonal(dim1=-2, dim2=-1).log().sum(-1)
        return p * _log_2 / 2 + half_log_det

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        nu = self.df
        p = self._event_shape[-1]
        trace = ops.cholesky_solve(value, self._unbroadcasted_scale_tril).diagonal(
            dim1=-2, dim2=-1).sum(dim=-1)
        return (-nu * self._log_det_scale() - (nu / 2).mvlgamma(p)
                + (nu - p - 1) / 2 * ops.slogdet(value).logabsdet - trace / 2)

    def entropy(self):
        nu = self.df
        p = self._event_shape[-1]
        return ((p + 1) * self._log_det_scale() + (nu / 2).mvlgamma(p)
                - (nu - p - 1) / 2 * _mvdigamma(nu / 2, p) + nu * p / 2)

    @property
    def _natural_params(self):
        nu = self.df
        p = self._event_shape[-1]
        return -self.precision_matrix / 2, (nu - p - 1) / 2

    def _log_normalizer(self, x, y):
        p = self._event_shape[-1]
        return ((y + (p + 1) / 2) * (-ops.slogdet(-2 * x).logabsdet + _log_2 * p)
                + (y + (p + 1) / 2).mvlgamma(p))
