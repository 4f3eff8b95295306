"""Fractional max pooling: values, indices and gradients against PyTorch with the same random
samples (they fix the windows), the modules, and bad arguments."""
import numpy as np
import pytest
import torch

import clgrad as cg
import clgrad.nn as cnn
from helpers import F, check, library, make
from test_small_dtypes import check_16_bit_exactly

SAMPLES_2D = make((2, 3, 2), low=0.0, high=1.0)
SAMPLES_3D = make((1, 2, 3), low=0.0, high=1.0)


def test_fractional_max_pool2d_values_indices_and_gradient():
    def pool(x):
        samples = library(x).tensor(SAMPLES_2D)
        return [*F(x).fractional_max_pool2d(x, (3, 2), output_size=(4, 5), return_indices=True,
                                            _random_samples=samples),
                F(x).fractional_max_pool2d(x, 2, output_ratio=(0.5, 0.75),
                                           _random_samples=samples)]
    check(pool, (2, 3, 10, 9))


def test_fractional_max_pool3d_unbatched_and_a_window_per_axis():
    def pool(x):
        samples = library(x).tensor(SAMPLES_3D)
        return F(x).fractional_max_pool3d_with_indices(x, (2, 3, 2), output_size=(3, 1, 4),
                                                       _random_samples=samples)
    pooled, _ = check(pool, (2, 5, 6, 7))
    # (check compares the gradients that flow: an unbatched pool's had none)
    assert pooled.requires_grad


def test_fractional_max_pool_gradient_goes_to_the_last_nan():
    x = make((1, 1, 4, 4))
    x[0, 0, 1, 1] = x[0, 0, 2, 2] = np.nan
    samples = SAMPLES_2D[:1, :1]
    check(lambda t: F(t).fractional_max_pool2d(t, 3, output_size=2,
                                               _random_samples=library(t).tensor(samples)), x)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_fractional_max_pool_windows_are_pytorch_s(dtype):
    """PyTorch places the windows by arithmetic in the input's dtype, alpha = (n - k) /
    (m - 1) rounded to it too; clgrad's bfloat16 alpha was float32's (6 of 1,170 indices
    and values apart here)."""
    x, samples = make((2, 3, 17, 19), seed=11), make((2, 3, 2), low=0.0, high=1.0, seed=12)
    runs = []
    for lib in (cg, torch):
        h = lib.tensor(x).to(getattr(lib, dtype))
        out, index = lib.nn.functional.fractional_max_pool2d(
            h, 3, (13, 15), return_indices=True, _random_samples=lib.tensor(samples).to(h.dtype))
        runs.append((np.array(out.float().tolist()), np.array(index.tolist())))
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    np.testing.assert_array_equal(runs[0][0], runs[1][0])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_fractional_max_pool_gradient_adds_output_after_output(dtype):
    """PyTorch's backward adds each output's gradient onto the element it picked in the type,
    output after output (as its max pools', test_small_dtype_gradients); clgrad's summed the
    overlapping windows' gradients in float32, its gather's scatter-add, and rounded once
    (the 2-D pool's here: 56 of 1,938 float16 elements apart, 57 bfloat16). 2-D, 3-D and
    unbatched, with zeros, infinities and a NaN in the input."""
    x2, x3 = make((2, 3, 17, 19), seed=11), make((2, 2, 9, 9, 8), seed=13)
    x2[0, 0, 0, :6] = 0.0, -0.0, np.inf, -np.inf, np.nan, 60000.0

    def pools(a, b, c):
        def samples(h, shape):
            return library(h).tensor(make(shape, low=0.0, high=1.0, seed=12)).to(h.dtype)
        return (F(a).fractional_max_pool2d(a, 3, (13, 15), _random_samples=samples(a, (2, 3, 2))),
                F(b).fractional_max_pool3d(b, 3, (5, 6, 5), _random_samples=samples(b, (2, 2, 3))),
                F(c).fractional_max_pool2d(c[1], (2, 3), (12, 11),
                                           _random_samples=samples(c, (1, 3, 2))))
    check_16_bit_exactly(pools, x2, x3, x2, dtype=dtype)


def test_fractional_max_pool_modules():
    x = cg.tensor(make((1, 2, 8, 8)))
    pooled, index = cnn.FractionalMaxPool2d(3, output_ratio=0.5, return_indices=True)(x)
    assert pooled.shape == (1, 2, 4, 4) and index.dtype == cg.int64
    # every value is the input's at its index
    flat = x.numpy().reshape(1, 2, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, index.numpy().reshape(1, 2, -1), 2),
                                  pooled.numpy().reshape(1, 2, -1))
    fixed = cnn.FractionalMaxPool3d(2, output_size=3, _random_samples=cg.tensor(SAMPLES_3D))
    assert "_random_samples" in dict(fixed.named_buffers())
    assert repr(fixed) == "FractionalMaxPool3d()"
    assert fixed(cg.tensor(make((1, 2, 5, 5, 5)))).shape == (1, 2, 3, 3, 3)


@pytest.mark.parametrize("build, error", [
    (lambda lib: lib.nn.FractionalMaxPool2d(2), ValueError),
    (lambda lib: lib.nn.FractionalMaxPool2d(2, output_size=2, output_ratio=0.5), ValueError),
    (lambda lib: lib.nn.FractionalMaxPool2d(2, output_ratio=1.5), ValueError),
    (lambda lib: lib.nn.functional.fractional_max_pool2d(lib.ones(1, 1, 4, 4), 3,
                                                         output_size=3), RuntimeError),
])
def test_fractional_max_pool_bad_arguments(build, error):
    for lib in (torch, cg):
        with pytest.raises(error):
            build(lib)
