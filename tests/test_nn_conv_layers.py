"""Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d and ConvTranspose3d layers against PyTorch's with the same
weights: reprs, outputs, input and parameter gradients, padding modes, output_size."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import make, torch


def _compare(name, args, kwargs, shape, **call):
    ours, theirs = getattr(cnn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert [k for k, _ in ours.named_parameters()] == [k for k, _ in theirs.named_parameters()]
    ours.load_state_dict({k: cg.tensor(v.detach().numpy()) for k, v in
                          theirs.state_dict().items()})
    x = make(shape)
    tx, cx = torch.tensor(x, requires_grad=True), cg.tensor(x, requires_grad=True)
    t, c = theirs(tx, **call), ours(cx, **call)
    (t * t).sum().backward()
    (c * c).sum().backward()
    np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(cx.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4)
    for (_, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv1d_padding_modes(mode):
    _compare("Conv1d", (4, 6, 3), dict(padding=2, padding_mode=mode), (2, 4, 9))


def test_conv_same_padding_groups_dilation_and_strides():
    _compare("Conv1d", (4, 6, 4), dict(padding="same", groups=2, dilation=2,
                                       padding_mode="reflect"), (2, 4, 9))
    _compare("Conv2d", (4, 6, (3, 2)), dict(stride=2, padding=1, padding_mode="circular",
                                            bias=False), (2, 4, 7, 6))


def test_transposed_convolutions():
    _compare("ConvTranspose1d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1),
             (2, 4, 9))
    _compare("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 7, 6),
             output_size=(14, 12))
    _compare("ConvTranspose2d", (4, 2, (2, 3)), dict(dilation=2, bias=False), (4, 7, 6))


def test_3d_convolutions():
    _compare("Conv3d", (4, 6, (2, 3, 2)), dict(padding=1, groups=2), (2, 4, 4, 5, 4))
    # (padding modes other than zeros pad all three axes before the convolution: one row, as
    # their 3-D backward is a costly kernel to build)
    _compare("Conv3d", (2, 3, 2), dict(padding="same", dilation=(1, 2, 1),
                                       padding_mode="circular"), (2, 4, 3, 5))
    _compare("ConvTranspose3d", (4, 2, 2), dict(stride=2, padding=1, dilation=(1, 2, 1),
                                                bias=False), (4, 3, 3, 2), output_size=(5, 6, 3))


def test_conv_layer_errors():
    with pytest.raises(ValueError, match="must be divisible by groups"):
        cnn.Conv1d(3, 4, 2, groups=2)
    with pytest.raises(ValueError, match="padding_mode must be one of"):
        cnn.Conv2d(3, 4, 2, padding_mode="mirror")
    with pytest.raises(ValueError, match='Only "zeros" padding mode'):
        cnn.ConvTranspose2d(3, 4, 2, padding_mode="reflect")
    with pytest.raises(ValueError, match="not supported for strided convolutions"):
        cnn.Conv1d(3, 4, 2, stride=2, padding="same")
    with pytest.raises(ValueError, match="valid sizes range from 13 to 14"):
        cnn.ConvTranspose1d(2, 2, 3, stride=2, padding=1)(cg.zeros(1, 2, 7), output_size=[20])
