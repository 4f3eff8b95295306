"""Max pooling's indices (return_indices, the *_with_indices functions), max_unpool1d/2d/3d
and their modules, lp_pool3d and conv_tbc against PyTorch."""
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
