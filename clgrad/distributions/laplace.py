"""Laplace(loc, scale)."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .distribution import Distribution, LocationScale


class Laplace(LocationScale, Distribution):
    """The Laplace (double exponential) distribution of location loc and scale scale."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Laplace, batch_shape, _instance, ("loc", "scale"))

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2 ** 0.5 * self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = ops.finfo(self.loc.dtype).eps
        u = ops.empty(*shape, dtype=self.loc.dtype, device=self.loc.device).uniform_(eps - 1, 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        difference = value - self.loc
        return 0.5 - 0.5 * difference.sign() * (-difference.abs() / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()
