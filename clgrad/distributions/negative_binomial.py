"""NegativeBinomial(total_count, probs or logits)."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.grad_mode import no_grad
from ..frontend.size import Size
from ..nn.functional import logsigmoid
from . import constraints
from .bernoulli import BinaryProbabilities, counted_parameter, expand_counted
from .distribution import Distribution
from .gamma import Gamma
from .utils import lazy_property


class NegativeBinomial(BinaryProbabilities, Distribution):
    """The number of successes (each of probability probs) before total_count failures;
    sampled as Poisson(Gamma(total_count, exp(-logits))), as PyTorch's."""
    arg_constraints = {"total_count": constraints.greater_than_eq(0),
                       "probs": constraints.half_open_interval(0.0, 1.0),
                       "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, total_count, probs=None, logits=None, validate_args=None):
        counted_parameter(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_counted(self, NegativeBinomial, batch_shape, _instance)

    @property
    def mean(self):
        return self.total_count * self.logits.exp()

    @property
    def mode(self):
        return ((self.total_count - 1) * self.logits.exp()).floor().clamp(min=0.0)

    @property
    def variance(self):
        return self.mean / (-self.logits).sigmoid()

    @lazy_property
    def _gamma(self):
        return Gamma(concentration=self.total_count, rate=(-self.logits).exp(),
                     validate_args=False)

    def sample(self, sample_shape=Size()):
        with no_grad():
            rate = self._gamma.sample(sample_shape=sample_shape)
            return ops.poisson(rate)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_unnormalized_prob = (self.total_count * logsigmoid(-self.logits)
                                 + value * logsigmoid(self.logits))
        log_normalization = (-(self.total_count + value).lgamma() + (1.0 + value).lgamma()
                             + self.total_count.lgamma())
        log_normalization = log_normalization.masked_fill(self.total_count + value == 0.0, 0.0)
        return log_unnormalized_prob - log_normalization
