"""Cauchy(loc, scale) and HalfCauchy(scale)."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .distribution import Distribution, full_of
from .transformed_distribution import TransformedDistribution
from .transforms import AbsTransform
from .utils import batch_shape_of, broadcast_all, where


class Cauchy(Distribution):
    """The Cauchy (Lorentz) distribution of median loc and half width scale; its mean is NaN
    and its variance infinite, as PyTorch's."""
    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of(self.loc, loc, scale), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Cauchy, batch_shape, _instance, ("loc", "scale"))

    @property
    def mean(self):
        return full_of(self._extended_shape(), math.nan, self.loc)

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return full_of(self._extended_shape(), math.inf, self.loc)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        eps = ops.empty(*shape, dtype=self.loc.dtype, device=self.loc.device).cauchy_()
        return self.loc + eps * self.scale

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-math.log(math.pi) - self.scale.log()
                - (((value - self.loc) / self.scale) ** 2).log1p())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.loc) / self.scale).atan() / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()


class HalfCauchy(TransformedDistribution):
    """|X| for X ~ Cauchy(0, scale); its mean is infinite."""
    arg_constraints = {"scale": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, scale, validate_args=None):
        base_dist = Cauchy(0, scale, validate_args=False)
        super().__init__(base_dist, AbsTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(HalfCauchy, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def scale(self):
        return self.base_dist.scale

    @property
    def mean(self):
        return full_of(self._extended_shape(), math.inf, self.scale)

    @property
    def mode(self):
        return ops.zeros_like(self.scale)

    @property
    def variance(self):
        return self.base_dist.variance

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = ops.as_tensor(value, dtype=self.scale.dtype, device=self.scale.device)
        log_prob = self.base_dist.log_prob(value) + math.log(2)
        return where(value >= 0, log_prob, -math.inf)

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 2 * self.base_dist.cdf(value) - 1

    def icdf(self, prob):
        return self.base_dist.icdf((prob + 1) / 2)

    def entropy(self):
        return self.base_dist.entropy() - math.log(2)
