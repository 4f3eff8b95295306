"""Gradient graphs rebuilt from the template of their structure (compiler/derived.py) are the
very nodes the rules build: nodes are interned, so an equal graph is the same objects. Each
GradFn's derivation has its templates, and so has a whole backward pass (frontend/backward.py)."""
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as F
from clgrad import nn
from clgrad.compiler import derived, gradients
from clgrad.frontend import backward_segments

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from custom_relu import train_step  # noqa: E402  (the seed program's step)


@pytest.fixture
def checked(monkeypatch):
    """Every derivation also by the rules, compared node for node; yields the count of
    derivations the templates answered. Whole backward passes are derived one GradFn at a
    time meanwhile (whole_checked checks their templates)."""
    monkeypatch.setattr(backward_segments, "segment_end", lambda order, start: start)
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


@pytest.fixture
def whole_checked(monkeypatch):
    """Every backward pass a whole template answers also propagated GradFn by GradFn, compared
    node for node (the leaves' gradients, and which backward nodes received one); yields the
    count of passes the templates answered."""
    answered = [0]
    real_cached = derived.cached

    def cached(key, known, compute):
        if key[0] != "backward" or key not in derived._templates:
            return real_cached(key, known, compute)
        answered[0] += 1
        got, reached = real_cached(key, known, compute)
        want, want_reached = compute()
        assert reached == want_reached
        assert all(g is w for g, w in zip(got, want, strict=True)), (got, want)
        return got, reached
    monkeypatch.setattr(derived, "cached", cached)
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


def test_whole_backward_passes_rebuild_the_gradients_of_one_gradfn_at_a_time(whole_checked):
    cg.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = cg.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    x = cg.tensor(np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32))
    unused = cg.zeros(3, requires_grad=True)

    def step(rng):
        y = cg.tensor(rng.standard_normal((4, 1), dtype=np.float32))
        opt.zero_grad()
        h = model(x)
        loss = F.mse_loss(h, y) + (h * 0).sum() + (unused.detach() * 2).sum()
        loss.backward()
        opt.step()
        loss.item()
    _steps(step)
    assert whole_checked[0] == 2


def test_whole_backward_passes_keep_retained_graphs_and_accumulate(whole_checked):
    w = cg.tensor(np.arange(6, dtype=np.float32).reshape(2, 3), requires_grad=True)
    b = cg.tensor(np.ones(3, dtype=np.float32), requires_grad=True)
    loss = (w * 2 + b).exp().sum(0).sum()
    for _ in range(3):
        loss.backward(retain_graph=True)
    loss.backward()
    expected = np.exp(np.arange(6, dtype=np.float32).reshape(2, 3) * 2 + 1)
    np.testing.assert_allclose(w.grad.numpy(), 4 * 2 * expected, rtol=1e-5)
    np.testing.assert_allclose(b.grad.numpy(), 4 * expected.sum(0), rtol=1e-5)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        loss.backward()
    assert whole_checked[0] == 3



def test_runs_of_gradfns_around_a_custom_function_rebuild_their_gradients(whole_checked):
    """The seed's step: its custom ReLU's backward (user code) runs between two runs of
    GradFns, each rebuilt from its template from the second step on."""
    rng = np.random.default_rng(1)
    x, y, w1, w2 = (rng.standard_normal(shape, dtype=np.float32)
                    for shape in ((4, 6), (4, 3), (6, 5), (5, 3)))
    cx, cy = cg.tensor(x), cg.tensor(y)
    cw1, cw2 = cg.tensor(w1, requires_grad=True), cg.tensor(w2, requires_grad=True)
    for _ in range(3):
        h = x @ w1
        grad_y = 2 * (np.maximum(h, 0) @ w2 - y)
        grad_w1 = x.T @ (grad_y @ w2.T * (h >= 0))
        w2 = w2 - 1e-2 * np.maximum(h, 0).T @ grad_y
        w1 = w1 - 1e-2 * grad_w1
        train_step(cx, cy, cw1, cw2, learning_rate=1e-2)
        np.testing.assert_allclose(cw1.detach().numpy(), w1, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(cw2.detach().numpy(), w2, rtol=1e-4, atol=1e-5)
    assert whole_checked[0] == 4        # the runs before and after the Function, twice
