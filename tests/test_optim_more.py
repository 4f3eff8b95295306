"""Adagrad, Adadelta, Adamax, NAdam, RAdam, ASGD and Rprop step for step against PyTorch's:
parameters and state after each step, state dicts (in PyTorch's layout, loaded from PyTorch's),
argument checks, and a training loop whose lr changes at every step planning nothing new."""
import numpy as np
import pytest
import torch

import clgrad as cg
from clgrad import nn, optim
from clgrad.engine import plan

RNG = np.random.default_rng(1)
W0 = RNG.standard_normal((4, 3)).astype(np.float32)
B0 = RNG.standard_normal(3).astype(np.float32)
STEPS = 8       # RAdam with betas (0.9, 0.9) rectifies from step 6 on
GRADS = [(RNG.standard_normal((4, 3)).astype(np.float32),
          RNG.standard_normal(3).astype(np.float32)) for _ in range(STEPS)]

CASES = [
    ("Adagrad", dict(lr=0.1)),
    ("Adagrad", dict(lr=0.1, lr_decay=0.1, weight_decay=0.1, initial_accumulator_value=0.5,
                     eps=1e-3, maximize=True)),
    ("Adadelta", dict()),
    ("Adadelta", dict(lr=0.5, rho=0.8, eps=1e-4, weight_decay=0.1, maximize=True)),
    ("Adamax", dict(lr=0.01)),
    ("Adamax", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("NAdam", dict(lr=0.01)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, momentum_decay=0.05)),
    ("NAdam", dict(lr=0.01, weight_decay=0.1, decoupled_weight_decay=True, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9))),
    ("RAdam", dict(lr=0.01, betas=(0.8, 0.9), weight_decay=0.1, maximize=True)),
    ("RAdam", dict(lr=0.01, betas=(0.9, 0.9), weight_decay=0.1, decoupled_weight_decay=True)),
    ("ASGD", dict(lr=0.1)),
    ("ASGD", dict(lr=0.1, lambd=0.01, alpha=0.5, t0=3, weight_decay=0.1, maximize=True)),
    ("Rprop", dict(lr=0.01)),
    ("Rprop", dict(lr=0.01, etas=(0.3, 1.5), step_sizes=(1e-3, 0.05), maximize=True)),
]


def _groups(lib, dtype, kwargs):
    """A weight and a bias in one group, an empty group, a parameter that gets no gradient
    (no state, no change; Adagrad's state is made at construction)."""
    def param(array):
        return lib.nn.Parameter(lib.tensor(array).to(getattr(lib, dtype)))
    w, b, idle = param(W0), param(B0), param(B0 * 2)
    groups = [{"params": [w, b]}, {"params": [], "lr": 0.5}, {"params": [idle]}]
    return getattr(lib.optim, kwargs[0])(groups, **kwargs[1]), (w, b, idle)


def _steps(lib, opt, params, grads):
    w, b, _ = params
    for gw, gb in grads:
        w.grad = lib.tensor(gw).to(w.dtype)
        b.grad = lib.tensor(gb).to(b.dtype)
        opt.step()


def _numpy(value):
    return value.detach().numpy() if isinstance(value, torch.Tensor) else value.numpy()


def _assert_same_state(ours, theirs, rtol=1e-6):
    ours, theirs = ours.state_dict(), theirs.state_dict()
    assert ours["state"].keys() == theirs["state"].keys()
    for key, state in theirs["state"].items():
        assert sorted(ours["state"][key]) == sorted(state)
        for name, value in state.items():
            mine = ours["state"][key][name]
            assert str(mine.dtype) == str(value.dtype).replace("torch", "clgrad"), name
            np.testing.assert_allclose(_numpy(mine), _numpy(value), rtol=rtol, atol=1e-7,
                                       err_msg=name)
    for group, tgroup in zip(ours["param_groups"], theirs["param_groups"], strict=True):
        assert {k: tgroup[k] for k in group} == group


@pytest.mark.parametrize("kind,kwargs", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_steps_and_state_are_pytorch_s(kind, kwargs):
    ours, params = _groups(cg, "float32", (kind, kwargs))
    theirs, tparams = _groups(torch, "float32", (kind, kwargs))
    _assert_same_state(ours, theirs)
    _steps(cg, ours, params, GRADS)
    _steps(torch, theirs, tparams, GRADS)
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.detach().numpy(), _numpy(tp), rtol=1e-6, atol=1e-7)
    _assert_same_state(ours, theirs)


@pytest.mark.parametrize("kind,kwargs", [CASES[1], CASES[8], CASES[11], CASES[13], CASES[15]],
                         ids=lambda c: c if isinstance(c, str) else "")
def test_a_state_dict_from_pytorch_loads_and_float64_parameters_step_alike(kind, kwargs):
    """Half the steps in PyTorch; its state dict (as NumPy arrays) loaded into a fresh
    optimizer of each; the other half in both. In float64, whose state PyTorch keeps in
    float32 (step, NAdam's mu_product, ASGD's eta and mu) until a load makes all but step
    float64."""
    first, tparams = _groups(torch, "float64", (kind, kwargs))
    _steps(torch, first, tparams, GRADS[:4])
    saved = first.state_dict()
    theirs = type(first)(first.param_groups)
    theirs.load_state_dict(saved)
    ours, params = _groups(cg, "float64", (kind, kwargs))
    for p, tp in zip(params, tparams):
        with cg.no_grad():
            p.copy_(cg.tensor(_numpy(tp)))
    ours.load_state_dict({"param_groups": saved["param_groups"], "state": {
        key: {name: _numpy(value) for name, value in state.items()}
        for key, state in saved["state"].items()}})
    _steps(cg, ours, params, GRADS[4:])
    _steps(torch, theirs, tparams, GRADS[4:])
    for p, tp in zip(params, tparams):
        np.testing.assert_allclose(p.detach().numpy(), _numpy(tp), rtol=1e-12)
    _assert_same_state(ours, theirs, rtol=1e-12)


def test_lr_zero_leaves_parameters_as_they_are():
    for kind in ("Adagrad", "Adadelta", "Adamax", "NAdam", "RAdam", "ASGD"):
        ours, params = _groups(cg, "float32", (kind, dict(lr=0.0)))
        _steps(cg, ours, params, GRADS[:2])
        np.testing.assert_array_equal(params[0].detach().numpy(), W0, err_msg=kind)


def test_a_changing_lr_plans_nothing_new_after_the_second_step():
    """Step counts, bias corrections and lr reach the kernels as data: a scheduler changing
    lr at every step, and the step count growing, plan (and build) nothing after step 2."""
    for kind, kwargs in CASES:     # (the parameters of the test above: its kernels)
        opt, params = _groups(cg, "float32", (kind, kwargs))
        scheduler = optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
        plans = []
        for grads in GRADS[:5]:
            _steps(cg, opt, params, [grads])
            scheduler.step()
            params[0].detach().numpy()
            plans.append(len(plan._plans))
        assert plans[1] == plans[-1], (kind, kwargs, plans)


@pytest.mark.parametrize("kind, kwargs", [("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
                                          ("Adam", dict(lr=0.01, weight_decay=0.1))])
def test_a_cycled_momentum_plans_nothing_new_and_is_pytorch_s(kind, kwargs):
    """OneCycleLR cycles SGD's momentum and Adam's beta1 at every step (hyperparameters read
    from buffers, not compiled in); the parameters follow PyTorch's."""
    ours, params = _groups(cg, "float32", (kind, kwargs))
    theirs, reference = _groups(torch, "float32", (kind, kwargs))
    schedulers = [lib.optim.lr_scheduler.OneCycleLR(opt, 0.1, total_steps=10)
                  for lib, opt in ((cg, ours), (torch, theirs))]
    plans = []
    for grads in GRADS[:5]:
        _steps(cg, ours, params, [grads])
        _steps(torch, theirs, reference, [grads])
        for scheduler in schedulers:
            scheduler.step()
        np.testing.assert_allclose(params[0].detach().numpy(), _numpy(reference[0]), rtol=1e-6)
        plans.append(len(plan._plans))
    assert plans[1] == plans[-1], plans


def _constructions(module, param):
    ps = [param]
    return {
        "Adagrad lr": lambda: module.Adagrad(ps, lr=-0.1),
        "Adagrad lr_decay": lambda: module.Adagrad(ps, lr_decay=-1),
        "Adagrad weight_decay": lambda: module.Adagrad(ps, weight_decay=-1),
        "Adagrad initial_accumulator_value": lambda: module.Adagrad(
            ps, initial_accumulator_value=-1),
        "Adagrad eps": lambda: module.Adagrad(ps, eps=-1),
        "Adadelta rho": lambda: module.Adadelta(ps, rho=1.5),
        "Adadelta eps": lambda: module.Adadelta(ps, eps=-1),
        "Adamax beta": lambda: module.Adamax(ps, betas=(0.9, 1.0)),
        "Adamax weight_decay": lambda: module.Adamax(ps, weight_decay=-1),
        "NAdam momentum_decay": lambda: module.NAdam(ps, momentum_decay=-1),
        "NAdam beta": lambda: module.NAdam(ps, betas=(-0.1, 0.9)),
        "RAdam eps": lambda: module.RAdam(ps, eps=-1),
        "RAdam lr": lambda: module.RAdam(ps, lr=-1),
        "ASGD lr": lambda: module.ASGD(ps, lr=-1),
        "ASGD weight_decay": lambda: module.ASGD(ps, weight_decay=-1),
        "Rprop lr": lambda: module.Rprop(ps, lr=-1),
        "Rprop etas": lambda: module.Rprop(ps, etas=(1.1, 1.2)),
        "Rprop etas above": lambda: module.Rprop(ps, etas=(0.5, 0.9)),
        "no parameters": lambda: module.NAdam([]),
    }


def test_invalid_arguments_raise_what_pytorch_raises():
    ours = _constructions(optim, nn.Parameter(cg.zeros(2)))
    theirs = _constructions(torch.optim, torch.nn.Parameter(torch.zeros(2)))
    for what, make in theirs.items():
        with pytest.raises(Exception) as expected:   # (what PyTorch raises, and that it does)
            make()
        with pytest.raises(expected.type) as raised:
            ours[what]()
        assert str(raised.value) == str(expected.value), what
