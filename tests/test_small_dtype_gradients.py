"""float16 and bfloat16 gradients against PyTorch's bit for bit: the formulas of
derivatives.yaml that read the rounded 16-bit input, computed op by op in the type as PyTorch
runs them (each op rounded, a Python number taken whole), and the reductions, scans, losses
and products whose CPU kernels accumulate in float32."""
import warnings

import numpy as np
import pytest
import torch

import clgrad as cg
from clgrad.frontend import creation
from helpers import SEED, F, library, make
from test_small_dtypes import check_16_bit_exactly

upload = creation.tensor

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


# each channel's ten values five and their negatives, in a shuffled order: means of 0 (a row
# of 16-bit values often has a mean halfway between two, which PyTorch's Welford mean rounds
# by its own float32 error); a row with a NaN, one with an inf
HALVES = make((16, 6, 5), seed=5)
NORMED = np.ascontiguousarray(np.concatenate([HALVES, -HALVES], 2)[
    ..., np.random.default_rng(5).permutation(10)])
NORMED[3, 2, 4], NORMED[9, 5, 0] = np.nan, np.inf


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_layer_and_group_norm_gradients_take_pytorch_s_steps(dtype):
    """PyTorch's CPU backward kernels of a 16-bit layer_norm and group_norm read the mean and
    rstd the forward kernel saved, rounded to the type (float32 beside float32 parameters),
    and compute ds = sum(g x w), db = sum(g w), b = (db mean - ds) rstd^3 / n, c = -b mean -
    db rstd / n and the gradient (rstd w g + b x) + c in float32, rounded once; group norm's
    weight gradient is the sum over the batch of (ds - db mean) rstd, its bias's the sum of
    g. clgrad differentiated its float32 normalisation with unrounded statistics: a third
    of the input's gradient an ulp or more off, up to ten where b x and c cancel (fuzz seeds
    98000035: layer_norm, 98000041: group_norm). (Values within an ulp: PyTorch's statistics
    are Welford's. Layer norm's weight and bias gradients are sums that PyTorch keeps in the
    type per thread, rounded at each row: not compared here.)"""
    w, b = make((6, 10), low=0.5, high=2), make((6, 10), low=-1, high=1)

    def norms(a, c, e, f, h, w16, b16):
        lib, fn = library(a), F(a)
        weight, bias = (lib.tensor(v) for v in (w, b))
        return (fn.layer_norm(a, (10,)),
                fn.layer_norm(c, (6, 10), weight.to(c.dtype), bias.to(c.dtype)),
                lib.native_layer_norm(e[:, :1], [1, 10], weight[:1].to(e.dtype), None,
                                      1e-5)[0],
                fn.group_norm(f, 3),
                fn.group_norm(h.reshape(16, 6, 2, 5), 2, w16[:, 0], b16[:, 0]))
    # (ds and db are float32 sums over vectors of the device's width, as PyTorch's over its
    # own: 1 of 960 elements of layer_norm's gradient rounded an ulp apart with Intel's
    # runtime's 16 lanes on an AVX-512 Zen 4, none with 8)
    check_16_bit_exactly(norms, *[NORMED] * 5, w, b, dtype=dtype, value_ulps=1,
                         grad_flips=0.01)

    check_16_bit_exactly(lambda a, c: (
        library(a).native_group_norm(a, None, None, 16, 6, 10, 2, 1e-5)[0],
        F(c).layer_norm(c[:0], (6, 10))), NORMED, NORMED, dtype=dtype, value_ulps=1)

    # float32 parameters: float32 statistics, PyTorch's Welford's, and the weight's and bias's
    # gradients float32 sums in an order of its own; an ulp of the type, and 1e-6, away
    runs = []
    for lib in (cg, torch):
        leaves = [lib.tensor(v, requires_grad=True) for v in (NORMED, NORMED, w[:, 0], b[:, 0])]
        a, c = (leaf.to(getattr(lib, dtype)) for leaf in leaves[:2])
        outs = (F(a).layer_norm(a, (6, 10), lib.tensor(w), lib.tensor(b)),
                lib.native_group_norm(c, *leaves[2:], 16, 6, 10, 3, 1e-5)[0])
        lib.autograd.backward(outs, [lib.tensor(make(NORMED.shape, seed=SEED + k)).to(o.dtype)
                                     for k, o in enumerate(outs)])
        runs.append([np.array(leaf.grad.tolist()) for leaf in leaves])
    for k, (got, want) in enumerate(zip(*runs)):
        rtol = torch.finfo(getattr(torch, dtype)).eps if k < 2 else 1e-6
        np.testing.assert_allclose(got, want, rtol=rtol, atol=0, err_msg=f"gradient {k}")


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_softmax_gradients_take_pytorch_s_steps(dtype):
    """PyTorch's softmax and log_softmax of a 16-bit float compute in float32 and round once,
    and their gradients y (g - sum(g y)) and g - exp(y) sum(g) in float32 from the rounded
    result y, rounded once, along the last dim and along another. (Along another dim, its
    softmax kernel's columns past the last whole vector of a thread's share round exp(x -
    max) to the type before dividing: its answer there depends on its vector width and
    thread count; the softmaxes here have 256 columns, whole vectors.) clgrad's were these
    already: no change."""
    functions = (lambda h: h.softmax(0), lambda h: h.log_softmax(0),
                 lambda h: h.softmax(1), lambda h: h.log_softmax(-1),
                 lambda h: h.reshape(2, 2, 256).softmax(1),
                 lambda h: h.reshape(4, 16, 16).log_softmax(1))
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(functions, h)),
                         *[X] * len(functions), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_products_by_one_element_of_another_dtype_read_it_whole(dtype):
    """PyTorch's CPU mul and div of a 16-bit float by a tensor of one element of another
    dtype (a 0-d float32, float64 or int64, an int64 of shape (1,)) read that element whole,
    in float32, as they read a Python number, and round the product once; with the tensor
    first, or in a sum, it is rounded to the type first (a Python number is whole in
    either place). Their gradients are g * b and g / b to the 16-bit input (b whole again),
    and to b g * a and -g * ((a / b) / b) in the type (each quotient by b whole, rounded),
    summed over the shape in it, cast to b's dtype. clgrad's rounded b to the type (a third
    to a half of the elements an ulp off in float16; fuzz seed 99000207). Sixty-fourths of
    [-2, 2) (the sum of g * a exact in float32 in any order), and the edges in a row of
    their own, by b detached (b's gradient holds no NaN)."""
    lib = library
    h = np.round(make((4, 64)) * 64) / 64
    edges = np.array([EDGES], np.float32)

    def products(h, s, t, e, k):
        whole = lib(h).tensor([3, 2049])
        return (h * s, h / t, h[:1, :0] * s, t * h, h + s, e * s.detach(), e / t.detach(),
                h * whole[1], h / whole[:1], whole[0] / h[1:2], 0.1 * k)
    check_16_bit_exactly(products, h, np.float32(1 / 3), np.float64(0.7), edges, h,
                         narrowed=(0, 3, 4), dtype=dtype, grid=64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_quotient_gradients_take_pytorch_s_steps(dtype):
    """PyTorch's gradient of a / b to b is -g * ((a / b) / b), each step rounded to the type,
    also where b is broadcast (then summed in the type); clgrad's rounded -(g (a / b)) / b
    (a third of the elements an ulp off in bfloat16; fuzz seed 99000301, through normalize's
    division by the norm)."""
    b = make((4, 256), seed=SEED + 7, low=0.25, high=3)
    b[1, :4] = 0.0, -0.0, np.inf, 2.0 ** -14
    check_16_bit_exactly(lambda a, b, c: (a / b, a[:, :16] / c[:, :1], c[:, :1] / a[:, :16]),
                         X, b, b, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_normalize_gradient_takes_pytorch_s_steps(dtype):
    """normalize is PyTorch's ops in turn: the norm (its gradient g * (x / norm) in the type,
    from the rounded norm), clamp_min and the division; clgrad's differentiated its float32
    norm (a few elements 4 ulps off in bfloat16: fuzz seed 99000301). A column of zeros has
    the norm 0, raised to eps."""
    x = X.copy()
    x[:, 5] = 0.0
    functions = (lambda h: F(h).normalize(h), lambda h: F(h).normalize(h, dim=0),
                 lambda h: F(h).normalize(h.reshape(4, 16, 16), p=3, dim=-2),
                 lambda h: F(h).normalize(h, p=1), lambda h: F(h).normalize(h[:, :1], dim=-1),
                 lambda h: F(h).normalize(h[:0]))
    # (a GPU's pow, p=3's norm, is not correctly rounded, OpenCL allows 16 ulps: a near-tie
    # rounds to the type an ulp apart; 11 of 1,024 float16 values on an H200)
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(functions, h)),
                         *[x] * len(functions), dtype=dtype,
                         value_ulps=0 if cg.device().kind == "cpu" else 1)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_soft_margin_loss_takes_pytorch_s_steps(dtype):
    """PyTorch's soft_margin_loss is in place on -x in the input's dtype: times the target
    (a float32 one's product in float32, rounded), exp and log1p each rounded, then reduced;
    its gradient y exp(-y x) (in the two's dtype) times -1 / n, divided by exp(-y x) + 1 and
    times g, each step rounded to the input's dtype. clgrad's loss of a float16 input and a
    float32 target was float32 (fuzz seed 99001685), and its 16-bit gradient the float32
    derivative of log(1 + exp(-y x)), rounded once."""
    target = np.sign(make((4, 256), seed=SEED + 3))
    target[0, :3] = 0.5, -2.0, 0.0

    def losses(a, b, c, d):
        f, t = F(a), library(a).tensor(target)
        return (f.soft_margin_loss(a, t, reduction="none"), f.soft_margin_loss(b, t),
                f.soft_margin_loss(c, t.to(c.dtype), reduction="sum"),
                f.soft_margin_loss(d[:, :16], t[:1, :16], reduction="none"),
                f.soft_margin_loss(d[:0], t[:0]))
    x = X / 2     # (float16's exp overflows past 11: PyTorch's loss is inf there, clgrad's not)
    check_16_bit_exactly(losses, *[x] * 4, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_matmul_of_a_batch_by_a_matrix_folds_the_batch(dtype):
    """PyTorch's matmul of a batched operand by a matrix or vector that requires grad folds
    the batch into the rows of one mm (or mv): the matrix's gradient is one product over
    every row, rounded once; clgrad's was a product per batch, each rounded, then their sum
    (a third of the elements an ulp or more off; fuzz seed 99200049). A matrix on the left
    folds the other's columns. (Values without X's edges: a NaN in the small operand makes
    all of its gradient NaN.)"""
    x = make((4, 4, 16, 4), seed=SEED + 9)
    check_16_bit_exactly(lambda a, b, c, d, e, f, g, h: (
        a @ b[0, 0, :4], c[..., 0] @ d[0, 0, :, 0],
        e.reshape(64, 16)[:5] @ f.reshape(4, 16, 16)[:, :, :4], g[0, 0, :, 0] @ h[0]),
        *[x] * 8, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_sums_into_a_tensor_round_once(dtype):
    """PyTorch's index_add_, scatter_add_ and scatter_reduce's sum and mean (with self) of
    16-bit floats add the tensor's own value and the values landing on it in float32 and
    round once (the mean's sum, then divided in the type); clgrad rounded the values' sum,
    then added it (fuzz seed 99002097: 17 of 1950 elements an ulp or more off after exp and
    lgamma). Rows landing three times on row 2, onto values of every magnitude."""
    rows = np.array([2, 0, 2, 3, 2, 1])
    spread = np.broadcast_to(rows[:, None], (6, 64)).copy()

    def sums(a, b, c, d, e, f, g, h):
        lib = library(a)
        i, j = lib.tensor(rows), lib.tensor(spread)
        return (a.index_add(0, i, b), c.scatter_add(0, j, d), e.scatter_reduce(0, j, f, "sum"),
                g.scatter_reduce(0, j, h, "mean"), a[:, :0].index_add(0, i, b[:, :0]))
    x = make((6, 64), seed=SEED + 11) * 10.0 ** np.arange(-3, 3)[:, None]
    x[0, :3] = np.inf, np.nan, -0.0
    check_16_bit_exactly(sums, *[x, X[:, :64].repeat(2, 0)[:6]] * 4, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_products_by_numpy_scalars_read_them_whole(dtype):
    # a NumPy scalar is a Python number to PyTorch: read whole, the product rounded once
    # (clgrad rounded it to the type first: 565 of 1,000 float16 products an ulp off)
    h = make((1000,))
    check_16_bit_exactly(lambda h: (h * np.float32(1.23), np.float64(0.7) * h,
                                    h / np.float32(3.3)), h, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_avg_pool_takes_pytorch_s_steps(dtype):
    """PyTorch's CPU avg_pool2d of a 16-bit float sums each window in float32, divides by
    its count and rounds once; its backward divides g by the count rounded to the type
    (bfloat16's 257 is 256) and adds the quotient to each element of the window in the
    type, window after window in row-major order. clgrad's rounded the sum, then the
    quotient (fuzz seed 99300048: 390 of 1890 float16 elements an ulp off), and summed
    overlapping windows' quotients in float32 one axis at a time (a third of the gradient
    off). Every padding and count, ceil_mode, windows that do not overlap, avg_pool1d, an
    unbatched input, one row, an empty batch."""
    pools = (lambda h: F(h).avg_pool2d(h, (3, 2), 1, 0),
             lambda h: F(h).avg_pool2d(h, 3, 2, 1),
             lambda h: F(h).avg_pool2d(h, 3, 2, 1, count_include_pad=False),
             lambda h: F(h).avg_pool2d(h, 3, 2, 1, ceil_mode=True, count_include_pad=False),
             lambda h: F(h).avg_pool2d(h, (2, 3), 1, 1, divisor_override=257),
             lambda h: F(h).avg_pool2d(h, 2),
             lambda h: F(h).avg_pool2d(h, (2, 3), (3, 2), ceil_mode=True),
             lambda h: F(h).avg_pool1d(h.reshape(4, 16, 16), 3, 1, 1),
             lambda h: F(h).avg_pool2d(h[0], 2, 1),
             lambda h: F(h).avg_pool2d(h[:, :, :1], (1, 3), 1),
             lambda h: F(h).avg_pool2d(h[:0], 2, 1))
    x = X.reshape(2, 2, 16, 16)
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(pools, h)),
                         *[x] * len(pools), dtype=dtype)


def _channels_last(h):
    """h in PyTorch's channels-last layout (whose backward kernel is another loop); clgrad
    has one layout."""
    return h.contiguous(memory_format=torch.channels_last) if isinstance(h, torch.Tensor) else h


# max pools whose windows overlap, on (2, 2, 16, 16): 1-D, 2-D (over 16 elements a window: the
# reduction path), 3-D and adaptive, with padding, dilation, ceil_mode, indices, an unbatched
# input, a spatial dim of 1 and an empty batch
MAX_POOLS = (
    lambda h: F(h).max_pool1d(h.reshape(4, 4, 64), 3, 1),
    lambda h: F(h).max_pool1d(h.reshape(4, 4, 64), 3, 2, 1, 2, ceil_mode=True),
    lambda h: F(h).max_pool2d(h, 3, 1),
    lambda h: F(h).max_pool2d(h, 3, 2, 1, ceil_mode=True, return_indices=True)[0],
    lambda h: F(h).max_pool2d(h, 3, 1, dilation=2),
    lambda h: F(h).max_pool2d(_channels_last(h), (3, 2), 1, 1),
    lambda h: F(h).max_pool2d(h, 5, 1),
    lambda h: F(h).max_pool2d(h[0], 3, 1),
    lambda h: F(h).max_pool2d(h[:, :, :1], (1, 3), 1),
    lambda h: F(h).max_pool2d(h[:0], 3, 1),
    lambda h: F(h).max_pool3d(h.reshape(2, 2, 4, 8, 8), 3, 1),
    lambda h: F(h).max_pool3d(h.reshape(2, 2, 4, 8, 8), 3, 2, 1, ceil_mode=True),
    lambda h: F(h).max_pool3d(h.reshape(2, 2, 4, 8, 8)[:, :, :1], (1, 3, 3), 1, dilation=2),
    lambda h: F(h).adaptive_max_pool1d(h.reshape(4, 4, 64), 41),
    lambda h: F(h).adaptive_max_pool2d(h, (11, 13), return_indices=True)[0],
    lambda h: F(h).adaptive_max_pool3d(h.reshape(2, 2, 4, 8, 8), (3, 5, 6)),
)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_max_pool_gradients_add_output_after_output(dtype):
    """PyTorch's CPU max pool backward (max_pool1d/2d/3d, adaptive_max_pool, channels-last
    too) adds each output's gradient onto the element it picked in the type, each addition
    rounded, output after output in row-major order. clgrad's summed the overlapping windows'
    slots in the other order (fuzz seed 100604558: 182 of 2,912 bfloat16 elements an ulp
    off); 3-D and adaptive pools, separable, one axis after another. X's first row holds
    zeros, infinities and a NaN."""
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(MAX_POOLS, h)),
                         *[X.reshape(2, 2, 16, 16)] * len(MAX_POOLS), dtype=dtype)


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_max_pool_gradient_rounds_a_cancelling_sum_at_each_step(dtype, dims):
    """A peak that all 3^dims windows of kernel 3, stride 1 pick, given 1, eps / 2 by each
    window but the first and last, then -(1 - eps / 2): in PyTorch each 1 + eps / 2 rounds
    back to 1 (a tie, to even) and the cancellation leaves eps / 2; a sum rounded once gives
    (3^dims - 1) eps / 2, and clgrad's last window first, or one axis at a time, more than
    eps / 2 too (fuzz seed 100604558: 0.0195 for PyTorch's 0.0186, 8 ulps)."""
    eps = torch.finfo(getattr(torch, dtype)).eps
    peak = np.zeros((1, 1) + (5,) * dims, np.float32)
    peak[(0, 0) + (2,) * dims] = 1.0
    g = np.full(3 ** dims, eps / 2, np.float32)
    g[[0, -1]] = 1.0, -(1 - eps / 2)
    grads = []
    for lib in (cg, torch):
        x = lib.tensor(peak, requires_grad=True)
        pooled = getattr(lib.nn.functional, f"max_pool{dims}d")(x.to(getattr(lib, dtype)), 3, 1)
        pooled.backward(lib.tensor(g.reshape(pooled.shape)).to(pooled.dtype))
        grads.append(np.array(x.grad.tolist(), np.float32))
    np.testing.assert_array_equal(grads[0], grads[1])
    assert grads[0][(0, 0) + (2,) * dims] == eps / 2


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_xlogy_takes_pytorch_s_steps(dtype):
    """PyTorch's CPU xlogy and xlog1py of 16-bit floats round the log to the type, then the
    product; their gradients are xlogy(g, y) (0 where x is 0 and y at or below the log's
    pole) and (g * x) / y (xlog1py's / (y + 1), the sum rounded too), each step rounded.
    clgrad's rounded once, and its gradients too (a quarter of the values and of each
    gradient an ulp off). x and y of every sign, with zeros, infinities and NaNs, and
    xlogy(t, t), whose two gradients add in the type."""
    y = np.abs(X[::-1]) + make((4, 256), seed=SEED + 5, low=-0.5, high=0.5)
    y[0, :6] = 0.0, -1.0, np.inf, np.nan, -0.0, -0.5
    y[1, :4] = 0.0, 0.0, np.inf, np.nan
    x = X.copy()
    x[1, :4] = 0.0, 2.0, 0.0, 0.0
    check_16_bit_exactly(lambda a, b, c, d, e: (
        a.xlogy(b), library(c).special.xlog1py(c, d), e.xlogy(e)), x, y, x, y, np.abs(y),
        dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_kl_div_takes_pytorch_s_ops(dtype):
    """PyTorch's kl_div is its ops in turn: xlogy(target, target) - target * input (or
    exp(target) * (target - input)), then the reduction, each op in the dtype its operands
    promote to: a 16-bit target's xlogy is rounded to the type before a float32 input's
    product promotes the difference (fuzz seed 99300473: 1704 of 2880 float32 elements 0.7%
    off), and the gradients are those ops' formulas. clgrad's computed it all in float32.
    Targets with zeros (0 log 0 = 0, and a NaN target gradient there), inputs with X's
    edges."""
    t = np.abs(X[::-1]) / 3
    t[0, :3] = 0.0, 1.0, np.nan
    t[2, :2] = 0.0

    def losses(a, b, c, d, e, f, g, h, i, j, k, m):
        f_ = F(a)
        return (f_.kl_div(a, b, reduction="none"), f_.kl_div(c, d, reduction="sum"),
                f_.kl_div(e, f, reduction="mean"), f_.kl_div(g, h, reduction="batchmean"),
                f_.kl_div(i, j.log(), reduction="none", log_target=True),
                f_.kl_div(k[:, :16], m[1:2, :16], reduction="none"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")         # ('mean' warns that it is not batchmean)
        check_16_bit_exactly(losses, *[X, t] * 6, narrowed=(1, 2, 3, 4, 5, 7, 8, 9, 11),
                             dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_rounded_quotients_read_a_one_element_divisor_whole(dtype):
    """PyTorch's CPU div with rounding_mode 'floor' or 'trunc' (and floor_divide) of a 16-bit
    float by a Python number or a tensor of one element of another dtype reads the divisor
    whole, in float32, as its mul and div do (remainder and fmod round it to the type); so
    does remainder's gradient to such a tensor, -g * a.div(b, rounding_mode='floor'). clgrad
    rounded it to the type (fuzz seed 99300688: x0's gradient through h % x0 was 0, where
    h / x0 floors to 0 read whole; 1 rounded). Sixty-fourths of [-20, 20): the remainder
    gradient's sum exact in float32 in any order."""
    h = np.round(make((4, 256)) * 640) / 64

    def quotients(a, b, c, d, e, s, w):
        return (a.div(s, rounding_mode="floor"), b.div(w, rounding_mode="trunc"), c % s,
                d.div(0.37, rounding_mode="floor"), e.div(np.float32(0.37), rounding_mode="trunc"),
                library(a).floor_divide(a.detach(), s.detach()).requires_grad_())
    check_16_bit_exactly(quotients, h, h, h, h, h, np.float32(0.5772248), np.float64(0.1),
                         narrowed=range(5), dtype=dtype, grid=64)


def test_16_bit_product_by_an_array_uploads_it_once(monkeypatch):
    # operands and the 16-bit branch that reads an integer array whole took it as two tensors
    made = []
    monkeypatch.setattr(creation, "tensor", lambda *a, **k: made.append(a) or upload(*a, **k))
    h = np.array([1.5, -2.0, 1e4, 3.1], np.float16)
    product = cg.tensor(h) * np.array([3], np.int8)
    assert len(made) == 1
    expected = torch.from_numpy(h) * np.array([3], np.int8)
    assert product.dtype == cg.float16 and expected.dtype == torch.float16
    np.testing.assert_array_equal(product.numpy(), expected.numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_huber_and_smooth_l1_losses_take_pytorch_s_steps(dtype):
    """PyTorch's float16 huber_loss and bfloat16 smooth_l1_loss compute |x - y| and the loss
    in float32 and round once; its bfloat16 huber_loss and float16 smooth_l1_loss round each
    step, delta or beta rounded to the type. clgrad's rounded each step in both types: a
    float16 huber loss of 0.6621 and -1.364 was 1.5273, an ulp above PyTorch's 1.5264 (fuzz
    seed 99501182). smooth_l1's gradient is float32's, rounded once; huber's, PyTorch's
    scalar code, each step rounded: (x - y) n g where |x - y| < delta, else n g (± delta, a
    number whole), n the mean's 1 / n rounded to the type. (Its vector code multiplies n by
    delta rounded first: delta a power of two but on a dozen elements, as its scalar code.)"""
    target = make((4, 256), low=-3, high=3, seed=SEED + 5)

    def losses(*pairs):
        f = F(pairs[0])
        x, y = pairs[0::2], pairs[1::2]
        return (f.huber_loss(x[0], y[0], reduction="none"),
                f.huber_loss(x[1][1:], y[1][1:], delta=0.5),
                f.huber_loss(x[2][1:], y[2][1:], reduction="sum", delta=2.0),
                f.huber_loss(x[3][0, :12], y[3][0, :12], reduction="none", delta=0.3),
                f.huber_loss(x[4][1, :12], y[4][1, :12], delta=2.5),
                f.smooth_l1_loss(x[5], y[5], reduction="none"),
                f.smooth_l1_loss(x[6][1:], y[6][1:], beta=0.3),
                f.smooth_l1_loss(x[7][1:], y[7][1:], reduction="sum", beta=2.5),
                f.smooth_l1_loss(x[8][0, :1], y[8][0, :1], beta=0.5))
    check_16_bit_exactly(losses, *[X, target] * 9, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_glu_gradient_takes_pytorch_s_steps(dtype):
    """PyTorch's glu backward writes sigmoid(b) to a buffer of the type, then gives a
    s * g and b (1 - s) * s * a * g, each computed in float32 and rounded once; clgrad's
    rounded each op of sigmoid and of a * s * (1 - s) to the type (38% of the elements an ulp
    or more off; fuzz seed 99500663). The edges in a, then (flipped) in b."""
    check_16_bit_exactly(lambda a, b: (F(a).glu(a, -1), F(b).glu(b.flip(-1), -1)), X, X,
                         dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_gradients_of_repeated_indices_sum_as_pytorch_s_kernels(dtype):
    """The rows repeated indices picked are summed as PyTorch's backward kernels sum them:
    indexing's, embedding's and take's (index_put_ and put_ with accumulate) and
    index_select's of 1 dim or by an int32 index (index_add_ slice by slice) add each row
    onto the sum rounded to the type, in index order; gather's, take_along_dim's and
    index_select's along the first dim of 2 (scatter_add_) in float32, rounded once. clgrad
    summed all in float32 (fuzz seed 99500663: x[:, i]'s gradient, 168 of 1024 elements an
    ulp or more off). Each op on its own tensor; a row of one column too."""
    picks = make((200,), np.int64, low=-8, high=8)

    def picked(a, b, c, d, e, f, g, h, k):
        lib = library(a)
        i = lib.tensor(picks)
        along = i.remainder(8).reshape(25, 8)
        return (a[:, i], b[i], F(c).embedding(i.remainder(8), c), d.take(i.remainder(8)),
                e[0].index_select(0, i.remainder(32)), f.index_select(1, i.int().remainder(32)),
                g.index_select(0, i.remainder(8)), h.gather(0, along), k[:, :1][i])
    check_16_bit_exactly(picked, *[X.reshape(8, 128)[:, :32]] * 9, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_accumulation_onto_a_tensor_adds_each_value_in_turn(dtype):
    """index_put_ and put_ with accumulate, and index_add_ slice by slice (1 dim, a middle
    dim, an int32 index), add each value onto self's element in index order, rounding each
    sum to the type, as PyTorch's CPU kernels; clgrad added the values' float32 sum once
    (fuzz seed 99501580: 96 of 1,664 float16 elements an ulp apart). index_add_ along the
    first dim by an int64 index is PyTorch's scatter_add_: in float32, rounded once. Onto
    -0.0, inf and NaN too, by an empty index and a 0-d one. With alpha, slice by slice always
    (its values times alpha rounded to the type; clgrad added the 2-d ones' float32 sum once),
    and source's gradient is g's times alpha whole. (These slices are strided or shorter than
    a CPU vector: where whole vectors of a slice lie side by side, PyTorch computes them as
    a + alpha * b rounded once.)"""
    picks = make((300,), np.int64, low=0, high=8)
    small = make((300, 32)) / 64

    def added(a, b, c, d, e, f, s):
        lib = library(a)
        i = lib.tensor(picks)
        return (a.index_put((i,), s, accumulate=True), b.put(i * 5, s[:, 0], accumulate=True),
                c[0].index_add(0, i[:40], s[:40, 0]), d.index_add(1, i[:32] * 3, s[:8]),
                e.index_add(0, i.int(), s), f.index_add(0, i, s),
                a.index_put((i[:0],), s[:0], accumulate=True), c[1].index_add(0, i[3], s[3, :1]),
                c[2].index_add(0, i[:40], s[:40, 1], alpha=3.3),
                e[:, :8].index_add(0, i, s[:, :8], alpha=0.37),
                f.index_add(1, i[:32] * 3, s[8:16], alpha=-2.5))
    x = X.reshape(8, 128)[:, :32].copy()
    x[0, :3] = -0.0, np.inf, np.nan
    check_16_bit_exactly(added, *[x] * 6, small, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_atan2_of_a_16_bit_and_a_float32_input_squares_each_in_its_own_type(dtype):
    """PyTorch's atan2 gradient g * x / (y² + x²) and g * -y / (y² + x²) squares a 16-bit
    input beside a float32 one in the 16-bit type (its saved tensor's), so the square is
    rounded; clgrad squared it in float32: a bfloat16 ulp of the square, which shows where
    the two gradients of atan2(x, x.bfloat16()) nearly cancel (fuzz edge seed 101301390:
    -0.0029 against PyTorch's -7.6e-05). Both orders, broadcast, zeros and the edges too."""
    def angles(y, x, z):
        return (y.atan2(x), x.atan2(y), z.atan2(z.to(x.dtype)), y[:1].atan2(x[0]))
    check_16_bit_exactly(angles, X, X[::-1].copy(), X, narrowed=(1,), dtype=dtype, value_ulps=2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fmod_by_a_0_d_float32_divisor_takes_its_gradient_read_whole(dtype):
    """PyTorch's gradient to fmod's divisor, -g * a.div(b, rounding_mode="trunc"), reads a 0-d
    float32 b beside a 16-bit a whole, truncating the quotient in float32 (1 / 0.3334 is 2);
    between two 16-bit tensors the quotient rounds to the type first (1 / 0.333984375 rounds
    to 3.0). clgrad rounded in both (fuzz seed 101900337: the divisor's gradient -4.78
    against -3.61). The 16-bit divisor beside it keeps its own way."""
    a = np.concatenate([np.array([1.0, -1.0, 2.0, 5.0, 3.0], np.float32), X[1, :59]])
    b, b16 = np.array(0.3334, np.float32), np.full(64, 0.333984375, np.float32)

    def remainders(a, b, c, d):
        return a.fmod(b), c.fmod(d)
    check_16_bit_exactly(remainders, a, b, a, b16, narrowed=(0, 2, 3), dtype=dtype)
