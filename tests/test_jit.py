"""cg.jit: captured steps replay to the same numbers as eager steps, follow new arguments and
state changed outside them, and stay eager (with a warning) where a replay could be wrong."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad as cg
from clgrad import nn, optim

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from custom_relu import train_step  # noqa: E402  (the seed program's step)

rng = np.random.default_rng(7)


def _arrays(*shapes):
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def _seed_step(x, y, w1, w2):
    """The seed program's step (custom ReLU, hand-written SGD, grads zeroed in place), with a
    learning rate that moves these small weights."""
    return train_step(x, y, w1, w2, learning_rate=1e-3)


def _seed_state(x, y, w1, w2):
    """Tensors over copies of the arrays: from_numpy shares an array's memory, and the eager
    and the jitted state must not."""
    x, y, w1, w2 = (a.copy() for a in (x, y, w1, w2))
    return [cg.from_numpy(x), cg.from_numpy(y), cg.from_numpy(w1, requires_grad=True),
            cg.from_numpy(w2, requires_grad=True)]


def test_jit_replays_the_seed_step_to_the_eager_numbers_without_running_its_python():
    arrays = _arrays((8, 12), (8, 3), (12, 16), (16, 3))
    eager, jitted = _seed_state(*arrays), _seed_state(*arrays)
    runs = []

    @cg.jit
    def step(x, y, w1, w2):
        runs.append(1)
        return _seed_step(x, y, w1, w2)

    for i in range(6):
        expected = _seed_step(*eager).item()
        assert step(*jitted).item() == expected
        assert step.replaying == (i >= 2)
    assert len(runs) == 3       # a warm-up, then two captures that agree; then replays
    with cg.profile() as eager_step:
        _seed_step(*eager).realize()
    with cg.profile() as replayed:
        step(*jitted)
    launched = [sorted((row.name, row.calls) for row in p.rows) for p in (eager_step, replayed)]
    assert launched[0] == launched[1] and len(launched[1]) == 6
    for e, j in zip(eager[2:], jitted[2:]):
        np.testing.assert_array_equal(j.detach().numpy(), e.detach().numpy())
        assert j._version == e._version
        np.testing.assert_array_equal(j.grad.numpy(), 0)
    assert not step(*jitted).requires_grad


def test_jit_binds_each_calls_arguments_and_state_changed_outside_the_step():
    x_all, y_all, w1, w2 = _arrays((5, 8, 12), (5, 8, 3), (12, 16), (16, 3))
    eager, jitted = _seed_state(x_all[0], y_all[0], w1, w2), _seed_state(x_all[0], y_all[0], w1, w2)
    step = cg.jit(_seed_step)
    for i in range(10):
        x, y = cg.from_numpy(x_all[i % 5]), cg.from_numpy(y_all[i % 5])
        expected = _seed_step(x, y, *eager[2:]).item()
        assert step(x, y, *jitted[2:]).item() == pytest.approx(expected, rel=1e-6)
        if i == 6:      # a change the replay does not make: it reads w2's new buffer
            for w in (eager[3], jitted[3]):
                with cg.no_grad():
                    w *= 0.5
    assert step.replaying
    np.testing.assert_allclose(jitted[2].detach().numpy(), eager[2].detach().numpy(), rtol=1e-6)


def _module_step(model, opt, loss_fn, x, t):
    """A PyTorch-style training step."""
    opt.zero_grad()
    loss = loss_fn(model(x), t)
    loss.backward()
    opt.step()
    return loss


def test_jit_replays_a_module_step_with_momentum_and_fresh_grads():
    def setup():
        cg.manual_seed(3)
        model = nn.Sequential(nn.Linear(6, 10), nn.Tanh(), nn.Linear(10, 2))
        return model, optim.SGD(model.parameters(), lr=0.1, momentum=0.9)

    def train(model, opt, x, t):
        return _module_step(model, opt, nn.functional.mse_loss, x, t)

    (x, t), (eager, jitted) = _arrays((4, 6), (4, 2)), (setup(), setup())
    x, t = cg.from_numpy(x), cg.from_numpy(t)
    step = cg.jit(train)
    for _ in range(6):
        assert step(*jitted, x, t).item() == pytest.approx(train(*eager, x, t).item(), rel=1e-6)
    assert step.replaying
    for pe, pj in zip(eager[0].parameters(), jitted[0].parameters()):
        np.testing.assert_allclose(pj.detach().numpy(), pe.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(pj.grad.numpy(), pe.grad.numpy(), rtol=1e-6)
    for model, _ in (eager, jitted):
        model[0].weight.requires_grad_(False)       # a frozen layer: not a step to replay
    before = jitted[0][0].weight.numpy()
    assert step(*jitted, x, t).item() == pytest.approx(train(*eager, x, t).item(), rel=1e-6)
    np.testing.assert_array_equal(jitted[0][0].weight.numpy(), before)


@pytest.mark.parametrize("make", [
    lambda ps: optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: optim.Adam(ps, lr=0.1, weight_decay=0.1, amsgrad=True),
    lambda ps: optim.AdamW(ps, lr=0.1),
    lambda ps: optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
], ids=["SGD", "Adam", "AdamW", "RMSprop"])
def test_jit_replays_optimizer_steps_through_learning_rate_changes(make):
    values = np.array([1.0, -2.0, 3.0], np.float32)
    (pe, pj) = (cg.from_numpy(values.copy(), requires_grad=True) for _ in range(2))
    (oe, oj) = (make([p]) for p in (pe, pj))
    (se, sj) = (optim.lr_scheduler.StepLR(o, step_size=5, gamma=0.5) for o in (oe, oj))

    def train(p, opt):
        opt.zero_grad()
        (p * p * p).sum().backward()
        opt.step()

    step = cg.jit(train)
    for i in range(12):
        train(pe, oe)
        step(pj, oj)
        se.step()
        sj.step()               # every fifth step halves lr: replays must follow it
        np.testing.assert_allclose(pj.detach().numpy(), pe.detach().numpy(), rtol=1e-6)
        assert step.replaying == (i >= 2)
    eager_steps, replayed_steps = (o.state_dict()["state"][0].get("step") for o in (oe, oj))
    if eager_steps is None:         # SGD counts no steps
        assert replayed_steps is None
    else:
        assert eager_steps.item() == replayed_steps.item() == 12


def test_jit_replays_a_batch_norm_step_with_its_running_statistics():
    def setup():
        cg.manual_seed(4)
        model = nn.Sequential(nn.Linear(5, 6), nn.BatchNorm1d(6), nn.ReLU(), nn.Linear(6, 2))
        return model, optim.SGD(model.parameters(), lr=0.1)

    def train(model, opt, x, t):
        return _module_step(model, opt, nn.functional.mse_loss, x, t)

    step, eager, jitted = cg.jit(train), setup(), setup()
    for _ in range(6):
        x, t = (cg.from_numpy(a) for a in _arrays((8, 5), (8, 2)))
        assert step(*jitted, x, t).item() == pytest.approx(train(*eager, x, t).item(), rel=1e-5)
    assert step.replaying
    for (name, e), (_, j) in zip(eager[0].state_dict().items(), jitted[0].state_dict().items()):
        np.testing.assert_allclose(j.numpy(), e.numpy(), rtol=1e-5, err_msg=name)
    assert jitted[0][1].num_batches_tracked.item() == 6


def test_jit_replays_a_classifier_step_with_new_targets_each_call():
    def setup():
        cg.manual_seed(5)
        model = nn.Linear(5, 4)
        return model, optim.Adam(model.parameters(), lr=0.05)

    def train(model, opt, x, t):
        return _module_step(model, opt, nn.functional.cross_entropy, x, t)

    step, eager, jitted = cg.jit(train), setup(), setup()
    for i in range(8):
        x = cg.from_numpy(_arrays((6, 5))[0])
        t = cg.tensor(rng.integers(0, 4, 6))
        assert step(*jitted, x, t).item() == pytest.approx(train(*eager, x, t).item(), rel=1e-6)
    assert step.replaying
    bad = step(*jitted, x, cg.tensor([0, 1, 2, 3, 4, 0]))     # class 4 of 4: not checked
    assert np.isnan(bad.item())


def test_jit_replays_an_embedding_step_with_new_indices_each_call():
    def setup():
        cg.manual_seed(6)
        model = nn.Sequential(nn.Embedding(7, 4), nn.Flatten(), nn.Linear(12, 2))
        return model, optim.AdamW(model.parameters(), lr=0.05)

    def train(model, opt, i, t):
        return _module_step(model, opt, nn.functional.cross_entropy, i, t)

    step, eager, jitted = cg.jit(train), setup(), setup()
    for _ in range(8):
        i = cg.tensor(rng.integers(-7, 7, (5, 3)))     # negative indices count from the end
        t = cg.tensor(rng.integers(0, 2, 5))
        assert step(*jitted, i, t).item() == pytest.approx(train(*eager, i, t).item(), rel=1e-6)
    assert step.replaying
    for (name, e), (_, j) in zip(eager[0].state_dict().items(), jitted[0].state_dict().items()):
        np.testing.assert_allclose(j.numpy(), e.numpy(), rtol=1e-5, err_msg=name)
    bad = cg.tensor([[0, 1, 2]] * 4 + [[0, 7, 1]])       # row 7 of 7: not read back, NaN
    with pytest.raises(IndexError, match="index 7 is out of bounds for dimension 0 with size 7"):
        train(*eager, bad, t)
    picked = cg.jit(lambda i: jitted[0][0](i))
    for _ in range(3):
        picked(cg.tensor([[0, 1, -7]]))
    assert picked.replaying
    rows = picked(bad).numpy()
    assert np.isnan(rows[4, 1]).all() and np.isfinite(np.delete(rows[4], 1, 0)).all()
    assert np.isfinite(rows[:4]).all()


def test_jit_captures_each_argument_shape_apart():
    w = cg.from_numpy(_arrays((3, 4))[0])
    step = cg.jit(lambda x: (x @ w).relu().sum(dim=0))
    for rows in (2, 5, 2, 5, 2, 5, 2, 5):
        x = cg.from_numpy(_arrays((rows, 3))[0])
        np.testing.assert_allclose(step(x).numpy(), np.maximum(x.numpy() @ w.numpy(), 0).sum(0),
                                   rtol=1e-5)
    assert step.replaying


def test_jit_follows_an_optimizer_state_loaded_between_replays():
    values = np.array([1.0, -2.0, 3.0], np.float32)
    (pe, pj) = (cg.from_numpy(values.copy(), requires_grad=True) for _ in range(2))
    (oe, oj) = (optim.Adam([p], lr=0.1) for p in (pe, pj))

    def train(p, opt):
        opt.zero_grad()
        (p * p * p).sum().backward()
        opt.step()

    step = cg.jit(train)
    saved = [None, None]
    for i in range(9):
        train(pe, oe)
        step(pj, oj)
        if i == 1:              # copies: numpy() is the memory of the live state tensors
            saved = [{"state": {k: {n: v.item() if n == "step" else v.numpy().copy()
                                    for n, v in st.items()} for k, st in sd["state"].items()},
                      "param_groups": sd["param_groups"]}
                     for sd in (o.state_dict() for o in (oe, oj))]
        if i == 5:              # back to step 2's moments: new state tensors
            oe.load_state_dict(saved[0])
            oj.load_state_dict(saved[1])
        np.testing.assert_allclose(pj.detach().numpy(), pe.detach().numpy(), rtol=1e-6)
    assert step.replaying


def test_jit_captures_anew_when_an_optimizers_hyperparameters_change():
    p = cg.from_numpy(np.array([1.0, -2.0], np.float32), requires_grad=True)
    opt = optim.SGD([p], lr=0.1, momentum=0.9)
    runs = []

    @cg.jit
    def step():
        runs.append(1)
        opt.zero_grad()
        (p * p).sum().backward()
        opt.step()

    for _ in range(4):
        step()
    opt.param_groups[0]["momentum"] = 0.5       # a constant in the update kernel
    step()
    assert len(runs) == 4 and not step.replaying


@pytest.mark.parametrize("why, body", [
    ("copies data between host and device", lambda w, log: (w * 2).sum().item()),
    ("copies data between host and device", lambda w, log: w + cg.tensor([1.0, 2.0])),
    ("keeps a [2] tensor", lambda w, log: log.append(w * 3)),
    ("keeps a [2] tensor", lambda w, log: log.append(cg.zeros(2))),
])
def test_jit_runs_a_step_eagerly_when_a_replay_could_be_wrong(why, body):
    w = cg.from_numpy(np.array([1.0, 2.0], np.float32))
    log, runs = [], []

    def step(w):
        runs.append(1)
        body(w, log)
        with cg.no_grad():
            w += 1

    jitted = cg.jit(step)
    with pytest.warns(RuntimeWarning, match=re.escape(f"jit(step) runs eagerly: the step {why}")):
        for _ in range(5):      # a warm-up, then captures: the first may only set things up
            jitted(w)
    jitted(w)
    assert len(runs) == 6 and not jitted.replaying
    np.testing.assert_array_equal(w.numpy(), [7.0, 8.0])


def test_jit_replays_gradients_accumulating_in_grad():
    values = np.array([1.0, 2.0], np.float32)
    eager, jitted = (cg.from_numpy(values.copy(), requires_grad=True) for _ in range(2))

    def accumulate(w):
        (w * w).sum().backward()        # .grad grows by 2w, a new tensor each call

    step = cg.jit(accumulate)
    for _ in range(6):
        accumulate(eager)
        step(jitted)
    assert step.replaying
    np.testing.assert_array_equal(jitted.grad.numpy(), eager.grad.numpy())
    np.testing.assert_array_equal(jitted.grad.numpy(), 12 * values)
    jitted.grad = None                  # the trace reads a .grad: capture anew, not fail
    step(jitted)
    np.testing.assert_array_equal(jitted.grad.numpy(), 2 * values)


def test_jit_replays_host_work_between_its_kernels_on_each_replays_values():
    from clgrad.frontend.jit_protocol import on_host
    calls = []

    def floor_on_host(arrays):
        calls.append(arrays[0].copy())
        return [np.floor(a) for a in arrays]

    w = cg.from_numpy(np.array([0.5, 1.5], np.float32))

    def step(x):
        y, = on_host("floor", floor_on_host, [x * 3 + w])
        w.add_(y)                   # kernels after the host work read its result
        return y * 2

    jitted, expected_w = cg.jit(step), np.array([0.5, 1.5], np.float32)
    for i in range(6):
        x = np.array([i + 0.25, -i], np.float32)
        y = np.floor(x * 3 + expected_w)
        expected_w += y
        np.testing.assert_array_equal(jitted(cg.from_numpy(x)).numpy(), 2 * y)
        np.testing.assert_array_equal(w.numpy(), expected_w)
    assert jitted.replaying and len(calls) == 6


def test_jit_keeps_a_step_eager_whose_calls_differ():
    w = cg.from_numpy(np.array([1.0, 2.0], np.float32))
    count = iter(range(1, 100))
    step = cg.jit(lambda: w.add_(next(count)))      # a new constant each call
    with pytest.warns(RuntimeWarning, match="launches different kernels"):
        for _ in range(6):
            step()
    np.testing.assert_array_equal(w.numpy(), [22.0, 23.0])


def test_jit_inside_a_jitted_step_runs_as_part_of_its_capture():
    w = cg.from_numpy(np.array([1.0, 2.0], np.float32))
    inner = cg.jit(lambda: w.mul_(2))
    for _ in range(4):
        inner()                 # replaying on its own
    outer = cg.jit(lambda: (inner(), w.add_(1)))
    for _ in range(4):
        outer()
    assert inner.replaying and outer.replaying
    np.testing.assert_array_equal(w.numpy(), [
        ((((16 * 2 + 1) * 2 + 1) * 2 + 1) * 2 + 1), ((((32 * 2 + 1) * 2 + 1) * 2 + 1) * 2 + 1)])


def test_jit_rejects_what_it_cannot_key_or_return():
    step = cg.jit(lambda x, n: x.sum().item())
    x = cg.ones(3)
    with pytest.raises(TypeError, match="jit: a step must return a tensor"):
        step(x, 2)
    with pytest.raises(TypeError, match="jit: arguments must be tensors or hashable values, "
                                        "got list"):
        step(x, [2])


def test_jit_captures_anew_when_a_tensor_it_reads_no_longer_fits_the_trace():
    w = cg.from_numpy(np.array([1.0, 2.0], np.float32))
    x = cg.from_numpy(np.array([0.5, 0.25], np.float32))
    runs = []

    @cg.jit
    def step(x):
        runs.append(1)
        with cg.no_grad():
            w.add_(x)
        return w * 2

    for _ in range(4):
        step(x)
    assert step.replaying and len(runs) == 3
    w.zero_()                   # w is a constant now, not the buffer the trace reads
    np.testing.assert_array_equal(step(x).numpy(), [1.0, 0.5])
    assert len(runs) == 4 and not step.replaying
    for _ in range(3):
        step(x)
    assert step.replaying and len(runs) == 6
    np.testing.assert_array_equal(w.numpy(), [2.0, 1.0])


def test_jit_reads_a_lazy_tensor_made_before_the_capture_as_the_value_it_had_then():
    w = cg.from_numpy(np.array([1.0, 2.0], np.float32))
    doubled = w * 2             # lazy: reads w's buffer of this moment
    step = cg.jit(lambda x: doubled + x)
    x = cg.from_numpy(np.array([10.0, 20.0], np.float32))
    for _ in range(3):
        step(x)
    with cg.no_grad():
        w += 1                  # w gets a new buffer; doubled keeps the old value
    assert step.replaying
    np.testing.assert_array_equal(step(x).numpy(), [12.0, 24.0])


def test_jit_binds_keyword_arguments_by_name_and_returns_tuples():
    a, b = (cg.from_numpy(v) for v in _arrays((3,), (3,)))
    step = cg.jit(lambda *, x, y: (x - y, x * y))
    for i in range(5):
        d, p = step(x=a, y=b) if i % 2 else step(y=b, x=a)
        np.testing.assert_array_equal(d.numpy(), a.numpy() - b.numpy())
        np.testing.assert_array_equal(p.numpy(), a.numpy() * b.numpy())
    assert step.replaying
    d, p = step(y=a, x=b)
    np.testing.assert_array_equal(d.numpy(), b.numpy() - a.numpy())


def test_jit_captures_without_scanning_the_heap(monkeypatch):
    # what a capture needs (tensors holding buffers, made or changed during it) is told by
    # the frontend; a walk over every Python object took longer the bigger the program
    import gc

    def refuse():
        raise AssertionError("a capture scanned the heap")
    monkeypatch.setattr(gc, "get_objects", refuse)
    cg.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 1))
    opt = optim.Adam(model.parameters(), lr=0.01)
    x, t = (cg.from_numpy(a) for a in _arrays((5, 4), (5, 1)))
    step = cg.jit(lambda x, t: _module_step(model, opt, nn.functional.mse_loss, x, t))
    losses = [step(x, t).item() for _ in range(5)]
    assert step.replaying and losses[-1] < losses[0]


def test_jit_replays_a_step_that_changes_a_view_of_its_parameter():
    # a view made before the step sees every replay's change of its base
    w = cg.from_numpy(np.array([1.0, 2.0, 3.0], np.float32), requires_grad=True)
    head = w[:2]

    @cg.jit
    def step(x):
        (w * x).sum().backward()
        with cg.no_grad():
            w.sub_(w.grad)
            w.grad.zero_()

    x = cg.from_numpy(np.array([1.0, 1.0, 1.0], np.float32))
    for k in range(1, 6):
        step(x)
        np.testing.assert_array_equal(head.detach().numpy(), [1.0 - k, 2.0 - k])
    assert step.replaying


def test_jit_keeps_the_step_s_own_changes_when_it_reads_a_lazy_tensor_made_before_it():
    # reading `doubled` computes it outside the trace; w's change, still lazy then, stays in
    w = cg.from_numpy(np.array([1.0, 2.0], np.float32))
    doubled = w * 2

    @cg.jit
    def step(x):
        w.add_(x)
        return doubled + w

    x = cg.from_numpy(np.array([1.0, 1.0], np.float32))
    for k in range(1, 6):
        np.testing.assert_array_equal(step(x).numpy(), [3.0 + k, 6.0 + k])
    assert step.replaying
    np.testing.assert_array_equal(w.numpy(), [6.0, 7.0])


def test_jit_replays_reuse_buffers_passed_between_kernels_but_not_what_they_return(
        monkeypatch):
    w = cg.tensor(rng.standard_normal((16, 16)).astype(np.float32))

    @cg.jit
    def step(x):
        h = (x @ w).relu().sum(1, keepdim=True)      # intermediates passed kernel to kernel
        return (h * x / 64).exp().sum(0)[:5], (h @ h.T).view(-1)[:3]

    inputs = [rng.standard_normal((16, 16)).astype(np.float32) for _ in range(6)]
    tensors = [cg.tensor(x) for x in inputs]
    results = [step(x) for x in tensors[:4]]      # the fourth call replays first
    allocated = []
    device = type(w.device)
    alloc = device.alloc
    monkeypatch.setattr(device, "alloc", lambda self, n: allocated.append(n) or alloc(self, n))
    results += [step(x) for x in tensors[4:]]
    assert step.replaying and sorted(allocated) == [3 * 4] * 2 + [5 * 4] * 2   # what they return
    for x, (first, second) in zip(inputs, results):   # earlier results keep their values
        h = np.maximum(x @ w.numpy(), 0).sum(1, keepdims=True)
        np.testing.assert_allclose(first.numpy(), np.exp(h * x / 64).sum(0)[:5], rtol=1e-4)
        np.testing.assert_allclose(second.numpy(), (h @ h.T).reshape(-1)[:3], rtol=1e-4)


def test_jit_replays_write_state_over_its_old_buffers_unless_something_still_reads_them():
    # Adam's p, m and v are written over their old buffers, as an eager step does
    # (engine/donation.py), except while a tensor or a NumPy array still shows the old value
    from clgrad.engine.donation import REFCOUNTS_VERIFIED
    values, x = _arrays((64,), (64,))
    (pe, pj) = (cg.from_numpy(values.copy(), requires_grad=True) for _ in range(2))
    (oe, oj) = (optim.Adam([p], lr=0.1) for p in (pe, pj))
    x = cg.from_numpy(x)

    def train(p, opt):
        opt.zero_grad()
        (p * p * x).sum().backward()
        opt.step()

    def buffers():
        state = oj.state[pj]
        return [t.node.arg.buffer for t in (pj, state["exp_avg"], state["exp_avg_sq"])]

    step = cg.jit(train)
    for _ in range(4):
        train(pe, oe)
        step(pj, oj)
    assert step.replaying
    before = buffers()
    train(pe, oe)
    step(pj, oj)
    assert [a is b for a, b in zip(before, buffers())] == [REFCOUNTS_VERIFIED] * 3
    np.testing.assert_allclose(pj.detach().numpy(), pe.detach().numpy(), rtol=1e-6)
    old = pj.detach().numpy().copy()
    doubled = pj.detach() * 2           # the old value, read by a lazy graph and by NumPy
    shown = oj.state[pj]["exp_avg"].numpy()
    shown_values = shown.copy()
    before = buffers()
    train(pe, oe)
    step(pj, oj)
    # NumPy's array is exp_avg's memory on a CPU device; a GPU's numpy() is a copy
    viewed = pj.device.shares_host_memory
    assert [a is b for a, b in zip(before, buffers())] == \
        [False, REFCOUNTS_VERIFIED and not viewed, REFCOUNTS_VERIFIED]
    np.testing.assert_array_equal(doubled.numpy(), old * 2)
    np.testing.assert_array_equal(shown, shown_values)
    for t, u in [(pj, pe), *zip(oj.state[pj].values(), oe.state[pe].values())]:
        np.testing.assert_allclose(t.detach().numpy(), u.detach().numpy(), rtol=1e-6)


def test_jit_computes_anew_what_an_earlier_call_s_result_still_holds():
    # eagerly, a graph over the same buffers as an earlier call's finds the value that call
    # computed while its result is held (nodes are interned): a replay reads it only while
    # the arguments are those buffers, and over new ones captures anew
    @cg.jit
    def step(x):
        return x.int() * 2

    x = cg.from_numpy(np.array([1.5, 2.5, 3.5], np.float32))
    first = step(x)                 # held
    for _ in range(3):
        assert step(x).tolist() == [2, 4, 6]
    assert step.replaying
    for k in range(5):
        y = cg.from_numpy(np.array([10.5 + k, 20.5, 30.5], np.float32))
        assert step(y).tolist() == [20 + 2 * k, 40, 60]
    assert step.replaying and first.tolist() == [2, 4, 6]
