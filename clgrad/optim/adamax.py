"""Adamax: Adam with the infinity norm of past gradients in place of their RMS."""
from __future__ import annotations

from ..frontend.inplace import assign
from .adam import check_adam_arguments
from .optimizer import Optimizer


class Adamax(Optimizer):
    r"""Implements Adamax as PyTorch does:

        g = grad + weight_decay * p
        m = beta1 * m + (1 - beta1) * g
        u = max(beta2 * u, |g| + eps)
        p = p - lr / (1 - beta1^t) * m / u
    State: step, exp_avg (m), exp_inf (u).
    """

    def __init__(self, params, lr=2e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, *, maximize: bool = False):
        check_adam_arguments(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        (beta1, beta2), eps, wd = group["betas"], group["eps"], group["weight_decay"]
        k = self._filled        # every operand has the parameter's dtype and shape
        for p in params:
            self._state_of(p, "exp_avg", "exp_inf")

        def numbers(t, states):
            return (group["lr"] / (1 - beta1 ** t),)

        touched = []
        for ps, (step_size,) in self._step_sets(group, params, numbers):
            for p in ps:
                state, node = self.state[p], p.node
                g = self._grad(p, group["maximize"])
                if wd != 0:
                    g = g + node * k(wd, node)
                m = state["exp_avg"].node * k(beta1, node) + g * k(1 - beta1, node)
                u = (state["exp_inf"].node * k(beta2, node)).maximum(g.abs() + k(eps, node))
                touched += [assign(state["exp_avg"], m), assign(state["exp_inf"], u),
                            assign(p, node - self._spread(step_size, p) * (m / u))]
        return touched
