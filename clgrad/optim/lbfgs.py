"""L-BFGS: quasi-Newton steps from a short history of gradient changes, as torch.optim.LBFGS.

The algorithm is driven from the host, which compares losses and directional derivatives at
every iteration, as PyTorch's does with .item(). The vector work (the flat gradient, the
two-loop recursion, the moves of the parameters) is tensor ops realized in one schedule per
stage, with the few numbers the host branches on read back at its end: one wait each.
Numbers that change at every iteration stay out of the kernels' sources, so that steady
iterations plan nothing new: ro, al and H_diag are 0-d tensors on the device, and the step
size t a Python number, which kernels read from a buffer (frontend/scalar_inputs.py).
The numbers read back are NumPy scalars of the gradient's dtype: NumPy 2 promotes Python
numbers as PyTorch does, so the host's arithmetic on them rounds as PyTorch's on its 0-d
tensors.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..frontend import creation
from ..frontend.grad_mode import enable_grad, no_grad
from ..frontend.inplace import assign
from ..frontend.joining import cat
from ..frontend.tensor import Tensor, realize
from .line_search import Trial, strong_wolfe
from .optimizer import Optimizer, check_nonnegative


class _Gradient(NamedTuple):
    """A flat gradient and its largest magnitude (read back with the loss it belongs to)."""
    flat: Tensor
    max_abs: np.floating


class LBFGS(Optimizer):
    r"""Implements L-BFGS as PyTorch does. Each step(closure) runs up to max_iter iterations
    of at most max_eval closure calls in all:

        d = -g                                   (first iteration)
        y = g - g_prev; s = t d_prev             (later: the history keeps the last
        if y.s > 1e-10: remember (y, s, 1 / y.s), H_diag = y.s / y.y     history_size pairs)
        d = -H g                                 (two-loop recursion over the history)
        t = lr (min(1, 1 / |g|_1) lr at the first iteration), or the strong Wolfe search's
        p = p + t d
    stopping when max|g| <= tolerance_grad, g.d > -tolerance_change, max|t d| or the loss's
    change fall below tolerance_change. A single parameter group; the state (func_evals,
    n_iter, d, t, old_dirs, old_stps, ro, H_diag, prev_flat_grad, prev_loss, al) is kept
    under the first parameter, t as a Python float (PyTorch's is a 0-d tensor after a line
    search).
    """

    def __init__(self, params, lr=1, max_iter: int = 20, max_eval: int | None = None,
                 tolerance_grad: float = 1e-7, tolerance_change: float = 1e-9,
                 history_size: int = 100, line_search_fn: str | None = None):
        if isinstance(lr, Tensor) and lr.numel() != 1:
            raise ValueError("Tensor lr must be 1-element")
        check_nonnegative("learning rate", lr)
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        super().__init__(params, dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                                      tolerance_grad=tolerance_grad,
                                      tolerance_change=tolerance_change,
                                      history_size=history_size, line_search_fn=line_search_fn))
        if len(self.param_groups) != 1:
            raise ValueError("LBFGS doesn't support per-parameter options (parameter groups)")

    @no_grad()
    def step(self, closure):
        """Up to max_iter iterations from the closure's loss and gradient. closure() must
        evaluate the model again (zero_grad, forward, backward) and return the loss; step
        returns its first value."""
        if len(self.param_groups) != 1:
            raise AssertionError(f"LBFGS: expected exactly one param_group, but got "
                                 f"{len(self.param_groups)}")
        group = self.param_groups[0]
        params = group["params"]
        state = self.state[params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)
        returned, loss, grad, _ = self._evaluate(closure, params)
        state["func_evals"] += 1
        if not grad.max_abs <= group["tolerance_grad"]:
            with np.errstate(all="ignore"):     # as PyTorch's 0-d tensors: inf and NaN quietly
                self._iterate(closure, group, state, loss, grad)
        realize(*params)
        return returned

    def _iterate(self, closure, group: dict, state: dict, loss: float, grad: _Gradient):
        """The iterations of one step, from the loss and gradient at the parameters."""
        params, lr = group["params"], float(group["lr"])
        max_iter, max_eval = group["max_iter"], group["max_eval"]
        tolerance_change = group["tolerance_change"]
        evals = 1
        for n_iter in range(1, max_iter + 1):
            state["n_iter"] += 1
            first = state["n_iter"] == 1
            d, made = self._direction(state, grad.flat, group["history_size"])
            state["d"], state["prev_flat_grad"], state["prev_loss"] = d, grad.flat, loss
            numbers = [grad.flat.dot(d), d.abs().max()]
            if first:
                numbers.append(grad.flat.abs().sum())
            gtd, d_norm, *g_sum = _read(numbers, [d, *made])
            t = min(1.0, 1.0 / g_sum[0]) * lr if first else lr
            state["t"] = float(t)
            if gtd > -tolerance_change:
                break
            if group["line_search_fn"] is not None:
                if group["line_search_fn"] != "strong_wolfe":
                    raise RuntimeError("only 'strong_wolfe' is supported")
                found, ls_evals = self._search_line(closure, params, Trial(0, loss, grad, gtd),
                                                    t, d, d_norm, max_ls=max_eval - evals)
                t, loss, grad = found.t, found.f, found.g
                state["t"] = float(t)
            else:
                self._move(params, params, t, d)
                ls_evals = 0
                # the last iteration's move is evaluated by the next step, not here
                if n_iter != max_iter:
                    _, loss, grad, _ = self._evaluate(closure, params)
                    ls_evals = 1
            evals += ls_evals
            state["func_evals"] += ls_evals
            if (n_iter == max_iter or evals >= max_eval
                    or grad.max_abs <= group["tolerance_grad"]
                    or d_norm * abs(t) <= tolerance_change
                    or abs(loss - state["prev_loss"]) < tolerance_change):
                break

    def _search_line(self, closure, params: list, start: Trial, t, d: Tensor, d_norm,
                     max_ls: int) -> tuple[Trial, int]:
        """The strong Wolfe search along d from the parameters' values (start), which it
        leaves moved by the step it finds. Returns the trial there and the evaluations."""
        x = [Tensor(p.node, p.device) for p in params]     # the values moved from

        def evaluate(step_size) -> Trial:
            self._move(params, x, step_size, d)
            _, f, g, slope = self._evaluate(closure, params, d)
            return Trial(step_size, f, g, slope)

        found, evals = strong_wolfe(evaluate, start, t, d_norm, max_ls=max_ls)
        self._move(params, x, found.t, d)
        return found, evals

    def _evaluate(self, closure, params: list, direction: Tensor | None = None) -> tuple:
        """Calls closure with grad enabled. Returns its loss as returned and as a float, the
        flat gradient, and its dot product with direction (None without one): computed in
        one schedule, with the parameters' .grad."""
        with enable_grad():
            loss = closure()
        flat = _flat_grad(params)
        numbers = [flat.abs().max()]
        if direction is not None:
            numbers.append(flat.dot(direction))
        grads = [p.grad for p in params if p.grad is not None]
        values = _read(numbers, [flat, *grads, *([loss] if isinstance(loss, Tensor) else [])])
        slope = values[1] if direction is not None else None
        return loss, float(loss), _Gradient(flat, values[0]), slope

    def _direction(self, state: dict, grad: Tensor, history_size: int) -> tuple[Tensor, list]:
        """This iteration's direction: -grad at the first; later -H grad, H the inverse
        Hessian the history approximates, after it takes the last move and the gradient's
        change since (when their product is large enough to keep H positive definite).
        Returns it with the tensors to compute along with it (new state, intermediates)."""
        if state["n_iter"] == 1:
            state.update(old_dirs=[], old_stps=[], ro=[], H_diag=1)
            return -grad, []
        y = grad - state["prev_flat_grad"]
        s = state["d"] * state["t"]
        ys = y.dot(s)
        (ys_value,) = _read([ys], [y, s])
        made = []
        if ys_value > 1e-10:
            full = len(state["old_dirs"]) == history_size   # (then the oldest pair goes)
            for name, value in (("old_dirs", y), ("old_stps", s), ("ro", 1.0 / ys)):
                state[name] = state[name][full:] + [value]
            state["H_diag"] = ys / y.dot(y)
            made += [state["ro"][-1], state["H_diag"]]
        d, al, intermediates = _two_loop(grad, state["old_dirs"], state["old_stps"],
                                         state["ro"], state["H_diag"])
        state["al"] = al + [None] * (history_size - len(al))
        return d, [*made, *al, *intermediates]

    @staticmethod
    def _move(params: list, start: list[Tensor], t, d: Tensor) -> None:
        """Each parameter becomes its start value plus t times its slice of d."""
        t, offset = float(t), 0
        for p, x in zip(params, start):
            n = p.numel()
            assign(p, x + d[offset:offset + n].reshape(p.shape) * t)
            offset += n


def _flat_grad(params: list) -> Tensor:
    """The parameters' gradients in one vector, zeros for a parameter without one."""
    return cat([p.grad.reshape(-1) if p.grad is not None
                else creation.zeros(p.numel(), dtype=p.dtype, device=p.device)
                for p in params])


def _two_loop(grad: Tensor, dirs: list, stps: list, ro: list, h_diag) -> tuple:
    """-H grad by the two-loop recursion over the history (y in dirs, s in stps, oldest
    first); the first loop's coefficients al; and the intermediate vectors, which the caller
    computes in buffers of their own: the next dot product and the next update both read
    each, and fused into both they would compute every update before them again."""
    q, al, intermediates = -grad, [None] * len(dirs), []
    for i in reversed(range(len(dirs))):
        al[i] = stps[i].dot(q) * ro[i]
        q = q - al[i] * dirs[i]
        intermediates.append(q)
    r = q * h_diag
    for i in range(len(dirs)):
        beta = dirs[i].dot(r) * ro[i]
        r = r + (al[i] - beta) * stps[i]
        intermediates.append(r)
    return r, al, intermediates


def _read(numbers: list[Tensor], alongside: list) -> list:
    """The 0-d tensors' values as NumPy scalars of their dtype, computed in one schedule with
    the tensors alongside (which later work reads: a buffer each)."""
    realize(*numbers, *alongside)
    return [n.dtype.np(n.item()) for n in numbers]
