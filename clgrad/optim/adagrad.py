"""Adagrad: a step per element shrinking with the sum of its squared gradients."""
from __future__ import annotations

from ..frontend import creation
from ..frontend.inplace import assign
from .optimizer import Optimizer, check_nonnegative


class Adagrad(Optimizer):
    r"""Implements Adagrad as PyTorch does:

        g = grad + weight_decay * p
        sum = sum + g * g
        p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(sum) + eps)
    State: step, sum (initial_accumulator_value; made for every parameter at construction, as
    PyTorch does).
    """

    def __init__(self, params, lr=1e-2, lr_decay: float = 0, weight_decay: float = 0,
                 initial_accumulator_value: float = 0, eps: float = 1e-10, *,
                 maximize: bool = False):
        check_nonnegative("learning rate", lr)
        check_nonnegative("lr_decay value", lr_decay)
        check_nonnegative("weight_decay value", weight_decay)
        check_nonnegative("initial_accumulator_value value", initial_accumulator_value)
        check_nonnegative("epsilon value", eps)
        super().__init__(params, dict(lr=lr, lr_decay=lr_decay, eps=eps,
                                      weight_decay=weight_decay,
                                      initial_accumulator_value=initial_accumulator_value,
                                      maximize=maximize))
        for group in self.param_groups:
            for p in group["params"]:
                state = self.state[p]
                self._set_host_value(state, "step", 0)
                state["sum"] = creation.full(p.shape, initial_accumulator_value, dtype=p.dtype,
                                             device=p.device).realize()

    def _update(self, group: dict, params: list) -> list:
        wd, eps = group["weight_decay"], group["eps"]

        def numbers(t, states):
            return (group["lr"] / (1 + (t - 1) * group["lr_decay"]),)

        touched = []
        k = self._filled        # every operand has the parameter's dtype and shape
        for ps, (clr,) in self._step_sets(group, params, numbers):
            for p in ps:
                state, node = self.state[p], p.node
                g = self._grad(p, group["maximize"])
                if wd != 0:
                    g = g + node * k(wd, node)
                total = state["sum"].node + g * g
                touched.append(assign(state["sum"], total))
                touched.append(assign(p, node - self._spread(clr, p) * (g / (total.sqrt()
                                                                          + k(eps, node)))))
        return touched
