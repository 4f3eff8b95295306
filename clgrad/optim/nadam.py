"""NAdam: Adam with Nesterov momentum, its momentum warming up by momentum_decay."""
from __future__ import annotations

from ..frontend.inplace import assign
from .adam import check_adam_arguments, moments, weight_decayed
from .optimizer import Optimizer, check_nonnegative


class NAdam(Optimizer):
    r"""Implements NAdam as PyTorch does:

        g = grad + weight_decay * p       (or p = p * (1 - lr * weight_decay), decoupled)
        mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)),  prod_t = mu_1 ... mu_t
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        denom = sqrt(v / (1 - beta2^t)) + eps
        p = p - lr * (1 - mu_t) / (1 - prod_t) * g / denom
              - lr * mu_{t+1} / (1 - prod_t * mu_{t+1}) * m / denom
    State: step, mu_product (prod_t, a 0-d float32 tensor as PyTorch keeps it), exp_avg,
    exp_avg_sq.
    """
    _host_scalars = ("mu_product",)

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, momentum_decay: float = 4e-3,
                 decoupled_weight_decay: bool = False, *, maximize: bool = False):
        check_adam_arguments(lr, betas, eps, weight_decay)
        check_nonnegative("momentum_decay value", momentum_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, momentum_decay=momentum_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        (beta1, beta2), eps, wd = group["betas"], group["eps"], group["weight_decay"]
        k = self._filled        # every operand has the parameter's dtype and shape
        for p in params:
            state = self._state_of(p, "exp_avg", "exp_avg_sq")
            if "mu_product" not in state:
                self._set_host_value(state, "mu_product", 1.0)

        def numbers(t, states):
            lr, decay = group["lr"], group["momentum_decay"]
            mu = beta1 * (1.0 - 0.5 * 0.96 ** (t * decay))
            mu_next = beta1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * decay))
            product = self._host_value(states[0], "mu_product") * mu
            for state in states:
                stored = self._set_host_value(state, "mu_product", product)
            return (1 - beta2 ** t, lr * (1.0 - mu) / (1.0 - stored),
                    lr * mu_next / (1.0 - stored * mu_next), 1 - lr * wd)

        touched = []
        for ps, (bc2, grad_step, momentum_step, shrink) in self._step_sets(group, params,
                                                                           numbers):
            for p in ps:
                state = self.state[p]
                node, g = weight_decayed(self, p, group, group["decoupled_weight_decay"], shrink)
                m, v = moments(self, state, g, node, group["betas"])
                denom = (v / self._spread(bc2, p)).sqrt() + k(eps, node)
                node = node - self._spread(grad_step, p) * (g / denom)
                node = node - self._spread(momentum_step, p) * (m / denom)
                touched += [assign(state["exp_avg"], m), assign(state["exp_avg_sq"], v),
                            assign(p, node)]
        return touched
