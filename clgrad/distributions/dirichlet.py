"""Dirichlet(concentration), over the last dimension."""
from __future__ import annotations

from ..frontend.function import Function
from .. import frontend as ops
from ..nn.functional import one_hot
from . import constraints
from .exp_family import ExponentialFamily
from .utils import where


class _Dirichlet(Function):
    """A Dirichlet sample whose backward is PyTorch's implicit reparameterization: each
    coordinate's gradient as that of a Beta(alpha_i, total - alpha_i) sample."""

    @staticmethod
    def forward(ctx, concentration):
        x = ops._sample_dirichlet(concentration)
        ctx.save_for_backward(x, concentration)
        return x

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        total = concentration.sum(-1, True).expand_as(concentration)
        grad = ops._dirichlet_grad(x, concentration, total)
        return grad * (grad_output - (x * grad_output).sum(-1, True))


class Dirichlet(ExponentialFamily):
    """The Dirichlet distribution on the simplex of concentration's last dimension."""
    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(Dirichlet, batch_shape, _instance, ("concentration",))

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        return _Dirichlet.apply(self.concentration.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((self.concentration - 1.0).xlogy(value).sum(-1)
                + self.concentration.sum(-1).lgamma() - self.concentration.lgamma().sum(-1))

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, True)

    @property
    def mode(self):
        """(alpha - 1)+ normalized; where every alpha < 1, the first vertex (PyTorch's argmax
        of the NaN row it forms there)."""
        concentration_m1 = (self.concentration - 1).clamp(min=0.0)
        mode = concentration_m1 / concentration_m1.sum(-1, True)
        below_one = (self.concentration < 1).all(dim=-1, keepdim=True)
        vertex = one_hot(mode.argmax(dim=-1), concentration_m1.shape[-1]).to(mode.dtype)
        return where(below_one, vertex, mode)

    @property
    def variance(self):
        total = self.concentration.sum(-1, True)
        return self.concentration * (total - self.concentration) / (total.pow(2) * (total + 1))

    def entropy(self):
        k = self.concentration.size(-1)
        a0 = self.concentration.sum(-1)
        return (self.concentration.lgamma().sum(-1) - a0.lgamma() - (k - a0) * a0.digamma()
                - ((self.concentration - 1.0) * self.concentration.digamma()).sum(-1))

    @property
    def _natural_params(self):
        return (self.concentration,)

    def _log_normalizer(self, x):
        return x.lgamma().sum(-1) - x.sum(-1).lgamma()
