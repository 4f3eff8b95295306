"""Gradients (and values) that overflowed into NaN or inf where PyTorch's stay finite (issue 13,
item 5): sigmoid far below zero, tanh where it rounds to +-1, GELU's tanh form far from zero,
powers at a zero base. Checked against PyTorch with helpers.check."""
import math

import numpy as np

from helpers import check, library, make

import clgrad as cg

nan, inf = math.nan, math.inf


def F(t):
    """clgrad.nn.functional or torch.nn.functional, whichever t belongs to."""
    return library(t).nn.functional


def test_sigmoid_gradient_far_below_zero():
    x = np.array([-200.0, -100.0, -90.0, -88.0, -20.0, 0.0, 20.0, 100.0], np.float32)
    check(lambda t: t.sigmoid(), x, atol=1e-30, grad_atol=1e-8)     # no NaN, not exact zeros
    check(lambda t: t.sigmoid(), make((4, 37), low=-120, high=120))


def test_tanh_saturates_to_one():
    x = np.array([8.0, 9.0, 9.5, 10.0, 20.0, 100.0, -9.5, -10.0, -100.0, 0.0, -0.0, nan],
                 np.float32)
    outs = check(lambda t: t.tanh(), x, atol=1e-7, grad_atol=1e-7)
    assert (np.abs(outs[0].detach().numpy()[2:9]) == 1).all()
    check(lambda t: t.tanh(), np.linspace(-30, 30, 111).astype(np.float32), atol=1e-7,
          grad_atol=1e-7)
    check(lambda t: t.tanh(), np.linspace(-30, 30, 111), dtype=np.float64, atol=1e-15,
          grad_atol=1e-15)


def test_tanh_is_within_an_ulp_everywhere():
    # Intel's AVX2 tanh was up to 4 ulps off (1.0 for tanh(9.0)); tanh from expm1 2 ulps
    # near 0, where PyTorch's is within 1 and rounds every float below 7e-3 correctly
    x = np.geomspace(1e-9, 12, 400_001).astype(np.float32)
    x = np.concatenate([x, -x])
    got = cg.tensor(x).tanh().numpy()
    exact = np.tanh(x.astype(np.float64)).astype(np.float32)
    ulps_apart = np.abs(got.view(np.int32).astype(np.int64) - exact.view(np.int32))
    assert ulps_apart.max() <= 1
    assert (ulps_apart[np.abs(x) < 7e-3] == 0).all()


def test_tanhshrink_near_zero_is_pytorchs():
    # x - tanh(x) cancels all but tanh's last bits: tanh(3.59e-4) was x itself, an ulp above
    # (fuzz seed 99004020), so tanhshrink gave 0 where PyTorch gives -1.54e-11
    x = np.array([3.59e-4, -3.6e-4, 4e-4, 1e-3, 2e-5, 0.3], np.float32)
    check(lambda t: F(t).tanhshrink(t), x, atol=0, rtol=1e-6, grad_atol=0, grad_rtol=1e-5)


def test_gelu_tanh_far_from_zero():
    x = np.concatenate([np.linspace(300, 400, 21), np.linspace(-400, -300, 21),
                        np.linspace(-6, 6, 25)]).astype(np.float32)
    outs = check(lambda t: F(t).gelu(t, approximate="tanh"), x, atol=1e-6)
    assert (outs[0].detach().numpy()[21:42] == 0).all()


def test_power_at_zero():
    exponents = np.array([-2.0, -1.0, 0.0, 0.5, 1.0, 2.0, 3.0], np.float32)
    for e in exponents.tolist():
        check(lambda x: x ** e, np.array([0.0, 1.0, 2.0, -1.0, 0.0], np.float32)
              if e == int(e) else np.array([0.0, 1.0, 2.0], np.float32))
    check(lambda x: 0 ** x, np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0], np.float32))
    check(lambda x: 0.0 ** x, np.array([-2.0, -1.0, 0.0, 1.0, 2.0, 3.0], np.float32))
    check(lambda x: 2.0 ** x, np.array([-2.0, 0.0, 3.0], np.float32))
    base = np.array([0, 0, 0, 0, 0, 0, 0, 2, -2, -2, 1.5], np.float32)
    exps = np.array([-2, -1, 0, 0.5, 1, 2, 3, 0, 0, 1.5, 0], np.float32)
    check(lambda b, e: b ** e, base, exps)
    check(lambda x: x ** 0.0, np.array([0.0, 1.0, -2.0], np.float32))


def test_power_gradient_at_zero_is_not_nan_in_long_rows():
    x = make((4, 37))
    x[:, ::4] = 0
    check(lambda t: t ** 3.0, x)
    check(lambda t: 0 ** t.abs(), x)


def test_std_gradient_where_the_std_is_zero():
    # PyTorch's std gradient is 0 there, not g / (2 * 0) * 0
    x = np.array([[1.0, 1.0, 1.0], [0.3, 0.1, 2.0], [0.0, 0.0, 0.0], [2.0, nan, 1.0]],
                 np.float32)
    check(lambda t: t.std(1), x)
    check(lambda t: t.std(1, keepdim=True) * 3, x)
    check(lambda t: t.std(), np.full((5,), 0.25, np.float32))
    check(lambda t: t.std(0), x[:1])        # one element: NaN, and a NaN gradient


def test_sigmoid_passes_an_infinite_gradient_on():
    # exp(x) / (1 + exp(x)) read x twice below zero: g * a - g * b was inf - inf = NaN
    x = np.array([-30.0, -17.5, -16.0, -5.0, -1.0, -0.0, 0.0, 1.0, 5.0, -inf, nan], np.float32)
    for g in (inf, -inf):
        check(lambda t: t.sigmoid() * g, x)
    check(lambda t: (t.sigmoid().logsumexp(0, keepdim=True) * t.sum()).sum(),
          np.array([-1.0, 0.5, inf, 2.0], np.float32))
    # the far form (exp(x) below -37) in float64; above 25 PyTorch's 1 - s cancels
    check(lambda t: t.sigmoid(), np.linspace(-40, 25, 131), dtype=np.float64, atol=1e-300)


def test_std_of_values_whose_squares_overflow_or_underflow():
    # PyTorch sums in float64: exp(10 * k)'s std is 8.9e29 though its variance overflows
    # (fuzz seed 500959), and 1e-25's squares do not vanish
    big = np.exp(10.0 * np.arange(8)).astype(np.float32)
    check(lambda t: t.std(), big)
    tiny = 1e-25 * np.arange(1, 9, dtype=np.float32)
    check(lambda t: t.std(0, correction=0), np.stack([big, big[::-1] * 2, tiny]).T)
    check(lambda t: t.std(1), np.array([[3e37, -3e37, 1e37], [inf, 1.0, 2.0], [nan, 1.0, 2.0],
                                        [4.0, 4.0, 4.0]], np.float32))
    check(lambda t: t.std(1), np.zeros((2, 13, 0, 3), np.float32))     # seed 820226
    check(lambda t: t.std(0), np.zeros((0, 3), np.float32))
