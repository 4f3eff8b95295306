"""Rprop: steps of a size per element, grown while the gradient keeps its sign."""
from __future__ import annotations

from ..frontend import creation
from ..frontend.inplace import assign
from ..frontend.jit_protocol import each_call
from .optimizer import Optimizer, check_nonnegative


class Rprop(Optimizer):
    r"""Implements resilient backpropagation as PyTorch does:

        s = g * prev
        step_size = clamp(step_size * (etaplus where s > 0, etaminus where s < 0, else 1),
                          *step_sizes)
        g = 0 where s < 0
        p = p - sign(g) * step_size;  prev = g
    State: step, prev, step_size (lr at the first step).
    """

    def __init__(self, params, lr=1e-2, etas=(0.5, 1.2), step_sizes=(1e-6, 50), *,
                 maximize: bool = False):
        check_nonnegative("learning rate", lr)
        if not 0.0 < etas[0] < 1.0 < etas[1]:
            raise ValueError(f"Invalid eta values: {etas[0]}, {etas[1]}")
        super().__init__(params, dict(lr=lr, etas=tuple(etas), step_sizes=tuple(step_sizes),
                                      maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        (eta_minus, eta_plus), (smallest, largest) = group["etas"], group["step_sizes"]
        k = self._filled        # every operand has the parameter's dtype and shape
        for p in params:
            state = self._state_of(p, "prev")
            if "step_size" not in state:
                state["step_size"] = creation.full(p.shape, group["lr"], dtype=p.dtype,
                                                   device=p.device).realize()
        states = [self.state[p] for p in params]
        # no per-step number reaches the kernels: only the step counts advance
        each_call(("steps", id(self), id(group), *map(id, params)),
                  lambda: self._count(states))
        touched = []
        for p in params:
            state, node = self.state[p], p.node
            g = self._grad(p, group["maximize"])
            zero = k(0.0, node)
            agreement = g * state["prev"].node
            grew, flipped = agreement > zero, agreement < zero
            factor = grew.where(k(eta_plus, node), flipped.where(k(eta_minus, node),
                                                                 k(1.0, node)))
            step_size = (state["step_size"].node * factor).maximum(k(smallest, node)) \
                .minimum(k(largest, node))
            g = flipped.where(zero, g)
            sign = (g > zero).where(k(1.0, node), (g < zero).where(k(-1.0, node), zero))
            touched += [assign(state["step_size"], step_size), assign(state["prev"], g),
                        assign(p, node - sign * step_size)]
        return touched
