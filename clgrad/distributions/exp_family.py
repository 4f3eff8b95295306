"""ExponentialFamily: distributions of density p(x; θ) = exp(<t(x), θ> - F(θ) + k(x)), whose
entropy and KL divergence follow from the log-normalizer F through autograd (Bregman
divergences), as in torch.distributions."""
from __future__ import annotations

from ..frontend.backward import grad
from .distribution import Distribution


class ExponentialFamily(Distribution):
    """A subclass gives _natural_params (θ), _log_normalizer(*θ) (F) and
    _mean_carrier_measure (E[k(x)])."""

    @property
    def _natural_params(self) -> tuple:
        raise NotImplementedError

    def _log_normalizer(self, *natural_params):
        raise NotImplementedError

    @property
    def _mean_carrier_measure(self) -> float:
        raise NotImplementedError

    def entropy(self):
        """F(θ) - <θ, ∇F(θ)> - E[k(x)], ∇F taken by autograd."""
        result = -self._mean_carrier_measure
        params = [p.detach().requires_grad_() for p in self._natural_params]
        log_normalizer = self._log_normalizer(*params)
        gradients = grad(log_normalizer.sum(), params, create_graph=True)
        result = result + log_normalizer
        for param, gradient in zip(params, gradients):
            result = result - (param * gradient).reshape(self._batch_shape + (-1,)).sum(-1)
        return result
