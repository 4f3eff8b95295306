"""Adadelta: steps scaled by the ratio of running RMS of updates to running RMS of gradients."""
from __future__ import annotations

from ..frontend.inplace import assign
from .optimizer import Optimizer, check_nonnegative


class Adadelta(Optimizer):
    r"""Implements Adadelta as PyTorch does:

        g = grad + weight_decay * p
        v = rho * v + (1 - rho) * g * g
        delta = sqrt(u + eps) / sqrt(v + eps) * g
        u = rho * u + (1 - rho) * delta * delta
        p = p - lr * delta
    State: step, square_avg (v), acc_delta (u).
    """

    def __init__(self, params, lr=1.0, rho: float = 0.9, eps: float = 1e-6,
                 weight_decay: float = 0, *, maximize: bool = False):
        check_nonnegative("learning rate", lr)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"Invalid rho value: {rho}")
        check_nonnegative("epsilon value", eps)
        check_nonnegative("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay,
                                      maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        rho, eps, wd = group["rho"], group["eps"], group["weight_decay"]
        k = self._filled        # every operand has the parameter's dtype and shape
        touched = []
        for p in params:
            self._state_of(p, "square_avg", "acc_delta")
        for ps, (lr,) in self._step_sets(group, params, lambda t, states: (group["lr"],)):
            for p in ps:
                state, node = self.state[p], p.node
                g = self._grad(p, group["maximize"])
                if wd != 0:
                    g = g + node * k(wd, node)
                v = state["square_avg"].node * k(rho, node) + g * g * k(1 - rho, node)
                delta = (state["acc_delta"].node + k(eps, node)).sqrt() / (
                    v + k(eps, node)).sqrt() * g
                u = state["acc_delta"].node * k(rho, node) + delta * delta * k(1 - rho, node)
                touched += [assign(state["square_avg"], v), assign(state["acc_delta"], u),
                            assign(p, node - self._spread(lr, p) * delta)]
        return touched
