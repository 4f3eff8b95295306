"""In-place ops on views write through to their base, as PyTorch's shared storage does."""
import numpy as np
import pytest

import clgrad as cg


def test_writes_through_slices_reshapes_and_transposes():
    x = cg.zeros(3, 4)
    x[0].add_(1)
    x[:, 1].fill_(5)
    x.view(-1)[11:].fill_(7)
    x.T[3].mul_(2)
    x[2, ::2].sub_(1)
    expected = np.zeros((3, 4), np.float32)
    expected[0] += 1
    expected[:, 1] = 5
    expected.reshape(-1)[11:] = 7
    expected.T[3] *= 2
    expected[2, ::2] -= 1
    np.testing.assert_array_equal(x.numpy(), expected)


def test_detached_view_updates_a_leaf_and_keeps_it_a_leaf():
    w = cg.ones(2, 2, requires_grad=True)
    w.detach().zero_()
    assert w.is_leaf and w.requires_grad
    np.testing.assert_array_equal(w.detach().numpy(), np.zeros((2, 2)))
    (w * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 3.0))


def test_view_of_a_leaf_requiring_grad_refuses_in_grad_mode_only():
    w = cg.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0].add_(1)
    with cg.no_grad():
        w[0].add_(1)
    np.testing.assert_array_equal(w.detach().numpy(), [[2, 2], [1, 1]])


def test_expanded_view_refuses_in_place_ops():
    z = cg.ones(3).expand(2, 3)
    with pytest.raises(RuntimeError, match="expanded view"):
        z.add_(1)


def test_gradient_flows_through_an_in_place_op_on_a_view():
    a = cg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = a * 1
    b[1].mul_(10)
    b.sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [1, 10, 1])


@pytest.mark.parametrize("op", ["sigmoid_", "tanh_", "exp_", "relu_", "add_"])
@pytest.mark.parametrize("squared", [False, True])
def test_gradient_through_an_in_place_op_on_a_view_of_a_value_read_after(op, squared):
    # the gradient reaching the slice reads b's new value (the op's result, or b * b's):
    # the slice's own gradient reads nothing, so b's change in place is no error there
    # (fuzz seeds 91700083, 91800259)
    a = cg.tensor([1.0, -2.0, 3.0, 0.5], requires_grad=True)
    b = a * 1
    getattr(b[1:3], op)(*([0.5] if op == "add_" else []))
    (b * b if squared else b).sum().backward()
    x = np.array([-2.0, 3.0])
    value, slope = {"sigmoid_": (1 / (1 + np.exp(-x)), np.exp(-x) / (1 + np.exp(-x)) ** 2),
                    "tanh_": (np.tanh(x), 1 - np.tanh(x) ** 2), "exp_": (np.exp(x), np.exp(x)),
                    "relu_": (np.maximum(x, 0), (x > 0) * 1.0), "add_": (x + 0.5, 1.0)}[op]
    new = np.array([1.0, *value, 0.5])
    outer = 2 * new if squared else np.ones(4)
    inner = np.array([1.0, *np.broadcast_to(slope, 2), 1.0])
    np.testing.assert_allclose(a.grad.numpy(), outer * inner, rtol=1e-5)


# ---- a view sees in-place changes of its base (PyTorch's views share the base's storage) ----
# Each scenario runs on clgrad and, where it is installed, on PyTorch, against the values
# PyTorch 2.13 gives.

try:
    import torch
except ImportError:
    torch = None

LIBS = [cg, pytest.param(torch, marks=pytest.mark.skipif(torch is None, reason="no torch"))]


def values(*tensors):
    return [t.detach().numpy().tolist() for t in tensors]


@pytest.mark.parametrize("lib", LIBS)
def test_views_see_the_base_change_in_place(lib):
    x = lib.zeros(2, 3)
    row, flat, col, d = x[0], x.view(-1), x.t()[2], x.detach()
    x.add_(1)
    x[1, 2] = 5.0
    assert values(row, flat, col, d) == [[1, 1, 1], [1, 1, 1, 1, 1, 5], [1, 5],
                                        [[1, 1, 1], [1, 1, 5]]]


@pytest.mark.parametrize("lib", LIBS)
def test_a_view_of_a_view_and_a_sibling_see_a_write_through_another_view(lib):
    x = lib.zeros(2, 4)
    row = x[1]
    part, other = row[1:3], row[::2]
    part.fill_(3.0)
    x.mul_(2)
    assert values(x, row, part, other) == [[[0, 0, 0, 0], [0, 6, 6, 0]], [0, 6, 6, 0], [6, 6],
                                          [0, 6]]


@pytest.mark.parametrize("lib", LIBS)
def test_zeroing_part_of_a_parameter_through_data(lib):
    w = lib.ones(2, 3, requires_grad=True)
    view = w[:, :2]
    w.data[:, :1].zero_()
    with lib.no_grad():
        w.mul_(3)
    (view * 2).sum().backward()
    assert values(w, view, w.grad) == [[[0, 3, 3], [0, 3, 3]], [[0, 3], [0, 3]],
                                       [[2, 2, 0], [2, 2, 0]]]


@pytest.mark.parametrize("lib", LIBS)
def test_gradient_through_a_view_read_after_its_base_changed(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    v = b[1:]
    b.mul_(x)                     # v is now x[1:] ** 2
    (v * lib.tensor([1.0, 10.0])).sum().backward()
    assert values(v, x.grad) == [[4, 9], [0, 4, 60]]


@pytest.mark.parametrize("lib", LIBS)
def test_a_saved_view_changed_through_its_base_is_refused(lib):
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    s = b[:2]
    z = (s * s).sum()             # mul's gradient reads s
    w = (b[2:] + 1).sum()         # add's does not read its input
    b.add_(1)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()
    w.backward()
    assert values(x.grad) == [[0, 0, 1]]
