"""Python numbers in float arithmetic are read from buffers, not compiled into kernels: a loop
whose numbers change at every step builds its kernels once (frontend/scalar_inputs.py)."""
import math
import warnings

import numpy as np
import pytest
import torch

import clgrad as cg
from clgrad.engine import plan

X = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)


def _step(x, w, number):
    """A graph with a number in each kind of place: a product, a sum, a reversed
    subtraction, a division and add's alpha. (Two numbers of one value are one leaf, and
    another graph: 1 - 0.5 is 0.5.)"""
    return ((x * number + w) / (1 - number)).add(w, alpha=number).sum()


def test_a_loop_over_changing_numbers_plans_and_builds_its_kernels_once():
    x = cg.tensor(X)
    w = cg.tensor(X, requires_grad=True)
    loss = _step(x, w, 0.7)
    loss.backward()
    loss.item(), w.grad.numpy()
    plans = len(plan._plans)
    for number in (0.1, 0.2, 0.3, -2.5, 1e-3):
        w.grad = None
        loss = _step(x, w, number)
        loss.backward()
        tw = torch.tensor(X, requires_grad=True)
        want = _step(torch.tensor(X), tw, number)
        want.backward()
        np.testing.assert_allclose(loss.item(), want.item(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
    assert len(plan._plans) == plans


def test_bounds_and_fills_that_change_plan_once():
    """clamp's bounds, where's and masked_fill's numbers, an integer tensor's product with a
    float, and a comparison, with numbers that change at every call."""
    def graph(lib, x, n, number):
        mask = x > number
        return (x.clamp(min=-number, max=number) + lib.where(mask, x, number * 2)
                + x.masked_fill(mask, -number) + n * number + mask.float())

    x, n = cg.tensor(X), cg.arange(4)
    graph(cg, x, n, 0.7).numpy()
    plans = len(plan._plans)
    for number in (0.2, 1.5, 2.25):
        np.testing.assert_array_equal(
            graph(cg, x, n, number).numpy(),
            graph(torch, torch.tensor(X), torch.arange(4), number).numpy())
    assert len(plan._plans) == plans


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
def test_edge_numbers_are_pytorch_s(dtype):
    """NaN, both zeros, infinities, a number past the type's range and one between two of its
    values, each read from a buffer of its own (-0.0 and 0.0 are equal as keys of a dict)."""
    numbers = [math.nan, 0.0, -0.0, math.inf, -math.inf, 1e39, 0.1, 1 / 3, 7]
    ours = cg.tensor(X).to(getattr(cg, dtype))
    theirs = torch.tensor(X).to(getattr(torch, dtype))
    for number in numbers:
        for ours_r, theirs_r in ((ours * number, theirs * number), (number / ours, number / theirs),
                                 (ours + number, theirs + number), (ours - number, theirs - number)):
            assert str(theirs_r.dtype).split(".")[1] == ours_r.dtype.name
            np.testing.assert_array_equal(np.array(ours_r.float().tolist()),
                                          theirs_r.float().numpy(), err_msg=f"{number}")
        # the sign of a zero survives: 1 / (x * -0.0) is -inf where x > 0
        signs = np.sign(np.array((1 / (ours.abs() + 1) * number).float().tolist()))
        np.testing.assert_array_equal(signs, np.sign(
            (1 / (theirs.abs() + 1) * number).float().numpy()))


def test_fills_and_lerp_weights_that_change_plan_once():
    """full() with a float or an int (a sampler's `full((n,), t)`), and lerp's weight. A
    fill's memory is its own: writing it through NumPy leaves the number's buffer alone."""
    def graph(lib, x, number):
        steps = lib.full((3, 4), int(number * 4) + 2)
        return x.lerp(lib.full((3, 4), number), number / 3) * steps

    x = cg.tensor(X)
    plans = []
    for number in (1.5, 0.25, 2.5, -0.75):
        # (PyTorch's vectorized lerp is one fma, its scalar tail two roundings: an ulp apart)
        np.testing.assert_allclose(graph(cg, x, number).numpy(),
                                   graph(torch, torch.tensor(X), number).numpy(), rtol=2e-7)
        plans.append(len(plan._plans))
    assert plans[0] == plans[-1]
    filled = cg.full((2,), 2.5)
    filled.numpy()[:] = 9
    assert (x * 2.5)[0, 0].item() == X[0, 0] * 2.5
    assert cg.full((2,), 2.5).tolist() == [2.5, 2.5]


def test_integer_sums_and_comparisons_with_changing_numbers_plan_once():
    """A position (arange + t) and a mask's threshold (arange < t), as a loop over a cache's
    positions makes them, in int8 and int64 (a sum past int8 wraps, as PyTorch's)."""
    def graph(lib, dtype, t):
        positions = lib.arange(6, dtype=dtype)
        return (positions + t, t - positions, positions < t, positions.eq(t), positions.clamp(
            max=t), lib.where(positions > t, positions, t))

    for dtype in ("int8", "int64"):
        plans = []
        for t in (2, 3, 100, -5, 4):
            for ours, theirs in zip(graph(cg, getattr(cg, dtype), t),
                                    graph(torch, getattr(torch, dtype), t)):
                np.testing.assert_array_equal(ours.numpy(), theirs.numpy(), err_msg=f"{t}")
            plans.append(len(plan._plans))
        assert plans[0] == plans[-1]


def test_a_kept_number_s_buffer_is_never_given_to_an_output():
    """A 0-d result the size of a number's buffer, read at its own index: the number's buffer
    must not take the result (the next use of the number would read the result)."""
    x = cg.tensor(3.0)
    for value in (3.0, 5.0, 7.0):
        y = cg.tensor(value) * 0.25
        assert y.item() == value * 0.25
        assert (x * 0.25).item() == 0.75


def test_jit_replays_a_step_with_a_constant_number_and_runs_a_changing_one_eagerly():
    w0 = np.ones(4, np.float32)
    w = cg.tensor(w0, requires_grad=True)

    @cg.jit
    def step(w, x):
        loss = (w * x * 0.5).sum()
        loss.backward()
        return loss

    x = cg.tensor(np.arange(4, dtype=np.float32))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(6):
            w.grad = None
            assert step(w, x).item() == 3.0
            np.testing.assert_array_equal(w.grad.numpy(), np.arange(4) * 0.5)

    @cg.jit
    def scaled(w, x):
        return (w * x * scale).sum()     # a number the step reads from outside, new each call

    with pytest.warns(RuntimeWarning, match="jit"):
        for scale in np.linspace(0.1, 1, 8).tolist():
            assert scaled(w, x).item() == pytest.approx(6 * scale, rel=1e-6)
