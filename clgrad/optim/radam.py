"""RAdam: Adam whose adaptive step is rectified while the variance estimate is unreliable."""
from __future__ import annotations

import math

from ..frontend.inplace import assign
from .adam import check_adam_arguments, moments, weight_decayed
from .optimizer import Optimizer


class RAdam(Optimizer):
    r"""Implements RAdam as PyTorch does:

        g = grad + weight_decay * p       (or p = p * (1 - lr * weight_decay), decoupled)
        m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
        rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
        p = p - lr * m / (1 - beta1^t) * r_t * sqrt(1 - beta2^t) / (sqrt(v) + eps)  (rho_t > 5)
        p = p - lr * m / (1 - beta1^t)                                              (otherwise)
    with the rectification r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf
                                      / ((rho_inf - 4)(rho_inf - 2) rho_t)).
    State: step, exp_avg, exp_avg_sq.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, decoupled_weight_decay: bool = False, *,
                 maximize: bool = False):
        check_adam_arguments(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay,
                                      decoupled_weight_decay=decoupled_weight_decay,
                                      maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        (beta1, beta2), eps, wd = group["betas"], group["eps"], group["weight_decay"]
        k = self._filled        # every operand has the parameter's dtype and shape
        for p in params:
            self._state_of(p, "exp_avg", "exp_avg_sq")

        def numbers(t, states):
            """Both branches are one expression, adaptive * rect / (sqrt(v) + eps) + plain,
            with one of the two factors zero: the kernel stays the same when rho_t passes 5."""
            lr = group["lr"]
            bc2 = 1 - beta2 ** t
            rho_inf = 2 / (1 - beta2) - 1
            rho_t = rho_inf - 2 * t * beta2 ** t / bc2
            if rho_t > 5.0:
                rect = math.sqrt((rho_t - 4) * (rho_t - 2) * rho_inf
                                 / ((rho_inf - 4) * (rho_inf - 2) * rho_t))
                adaptive, plain = rect * bc2 ** 0.5, 0.0
            else:
                adaptive, plain = 0.0, 1.0
            return lr / (1 - beta1 ** t), adaptive, plain, 1 - lr * wd

        touched = []
        for ps, (step_size, adaptive, plain, shrink) in self._step_sets(group, params, numbers):
            for p in ps:
                state = self.state[p]
                node, g = weight_decayed(self, p, group, group["decoupled_weight_decay"], shrink)
                m, v = moments(self, state, g, node, group["betas"])
                scale = self._spread(adaptive, p) / (v.sqrt() + k(eps, node)) \
                    + self._spread(plain, p)
                touched += [assign(state["exp_avg"], m), assign(state["exp_avg_sq"], v),
                            assign(p, node - self._spread(step_size, p) * m * scale)]
        return touched
