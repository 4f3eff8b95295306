"""cg.autograd: gradients on demand, custom Functions, and a gradient checker."""
from __future__ import annotations

import numpy as np

from .frontend.function import Function, FunctionCtx, function
from .frontend.backward import backward, grad
from .frontend.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from .frontend.operands import is_tensor

__all__ = ["grad", "backward", "Function", "FunctionCtx", "function", "gradcheck", "no_grad",
           "enable_grad", "is_grad_enabled", "set_grad_enabled", "Variable"]


def Variable(tensor, requires_grad: bool = False):  # noqa: N802  (PyTorch's legacy name)
    """A leaf that is tensor's value (a detached view, as PyTorch's: Variable and Tensor are
    one class since PyTorch 0.4); tensor itself is left as it was."""
    if not is_tensor(tensor):
        raise TypeError(f"Variable data has to be a tensor, but got {type(tensor).__name__}")
    return tensor.detach().requires_grad_(requires_grad)


def gradcheck(fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True) -> bool:
    """Compares the gradients autograd gives for fn(*inputs) with central finite differences.

    Every input that requires grad should be float64. For each output element the analytic
    row of the Jacobian comes from cg.autograd.grad; the numeric column for each input
    element from fn at x +- eps. Returns True, or raises (returns False with
    raise_exception=False) naming the worst mismatch."""
    from .frontend.creation import tensor
    inputs = (inputs,) if is_tensor(inputs) else tuple(inputs)
    wrt = [i for i, x in enumerate(inputs) if is_tensor(x) and x.requires_grad]
    if not wrt:
        raise ValueError("gradcheck: at least one input must be a Tensor that requires grad")
    for i in wrt:
        if inputs[i].dtype.name != "float64":
            raise ValueError(f"gradcheck: input {i} is {inputs[i].dtype.name}; finite differences "
                             "need float64 inputs (use .double())")
    values = {i: inputs[i].detach().numpy().astype(np.float64) for i in wrt}

    def outputs_at(replaced: dict) -> list[np.ndarray]:
        args = [tensor(replaced[i], dtype=inputs[i].dtype, device=inputs[i].device)
                if i in replaced else x for i, x in enumerate(inputs)]
        with no_grad():
            out = fn(*args)
        return [o.detach().numpy().astype(np.float64) for o in _as_tuple(out)]

    outs = _as_tuple(fn(*inputs))
    analytic = {(o, i): _analytic_jacobian(out, inputs[i]) for o, out in enumerate(outs)
                for i in wrt}
    worst = (0.0, None)
    for i in wrt:
        x = values[i].reshape(-1)
        for k in range(x.size):
            bumped = x.copy()
            bumped[k] += eps
            plus = outputs_at({i: bumped.reshape(values[i].shape)})
            bumped[k] -= 2 * eps
            minus = outputs_at({i: bumped.reshape(values[i].shape)})
            for o, (p, m) in enumerate(zip(plus, minus)):
                numeric = ((p - m) / (2 * eps)).reshape(-1)
                column = analytic[(o, i)][:, k]
                err = np.abs(numeric - column) - (atol + rtol * np.abs(numeric))
                j = int(np.argmax(err)) if err.size else 0
                if err.size and err[j] > worst[0]:
                    worst = (float(err[j]), (i, k, o, j, numeric[j], column[j]))
    if worst[1] is None:
        return True
    i, k, o, j, numeric, column = worst[1]
    message = (f"gradcheck: Jacobian mismatch for output {o} with respect to input {i}, "
               f"d out[{j}] / d in[{k}]: numerical {numeric:.8g}, analytical {column:.8g} "
               f"(atol={atol}, rtol={rtol})")
    if raise_exception:
        raise RuntimeError(message)
    return False


def _as_tuple(out) -> tuple:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _analytic_jacobian(out, x) -> np.ndarray:
    """d out / d x as a (out.numel(), x.numel()) matrix, one autograd.grad call per row."""
    from .frontend.creation import tensor
    jac = np.zeros((out.numel(), x.numel()))
    if not out.requires_grad:
        return jac
    for r in range(out.numel()):
        seed = np.zeros(out.numel())
        seed[r] = 1
        seed = tensor(seed.reshape(out.shape), dtype=out.dtype, device=out.device)
        (g,) = grad(out, x, seed, retain_graph=True, allow_unused=True)
        if g is not None:
            jac[r] = g.numpy().astype(np.float64).reshape(-1)
    return jac
