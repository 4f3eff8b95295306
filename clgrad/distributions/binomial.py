"""Binomial(total_count, probs or logits)."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .bernoulli import (BinaryProbabilities, counted_parameter, enumerate_values,
                        expand_counted)
from .distribution import Distribution


def _clamp_by_zero(x):
    """max(x, 0) whose gradient at 0 is 1/2, as PyTorch's."""
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(BinaryProbabilities, Distribution):
    """The number of successes in total_count independent trials of probability probs (or
    sigmoid(logits))."""
    arg_constraints = {"total_count": constraints.nonnegative_integer,
                       "probs": constraints.unit_interval, "logits": constraints.real}
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        counted_parameter(self, total_count, probs, logits)
        super().__init__(self._param.size(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return expand_counted(self, Binomial, batch_shape, _instance)

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().minimum(self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return ops.binomial(self.total_count.detach().expand(shape),
                            self.probs.detach().expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_factorial_n = (self.total_count + 1).lgamma()
        log_factorial_k = (value + 1).lgamma()
        log_factorial_nmk = (self.total_count - value + 1).lgamma()
        # log(1 + e^logits) written to stay finite for large |logits|
        normalize_term = (self.total_count * _clamp_by_zero(self.logits)
                          + self.total_count * (-self.logits.abs()).exp().log1p()
                          - log_factorial_n)
        return value * self.logits - log_factorial_k - log_factorial_nmk - normalize_term

    def _homogeneous_count(self, what: str) -> int:
        total_count = int(self.total_count.max().item())
        if not self.total_count.min().item() == total_count:
            raise NotImplementedError(f"Inhomogeneous total count not supported by `{what}`.")
        return total_count

    def entropy(self):
        self._homogeneous_count("entropy")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total_count = self._homogeneous_count("enumerate_support")
        return enumerate_values(self, 1 + total_count, self._param.dtype, expand)
