"""Geometric(probs or logits): the number of failures before the first success."""
from __future__ import annotations

from .. import frontend as ops
from ..frontend.size import Size
from ..nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .bernoulli import BinaryProbabilities, expand_parameter, one_parameter
from .distribution import Distribution
from .utils import batch_shape_of, broadcast_all, where


class Geometric(BinaryProbabilities, Distribution):
    """P(k) = (1 - p)^k p for k = 0, 1, 2, ..., p = probs (or sigmoid(logits)) in (0, 1]."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        given = one_parameter(self, probs, logits)
        super().__init__(batch_shape_of(self._param, given), validate_args=validate_args)
        if self._validate_args and probs is not None:
            value = self.probs
            valid = value > 0
            if not valid.all().item():
                raise ValueError(f"Expected parameter probs ({type(value).__name__} of shape "
                                 f"{tuple(value.shape)}) of distribution {self!r} to be "
                                 f"positive but found invalid values:\n"
                                 f"{value.detach()[~valid]}")

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = Size(batch_shape)
        expand_parameter(self, new, batch_shape)
        return self._expanded_init(new, batch_shape)

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return ops.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        probs = self.probs.detach()
        tiny = ops.finfo(probs.dtype).tiny
        u = ops.empty(*shape, dtype=probs.dtype, device=probs.device).uniform_(tiny, 1)
        return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        probs = where((probs == 1) & (value == 0), 0.0, probs)     # 0 log 0 is 0 there
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        bce = binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")
        return bce / self.probs
