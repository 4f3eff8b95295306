"""LBFGS step for step against torch.optim.LBFGS on the same problems from the same values: a
least-squares fit, a small tanh MLP and Rosenbrock's function, with and without the strong
Wolfe line search, a history short enough to wrap; the parameters and counters after each
step, the stopping rules, state dicts, edge parameters, errors, and plans made per iteration."""
import itertools

import numpy as np
import pytest
import torch
from torch.optim.lbfgs import _strong_wolfe

import clgrad as cg
from clgrad.engine import plan
from clgrad.optim.line_search import Trial, strong_wolfe

RNG = np.random.default_rng(3)
A = (RNG.standard_normal((10, 6)) * np.logspace(0, 0.5, 6)).astype(np.float32)
B = RNG.standard_normal(10).astype(np.float32)
W0 = RNG.standard_normal(6).astype(np.float32)
X = RNG.standard_normal((12, 3)).astype(np.float32)
Y = RNG.standard_normal((12, 1)).astype(np.float32)
MLP0 = [RNG.standard_normal(shape).astype(np.float32) for shape in ((3, 6), (6,), (6, 1))]


def least_squares(lib, dtype):
    """|A w + bias - b|^2, the bias a (1, 1) parameter."""
    a, b = lib.tensor(A, dtype=dtype), lib.tensor(B, dtype=dtype)
    params = [_param(lib, W0, dtype), _param(lib, [[0.5]], dtype)]
    return params, lambda w, bias: ((a @ w + bias.reshape(-1) - b) ** 2).sum()


def mlp(lib, dtype):
    """The mean squared error of a 3-6-1 tanh network: nonconvex."""
    x, y = lib.tensor(X, dtype=dtype), lib.tensor(Y, dtype=dtype)
    params = [_param(lib, value, dtype) for value in MLP0]
    return params, lambda w1, b1, w2: (((x @ w1 + b1).tanh() @ w2 - y) ** 2).mean()


def rosenbrock(lib, dtype):
    return [_param(lib, [-1.5, 2.0], dtype)], \
        lambda xy: (1 - xy[0]) ** 2 + 100 * (xy[1] - xy[0] ** 2) ** 2


def _param(lib, value, dtype):
    return lib.nn.Parameter(lib.tensor(np.asarray(value, np.float32), dtype=dtype))


def _optimizer(lib, problem, dtype="float32", params=None, **kwargs):
    """An LBFGS over problem's parameters (or params, of the same shapes), and its closure."""
    made, loss_of = problem(lib, getattr(lib, dtype))
    params = made if params is None else params
    opt = lib.optim.LBFGS(params, **kwargs)

    def closure():
        opt.zero_grad()
        loss = loss_of(*params)
        loss.backward()
        return loss

    return opt, params, closure


def _steps(opt, params, closure, steps):
    """After each step: the loss returned, the parameters' values, the state's func_evals
    and n_iter."""
    trajectory = []
    for _ in range(steps):
        loss = opt.step(closure)
        counters = opt.state[params[0]]
        trajectory.append((loss.item(), [p.detach().numpy().copy() for p in params],
                           counters["func_evals"], counters["n_iter"]))
    return trajectory


def _run(lib, problem, steps, dtype="float32", **kwargs):
    return _steps(*_optimizer(lib, problem, dtype, **kwargs), steps)


def _assert_same_trajectory(ours, theirs, rtol, atol):
    for step, (mine, reference) in enumerate(zip(ours, theirs, strict=True)):
        assert mine[2:] == reference[2:], f"step {step}: func_evals, n_iter"
        np.testing.assert_allclose(mine[0], reference[0], rtol=rtol, err_msg=f"step {step} loss")
        for p, tp in zip(mine[1], reference[1], strict=True):
            np.testing.assert_allclose(p, tp, rtol=rtol, atol=atol, err_msg=f"step {step}")


CASES = [
    (least_squares, dict(history_size=2, max_iter=4)),
    (least_squares, dict(history_size=3, max_iter=5, lr=0.5, line_search_fn="strong_wolfe")),
    (mlp, dict(history_size=2, max_iter=4)),
    (mlp, dict(history_size=3, max_iter=5, lr=0.5, line_search_fn="strong_wolfe")),
    (rosenbrock, dict(history_size=3, max_iter=5, lr=0.1)),
    (rosenbrock, dict(history_size=2, max_iter=4, line_search_fn="strong_wolfe")),
]


@pytest.mark.parametrize("problem,kwargs", CASES,
                         ids=[f"{p.__name__}-{k.get('line_search_fn')}" for p, k in CASES])
def test_steps_are_pytorch_s(problem, kwargs):
    """Four steps of several iterations each: the history wraps in the first or second."""
    ours = _run(cg, problem, 4, **kwargs)
    theirs = _run(torch, problem, 4, **kwargs)
    _assert_same_trajectory(ours, theirs, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_float64_steps_are_pytorch_s_to_its_precision(line_search_fn):
    kwargs = dict(history_size=2, max_iter=4, line_search_fn=line_search_fn)
    ours = _run(cg, mlp, 3, "float64", **kwargs)
    theirs = _run(torch, mlp, 3, "float64", **kwargs)
    _assert_same_trajectory(ours, theirs, rtol=1e-10, atol=1e-12)


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


# (problem, kwargs, (func_evals, n_iter) after each of three steps): each stops by the rule
# named
STOPS = [
    (mlp, dict(max_iter=10, max_eval=3), [(3, 2), (6, 4), (9, 6)]),      # max_eval
    (mlp, dict(max_iter=10, max_eval=4, line_search_fn="strong_wolfe"), [(4, 3), (8, 6), (12, 9)]),
    # max_eval defaults to max_iter * 5 // 4 = 1: the line search has its first trial only
    (mlp, dict(max_iter=1, line_search_fn="strong_wolfe"), [(2, 1), (4, 2), (6, 3)]),
    # ... and when that trial's loss is higher, it takes no step at all (t = 0)
    (rosenbrock, dict(lr=10, max_iter=1, line_search_fn="strong_wolfe"),
     [(2, 1), (4, 2), (6, 3)]),
    # max|g| <= tolerance_grad after 11 iterations; the next steps find it so at once
    (mlp, dict(tolerance_grad=0.05, history_size=3), [(12, 11), (13, 11), (14, 11)]),
    (mlp, dict(tolerance_change=1e-2, history_size=3), [(11, 10), (13, 12), (14, 13)]),
    # max|t d| <= tolerance_change while the loss still falls by more
    (least_squares, dict(lr=1e-4, tolerance_change=1e-3), [(2, 1), (4, 2), (6, 3)]),
]


@pytest.mark.parametrize("problem,kwargs,counters", STOPS)
def test_stopping_rules_are_pytorch_s(problem, kwargs, counters):
    ours = _run(cg, problem, 3, **kwargs)
    theirs = _run(torch, problem, 3, **kwargs)
    assert [step[2:] for step in theirs] == counters
    _assert_same_trajectory(ours, theirs, rtol=1e-4, atol=1e-5)


def test_a_gradient_below_tolerance_returns_before_any_iteration():
    """Each step evaluates the closure once and moves nothing."""
    opt, params, closure = _optimizer(cg, least_squares, tolerance_grad=1e4)
    ours = _steps(opt, params, closure, 2)
    _assert_same_trajectory(ours, _run(torch, least_squares, 2, tolerance_grad=1e4),
                            rtol=1e-6, atol=0)
    np.testing.assert_array_equal(ours[-1][1][0], W0)
    assert opt.state[params[0]] == {"func_evals": 2, "n_iter": 0}


def edge_parameters(lib, dtype):
    """The MLP with a parameter the loss does not use (its grad stays None) and an empty
    one."""
    params, loss_of = mlp(lib, dtype)
    idle, empty = _param(lib, [1.0, 2.0], dtype), _param(lib, np.zeros(0), dtype)
    return [*params, idle, empty], lambda w1, b1, w2, idle, empty: loss_of(w1, b1, w2) \
        + empty.sum()


def nan_parameter(lib, dtype):
    params, loss_of = least_squares(lib, dtype)
    with lib.no_grad():
        params[0][2] = float("nan")
    return params, loss_of


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
@pytest.mark.parametrize("problem", [edge_parameters, nan_parameter])
def test_edge_parameters_step_as_pytorch_s(problem, line_search_fn):
    """A parameter without a gradient stays as it is; a NaN spreads as in PyTorch."""
    kwargs = dict(history_size=2, max_iter=4, line_search_fn=line_search_fn)
    opt, params, closure = _optimizer(cg, problem, **kwargs)
    ours = _steps(opt, params, closure, 2)
    _assert_same_trajectory(ours, _run(torch, problem, 2, **kwargs), rtol=1e-4, atol=1e-5)
    if problem is edge_parameters:
        assert params[3].grad is None
        np.testing.assert_array_equal(params[3].detach().numpy(), [1.0, 2.0])


def _numpy_state(value):
    """A PyTorch state entry in NumPy: tensors as arrays, lists entry by entry."""
    if isinstance(value, list):
        return [_numpy_state(v) for v in value]
    return value.detach().numpy() if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_a_state_dict_round_trip_continues_identically(line_search_fn):
    """Two steps, the state dict loaded into a new optimizer over copies of the parameters:
    both take the same next steps. The layout is PyTorch's."""
    kwargs = dict(history_size=2, max_iter=3, line_search_fn=line_search_fn)
    opt, params, closure = _optimizer(cg, mlp, **kwargs)
    _steps(opt, params, closure, 2)
    saved = opt.state_dict()
    topt, tparams, tclosure = _optimizer(torch, mlp, **kwargs)
    _steps(topt, tparams, tclosure, 2)
    theirs = topt.state_dict()["state"][0]
    assert sorted(saved["state"][0]) == sorted(theirs)
    for name in ("old_dirs", "old_stps", "ro", "al"):
        assert len(saved["state"][0][name]) == len(theirs[name]), name
    copies = [cg.nn.Parameter(p.detach().clone()) for p in params]
    resumed, copies, resumed_closure = _optimizer(cg, mlp, params=copies, **kwargs)
    resumed.load_state_dict(saved)
    after = _steps(resumed, copies, resumed_closure, 2)
    _assert_same_trajectory(after, _steps(opt, params, closure, 2), rtol=0, atol=0)


def test_pytorch_s_state_dict_loads_and_continues_as_pytorch():
    """PyTorch's state after two steps (as NumPy arrays, lists entry by entry) loaded into
    clgrad's optimizer over its parameters' values: the next steps are PyTorch's."""
    kwargs = dict(history_size=2, max_iter=3, line_search_fn="strong_wolfe")
    topt, tparams, tclosure = _optimizer(torch, mlp, **kwargs)
    _steps(topt, tparams, tclosure, 2)
    saved = topt.state_dict()
    params = [cg.nn.Parameter(cg.tensor(p.detach().numpy())) for p in tparams]
    opt, params, closure = _optimizer(cg, mlp, params=params, **kwargs)
    opt.load_state_dict({"param_groups": saved["param_groups"], "state": {
        key: {name: _numpy_state(value) for name, value in state.items()}
        for key, state in saved["state"].items()}})
    _assert_same_trajectory(_steps(opt, params, closure, 2), _steps(topt, tparams, tclosure, 2),
                            rtol=1e-4, atol=1e-5)


def _error(make):
    """The exception make() raises (its type and message)."""
    with pytest.raises(Exception) as info:
        make()
    return type(info.value), str(info.value)


def _two_groups(lib):
    params, _ = mlp(lib, lib.float32)
    return lib.optim.LBFGS([{"params": params[:1]}, {"params": params[1:]}])


def _lbfgs(lib, **kwargs):
    params, _ = mlp(lib, lib.float32)
    return lib.optim.LBFGS(params, **kwargs)


@pytest.mark.parametrize("make", [
    _two_groups,
    lambda lib: _lbfgs(lib, lr=-1.0),
    lambda lib: _lbfgs(lib, lr=lib.tensor([0.1, 0.2])),
], ids=["two-groups", "negative-lr", "lr-of-two-elements"])
def test_bad_arguments_raise_as_in_pytorch(make):
    assert _error(lambda: make(cg)) == _error(lambda: make(torch))


def test_bad_steps_raise_as_in_pytorch():
    """No closure: TypeError; an unknown line search: RuntimeError when one would run; a
    second group added after construction: AssertionError."""
    def without_closure(lib):
        _lbfgs(lib).step()

    def unknown_search(lib):
        opt, _, closure = _optimizer(lib, mlp, line_search_fn="armijo")
        opt.step(closure)

    def added_group(lib):
        opt, _, closure = _optimizer(lib, mlp)
        opt.add_param_group({"params": [lib.nn.Parameter(lib.zeros(2))]})
        opt.step(closure)

    for make, kind, match in ((without_closure, TypeError, "closure"),
                              (unknown_search, RuntimeError, "only 'strong_wolfe' is supported"),
                              (added_group, AssertionError, "exactly one param_group")):
        for lib in (cg, torch):
            with pytest.raises(kind, match=match):
                make(lib)


@pytest.mark.parametrize("line_search_fn", [None, "strong_wolfe"])
def test_steady_iterations_plan_nothing_new(line_search_fn):
    """Once the history is full, an iteration's graphs keep their structure: t, ro, al and
    H_diag reach the kernels as data."""
    opt, params, closure = _optimizer(cg, mlp, history_size=2, max_iter=1, max_eval=4,
                                      line_search_fn=line_search_fn)
    made = []
    for _ in range(8):
        before = len(plan._plans)
        opt.step(closure)
        made.append(len(plan._plans) - before)
    assert len(opt.state[params[0]]["old_dirs"]) == 2
    assert made[4:] == [0, 0, 0, 0], made
