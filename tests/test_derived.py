"""Gradient graphs rebuilt from the template of their structure (compiler/derived.py) are the
very nodes the rules build: nodes are interned, so an equal graph is the same objects."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.compiler import derived, gradients


@pytest.fixture
def checked(monkeypatch):
    """Every derivation also by the rules, compared node for node; yields the count of
    derivations the templates answered."""
    answered = [0]
    real_derive, real_rebuild = derived.derive, derived._rebuild

    def derive(out, wrt, grad, given=()):
        got = real_derive(out, wrt, grad, given)
        want = gradients.derive(out, wrt, grad, given)
        assert len(got) == len(want)
        assert all(g is w for g, w in zip(got, want)), (out, got, want)
        return got

    def rebuild(template, known):
        answered[0] += 1
        return real_rebuild(template, known)
    monkeypatch.setattr(derived, "derive", derive)
    monkeypatch.setattr(derived, "_rebuild", rebuild)
    return answered


def _steps(step, n=3):
    rng = np.random.default_rng(0)
    for _ in range(n):
        step(rng)


def test_mlp_steps_rebuild_the_rules_gradients(checked):
    w1 = cg.tensor(np.random.default_rng(1).standard_normal((6, 5), dtype=np.float32),
                   requires_grad=True)
    w2 = cg.tensor(np.random.default_rng(2).standard_normal((5, 3), dtype=np.float32),
                   requires_grad=True)

    def step(rng):
        x = cg.tensor(rng.standard_normal((4, 6), dtype=np.float32))
        y = cg.tensor(rng.standard_normal((4, 3), dtype=np.float32))
        loss = ((x.mm(w1).clamp(min=0).mm(w2) - y) ** 2).sum()
        loss.backward()
        with cg.no_grad():
            w1.sub_(1e-3 * w1.grad)
            w2.sub_(1e-3 * w2.grad)
            w1.grad.zero_()
            w2.grad.zero_()
        loss.item()
    _steps(step)
    assert checked[0] > 0


def test_lenet_like_steps_rebuild_the_rules_gradients(checked):
    cg.manual_seed(0)
    conv = nn.Conv2d(1, 3, 3)
    fc = nn.Linear(3 * 3 * 3, 4)
    opt = cg.optim.SGD([*conv.parameters(), *fc.parameters()], lr=0.01, momentum=0.9)

    def step(rng):
        x = cg.tensor(rng.standard_normal((2, 1, 8, 8), dtype=np.float32))
        target = cg.tensor(rng.integers(0, 4, 2))
        opt.zero_grad()
        h = F.max_pool2d(F.relu(conv(x)), 2)
        loss = F.cross_entropy(fc(h.flatten(1)), target)
        loss.backward()
        opt.step()
        loss.item()
    _steps(step)
    assert checked[0] > 0


@pytest.mark.parametrize("fn", [
    lambda a, b: a ** b, lambda a, b: cg.maximum(a, b), lambda a, b: (a / b).sum(1),
    lambda a, b: a.t().matmul(b) if a.shape[0] == b.shape[0] else a, lambda a, b: a.abs().exp() * b,
    lambda a, b: cg.where(a > b, a, b * 2), lambda a, b: a.reshape(-1)[:5] * b.reshape(-1)[:5],
])
def test_elementwise_and_view_ops_rebuild_the_rules_gradients(checked, fn):
    def step(rng):
        a = cg.tensor(rng.uniform(0.5, 2, (3, 4)).astype(np.float32), requires_grad=True)
        b = cg.tensor(rng.uniform(0.5, 2, (3, 4)).astype(np.float32), requires_grad=True)
        fn(a, b).sum().backward()
        a.grad.numpy()
        b.grad.numpy()
    _steps(step)
    assert checked[0] > 0
