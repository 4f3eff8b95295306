"""RMSprop with PyTorch's update rule (centered and momentum variants)."""
from __future__ import annotations

from ..frontend import creation
from ..frontend.inplace import assign
from .optimizer import Optimizer, check_nonnegative


class RMSprop(Optimizer):
    r"""Implements RMSprop as PyTorch does:

        g = grad + weight_decay * p
        s = alpha * s + (1 - alpha) * g * g
        avg = sqrt(s - a * a) + eps   with a = alpha * a + (1 - alpha) * g   (centered)
        avg = sqrt(s) + eps                                                  (otherwise)
        b = momentum * b + g / avg;  p = p - lr * b                          (momentum > 0)
        p = p - lr * g / avg                                                 (otherwise)
    State: step, square_avg, momentum_buffer (momentum > 0), grad_avg (centered).
    """

    def __init__(self, params, lr=1e-2, alpha: float = 0.99, eps: float = 1e-8,
                 weight_decay: float = 0, momentum: float = 0, centered: bool = False, *,
                 maximize: bool = False):
        check_nonnegative("learning rate", lr)
        check_nonnegative("epsilon value", eps)
        check_nonnegative("momentum value", momentum)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("alpha value", alpha)
        super().__init__(params, dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                                      momentum=momentum, centered=centered, maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        alpha, eps, wd = group["alpha"], group["eps"], group["weight_decay"]
        momentum, centered = group["momentum"], group["centered"]
        touched = []
        for p in params:
            state = self.state[p]
            if not state:
                state["square_avg"] = creation.zeros_like(p).realize()
                if momentum > 0:
                    state["momentum_buffer"] = creation.zeros_like(p).realize()
                if centered:
                    state["grad_avg"] = creation.zeros_like(p).realize()
        states = [self.state[p] for p in params]
        (lr_t,) = self._scalars(params[0], (id(group), *map(id, params)),
                                lambda: ((group["lr"],), self._count(states)))
        k = self._filled        # every operand has the parameter's dtype and shape
        for p in params:
            state = self.state[p]
            g = self._grad(p, group["maximize"])
            node = p.node
            if wd != 0:
                g = g + node * k(wd, node)
            s = state["square_avg"].node * k(alpha, node) + g * g * k(1 - alpha, node)
            touched.append(assign(state["square_avg"], s))
            if centered:
                a = state["grad_avg"].node * k(alpha, node) + g * k(1 - alpha, node)
                touched.append(assign(state["grad_avg"], a))
                avg = (s - a * a).sqrt() + k(eps, node)
            else:
                avg = s.sqrt() + k(eps, node)
            if momentum > 0:
                update = state["momentum_buffer"].node * k(momentum, node) + g / avg
                touched.append(assign(state["momentum_buffer"], update))
            else:
                update = g / avg
            touched.append(assign(p, node - self._spread(lr_t, p) * update))
        return touched
