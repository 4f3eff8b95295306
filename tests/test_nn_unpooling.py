"""Max pooling's indices (return_indices, the *_with_indices functions, 1-D to 3-D),
max_unpool1d/2d/3d and their modules, lp_pool3d and conv_tbc against PyTorch."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import F, check, library, make, nn, torch

POOLS = [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
         dict(kernel_size=(2, 3), stride=(1, 2), dilation=2, ceil_mode=True),
         dict(kernel_size=5, stride=1)]          # 25 elements: the reduction path


@pytest.mark.parametrize("kwargs", POOLS)
def test_max_pool2d_indices(kwargs):
    x = make((2, 3, 7, 6))
    x[0, 0, 0, :3] = 5.0            # ties: the first wins
    x[0, 1, 2, 2] = np.nan
    check(lambda t: F(t).max_pool2d(t, return_indices=True, **kwargs), x)
    check(lambda t: F(t).max_pool2d_with_indices(t, **kwargs)[1], x, grad=False)


def test_max_pool1d_and_adaptive_indices():
    x = make((2, 3, 9))
    check(lambda t: [*F(t).max_pool1d(t, 3, 2, 1, return_indices=True),
                     *F(t).max_pool1d_with_indices(t, 2),
                     *F(t).adaptive_max_pool1d_with_indices(t, 4),
                     *F(t).adaptive_max_pool2d_with_indices(t.reshape(2, 3, 3, 3), (2, 2)),
                     *nn(t).MaxPool1d(3, return_indices=True)(t)], x)


def _volume():
    x = make((2, 3, 5, 6, 5))
    x[0, 0, 0, 0, :3] = 5.0         # ties within a plane and across depth: the first wins
    x[0, 0, 1, 0, 0] = 5.0
    x[1, 2, 2, 2, 2:4] = np.nan     # NaN wins; of two, the last
    return x


@pytest.mark.parametrize("kwargs, grad", [
    (dict(kernel_size=2), True),
    # the indices where windows overlap, reach into padding and past the end (the values'
    # gradient there is test_nn_pooling's, and costly to build with a NaN in the volume)
    (dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), dilation=(1, 2, 1),
          ceil_mode=True), False),
])
def test_max_pool3d_indices(kwargs, grad):
    check(lambda t: F(t).max_pool3d(t, return_indices=True, **kwargs), _volume(), grad=grad)
    check(lambda t: F(t).max_pool3d_with_indices(t, **kwargs)[1], _volume(), grad=False)


def test_adaptive_max_pool3d_indices_and_the_modules():
    check(lambda t: [*F(t).adaptive_max_pool3d(t, (2, 4, 3), return_indices=True),
                     *F(t).adaptive_max_pool3d_with_indices(t[1], (5, 2, 1)),
                     *nn(t).AdaptiveMaxPool3d((3, None, 2), return_indices=True)(t),
                     *nn(t).MaxPool3d(2, 1, return_indices=True)(t[1])], _volume())


def test_max_unpool3d_roundtrips_the_3d_pools():
    def roundtrip(t):
        functional, size = F(t), t.shape[-3:]     # (the last axis is odd: one past the pools)
        return [functional.max_unpool3d(*functional.max_pool3d(t, 2, return_indices=True), 2,
                                        output_size=size),
                functional.max_unpool3d(*functional.adaptive_max_pool3d(t, 3, True), 2,
                                        output_size=size)]
    check(roundtrip, make((2, 2, 6, 6, 5)))


@pytest.mark.parametrize("dims", [1, 2, 3])
def test_max_unpool_roundtrip(dims):
    shape = (2, 3) + (6,) * dims
    pooled, indices = getattr(torch.nn.functional, f"max_pool{dims}d")(
        torch.tensor(make(shape)), 2, return_indices=True)
    size = (7,) * dims                              # one more than the default: within stride

    def unpool(x, i):
        lib = library(x)
        return [getattr(lib.nn.functional, f"max_unpool{dims}d")(x, i, 2),
                getattr(lib.nn.functional, f"max_unpool{dims}d")(x, i, 2, output_size=size),
                getattr(lib.nn, f"MaxUnpool{dims}d")(2)(x, i)]
    check(unpool, pooled.numpy(), indices.numpy())
    with pytest.raises(ValueError, match="invalid output_size"):
        getattr(cnn.functional, f"max_unpool{dims}d")(cg.tensor(pooled.numpy()),
                                                      cg.tensor(indices.numpy()), 2,
                                                      output_size=(9,) * dims)


def test_lp_pool3d_and_conv_tbc():
    check(lambda x: [F(x).lp_pool3d(x, 2, 2), nn(x).LPPool3d(1.5, (2, 1, 2))(x)],
          make((1, 2, 4, 4, 4), low=0.1, high=2.0))
    check(lambda x, w, b: library(x).conv_tbc(x, w, b, 1), (7, 2, 4), (3, 4, 5), (5,))


@pytest.mark.skipif(torch is None, reason="compares exception types with PyTorch's")
@pytest.mark.parametrize("call", [
    lambda lib: lib.nn.functional.max_pool3d(lib.zeros(2, 4, 4), 2, return_indices=True),
    lambda lib: lib.nn.functional.adaptive_max_pool3d_with_indices(lib.zeros(2, 4, 4), 2),
])
def test_3d_pooling_errors_are_pytorchs(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type):
        call(cg)
