"""PyTorch's less common Tensor methods and torch.* functions: the in-place shape changes,
the scatters into slices and diagonals, quantiles, integer and special functions, and the
process-wide settings, forward and backward against PyTorch."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check


# ---- in-place shape changes: the tensor itself takes the new shape ----

@pytest.mark.parametrize("change", [
    lambda x: x.squeeze_(), lambda x: x.squeeze_(1), lambda x: x.squeeze_((0, 1)),
    lambda x: x.unsqueeze_(-1), lambda x: x.transpose_(0, 2), lambda x: x.swapaxes_(0, 2),
    lambda x: x.swapdims_(-1, 0), lambda x: x[0].t_(), lambda x: x[0, 0].t_(),
])
def test_in_place_shape_changes(change):
    def fn(x):
        y = x * 1
        out = change(y)
        return out, y.grad_fn.name(), y._version     # (a tuple: check compares the tensor)
    check(lambda x: fn(x)[0], (2, 1, 3))
    ours, theirs = fn(cg.ones(2, 1, 3, requires_grad=True)), fn(_torch_ones((2, 1, 3)))
    assert (tuple(ours[0].shape), ours[1:]) == (tuple(theirs[0].shape), theirs[1:])


def _torch_ones(shape):
    import torch
    return torch.ones(shape, requires_grad=True)


def test_in_place_shape_change_keeps_views_in_their_layout():
    x = cg.tensor(np.arange(6.0).reshape(2, 3))
    row = x[0]
    x.t_()
    assert x.shape == (3, 2) and x._version == 1
    row.mul_(10)                     # the view made before writes where it did
    np.testing.assert_array_equal(x.numpy(), np.arange(6.0).reshape(2, 3).T * [[10, 1]])
    x.zero_()
    np.testing.assert_array_equal(row.numpy(), [0, 0, 0])
    # a view that changes shape stays a view of its base
    w = cg.tensor(np.arange(6.0).reshape(2, 3))
    u = w.view(3, 2)
    u.t_()
    u.mul_(2)
    np.testing.assert_array_equal(u.numpy(), np.arange(6.0).reshape(3, 2).T * 2)
    np.testing.assert_array_equal(w.numpy(), np.arange(6.0).reshape(2, 3) * 2)
    d = w.detach()
    d.unsqueeze_(0)
    assert w.shape == (2, 3) and d.shape == (1, 2, 3)


def test_in_place_shape_change_errors():
    with pytest.raises(RuntimeError, match="unsqueeze_.*leaf Variable"):
        cg.ones(2, requires_grad=True).unsqueeze_(0)
    with pytest.raises(RuntimeError, match="t_.*3D"):
        cg.ones(2, 2, 2).t_()
    with pytest.raises(IndexError, match="transpose_"):
        cg.ones(2, 2).transpose_(0, 5)
    with cg.no_grad():
        leaf = cg.ones(2, requires_grad=True)
        assert leaf.unsqueeze_(0).shape == (1, 2) and leaf.is_leaf
