"""ASGD: SGD with a decaying step, keeping a running average of the parameters."""
from __future__ import annotations

import numpy as np

from ..frontend.inplace import assign
from .optimizer import Optimizer, check_nonnegative


class ASGD(Optimizer):
    r"""Implements averaged SGD as PyTorch does:

        g = grad + weight_decay * p
        p = p * (1 - lambd * eta) - eta * g
        ax = p                      while mu = 1 (the first t0 steps)
        ax = ax + (p - ax) * mu     after
        eta = lr / (1 + lambd * lr * t)^alpha,  mu = 1 / max(1, t - t0)
    State: step, eta, mu (0-d float32 tensors, as PyTorch keeps them), ax.
    """
    _host_scalars = ("eta", "mu")

    def __init__(self, params, lr=1e-2, lambd: float = 1e-4, alpha: float = 0.75,
                 t0: float = 1e6, weight_decay: float = 0, *, maximize: bool = False):
        check_nonnegative("learning rate", lr)
        check_nonnegative("weight_decay value", weight_decay)
        super().__init__(params, dict(lr=lr, lambd=lambd, alpha=alpha, t0=t0,
                                      weight_decay=weight_decay, maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        wd = group["weight_decay"]
        for p in params:
            state = self._state_of(p, "ax")
            if "eta" not in state:
                self._set_host_value(state, "eta", group["lr"])
                self._set_host_value(state, "mu", 1.0)
        # averaging starts (mu leaves 1) once, after t0 steps: a branch taken on the host
        averaging = {id(p): self._host_value(self.state[p], "mu") != 1 for p in params}

        def numbers(t, states):
            """This step's eta and mu (set by the last step), then the next step's."""
            eta, mu = self._host_value(states[0], "eta"), self._host_value(states[0], "mu")
            lr, lambd = group["lr"], group["lambd"]
            # (PyTorch makes them float32 tensors first, whatever the state's dtype)
            next_eta = float(np.float32(lr / (1 + lambd * lr * t) ** group["alpha"]))
            next_mu = float(np.float32(1 / max(1, t - group["t0"])))
            for state in states:
                self._set_host_value(state, "eta", next_eta)
                self._set_host_value(state, "mu", next_mu)
            return 1 - lambd * eta, eta, mu

        touched = []
        for ps, (shrink, eta, mu) in self._step_sets(group, params, numbers):
            for p in ps:
                state, node = self.state[p], p.node
                g = self._grad(p, group["maximize"])
                if wd != 0:
                    g = g + node * self._filled(wd, node)
                node = node * self._spread(shrink, p) - self._spread(eta, p) * g
                ax = state["ax"].node
                ax = ax + (node - ax) * self._spread(mu, p) if averaging[id(p)] else node
                touched += [assign(p, node), assign(state["ax"], ax)]
        return touched
