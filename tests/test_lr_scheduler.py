"""Learning-rate schedulers step for step against torch.optim.lr_scheduler: the lrs (and the
momentum or beta1 the cyclic ones set), state dicts, resuming from one, warnings and argument
checks. A scheduler is host-side arithmetic: no optimizer step here computes anything (no
parameter has a gradient), so these tests build no kernels."""
import math
import warnings

import numpy as np
import pytest
import torch

import clgrad as cg
from clgrad import nn, optim

STEPS = 30


def _optimizers(kind="SGD", **kwargs):
    """The same two-group optimizer in clgrad and in PyTorch (the second group at lr 0.5)."""
    def groups(lib, param):
        return [{"params": [param()]}, {"params": [param()], "lr": 0.5}]
    ours = getattr(optim, kind)(groups(cg, lambda: nn.Parameter(cg.zeros(1))), **kwargs)
    theirs = getattr(torch.optim, kind)(
        groups(torch, lambda: torch.nn.Parameter(torch.zeros(1))), **kwargs)
    return ours, theirs


def _watched(optimizer) -> list:
    """What a schedule sets in each group: lr, and the momentum a cyclic one cycles."""
    return [(g["lr"], g.get("momentum"), g.get("betas")) for g in optimizer.param_groups]


def _run(optimizer, scheduler, steps, metrics=None) -> list:
    seen = []
    for i in range(steps):
        optimizer.step()
        if metrics is None:
            scheduler.step()
        else:
            scheduler.step(metrics[i])
        seen.append((list(scheduler.get_last_lr()), _watched(optimizer)))
    return seen


def _assert_same(ours, theirs):
    for (lrs, groups), (tlrs, tgroups) in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(lrs, tlrs, rtol=1e-13, atol=1e-15)
        for group, tgroup in zip(groups, tgroups, strict=True):
            for value, tvalue in zip(group, tgroup):
                if value is None or tvalue is None:
                    assert value is tvalue
                else:
                    np.testing.assert_allclose(value, tvalue, rtol=1e-13, atol=1e-15)


def _comparable(state: dict) -> dict:
    """A state dict with the optimizers of nested schedulers' reprs left out."""
    return {k: [_comparable(s) for s in v] if k == "_schedulers" else v
            for k, v in state.items()}


class Halving:
    """A callable object: its state (calls) goes into the state dict, a plain function's not."""
    def __init__(self):
        self.calls = 0

    def __call__(self, epoch):
        self.calls += 1
        return 0.5 ** (epoch // 3)


def _warm_then_decay(lib, opt):
    lr = lib.optim.lr_scheduler if lib is torch else optim.lr_scheduler
    return lr.SequentialLR(opt, [lr.LinearLR(opt, start_factor=0.1, total_iters=4),
                                 lr.ExponentialLR(opt, gamma=0.9)], milestones=[5])


def _three_in_sequence(lib, opt):
    lr = lib.optim.lr_scheduler if lib is torch else optim.lr_scheduler
    return lr.SequentialLR(opt, [lr.ConstantLR(opt, factor=0.5, total_iters=3),
                                 lr.CosineAnnealingLR(opt, T_max=6, eta_min=0.01),
                                 lr.StepLR(opt, step_size=4, gamma=0.5)], milestones=[4, 12])


def _chained(lib, opt):
    lr = lib.optim.lr_scheduler if lib is torch else optim.lr_scheduler
    return lr.ChainedScheduler([lr.ConstantLR(opt, factor=0.25, total_iters=5),
                                lr.ExponentialLR(opt, gamma=0.95),
                                lr.MultiStepLR(opt, milestones=[8, 8, 20], gamma=0.5)])


def _scheduler(name, **kwargs):
    def make(lib, opt):
        module = torch.optim.lr_scheduler if lib is torch else optim.lr_scheduler
        return getattr(module, name)(opt, **kwargs)
    return make


CASES = {   # id: (how to make it, the optimizer, its arguments)
    "LambdaLR": (_scheduler("LambdaLR", lr_lambda=lambda e: 1 / (e + 1)), "SGD", {}),
    "LambdaLR-per-group": (_scheduler("LambdaLR", lr_lambda=[lambda e: 0.9 ** e, Halving()]),
                           "SGD", {}),
    "MultiplicativeLR": (_scheduler("MultiplicativeLR", lr_lambda=lambda e: 0.95), "SGD", {}),
    "StepLR": (_scheduler("StepLR", step_size=4, gamma=0.5), "SGD", {}),
    "MultiStepLR": (_scheduler("MultiStepLR", milestones=[3, 7, 7, 15], gamma=0.3), "SGD", {}),
    "ConstantLR": (_scheduler("ConstantLR", factor=0.5, total_iters=4), "SGD", {}),
    "LinearLR": (_scheduler("LinearLR", start_factor=0.2, end_factor=0.9, total_iters=10),
                 "SGD", {}),
    "ExponentialLR": (_scheduler("ExponentialLR", gamma=0.9), "SGD", {}),
    "PolynomialLR": (_scheduler("PolynomialLR", total_iters=12, power=2.0), "SGD", {}),
    "CosineAnnealingLR": (_scheduler("CosineAnnealingLR", T_max=7, eta_min=0.01), "SGD", {}),
    "CosineAnnealingWarmRestarts": (_scheduler("CosineAnnealingWarmRestarts", T_0=3, T_mult=2,
                                               eta_min=0.001), "SGD", {}),
    "SequentialLR": (_warm_then_decay, "SGD", {}),
    "SequentialLR-three": (_three_in_sequence, "SGD", {}),
    "ChainedScheduler": (_chained, "SGD", {}),
    "CyclicLR-triangular": (_scheduler("CyclicLR", base_lr=0.01, max_lr=[0.1, 0.2],
                                       step_size_up=4, step_size_down=3), "SGD",
                            dict(momentum=0.9)),
    "CyclicLR-triangular2": (_scheduler("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=3,
                                        mode="triangular2", cycle_momentum=False), "SGD", {}),
    "CyclicLR-exp_range-adam": (_scheduler("CyclicLR", base_lr=0.001, max_lr=0.01,
                                           step_size_up=5, mode="exp_range", gamma=0.97,
                                           base_momentum=0.85, max_momentum=0.95), "Adam", {}),
    "CyclicLR-scale_fn": (_scheduler("CyclicLR", base_lr=0.01, max_lr=0.1, step_size_up=2,
                                     scale_fn=lambda x: 1 / (1 + x), scale_mode="iterations"),
                          "SGD", dict(momentum=0.5)),
    "OneCycleLR-cos": (_scheduler("OneCycleLR", max_lr=[0.1, 0.3], total_steps=STEPS),
                       "SGD", dict(momentum=0.9)),
    "OneCycleLR-linear-adam": (_scheduler("OneCycleLR", max_lr=0.01, epochs=6,
                                          steps_per_epoch=5, anneal_strategy="linear",
                                          pct_start=0.25), "Adam", {}),
    "OneCycleLR-three_phase": (_scheduler("OneCycleLR", max_lr=0.1, total_steps=STEPS + 1,
                                          three_phase=True, base_momentum=[0.8, 0.7],
                                          div_factor=10.0), "AdamW", {}),
    "OneCycleLR-no-momentum": (_scheduler("OneCycleLR", max_lr=0.1, total_steps=STEPS,
                                          cycle_momentum=False), "RMSprop", {}),
}


@pytest.mark.parametrize("case", CASES)
def test_lrs_and_state_dict_are_pytorch_s(case):
    make, kind, kwargs = CASES[case]
    ours_opt, theirs_opt = _optimizers(kind, lr=0.1, **kwargs)
    ours, theirs = make(cg, ours_opt), make(torch, theirs_opt)
    assert _watched(ours_opt) == _watched(theirs_opt)
    assert ours.get_last_lr() == theirs.get_last_lr()
    assert getattr(ours, "last_epoch", None) == getattr(theirs, "last_epoch", None)
    _assert_same(_run(ours_opt, ours, STEPS), _run(theirs_opt, theirs, STEPS))
    assert _comparable(ours.state_dict()) == _comparable(theirs.state_dict())
    assert ours_opt.param_groups[0].keys() - {"params"} <= theirs_opt.param_groups[0].keys()


@pytest.mark.parametrize("case", ["LambdaLR-per-group", "StepLR", "CosineAnnealingLR",
                                  "CosineAnnealingWarmRestarts", "SequentialLR-three",
                                  "ChainedScheduler", "CyclicLR-exp_range-adam",
                                  "OneCycleLR-three_phase"])
def test_a_scheduler_resumed_from_its_state_dict_goes_on_where_it_was(case):
    """Halfway, a new optimizer and scheduler (as a restarted script makes them) load the
    state dicts; both go on as the original does."""
    make, kind, kwargs = CASES[case]
    ours_opt, _ = _optimizers(kind, lr=0.1, **kwargs)
    ours = make(cg, ours_opt)
    _run(ours_opt, ours, STEPS // 2)
    resumed_opt, _ = _optimizers(kind, lr=0.1, **kwargs)
    resumed = make(cg, resumed_opt)
    resumed.load_state_dict(ours.state_dict())
    resumed_opt.load_state_dict(ours_opt.state_dict())
    _assert_same(_run(resumed_opt, resumed, STEPS // 2), _run(ours_opt, ours, STEPS // 2))


def test_reduce_lr_on_plateau():
    metrics = [1.0, 0.9, 0.9, 0.95, 0.91, 0.92, 0.5, 0.6, 0.6, 0.6, 0.6, 0.7, 0.7, 0.4,
               0.41, 0.5, 0.5, 0.5, 0.5, 0.5]
    for kwargs in (dict(patience=1), dict(mode="max", factor=0.5, patience=0, cooldown=2),
                   dict(threshold_mode="abs", threshold=0.05, patience=2, min_lr=[0.02, 0.3]),
                   dict(mode="max", threshold_mode="abs", patience=1, eps=0.2)):
        ours_opt, theirs_opt = _optimizers(lr=0.1)
        ours = optim.lr_scheduler.ReduceLROnPlateau(ours_opt, **kwargs)
        theirs = torch.optim.lr_scheduler.ReduceLROnPlateau(theirs_opt, **kwargs)
        _assert_same(_run(ours_opt, ours, len(metrics), metrics),
                     _run(theirs_opt, theirs, len(metrics), metrics))
        assert ours.state_dict() == theirs.state_dict()
    resumed_opt, _ = _optimizers(lr=0.1)
    resumed = optim.lr_scheduler.ReduceLROnPlateau(resumed_opt)
    resumed.load_state_dict(ours.state_dict())
    assert resumed.state_dict() == ours.state_dict()


def test_step_with_an_epoch_takes_the_closed_form_and_warms_restarts_at_fractions():
    cases = [("StepLR", dict(step_size=3, gamma=0.5)), ("MultiStepLR", dict(milestones=[2, 5])),
             ("ConstantLR", dict(factor=0.5)), ("LinearLR", dict(total_iters=8)),
             ("ExponentialLR", dict(gamma=0.8)), ("PolynomialLR", dict(total_iters=9)),
             ("CosineAnnealingLR", dict(T_max=6)),
             ("LambdaLR", dict(lr_lambda=lambda e: 1 / (e + 1)))]
    epochs = [3, 7, 1, 10, 0, 4]
    for name, kwargs in cases:
        seen = []
        for lib, module in ((cg, optim.lr_scheduler), (torch, torch.optim.lr_scheduler)):
            opt = _optimizers(lr=0.1)[lib is torch]
            scheduler = getattr(module, name)(opt, **kwargs)
            with pytest.warns(UserWarning, match="epoch parameter"):
                for epoch in epochs:
                    opt.step()
                    scheduler.step(epoch)
            seen.append([scheduler.get_last_lr(), scheduler.last_epoch])
        assert seen[0] == seen[1], name
    for T_mult in (1, 2):   # SGDR: steps by fractions of an epoch, and a jump back
        results = []
        for lib, module in ((cg, optim.lr_scheduler), (torch, torch.optim.lr_scheduler)):
            opt = _optimizers(lr=0.1)[lib is torch]
            scheduler = module.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=T_mult)
            lrs = []
            for epoch in [e + i / 4 for e in range(9) for i in range(4)] + [1.5, 13.25]:
                opt.step()
                scheduler.step(epoch)
                lrs.append((scheduler.get_last_lr(), scheduler.T_cur, scheduler.T_i,
                            scheduler.last_epoch))
            results.append(lrs)
        assert results[0] == results[1]


def test_warnings_are_pytorch_s():
    for lib, module in ((cg, optim.lr_scheduler), (torch, torch.optim.lr_scheduler)):
        opt = _optimizers(lr=0.1)[lib is torch]
        scheduler = module.StepLR(opt, step_size=2)
        with pytest.warns(UserWarning, match=r"lr_scheduler.step\(\)` before `optimizer"):
            scheduler.step()
        with pytest.warns(UserWarning, match="get_last_lr"):
            scheduler.get_lr()
        opt = _optimizers(lr=0.1)[lib is torch]
        scheduler = module.ExponentialLR(opt, gamma=0.5)
        opt.step = lambda: None
        with pytest.warns(UserWarning, match="overridden"):
            scheduler.step()
        opt = _optimizers(lr=0.1)[lib is torch]
        scheduler = module.ExponentialLR(opt, gamma=0.5)
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            scheduler.step()
            scheduler.step()
        assert math.isclose(scheduler.get_last_lr()[0], 0.025)


def _step_past(scheduler, steps):
    scheduler.optimizer.step()
    for _ in range(steps):
        scheduler.step()


def _constructions(lib, opt, plain):
    module = torch.optim.lr_scheduler if lib is torch else optim.lr_scheduler
    cosine = module.CosineAnnealingLR(opt, T_max=3)
    return {
        "ConstantLR factor": lambda: module.ConstantLR(opt, factor=1.5),
        "LinearLR start_factor": lambda: module.LinearLR(opt, start_factor=0),
        "LinearLR end_factor": lambda: module.LinearLR(opt, end_factor=-0.5),
        "LambdaLR list": lambda: module.LambdaLR(opt, lr_lambda=[lambda e: 1.0]),
        "MultiplicativeLR not callable": lambda: module.MultiplicativeLR(opt, lr_lambda=0.9),
        "resumed without initial_lr": lambda: module.StepLR(type(opt)(
            [lib.nn.Parameter(lib.zeros(1))], lr=0.1), step_size=2, last_epoch=3),
        "not an optimizer": lambda: module.StepLR(object(), step_size=2),
        "CAWR T_0": lambda: module.CosineAnnealingWarmRestarts(opt, T_0=0),
        "CAWR T_mult": lambda: module.CosineAnnealingWarmRestarts(opt, T_0=2, T_mult=1.5),
        "CAWR eta_min": lambda: module.CosineAnnealingWarmRestarts(opt, T_0=2, eta_min="0"),
        "CAWR epoch": lambda: module.CosineAnnealingWarmRestarts(opt, T_0=2).step(-1),
        "Plateau factor": lambda: module.ReduceLROnPlateau(opt, factor=1.0),
        "Plateau mode": lambda: module.ReduceLROnPlateau(opt, mode="up"),
        "Plateau threshold_mode": lambda: module.ReduceLROnPlateau(opt, threshold_mode="x"),
        "Plateau min_lr": lambda: module.ReduceLROnPlateau(opt, min_lr=[0.1]),
        "CyclicLR mode": lambda: module.CyclicLR(opt, 0.01, 0.1, mode="square"),
        "CyclicLR max_lr": lambda: module.CyclicLR(opt, 0.01, [0.1, 0.2, 0.3]),
        "CyclicLR momentum": lambda: module.CyclicLR(plain, 0.01, 0.1),
        "OneCycleLR steps": lambda: module.OneCycleLR(opt, 0.1),
        "OneCycleLR total_steps": lambda: module.OneCycleLR(opt, 0.1, total_steps=0),
        "OneCycleLR epochs": lambda: module.OneCycleLR(opt, 0.1, epochs=0, steps_per_epoch=2),
        "OneCycleLR pct_start": lambda: module.OneCycleLR(opt, 0.1, 10, pct_start=1.5),
        "OneCycleLR anneal": lambda: module.OneCycleLR(opt, 0.1, 10, anneal_strategy="step"),
        "OneCycleLR momentum": lambda: module.OneCycleLR(plain, 0.1, 10),
        "OneCycleLR past the end": lambda: _step_past(module.OneCycleLR(opt, 0.1, 2), 3),
        "SequentialLR empty": lambda: module.SequentialLR(opt, [], milestones=[]),
        "SequentialLR milestones": lambda: module.SequentialLR(opt, [cosine], milestones=[2]),
        "SequentialLR plateau": lambda: module.SequentialLR(
            opt, [cosine, module.ReduceLROnPlateau(opt)], milestones=[2]),
        "SequentialLR another optimizer": lambda: module.SequentialLR(
            plain, [cosine], milestones=[]),
        "ChainedScheduler empty": lambda: module.ChainedScheduler([]),
        "ChainedScheduler not a scheduler": lambda: module.ChainedScheduler([cosine, 3]),
    }


def test_invalid_arguments_raise_what_pytorch_raises():
    ours_opt, theirs_opt = _optimizers(lr=0.1)
    # (an optimizer without momentum or betas)
    plain = optim.Optimizer([nn.Parameter(cg.zeros(1))], {"lr": 0.1})
    ours = _constructions(cg, ours_opt, plain)
    plain = torch.optim.Optimizer([torch.nn.Parameter(torch.zeros(1))], {"lr": 0.1})
    theirs = _constructions(torch, theirs_opt, plain)
    for what, make in theirs.items():
        with pytest.raises(Exception) as expected:   # (what PyTorch raises, and that it does)
            make()
        with pytest.raises(expected.type) as raised:
            ours[what]()
        assert str(raised.value).split()[:2] == str(expected.value).split()[:2], what
