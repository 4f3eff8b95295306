"""Bernoulli(probs or logits)."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from ..nn.functional import binary_cross_entropy_with_logits
from . import constraints
from .exp_family import ExponentialFamily
from .utils import (batch_shape_of, broadcast_all, lazy_property, logits_to_probs,
                    probs_to_logits, where)


def one_parameter(dist, probs, logits) -> object:
    """Stores whichever of probs and logits is given (exactly one must be) as a tensor, and
    as dist._param; returns what was given."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        (dist.probs,) = broadcast_all(probs)
        dist._param = dist.probs
        return probs
    (dist.logits,) = broadcast_all(logits)
    dist._param = dist.logits
    return logits


def counted_parameter(dist, total_count, probs, logits) -> None:
    """A number of trials beside probs or logits (Binomial, NegativeBinomial): both stored,
    broadcast together, total_count in the parameter's dtype."""
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")
    if probs is not None:
        dist.total_count, dist.probs = broadcast_all(total_count, probs)
        dist._param = dist.probs
    else:
        dist.total_count, dist.logits = broadcast_all(total_count, logits)
        dist._param = dist.logits
    dist.total_count = dist.total_count.type_as(dist._param)


def expand_counted(dist, cls, batch_shape, _instance):
    """dist (a counted_parameter family of class cls) expanded to batch_shape."""
    new = dist._get_checked_instance(cls, _instance)
    batch_shape = Size(batch_shape)
    new.total_count = dist.total_count.expand(batch_shape)
    expand_parameter(dist, new, batch_shape)
    return dist._expanded_init(new, batch_shape)


def expand_parameter(dist, new, shape) -> None:
    """new's probs and/or logits: dist's (those it has computed) expanded to shape."""
    if "probs" in dist.__dict__:
        new.probs = dist.probs.expand(shape)
        new._param = new.probs
    if "logits" in dist.__dict__:
        new.logits = dist.logits.expand(shape)
        new._param = new.logits


def enumerate_values(dist, count: int, dtype, expand: bool):
    """0 .. count - 1 along dimension 0, over dist's batch shape (expanded or of ones), of
    dtype (int64 when None)."""
    values = ops.arange(count, dtype=dtype, device=dist._param.device)
    values = values.view((-1,) + (1,) * len(dist._batch_shape))
    return values.expand((-1,) + tuple(dist._batch_shape)) if expand else values


class BinaryProbabilities:
    """probs, or logits (log-odds), of a family given one of them: the other is computed when
    first read."""

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self) -> Size:
        return self._param.size()


class Bernoulli(BinaryProbabilities, ExponentialFamily):
    """1 with probability probs (or sigmoid(logits)), else 0."""
    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True
    _mean_carrier_measure = 0

    def __init__(self, probs=None, logits=None, validate_args=None):
        given = one_parameter(self, probs, logits)
        super().__init__(batch_shape_of(self._param, given), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = Size(batch_shape)
        expand_parameter(self, new, batch_shape)
        return self._expanded_init(new, batch_shape)

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return where(self.probs == 0.5, math.nan, mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=Size()):
        shape = self._extended_shape(sample_shape)
        return ops.bernoulli(self.probs.detach().expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        return -binary_cross_entropy_with_logits(logits, value, reduction="none")

    def entropy(self):
        return binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none")

    def enumerate_support(self, expand=True):
        return enumerate_values(self, 2, self._param.dtype, expand)

    @property
    def _natural_params(self):
        return (self.probs.logit(),)

    def _log_normalizer(self, x):
        return x.exp().log1p()
