"""GeneralizedPareto(loc, scale, concentration)."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, is_number, where


class GeneralizedPareto(Distribution):
    """The generalized Pareto distribution on [loc, loc - scale / concentration] (a negative
    concentration) or [loc, inf): Exponential where concentration = 0, Pareto where it is
    positive and loc = scale / concentration, Uniform where it is -1. A concentration within
    isclose of 0 takes the Exponential's formulas. rsample is icdf of a uniform draw."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive,
                       "concentration": constraints.real}
    has_rsample = True

    def __init__(self, loc, scale, concentration, validate_args=None):
        self.loc, self.scale, self.concentration = broadcast_all(loc, scale, concentration)
        numbers = is_number(loc) and is_number(scale) and is_number(concentration)
        batch_shape = Size() if numbers else self.loc.size()
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(GeneralizedPareto, batch_shape, _instance,
                                       ("loc", "scale", "concentration"))

    def _safe_concentration(self):
        """(where concentration is close to 0, concentration with 1 there)."""
        concentration = self.concentration
        eq_zero = ops.isclose(concentration, ops.zeros_like(concentration))
        return eq_zero, where(eq_zero, ops.ones_like(concentration), concentration)

    def _z(self, x):
        return (x - self.loc) / self.scale

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        u = ops.rand(*shape, dtype=self.loc.dtype, device=self.loc.device)
        return self.icdf(u)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        y = 1 / safe_conc + ops.ones_like(z)
        where_nonzero = where(y == 0, y, y * (safe_conc * z).log1p())
        return -self.scale.log() - where(eq_zero, z, where_nonzero)

    def log_survival_function(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = self._z(value)
        eq_zero, safe_conc = self._safe_concentration()
        where_nonzero = -(safe_conc * z).log1p() / safe_conc
        return where(eq_zero, -z, where_nonzero)

    def log_cdf(self, value):
        return (-self.log_survival_function(value).exp()).log1p()

    def cdf(self, value):
        return self.log_cdf(value).exp()

    def icdf(self, value):
        eq_zero, safe_conc = self._safe_concentration()
        logu = (-value).log1p()
        where_nonzero = self.loc + self.scale / safe_conc * (-safe_conc * logu).expm1()
        where_zero = self.loc - self.scale * logu
        return where(eq_zero, where_zero, where_nonzero)

    @property
    def mean(self):
        valid = self.concentration < 1
        safe_conc = where(valid, self.concentration, 0.5)
        return where(valid, self.loc + self.scale / (1 - safe_conc), math.nan)

    @property
    def variance(self):
        valid = self.concentration < 0.5
        safe_conc = where(valid, self.concentration, 0.25)
        result = self.scale ** 2 / ((1 - safe_conc) ** 2 * (1 - 2 * safe_conc))
        return where(valid, result, math.nan)

    @property
    def mode(self):
        return self.loc

    def entropy(self):
        return ops.broadcast_to(self.scale.log() + self.concentration + 1, self._batch_shape)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        lower = self.loc
        upper = where(self.concentration < 0, lower - self.scale / self.concentration, math.inf)
        return constraints.interval(lower, upper)
