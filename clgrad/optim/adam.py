"""Adam and AdamW (decoupled weight decay), with PyTorch's bias correction and amsgrad."""
from __future__ import annotations

import math

from ..frontend import creation
from ..frontend.inplace import assign
from .optimizer import Optimizer, check_betas, check_nonnegative


def check_adam_arguments(lr, betas, eps, weight_decay) -> None:
    """The checks of Adam's family (Adam, AdamW, Adamax, NAdam, RAdam)."""
    check_nonnegative("learning rate", lr)
    check_nonnegative("epsilon value", eps)
    check_betas(betas)
    check_nonnegative("weight_decay value", weight_decay)


class Adam(Optimizer):
    r"""Implements Adam as PyTorch does:

        g = grad + weight_decay * p                  (Adam; AdamW decays p by lr * wd instead)
        m = beta1 * m + (1 - beta1) * g
        v = beta2 * v + (1 - beta2) * g * g
        v_max = max(v_max, v)                        (amsgrad)
        p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
    State: step, exp_avg, exp_avg_sq (and max_exp_avg_sq with amsgrad).
    """
    _decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0, amsgrad: bool = False, *, maximize: bool = False):
        check_adam_arguments(lr, betas, eps, weight_decay)
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps,
                                      weight_decay=weight_decay, amsgrad=amsgrad,
                                      maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        beta1, beta2 = group["betas"]
        for p in params:
            state = self.state[p]
            if not state:
                state["exp_avg"] = creation.zeros_like(p).realize()
                state["exp_avg_sq"] = creation.zeros_like(p).realize()
                if group["amsgrad"]:
                    state["max_exp_avg_sq"] = creation.zeros_like(p).realize()

        def numbers(t, states):
            """This step's scalars, in float64 on the host as PyTorch computes them."""
            lr, wd = group["lr"], group["weight_decay"]
            return lr / (1 - beta1 ** t), math.sqrt(1 - beta2 ** t), 1 - lr * wd

        touched = []
        for ps, (step_size, bc2_sqrt, decay) in self._step_sets(group, params, numbers):
            for p in ps:
                touched += self._one(p, group, step_size, bc2_sqrt, decay)
        return touched

    def _one(self, p, group, step_size, bc2_sqrt, decay) -> list:
        state = self.state[p]
        param, g = weight_decayed(self, p, group, self._decoupled, decay)
        m, v = moments(self, state, g, param, group["betas"])
        k = self._filled        # every operand has param's dtype and shape
        touched = [assign(state["exp_avg"], m), assign(state["exp_avg_sq"], v)]
        if group["amsgrad"]:
            v = state["max_exp_avg_sq"].node.maximum(v)
            touched.append(assign(state["max_exp_avg_sq"], v))
        denom = v.sqrt() / self._spread(bc2_sqrt, p) + k(group["eps"], param)
        touched.append(assign(p, param - self._spread(step_size, p) * (m / denom)))
        return touched


def weight_decayed(opt: Optimizer, p, group: dict, decoupled: bool, shrink) -> tuple:
    """(p's value, its gradient) after weight decay, in the Adam family's two ways: decoupled,
    p times shrink (a scalar node: 1 - lr * weight_decay), or the gradient plus
    weight_decay * p."""
    node, g, wd = p.node, opt._grad(p, group["maximize"]), group["weight_decay"]
    if wd != 0 and decoupled:
        return node * opt._spread(shrink, p), g
    if wd != 0:
        return node, g + node * opt._filled(wd, node)
    return node, g


def moments(opt: Optimizer, state: dict, g, like, betas) -> tuple:
    """The new exp_avg and exp_avg_sq: beta1 m + (1 - beta1) g, beta2 v + (1 - beta2) g^2."""
    (beta1, beta2), k = betas, opt._filled
    m = state["exp_avg"].node * k(beta1, like) + g * k(1 - beta1, like)
    v = state["exp_avg_sq"].node * k(beta2, like) + g * g * k(1 - beta2, like)
    return m, v


class AdamW(Adam):
    """Adam with decoupled weight decay: p = p * (1 - lr * weight_decay) before the Adam step."""
    _decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 1e-2, amsgrad: bool = False, *, maximize: bool = False):
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, maximize=maximize)
