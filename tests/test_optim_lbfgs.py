"""The strong Wolfe line search of clgrad's LBFGS against PyTorch's, on functions PyTorch
evaluates."""
import itertools

import numpy as np
import pytest
import torch
from torch.optim.lbfgs import _strong_wolfe

from clgrad.optim.line_search import Trial, strong_wolfe


def quartic(x):
    return (x ** 4 - 3 * x ** 2 + x).sum()


# functions of x in PyTorch, and where a line search along -grad starts
LINES = {
    "quartic": (quartic, [0.3]),
    "quartic-from-the-left": (quartic, [-1.3]),
    "steep": (lambda x: (100 * (x - 3) ** 2).sum(), [0.0]),
    "rosenbrock": (lambda x: (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2, [-1.5, 2.0]),
    "wiggly": (lambda x: (x ** 2 + 3 * torch.sin(5 * x)).sum(), [2.0, -1.0]),
    "plateau": (lambda x: -(x * torch.exp(-x ** 2)).sum() + 0.01 * (x ** 2).sum(), [-0.5, 3.0]),
    "kinked": (lambda x: (torch.sqrt(1 + 100 * x ** 2) + 0.1 * x).sum(), [1.0]),
    "nan-beyond-0": (lambda x: ((x - 1) ** 2 - torch.sqrt(x)).sum(), [3.0]),
    "double-well": (lambda x: ((x ** 2 - 1) ** 2 + 0.3 * x).sum(), [2.5]),
    "ripples": (lambda x: (torch.sin(3 * x) + 0.3 * torch.sin(11 * x) + 0.05 * x ** 2).sum(),
                [0.2]),
    "exponentials": (lambda x: (torch.exp(x) + torch.exp(-3 * x) + torch.sin(7 * x)).sum(),
                     [0.7]),
}


def _loss_and_grad(f, x):
    x = x.detach().requires_grad_()
    loss = f(x)
    loss.backward()
    return loss.item(), x.grad


@pytest.mark.parametrize("name", LINES)
def test_the_line_search_is_pytorch_s(name):
    """The strong Wolfe search against PyTorch's on a function PyTorch evaluates, first tried
    short, about right and far too long, with a full, a short and no budget of further
    trials, and curvature conditions loose and strict: the same trials in the same order,
    and the same one chosen. (Mostly bit for bit: the host's NumPy scalars round as
    PyTorch's 0-d tensors; but PyTorch's float32 sqrt is not always correctly rounded.)"""
    f, start = LINES[name]
    for t, max_ls, c2, (c1, tolerance_change) in itertools.product(
            (1e-3, 0.01, 0.1, 1.0, 10.0, 100.0), (25, 3, 0), (0.9, 0.1, 0.01),
            ((1e-4, 1e-9), (0.3, 1e-4))):
        ours, theirs = _searches(f, torch.tensor(start), t, max_ls=max_ls, c1=c1, c2=c2,
                                 tolerance_change=tolerance_change)
        case = f"t={t} max_ls={max_ls} c1={c1} c2={c2} tolerance_change={tolerance_change}"
        assert len(ours) == len(theirs), case
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, err_msg=case)


def _searches(f, x, t, **kwargs):
    """Each search's trials along -grad f(x) from t, the step it chose and its loss last."""
    loss, g = _loss_and_grad(f, x)
    d = -g
    ours, theirs, known = [], [], {}

    def at(t) -> tuple:
        """f's loss and gradient at step t, found once for both searches."""
        key = repr(float(t))        # (NaN too)
        if key not in known:
            known[key] = _loss_and_grad(f, x + t * d)
        return known[key]

    def objective(x, t, d):
        theirs.append(float(t))
        return at(t)

    def evaluate(t):
        ours.append(float(t))
        loss, g = at(float(t))
        return Trial(t, loss, g, np.float32(g.dot(d).item()))

    their_loss, _, their_t, evals = _strong_wolfe(objective, x, t, d, loss, g, g.dot(d),
                                                  **kwargs)
    assert evals == len(theirs)
    start = Trial(0, loss, g, np.float32(g.dot(d).item()))
    found, evals = strong_wolfe(evaluate, start, t, np.float32(d.abs().max().item()), **kwargs)
    assert evals == len(ours)
    return ours + [float(found.t), found.f], theirs + [float(their_t), their_loss]
