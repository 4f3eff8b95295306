"""Optimizers step for step against PyTorch's update rules (written out in NumPy here, so the
check holds without PyTorch too; with PyTorch installed its optimizers are compared as well)."""
import numpy as np
import pytest

import clgrad as cg
from clgrad import nn, optim
from clgrad.compiler import lower
from clgrad.engine import donation
from helpers import torch

RNG = np.random.default_rng(0)
W0 = RNG.standard_normal((4, 3)).astype(np.float32)
GRADS = [RNG.standard_normal((4, 3)).astype(np.float32) for _ in range(4)]


def sgd_rule(lr, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
    p, buf = W0.astype(np.float64), None
    for g in GRADS:
        g = g + weight_decay * p
        if momentum:
            buf = g.copy() if buf is None else momentum * buf + (1 - dampening) * g
            g = g + momentum * buf if nesterov else buf
        p = p - lr * g
    return p


def adam_rule(lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False,
              decoupled=False, maximize=False):
    p = W0.astype(np.float64)
    m, v, vmax = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for t, g in enumerate(GRADS, 1):
        g = -g if maximize else g
        if decoupled:
            p = p * (1 - lr * weight_decay)
        else:
            g = g + weight_decay * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        vmax = np.maximum(vmax, v)
        denom = np.sqrt(vmax if amsgrad else v) / np.sqrt(1 - betas[1] ** t) + eps
        p = p - lr / (1 - betas[0] ** t) * m / denom
    return p


def rmsprop_rule(lr, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False):
    p = W0.astype(np.float64)
    s, a, buf = np.zeros_like(p), np.zeros_like(p), np.zeros_like(p)
    for g in GRADS:
        g = g + weight_decay * p
        s = alpha * s + (1 - alpha) * g * g
        a = alpha * a + (1 - alpha) * g
        avg = np.sqrt(s - a * a if centered else s) + eps
        if momentum:
            buf = momentum * buf + g / avg
            p = p - lr * buf
        else:
            p = p - lr * g / avg
    return p


CASES = [
    ("SGD", dict(lr=0.1), sgd_rule),
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01), sgd_rule),
    ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True), sgd_rule),
    ("SGD", dict(lr=0.1, momentum=0.9, dampening=0.5), sgd_rule),
    ("Adam", dict(lr=0.01), adam_rule),
    ("Adam", dict(lr=0.01, weight_decay=0.1, amsgrad=True), adam_rule),
    ("Adam", dict(lr=0.01, maximize=True), adam_rule),
    ("AdamW", dict(lr=0.01, weight_decay=0.1), lambda **k: adam_rule(decoupled=True, **k)),
    ("RMSprop", dict(lr=0.01), rmsprop_rule),
    ("RMSprop", dict(lr=0.01, momentum=0.9, centered=True, weight_decay=0.1), rmsprop_rule),
]


def _run(name, kwargs):
    p = nn.Parameter(cg.tensor(W0))
    opt = getattr(optim, name)([p], **kwargs)
    for g in GRADS:
        p.grad = cg.tensor(g)
        opt.step()
    return p, opt


@pytest.mark.parametrize("name,kwargs,rule", CASES)
def test_update_rules(name, kwargs, rule):
    p, opt = _run(name, kwargs)
    np.testing.assert_allclose(p.detach().numpy(), rule(**kwargs), rtol=1e-5, atol=1e-6)
    if torch is not None:
        tp = torch.nn.Parameter(torch.tensor(W0))
        topt = getattr(torch.optim, name)([tp], **kwargs)
        for g in GRADS:
            tp.grad = torch.tensor(g)
            topt.step()
        np.testing.assert_allclose(p.detach().numpy(), tp.detach().numpy(), rtol=1e-5, atol=1e-6)
        assert sorted(opt.state[p]) == sorted(topt.state[tp])
        for key, value in topt.state[tp].items():
            np.testing.assert_allclose(np.asarray(opt.state[p][key].numpy()),
                                       value.numpy(), rtol=1e-5, atol=1e-6)


CHANGED = [   # hyperparameters for the first two steps, then for the last two
    ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01), dict(momentum=0.5, weight_decay=0.1)),
    ("Adam", dict(lr=0.01, weight_decay=0.1), dict(betas=(0.8, 0.99), eps=1e-3)),
    ("RMSprop", dict(lr=0.01, momentum=0.9), dict(alpha=0.9, momentum=0.5, eps=1e-4)),
]


def _sgd_changed_rule(first, then):
    p, buf = W0.astype(np.float64), None
    for i, g in enumerate(GRADS):
        h = first if i < 2 else {**first, **then}
        g = g + h["weight_decay"] * p
        buf = g if buf is None else h["momentum"] * buf + g
        p = p - h["lr"] * buf
    return p


@pytest.mark.parametrize("name,first,then", CHANGED)
def test_hyperparameters_changed_between_steps_take_effect(name, first, then):
    """A step keeps the constants it makes of the hyperparameters for the next; a value
    changed in a param group is the one the next step reads, as in PyTorch."""
    def run(p, opt, set_grad):
        for i, g in enumerate(GRADS):
            if i == 2:
                opt.param_groups[0].update(then)
            set_grad(p, g)
            opt.step()
        return p.detach().numpy()

    def set_grad(p, g):
        p.grad = cg.tensor(g)
    p = nn.Parameter(cg.tensor(W0))
    ours = run(p, getattr(optim, name)([p], **first), set_grad)
    if name == "SGD":
        np.testing.assert_allclose(ours, _sgd_changed_rule(first, then), rtol=1e-5, atol=1e-6)
    if torch is not None:
        def set_torch_grad(p, g):
            p.grad = torch.tensor(g)
        tp = torch.nn.Parameter(torch.tensor(W0))
        theirs = run(tp, getattr(torch.optim, name)([tp], **first), set_torch_grad)
        np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-6)


def test_state_names():
    assert sorted(_run("SGD", dict(lr=0.1, momentum=0.9))[1].state_dict()["state"][0]) == \
        ["momentum_buffer"]
    assert sorted(_run("Adam", dict(lr=0.1))[1].state_dict()["state"][0]) == \
        ["exp_avg", "exp_avg_sq", "step"]
    assert sorted(_run("RMSprop", dict(lr=0.1))[1].state_dict()["state"][0]) == \
        ["square_avg", "step"]


def test_invalid_arguments():
    p = [nn.Parameter(cg.ones(2))]
    for make in (lambda: optim.SGD(p, lr=-1), lambda: optim.SGD(p, lr=0.1, momentum=-0.5),
                 lambda: optim.SGD(p, lr=0.1, nesterov=True),
                 lambda: optim.Adam(p, betas=(1.0, 0.9)), lambda: optim.Adam(p, eps=-1),
                 lambda: optim.AdamW(p, weight_decay=-1), lambda: optim.RMSprop(p, alpha=-1),
                 lambda: optim.SGD([], lr=0.1)):
        with pytest.raises(ValueError):
            make()
    with pytest.raises(ValueError, match="more than one parameter group"):
        optim.SGD([{"params": p}, {"params": p}], lr=0.1)


def test_param_groups_zero_grad_closure_and_state_dict_round_trip():
    a, b = nn.Parameter(cg.ones(3)), nn.Parameter(cg.ones(2))
    opt = optim.SGD([{"params": [a]}, {"params": [b], "lr": 0.5}], lr=0.1, momentum=0.9)
    assert opt.param_groups[0]["lr"] == 0.1 and opt.param_groups[1]["lr"] == 0.5
    assert opt.param_groups[1]["momentum"] == 0.9

    def closure():
        opt.zero_grad()
        loss = (a * a).sum() + (b * 3).sum()
        loss.backward()
        return loss
    assert opt.step(closure).item() == 9.0
    np.testing.assert_allclose(a.detach().numpy(), [0.8] * 3)
    np.testing.assert_allclose(b.detach().numpy(), [-0.5] * 2)
    opt.zero_grad()
    assert a.grad is None and b.grad is None
    opt.step(closure)

    c, d = nn.Parameter(cg.tensor(a.detach().numpy())), nn.Parameter(cg.tensor(b.detach().numpy()))
    fresh = optim.SGD([{"params": [c]}, {"params": [d], "lr": 0.5}], lr=0.1, momentum=0.9)
    fresh.load_state_dict(opt.state_dict())
    np.testing.assert_allclose(fresh.state[c]["momentum_buffer"].numpy(),
                               opt.state[a]["momentum_buffer"].numpy())
    for _ in range(2):
        opt.step(closure)
        fresh.zero_grad()
        ((c * c).sum() + (d * 3).sum()).backward()
        fresh.step()
    np.testing.assert_allclose(c.detach().numpy(), a.detach().numpy(), rtol=1e-6)
    with pytest.raises(ValueError):
        optim.SGD([c], lr=0.1).load_state_dict(opt.state_dict())


def test_step_is_one_schedule_and_adam_step_count_compiles_nothing_new():
    p = nn.Parameter(cg.ones(8))
    opt = optim.Adam([p], lr=0.1)
    for _ in range(2):
        p.grad = cg.ones(8) * 2
        opt.step()
    before = len(lower._lowered)
    for _ in range(3):
        p.grad = cg.ones(8) * 2
        opt.step()
    assert len(lower._lowered) == before      # bias corrections are data, not code


def test_lr_schedulers():
    p = [nn.Parameter(cg.ones(1))]
    opt = optim.SGD(p, lr=1.0)
    sched = optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25]
    opt = optim.SGD(p, lr=1.0)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=0.1)
    lrs = []
    for _ in range(5):
        lrs.append(opt.param_groups[0]["lr"])
        sched.step()
    expect = [0.1 + 0.9 * (1 + np.cos(np.pi * t / 4)) / 2 for t in range(5)]
    np.testing.assert_allclose(lrs, expect, rtol=1e-9)


def test_steps_write_over_parameters_and_state_only_when_nothing_else_reads_them():
    p = nn.Parameter(cg.tensor(W0))
    opt = optim.Adam([p], lr=0.01)
    buffers = []
    for g in GRADS:
        p.grad = cg.tensor(g)
        opt.step()
        # addresses: holding the buffers themselves would keep them from being overwritten
        buffers.append([t.node.arg.buffer.mem.int_ptr for t in (
            p, opt.state[p]["exp_avg"], opt.state[p]["exp_avg_sq"])])
    # from the second step on, each step's kernel overwrites the buffers it reads (a step
    # that does not allocates while the old buffers live, so at other addresses)
    assert all(a == b for a, b in zip(buffers[1:], buffers[2:])) == donation.REFCOUNTS_VERIFIED
    np.testing.assert_allclose(p.detach().numpy(), adam_rule(lr=0.01), rtol=1e-5, atol=1e-6)

    before = p.detach().numpy().copy()     # (numpy() shares)
    m_before = opt.state[p]["exp_avg"].numpy().copy()
    lazy = p * 2                        # reads the parameter's current buffer later
    moment = opt.state[p]["exp_avg"] + 0
    grad_alias = p.grad                 # the gradient is read, never written
    p.grad = grad_alias
    opt.step()
    np.testing.assert_array_equal(lazy.detach().numpy(), before * 2)
    np.testing.assert_array_equal(moment.numpy(), m_before)
    np.testing.assert_array_equal(grad_alias.numpy(), GRADS[-1])
    assert not np.array_equal(p.detach().numpy(), before)


def test_in_place_update_keeps_lazy_readers_of_the_old_value():
    x = cg.tensor([1.0, 2.0, 3.0]).realize()
    for old in ([1.0, 2.0, 3.0], [3.0, 6.0, 9.0]):   # the second pass replays the plan
        y = x * 2
        x.mul_(3)
        x.realize()                     # without y: the old buffer must survive for it
        np.testing.assert_array_equal(y.numpy(), np.multiply(old, 2))
        np.testing.assert_array_equal(x.numpy(), np.multiply(old, 3))


def test_step_leaves_the_gradients_computed():
    """Reading p.grad after step() (a logged norm) launches nothing: no recomputed backward."""
    p = cg.tensor([1.0, 2.0], requires_grad=True)
    opt = optim.SGD([p], lr=0.1)
    (p * p).sum().backward()
    opt.step()
    with cg.profile() as prof:
        grad = p.grad.numpy()
    assert prof.rows == [] and grad.tolist() == [2.0, 4.0]
