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
    np.testing.assert_array_equal(w.numpy(), np.zeros((2, 2)))
    (w * 3).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.full((2, 2), 3.0))


def test_view_of_a_leaf_requiring_grad_refuses_in_grad_mode_only():
    w = cg.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        w[0].add_(1)
    with cg.no_grad():
        w[0].add_(1)
    np.testing.assert_array_equal(w.numpy(), [[2, 2], [1, 1]])


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
