"""Gamma(concentration, rate)."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import batch_shape_of, broadcast_all


class Gamma(ExponentialFamily):
    """The Gamma distribution of shape concentration and rate rate (mean concentration /
    rate). rsample's gradient is PyTorch's implicit reparameterization (torch._standard_gamma's
    backward)."""
    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True
    _mean_carrier_measure = 0

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        super().__init__(batch_shape_of(self.concentration, concentration, rate),
                         validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Gamma, batch_shape, _instance, ("concentration", "rate"))

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        value = ops._standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)
        # at least the smallest normal number, the gradient left as it was (PyTorch clamps
        # the value in place, through a detached alias)
        tiny = ops.finfo(value.dtype).tiny
        return value + (value.clamp(min=tiny) - value).detach()

    def log_prob(self, value):
        value = ops.as_tensor(value, dtype=self.rate.dtype, device=self.rate.device)
        if self._validate_args:
            self._validate_sample(value)
        return (self.concentration.xlogy(self.rate) + (self.concentration - 1).xlogy(value)
                - self.rate * value - self.concentration.lgamma())

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.concentration.igamma(self.rate * value)

    def entropy(self):
        return (self.concentration - self.rate.log() + self.concentration.lgamma()
                + (1.0 - self.concentration) * self.concentration.digamma())

    @property
    def _natural_params(self):
        return (self.concentration - 1, -self.rate)

    def _log_normalizer(self, x, y):
        return (x + 1).lgamma() + (x + 1) * (-y.reciprocal()).log()
