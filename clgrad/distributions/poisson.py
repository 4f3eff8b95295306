"""Poisson(rate)."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .exp_family import ExponentialFamily
from .utils import batch_shape_of, broadcast_all


class Poisson(ExponentialFamily):
    """P(k) = rate^k e^-rate / k! for k = 0, 1, 2, ... Its entropy has no closed form: as in
    PyTorch, entropy() raises NotImplementedError."""
    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(batch_shape_of(self.rate, rate), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Poisson, batch_shape, _instance, ("rate",))

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return ops.poisson(self.rate.detach().expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()

    @property
    def _natural_params(self):
        return (self.rate.log(),)

    def _log_normalizer(self, x):
        return x.exp()
