"""float16 and bfloat16 gradients against PyTorch's bit for bit: the formulas of
derivatives.yaml that read the rounded 16-bit input, computed op by op in the type as PyTorch
runs them (each op rounded, a Python number taken whole), and the reductions, scans, losses
and products whose CPU kernels accumulate in float32."""
import numpy as np
import pytest
import torch

from helpers import F, library, make
from test_small_dtypes import check_16_bit_exactly

# rows of 256 as PyTorch's vector code takes them whole; the first row starts with edges
EDGES = [0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 0.5, 2.0 ** -14, -3.0, 60000.0, 1e-3]
X = make((4, 256), low=-3, high=3)
X[0, :len(EDGES)] = EDGES


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_gradients_of_the_input_take_pytorch_s_steps(dtype):
    """erf's 2 / sqrt(pi) * exp(-(x²)) * g, log1p's g / (x + 1), asinh's and acosh's
    g * rsqrt(x² ± 1), lgamma's g * digamma(x), digamma's g * trigamma(x), sinc's, logit's
    g / (x (1 - x)), softsign's DivBackward0, ndtr's composite: each step in the type, as
    PyTorch runs them; log_sigmoid's in float32 from exp(-|x|) rounded to the type (its
    forward's buffer). clgrad's computed them in float32, or took the builtin's rule in
    another order: 12-80% of the elements an ulp or more off (and logit's value, log(p) -
    log(1 - p), where PyTorch's is log(p / (1 - p)): 45%). A sin and a cos of one value,
    which a kernel computes with one sincos, are each rounded (sinc's cos was not)."""
    lib = library
    functions = (lambda h: h.erf(), lambda h: h.erfc(), lambda h: (h / 3.5).log1p(),
                 lambda h: h.asinh(), lambda h: (h.abs() + 1.25).acosh(),
                 lambda h: (h.abs() + 2).lgamma(), lambda h: (h.abs() + 2).digamma(),
                 lambda h: h.sinc(), lambda h: F(h).logsigmoid(h * 2),
                 lambda h: F(h).softsign(h), lambda h: lib(h).special.ndtr(h),
                 lambda h: h.sin() - h.cos(),
                 lambda h: (h / 7 + 0.5).logit(), lambda h: (h / 6 + 0.5).logit(eps=0.1))
    # (PyTorch's vector erf is an ulp off at some near ties, a few in float16 below 2^-6:
    # not those)
    h = torch.tensor(X).to(getattr(torch, dtype))
    right = [(t.erf() == t.double().erf().to(t.dtype)).numpy() for t in (h, h * 0.5 ** 0.5)]
    x = np.where(right[0] & right[1], X, 0.5)
    # (logit's with eps of a NaN is NaN, as PyTorch's scalar code's; its vector code's is 0)
    inputs = [x] * (len(functions) - 1) + [np.nan_to_num(x, nan=0.5)]
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(functions, h)), *inputs,
                         dtype=dtype)


# products near 1, with zeros (two in the first row), an inf and a NaN
P = make((4, 48), low=0.6, high=1.5)
P[0, [5, 30]], P[1, 7], P[2, 11], P[3, 40] = 0.0, 0.0, np.inf, np.nan


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_scans_and_products_take_pytorch_s_steps(dtype):
    """PyTorch's cumsum, cumprod and logcumsumexp of a 16-bit float accumulate in float32
    and round each result, and their backward formulas run in the type (logcumsumexp's
    reversed logcumsumexp of log|g| - r, + x, exp, each rounded); its prod rounds each
    product to the type, in turn (rows shorter than its four vector accumulators, and
    across rows: longer rows it takes in vector lanes), and its gradient is g * (prod / x)
    where the tensor holds no zero, else g times the exclusive cumprods from either end
    multiplied. clgrad's logcumsumexp gradient ran in float32 (90% of the elements off),
    its half scans rounded logaddexp's running max, and its prod rounded once."""
    scans = (lambda h: h.logcumsumexp(1), lambda h: h.logcumsumexp(0),
             lambda h: h.cumsum(1), lambda h: (h / 4 + 1).cumprod(0))
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(scans, h)),
                         *[X] * len(scans), dtype=dtype)
    products = (lambda h: h.cumprod(1), lambda h: h.prod(1), lambda h: h.prod(0),
                lambda h: h[1:].prod(1), lambda h: h[2:3].prod(), lambda h: h[0].prod(),
                lambda h: h[:, :1].prod(1, keepdim=True), lambda h: h[:0].prod(0))
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(products, h)),
                         *[P] * len(products), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_cross_entropy_gradient_takes_pytorch_s_steps(dtype):
    """cross_entropy's gradient is PyTorch's nll_loss backward (-g / total, times the class
    weight, in the type) and then its log_softmax backward, g - exp(logp) sum(g) in float32
    from the rounded logp, rounded once; label smoothing's parts scaled by their numbers
    whole. clgrad's differentiated its float32 log_softmax (45% of the elements off). (A
    reduced loss within 2 ulps: PyTorch's nll_loss sums the losses, and the class weights a
    weighted mean divides by, in cascaded 16-bit partial sums, clgrad in float32: not a
    weighted mean here.)"""
    lib = library
    rng = np.random.default_rng(0)
    classes = rng.integers(0, 16, (64,))
    classes[[3, 17]] = -100
    spatial = rng.integers(0, 16, (8, 8))
    weight = make((16,), low=0.5, high=2)
    probs = np.abs(X[2:4].reshape(32, 16)) + 0.1
    probs /= probs.sum(1, keepdims=True)

    def losses(a, b, c, d, e, p):
        f, t = F(a), lib(a).tensor
        w = t(weight).to(a.dtype)
        return (f.cross_entropy(a.reshape(64, 16), t(classes), reduction="none"),
                f.cross_entropy(b.reshape(64, 16), t(classes), label_smoothing=0.1),
                f.cross_entropy(c.reshape(64, 16), t(classes), w, reduction="sum"),
                f.cross_entropy(d.reshape(8, 16, 8), t(spatial), reduction="none",
                                label_smoothing=0.2),
                f.cross_entropy(e[1:3].reshape(32, 16), p.to(e.dtype), w, label_smoothing=0.1))
    # (each of its own leaf: no leaf sums 16-bit gradients in an order of its own)
    check_16_bit_exactly(losses, *[X] * 5, probs.astype(np.float32), dtype=dtype,
                         narrowed=range(5), value_ulps=2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_addbmm_and_convolution_biases_take_pytorch_s_steps(dtype):
    """PyTorch's addbmm of 16-bit floats runs an addmm per batch, each beta * input (the
    running result after the first) + alpha * its float32 sum, rounded once; clgrad summed
    the batches first (half the elements an ulp or more off). The gradients of the addmm
    family are g times beta, and g's product with the other operand times alpha, the
    numbers whole (clgrad's multiplied g by alpha rounded to the type before the product:
    half the elements off, some by a hundred ulps). A convolution's bias gradient
    is one float32 sum of g over the batch and the image, rounded once; clgrad's summed each
    image's first (a third to two thirds off). Sixty-fourths of [-2, 2): products and sums
    exact in float32 whatever their order, rounded only to the 16-bit type."""
    def grid(shape, seed=1):
        return np.round(make(shape, seed=seed) * 64) / 64
    c, a, b = grid((8, 16)), grid((3, 8, 32)), grid((3, 32, 16))
    check_16_bit_exactly(lambda c, a, b: (
        library(c).addbmm(c, a, b), library(c).addbmm(c[0], a, b, beta=0.5, alpha=2),
        library(c).addbmm(c, a[:, :, :0], b[:, :0], beta=0.5)), c, a, b, dtype=dtype, grid=64)

    def scaled(c, a, b):
        lib = library(c)
        return (lib.addbmm(c[0], a, b, beta=0.7, alpha=0.3),
                lib.addmm(c, a[0], b[1], beta=0.7, alpha=0.3),
                lib.baddbmm(c[:1], a, b, beta=0.3, alpha=0.7),
                lib.addmv(c[:, 0], a[2], b[0, :, 1], beta=0.3, alpha=0.7))
    # (values within an ulp: beta * c + alpha * dot of numbers not powers of two rounds in
    # float32 in an order of PyTorch's gemm's own)
    check_16_bit_exactly(scaled, c, a, b, dtype=dtype, grid=64, value_ulps=1)

    def convolutions(bias):
        lib, f = library(bias), F(bias)
        outs = []
        for dims, shape in ((1, (3, 4, 20)), (2, (3, 4, 9, 9)), (3, (2, 4, 5, 5, 5))):
            x, w = (lib.tensor(grid(s)).to(bias.dtype) for s in (shape, (6, 4) + (3,) * dims))
            outs.append(getattr(f, f"conv{dims}d")(x, w, bias, padding=1))
        return tuple(outs)
    check_16_bit_exactly(convolutions, grid((6,)), dtype=dtype, grid=64)
