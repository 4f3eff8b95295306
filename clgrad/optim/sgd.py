"""Stochastic gradient descent with momentum, dampening, weight decay and Nesterov."""
from __future__ import annotations

from ..frontend.inplace import assign
from ..frontend.tensor import Tensor
from .optimizer import Optimizer, check_nonnegative, required


class SGD(Optimizer):
    r"""Implements stochastic gradient descent (optionally with momentum), as PyTorch does:

        g = grad + weight_decay * p
        b = g                                   (first step)
        b = momentum * b + (1 - dampening) * g  (later steps)
        g = g + momentum * b if nesterov else b
        p = p - lr * g
    """

    def __init__(self, params, lr=1e-3, momentum: float = 0, dampening: float = 0,
                 weight_decay: float = 0, nesterov: bool = False, *, maximize: bool = False):
        check_nonnegative("learning rate", lr)
        check_nonnegative("momentum value", momentum)
        check_nonnegative("weight_decay value", weight_decay)
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        super().__init__(params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                      weight_decay=weight_decay, nesterov=nesterov,
                                      maximize=maximize))

    def _update(self, group: dict, params: list) -> list:
        lr, momentum, dampening = group["lr"], group["momentum"], group["dampening"]
        wd, nesterov, maximize = group["weight_decay"], group["nesterov"], group["maximize"]
        if lr is required:
            raise ValueError("SGD: lr is required")
        (lr_t,) = self._scalars(params[0], id(group), lambda: ((group["lr"],), []))
        touched = []
        for p in params:
            node = p.node
            g = self._grad(p, maximize)
            if wd != 0:
                g = g + node * self._filled(wd, node)
            if momentum != 0:
                state = self.state[p]
                buf = state.get("momentum_buffer")
                if buf is None:
                    buf = state["momentum_buffer"] = Tensor(g.detach(), p.device)
                else:   # without dampening g as it is, not two more nodes per parameter
                    damped = g * self._filled(1 - dampening, g) if dampening else g
                    old = buf.node
                    assign(buf, old * self._filled(momentum, old) + damped)
                touched.append(buf)
                new = buf.node
                g = g + new * self._filled(momentum, new) if nesterov else new
            touched.append(assign(p, node - self._spread(lr_t, p) * g))
        return touched
