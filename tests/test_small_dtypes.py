"""int8, uint8, int16, bfloat16 and float16 against PyTorch: wrapping arithmetic, casts,
promotion in mixed ops, reductions, products, movement, the 16-bit floats' rounding and
gradients, view(dtype), NumPy interop; cg.Size, iinfo and finfo."""
import numpy as np
import pytest
import torch

from helpers import SEED, F, check, library, make

import clgrad as cg



def _with_random(edges, dtype, low, high):
    """edges, then random values: rows of 16, long enough for the kernels' vector code."""
    edges = np.array(edges, dtype)
    return np.concatenate([edges, make((2, 16 - edges.shape[1]), dtype, low, high)], axis=1)


U8 = _with_random([[0, 1, 127, 128, 255, 200], [100, 3, 254, 17, 64, 129]], np.uint8, 0, 256)
U8_B = _with_random([[255, 1, 200, 128, 1, 100], [100, 250, 2, 17, 64, 3]], np.uint8, 0, 256)
I8 = _with_random([[-128, -1, 0, 1, 127, 100], [-100, 64, -64, 7, -7, 55]], np.int8, -128, 128)
I16 = _with_random([[-32768, -1, 0, 1, 32767, 300], [-300, 16384, -5, 77, 9, 1000]], np.int16,
                   -32768, 32768)
FLOATS = make((2, 16))
# halfway between two bfloat16 values (ties go to the even one), past the largest, NaN, -0
ROUNDING = np.array([1 + 2 ** -8, 1 + 3 * 2 ** -8, -(1 + 2 ** -8), 3.3895314e38, 3.4e38,
                     np.inf, -np.inf, np.nan, -0.0, 1e-40, 0.1, 65504.0], np.float32)


# float16: ties between two halves (to even), past the largest (65520 and up round to inf),
# subnormals (multiples of 2^-24) and a tie between two, below half the least, NaN, -0
HALF_ROUNDING = np.array([1 + 2 ** -11, 1 + 3 * 2 ** -11, -(1 + 2 ** -11), 65504.0, 65519.0,
                          65520.0, -65520.0, np.inf, np.nan, -0.0, 2 ** -24, 2.5 * 2 ** -24,
                          2 ** -26, 6.1e-5, 0.1, 1e-8], np.float32)


def check_packed(fn, *arrays, **tolerances):
    """check(fn, ...) with fn's outputs joined, flattened, into one per dtype (one kernel
    each, not one per output), after checking each output's dtype against PyTorch's."""
    ours, theirs = (fn(*(lib.tensor(a) for a in arrays)) for lib in (cg, torch))
    assert [o.dtype.name for o in ours] == [str(t.dtype).split(".")[1] for t in theirs]

    def packed(*inputs):
        groups = {}
        for out in fn(*inputs):
            groups.setdefault(out.dtype, []).append(out.reshape(-1))
        return tuple(library(inputs[0]).cat(group) for group in groups.values())
    check(packed, *arrays, **tolerances)


def test_narrow_integer_arithmetic_wraps_and_promotes():
    """Also bfloat16 arithmetic and bitcasts, all in the kernels' vector code."""
    check_packed(lambda a, b, c, d, x: (
        a + b, a - b, a * b, -a, ~a, a + 300, a - 5, a >> 1, a & b, a.maximum(b),
        c.view(library(c).uint8),
        c + c, c * c, -c, c.abs(), c << 1, c // 3, c % 5, a.view(library(a).int8),
        d * d, d + 1, -d, (x * 100).bfloat16().view(library(x).int16),
        a + c, c + d, a * d, a < b, c == d, c < -1, a < -1,     # uint8 + int8 is int16
        a / 2, c / c.clamp(min=1), d * 0.5, (x.bfloat16() * 3 + 1).exp().float()),
        U8, U8_B, I8, I16, FLOATS, atol=0, rtol=1e-2)


def test_casts_to_and_from_narrow_types():
    floats = np.array([[-1.0, -3.7, 300.0, 255.9, 3.7, 0.0], [127.9, -128.2, 1e3, -0.9, 65.5, 2.0]],
                      np.float32)
    longs = np.array([[1000, -1000, 255, 256, -129, 70000], [1, 2, 3, 4, 5, 6]], np.int64)
    check_packed(lambda f, i, a, c: (
        f.byte(), f.char(), f.short(), f.to(library(f).uint8), i.byte(), i.char(), i.short(),
        a.char(), c.byte(), a.short(), a.bool(), (c > 0).byte(), a.float(),
        c.to(library(c).bfloat16).float(), f.bfloat16().char()), floats, longs, U8, I8)


def test_reductions_of_narrow_types():
    negative = -np.abs(I16) - 1      # a max from INT_MIN, not from 0
    check(lambda a, c, d: (a.sum(1), d.sum(1), (c > 0).sum(1), d.amax(1), c.amin(1),
                           c.cumsum(1)), U8, I8, negative.astype(np.int16))


def test_movement_and_indexing():
    index = np.array([1, 0, 1], np.int64)
    check_packed(lambda a, c, i: (
        a.t(), a.flip(1), a[1:, ::2], a[i], c.reshape(4, -1).permute(1, 0),
        library(a).cat([c, c.flip(0)]), library(a).where(c > 0, c, c - 1),
        c.unsqueeze(0).expand(2, *c.shape)), U8, I8, index)


def test_matmul():
    mats = np.array([[3, -2, 5], [100, 7, -1]], np.int8)
    check(lambda a, x, y: (a @ a.t(), (x.bfloat16() @ y.bfloat16()).float()),
          mats, (3, 4), (4, 5), atol=0.05, rtol=0.02, grad=False)


def test_bfloat16_rounds_to_nearest_even():
    want = torch.tensor(ROUNDING).bfloat16().float().numpy()
    uploaded = cg.tensor(ROUNDING, dtype=cg.bfloat16)
    computed = cg.tensor(ROUNDING).bfloat16()
    np.testing.assert_array_equal(np.array(uploaded.tolist()), want)
    np.testing.assert_array_equal(computed.float().numpy(), want)
    assert uploaded.tolist()[1] == 1 + 2 ** -6
    assert repr(cg.tensor(ROUNDING[:3], dtype=cg.bfloat16)) == \
        "tensor([ 1.0000,  1.0156, -1.0000], dtype=clgrad.bfloat16)"


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_floats_round_each_result_in_the_kernel(dtype):
    """Their values live in float registers: each op's result is rounded to the dtype in the
    kernel, also where the next op reads it as float (x * 2 past 65504 is inf in float16, not
    131008), as are a sum's and a product's. Python numbers join as PyTorch's kernels take
    them: whole in products and quotients (x * 0.1 is x times 0.1, rounded once), rounded to
    the dtype elsewhere (x + 0.1, x == 0.1, where, clamp, a fill)."""
    def rounded(x):
        lib = library(x)
        h = x.to(getattr(lib, dtype))
        return (h.float(), (h * 2).float(), (h + 1e-4).float(), (h * 0.1).float(),
                (h / 3).float(), (h.sqrt() - 1).float(), h.abs().sum().float().reshape(1),
                (h.reshape(4, 4) @ h.reshape(4, 4).abs()).float().reshape(-1),
                lib.full((2,), 0.1, dtype=h.dtype).float(), (0.1 * h).float(), h == 0.1,
                (h + 0.1).float(), lib.where(h > 0.2, h, 0.1).float(),
                h.clamp(max=0.1).float())
    finite = np.nan_to_num(HALF_ROUNDING, nan=1.0, posinf=2.0, neginf=-2.0)
    check(rounded, np.clip(finite, -60000, 60000) / 64, atol=0, rtol=0, grad=False)
    check(lambda x: x.to(getattr(library(x), dtype)).float(), HALF_ROUNDING, atol=0, rtol=0,
          grad=False)
    uploaded = cg.tensor(HALF_ROUNDING, dtype=getattr(cg, dtype))
    want = torch.tensor(HALF_ROUNDING).to(getattr(torch, dtype)).float().numpy()
    np.testing.assert_array_equal(np.array(uploaded.tolist(), np.float32), want)


def test_16_bit_float_means_divide_by_a_whole_count():
    """A mean of 100,000 float16 values is their sum times 1 / 100,000 as a float, not as a
    float16 (a subnormal there, 0.14% off). Sixteenths of [0, 1): sums exact in any order."""
    values = np.floor(make((100000,), low=0.0, high=16.0)) / 16
    check(lambda x: [x.half().mean().float(), x.bfloat16().mean().float()], values,
          atol=0, rtol=0, grad=False)


def test_bfloat16_graph_and_gradients():
    check(lambda x, y: ((x.bfloat16() * y.bfloat16() + 1).exp() / (y.bfloat16() - 3)).float(),
          (3, 4), (3, 4), atol=0.02, rtol=0.02)


def test_bfloat16_leaves_require_grad():
    values = [[0.3, -1.7, 2.9], [1.1, 0.25, -0.6]]
    x, tx = (lib.tensor(values, dtype=lib.bfloat16, requires_grad=True) for lib in (cg, torch))
    outs = [(t.sigmoid() * t).sum() + (t * 3).amax() for t in (x, tx)]
    for out in outs:
        out.backward()
    assert outs[0].dtype == cg.bfloat16 and x.grad.dtype == cg.bfloat16
    np.testing.assert_allclose(outs[0].item(), outs[1].item(), rtol=0.01)
    np.testing.assert_allclose(x.grad.tolist(), tx.grad.tolist(), atol=0.02)


def test_view_dtype():
    floats = np.array([[1.0, -2.5, 3.25, np.inf], [0.1, -0.0, 7e-39, 65504.0]], np.float32)
    x, tx = cg.tensor(floats), torch.tensor(floats)
    for name in ("int32", "uint8", "int8", "int16", "float16", "bfloat16", "float64"):
        got, want = x.view(getattr(cg, name)), tx.view(getattr(torch, name))
        assert got.dtype.name == name and tuple(got.shape) == tuple(want.shape)
        np.testing.assert_array_equal(np.array(got.tolist()), np.array(want.tolist()))
    shorts = cg.tensor(I16)     # equal sizes are read in the kernel, fused with what follows
    bits = (shorts.view(cg.bfloat16) * 1).view(cg.int16).numpy()
    nan = (I16 & 0x7F80 == 0x7F80) & (I16 & 0x7F != 0)
    np.testing.assert_array_equal(bits[~nan], I16[~nan])
    # a NaN's bits: x86 keeps them through a multiply; NVIDIA's GPUs, PyTorch's CUDA kernels
    # on them too, give the canonical NaN
    kept = I16[nan] if cg.device().kind == "cpu" else np.full(nan.sum(), 0x7FFF, np.int16)
    np.testing.assert_array_equal(bits[nan], kept)
    assert x.view(cg.float32).requires_grad is False
    assert not cg.tensor(floats, requires_grad=True).view(cg.int32).requires_grad


@pytest.mark.parametrize("make,message", [
    (lambda lib: lib.ones(3).view(lib.float64), "size.-1. must be divisible by 2 to view Float"),
    (lambda lib: lib.ones(()).view(lib.float16), "dim.. cannot be 0 to view Float as Half")])
def test_view_dtype_errors(make, message):
    for lib in (cg, torch):
        with pytest.raises(RuntimeError, match=message):
            make(lib)


def test_creation_and_numpy_interop(tmp_path):
    made = cg.stack([cg.arange(4, dtype=cg.uint8), cg.full((4,), -3, dtype=cg.int8).byte(),
                     cg.ones(4, dtype=cg.int16).byte(), cg.zeros(4, dtype=cg.bfloat16).byte()])
    np.testing.assert_array_equal(made.numpy(), [[0, 1, 2, 3], [253] * 4, [1] * 4, [0] * 4])
    for array in (U8, I8, I16):
        t = cg.from_numpy(array)
        assert t.dtype.name == array.dtype.name and t.numpy().dtype == array.dtype
    half = cg.tensor([1.5, 2.0], dtype=cg.bfloat16)
    assert cg.tensor(1.5, dtype=cg.bfloat16).shape == ()      # (was (1,))
    with pytest.raises(TypeError, match="unsupported ScalarType BFloat16"):
        half.numpy()
    assert half.tolist() == [1.5, 2.0] and half.element_size() == 2
    cg.save({"w": half}, tmp_path / "w.safetensors")
    loaded = cg.load(tmp_path / "w.safetensors")["w"]
    assert loaded.dtype == cg.bfloat16 and loaded.tolist() == [1.5, 2.0]


def test_dtype_names_and_methods():
    for name in ("uint8", "int8", "int16", "short", "bfloat16"):
        assert getattr(cg, name).name == str(getattr(torch, name)).split(".")[1]
    t = cg.zeros(2)
    assert (t.byte().dtype, t.char().dtype, t.short().dtype, t.bfloat16().dtype) == \
        (cg.uint8, cg.int8, cg.int16, cg.bfloat16)
    module = cg.nn.Module()
    module.weight = cg.nn.Parameter(cg.tensor([1.5]))
    assert module.bfloat16().weight.dtype == cg.bfloat16 and module.weight.tolist() == [1.5]
    assert module.half().weight.dtype == cg.float16


def test_size():
    shape = cg.zeros(2, 3, 4).shape
    assert isinstance(shape, cg.Size) and isinstance(shape, tuple)
    assert repr(shape) == "clgrad.Size([2, 3, 4])" and str(cg.Size([])) == "clgrad.Size([])"
    assert shape == (2, 3, 4) and shape == torch.Size([2, 3, 4]) and hash(shape) == hash((2, 3, 4))
    for derived in (shape[1:], shape + (5,), (1,) + shape, shape * 2):
        assert isinstance(derived, cg.Size)
    assert shape[1:] == (3, 4) and shape[-1] == 4 and type(shape[0]) is int
    assert shape.numel() == 24 and cg.zeros(0, 3).size().numel() == 0
    assert cg.zeros(2, 3).size() == cg.Size([2, 3])
    with pytest.raises(TypeError, match="item 0 is 'float'"):
        cg.Size([2.5])


@pytest.mark.parametrize("name", ["uint8", "int8", "int16", "int32", "int64", "float16",
                                  "bfloat16", "float32", "float64"])
def test_iinfo_finfo(name):
    info = "finfo" if name.startswith(("float", "bfloat")) else "iinfo"
    ours, theirs = (getattr(lib, info)(getattr(lib, name)) for lib in (cg, torch))
    assert repr(ours) == repr(theirs) and ours.bits == theirs.bits and ours.dtype == theirs.dtype
    for field in ("min", "max") + (("eps", "tiny", "resolution") if info == "finfo" else ()):
        assert getattr(ours, field) == getattr(theirs, field), field
    with pytest.raises(TypeError, match="iinfo" if info == "finfo" else "finfo"):
        getattr(cg, "iinfo" if info == "finfo" else "finfo")(getattr(cg, name))


def check_16_bit(fn, x: np.ndarray, dtype: str, ulps: float = 8) -> None:
    """fn's outputs of x cast to dtype against PyTorch's, exactly; the gradient of x within
    ulps of dtype (of each element's magnitude and, less, of the largest one's) of PyTorch's
    formula run in float64 from the same 16-bit values: PyTorch's own rounds each of its
    steps to the type (sinc's, of 16-bit cancellations, is 0.25 off in bfloat16), clgrad's
    computes a function's in float32, and both round a few steps."""
    cotangents = []
    grads = []
    for lib, float_type in ((cg, None), (torch, None), (torch, torch.float64)):
        leaf = lib.tensor(x.astype(np.float64) if float_type else x, requires_grad=True)
        h = leaf.to(getattr(lib, dtype))
        outs = fn(h.to(float_type) if float_type else h)
        if lib is cg:
            got = [np.array(o.float().tolist(), np.float32) for o in outs]
            cotangents = [make(tuple(o.shape), seed=SEED + k) for k, o in enumerate(outs)]
        elif float_type is None:
            for k, (o, g) in enumerate(zip(outs, got)):
                assert o.dtype == getattr(torch, dtype), (k, o.dtype)
                np.testing.assert_array_equal(g, o.float().detach().numpy(), f"output {k}")
        lib.autograd.backward(list(outs), [lib.tensor(c).to(getattr(lib, dtype)).to(o.dtype)
                                           for c, o in zip(cotangents, outs)])
        grads.append(np.array(leaf.grad.tolist(), np.float64))
    ulp = torch.finfo(getattr(torch, dtype)).eps
    np.testing.assert_allclose(grads[0], grads[2], rtol=ulps * ulp,
                               atol=ulps * ulp * np.abs(grads[2]).max() / 16)


def check_16_bit_exactly(fn, *arrays: np.ndarray, dtype: str, narrowed=None,
                         grid=None, value_ulps: float = 0, grad_flips: float = 0) -> None:
    """fn's outputs of the arrays cast to dtype (those at the positions narrowed, all by
    default), their dtypes, and the arrays' gradients for random cotangents of the outputs'
    dtypes (multiples of 1 / grid if given), against PyTorch's bit for bit: where clgrad
    takes PyTorch's steps (a derivative formula reading the rounded result, a bias added
    before the one rounding), it rounds where they do. (The outputs within value_ulps of
    the type, where PyTorch's kernel sums in an order of its own; up to a fraction
    grad_flips of a gradient's elements an ulp of the type off, where it rounds a float32
    sum whose order is each side's vector width: a near-tie may round apart.)"""
    narrowed = range(len(arrays)) if narrowed is None else narrowed
    runs = []
    for lib in (cg, torch):
        leaves = [lib.tensor(a, requires_grad=True) for a in arrays]
        outs = fn(*(leaf.to(getattr(lib, dtype)) if k in narrowed else leaf
                    for k, leaf in enumerate(leaves)))
        cotangents = [make(tuple(o.shape), seed=SEED + k) for k, o in enumerate(outs)]
        if grid:
            cotangents = [np.round(c * grid) / grid for c in cotangents]
        cotangents = [lib.tensor(c).to(o.dtype) for c, o in zip(cotangents, outs)]
        lib.autograd.backward(list(outs), cotangents)
        runs.append(([str(o.dtype).split(".")[1] for o in outs],
                     [np.array(o.float().tolist(), np.float32) for o in outs],
                     [np.array(leaf.grad.tolist(), np.float32) for leaf in leaves]))
    (dtypes, values, grads), (want_dtypes, want_values, want_grads) = runs
    assert dtypes == want_dtypes
    ulp = torch.finfo(getattr(torch, dtype)).eps
    for k, (got, want) in enumerate(zip(values, want_values)):
        np.testing.assert_allclose(got, want, rtol=value_ulps * ulp, atol=0,
                                   err_msg=f"output {k}")
    for k, (got, want) in enumerate(zip(grads, want_grads)):
        if not grad_flips:
            np.testing.assert_array_equal(got, want, f"gradient {k}")
            continue
        apart = _ulps_apart(got, want, dtype)
        assert apart.max(initial=0) <= 1, f"gradient {k}: {apart.max()} ulps off"
        assert np.count_nonzero(apart) <= grad_flips * apart.size, \
            f"gradient {k}: {np.count_nonzero(apart)} of {apart.size} elements an ulp off"


def _ulps_apart(got: np.ndarray, want: np.ndarray, dtype: str) -> np.ndarray:
    """How many values of the 16-bit dtype lie between got and want (both of that type, held
    as float32), element by element; NaNs in the same places count as equal."""
    both_nan = np.isnan(got) & np.isnan(want)
    bits = [torch.tensor(np.where(both_nan, 0, a)).to(getattr(torch, dtype)).view(torch.int16)
            .numpy().astype(np.int32) for a in (got, want)]
    # sign and magnitude to a line: the negative values' bit patterns count down from -0
    line = [np.where(b < 0, -32768 - b, b) for b in bits]
    return np.abs(line[0] - line[1])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_reductions_and_norms_round_once(dtype):
    """A 16-bit float's mean, var, std and norm (normalize's too) are computed in float32 and
    rounded once, as PyTorch's kernels do: the sum rounded before the division, or each
    square rounded to the type, was an ulp off in a third to a half of the elements (fuzz
    seeds 94000277 and 94000298). Along the last dim, log_softmax keeps the row's sum of
    exponentials and its log in the 16-bit type, as PyTorch's kernel of the last dim does
    (along another dim, it rounds once)."""
    for fn in (lambda h: (h.mean(1), h.mean(), h.var(0), h.var(1, correction=0)),
               lambda h: (h.std(1), h.std(0), h.norm(dim=1)),
               lambda h: (library(h).linalg.vector_norm(h, 3, dim=0), F(h).normalize(h, dim=1)),
               lambda h: (h.log_softmax(1), h.log_softmax(0))):
        check_16_bit(fn, make((8, 130)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_rsqrt_rounds_once(dtype):
    """rsqrt of a 16-bit float is float32's rsqrt rounded once, not its sqrt rounded to the
    type and then its reciprocal (an ulp off in a third of the elements). (PyTorch's own
    vector code for the 16-bit types is an ulp off in 0.1-0.3% of them.)"""
    x = np.abs(make((8, 130))) + 0.25
    want = torch.tensor(x).to(getattr(torch, dtype)).float().rsqrt().to(getattr(torch, dtype))
    got = cg.tensor(x).to(getattr(cg, dtype)).rsqrt()
    assert got.dtype == getattr(cg, dtype)
    np.testing.assert_array_equal(np.array(got.float().tolist(), np.float32), want.float().numpy())


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_matmul_of_one_term_differentiates_as_a_product(dtype):
    """A matmul over K = 1 runs as the product of a's column and b's row; of 16-bit floats in
    float32, so that its gradient sums g times the other operand in float32 and rounds once,
    as PyTorch's matmul does, rather than summing products each rounded to the type (an ulp
    off in a third of the elements: fuzz seed 94000101). Sixths of [-2, 2): the products and
    their sums are exact in float32, so the two round alike."""
    a, b = (np.round(make(shape) * 6) / 6 for shape in ((64, 1), (1, 3)))
    check(lambda x, y: (x.to(getattr(library(x), dtype)) @ y.to(getattr(library(y), dtype))
                        ).float(), a, b, atol=0, rtol=0, grad_atol=0, grad_rtol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_functions_of_several_ops_round_once(dtype):
    """erfinv, glu, log2, log10 and digamma of a 16-bit float are computed in float32 and
    rounded once, as PyTorch's kernels do: each op of theirs rounded to the type left 25% to
    90% of the elements an ulp or more off (fuzz edge seeds 94000015: log10; seed 94000181:
    digamma). (sinc's and logcumsumexp's too, whose gradients take PyTorch's 16-bit steps:
    test_small_dtype_gradients; fuzz edge seed 94000120: logcumsumexp.)"""
    for fn in (lambda h: ((h / 2.5).erfinv(),), lambda h: (F(h).glu(h, -1),),
               lambda h: ((h.abs() + 0.01).log2(), (h.abs() + 0.01).log10()),
               lambda h: ((h.abs() + 0.1).digamma(),)):
        check_16_bit(fn, make((4, 250)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rms_norm_of_a_16_bit_float_with_a_float32_weight_keeps_its_dtype(dtype):
    """PyTorch's rms_norm returns the input's dtype whatever the weight's (it computes in
    float32 and casts the result to the input's type); clgrad's was float32 (the CI fuzz's
    rms_norm(x.half() + x.half(), (2,), w))."""
    check_16_bit(lambda h: (F(h).rms_norm(h, (16,), library(h).linspace(0.5, 2, 16)),
                            F(h).rms_norm(h, (4, 16), eps=1e-5)), make((3, 4, 16)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_losses_that_broadcast_first_promote_a_0_d_target_as_an_equal(dtype):
    """PyTorch's mse_loss, l1_loss and smooth_l1_loss broadcast input and target before the
    loss, so a 0-d float32 target with a 16-bit input makes a float32 loss, computed in
    float32; clgrad's promoted it as a 0-d operand (a 16-bit loss: fuzz seed 94001152's
    bfloat16 smooth_l1_loss against a 0-d target)."""
    def losses(x, t):
        h, f = x.to(getattr(library(x), dtype)), F(x)
        return [f.mse_loss(h, t), f.l1_loss(h, t, reduction="sum"),
                f.smooth_l1_loss(h, t, reduction="none")]
    with pytest.warns(UserWarning, match="different to the input size"):
        check(losses, make((5, 6)), np.array(0.3, np.float32), atol=1e-6, rtol=1e-6,
              grad_atol=1e-2, grad_rtol=1e-2)
    # huber_loss does not broadcast first: a 16-bit loss (whose backward PyTorch refuses)
    h, t = (lib.tensor(make((5, 6))).to(getattr(lib, dtype)) for lib in (cg, torch))
    assert F(h).huber_loss(h, cg.tensor(0.3)).dtype == getattr(cg, dtype)
    assert F(t).huber_loss(t, torch.tensor(0.3)).dtype == getattr(torch, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_cross_entropy_takes_pytorch_s_log_softmax(dtype):
    """cross_entropy is PyTorch's nll_loss of its log_softmax over dim 1, which rounds once
    (keeping the last dim's sum and its log in the 16-bit type); clgrad's rounded each of its
    steps, an ulp off in a sixth of the losses. (PyTorch's mean and sum of the losses keep
    partial sums in the 16-bit type: not compared here.)"""
    target = np.random.default_rng(0).integers(0, 5, (64,))
    check_16_bit(lambda h: (F(h).cross_entropy(h, library(h).tensor(target), reduction="none"),
                            F(h).cross_entropy(h.reshape(8, 5, 8), library(h).tensor(
                                target.reshape(8, 8) % 5), reduction="none")),
                 make((64, 5)), dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_norm_var_and_std_gradients_take_pytorch_s_steps(dtype):
    """PyTorch's norm_backward, var_backward and std_backward of a 16-bit float run in the
    type, reading the rounded norm or std (x / norm, then times g, each rounded; g times
    2 / (n - 1) whole, rounded once); clgrad's derived the float32 graph's, which read the
    unrounded one: 20-50% of the elements an ulp or more off. (Not order 0.5: x ** -0.5 is
    PyTorch's vector rsqrt, an ulp off in some bfloat16 elements.)"""
    for fn in (lambda h: (h.norm(dim=1),), lambda h: (library(h).linalg.vector_norm(h, 3, 0),),
               lambda h: (library(h).linalg.vector_norm(h, 0.25, 1),),
               lambda h: (h.var(1),), lambda h: (h.std(0, correction=0),)):
        check_16_bit_exactly(fn, make((4, 250)), dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_bce_with_logits_of_a_16_bit_input_and_a_float32_target_is_float32(dtype):
    """PyTorch's binary_cross_entropy_with_logits rounds log_sigmoid(x) to the input's type
    (again after pos_weight's in-place scale) and computes the rest in the type input and
    target promote to: float32 here, where clgrad's loss was 16-bit. Its gradients take
    PyTorch's formulas step by step: to the input sigmoid(x) - target in place (16-bit),
    then times g, the weight and 1 / n, each rounded; to the target -x * g in float32."""
    x, target = make((4, 64), low=-6, high=6), make((4, 64), low=0, high=1)
    weight = make((64,), low=0.5, high=2)

    def loss(h, t, reduction, **kwargs):
        given = {k: library(h).tensor(v) for k, v in kwargs.items()}
        return F(h).binary_cross_entropy_with_logits(h, t, reduction=reduction, **given)
    for kwargs in ({}, {"weight": weight}, {"pos_weight": weight}):
        check_16_bit_exactly(lambda h, t: (loss(h, t, "none", **kwargs),), x, target,
                             dtype=dtype, narrowed=(0,))
    # (the sum of 256 float32 terms is an ulp apart: PyTorch's order is its own)
    check(lambda h, t: loss(h.to(getattr(library(h), dtype)), t, "mean", weight=weight,
                            pos_weight=weight[::-1].copy()),
          x, target, atol=1e-6, grad_atol=0, grad_rtol=0)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_bce_with_logits_of_a_16_bit_target_is_16_bit(dtype):
    """(1 - target).mul_(input).sub_(...) in PyTorch: the loss has the target's dtype, a float32
    input's too (clgrad's was float32; fuzz seed 96100060)."""
    x, target = make((4, 64), low=-6, high=6), make((4, 64), low=0, high=1)
    for reduction in ("none", "mean"):
        check(lambda h, t: F(h).binary_cross_entropy_with_logits(
            h, t.to(getattr(library(t), dtype)), reduction=reduction).float(), x, target,
            atol=1e-2, rtol=1e-2)
        loss = cg.nn.functional.binary_cross_entropy_with_logits(
            cg.tensor(x), cg.tensor(target).to(getattr(cg, dtype)), reduction=reduction)
        assert loss.dtype.name == dtype


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_bias_is_added_before_the_one_rounding(dtype):
    """PyTorch's addmm (and addmv), baddbmm, linear (its addmm, also of an input of more
    dims) and convolutions add a 16-bit float's bias to the float32 sums and round once;
    clgrad rounded the product, then the sum again: a third of the elements an ulp off.
    Their gradients are PyTorch's 16-bit products and sums of g. Sixty-fourths of [-2, 2):
    products and sums exact in float32 whatever their order, rounded only to the 16-bit
    type (a bfloat16 holds each value)."""
    x, w, b = (np.round(make(shape) * 64) / 64 for shape in ((8, 32), (16, 32), (16,)))
    for fn in (lambda x, w, b: (F(x).linear(x.reshape(2, 4, 32), w, b),),
               lambda x, w, b: (library(x).addmm(b, x, w.t(), beta=0.5, alpha=2),),
               lambda x, w, b: (library(x).baddbmm(b, x.reshape(2, 4, 32),
                                                   w.t().expand(2, 32, 16)),)):
        check_16_bit_exactly(fn, x, w, b, dtype=dtype, grid=64)
    image, kernel = np.round(make((2, 4, 9, 9)) * 64) / 64, make((6, 4, 3, 3))
    check_16_bit(lambda h: (F(h).conv2d(h, *(library(h).tensor(a).to(h.dtype) for a in (
        np.round(kernel * 64) / 64, b[:6])), padding=1),), image, dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_gradients_read_the_rounded_result(dtype):
    """PyTorch's derivatives of these functions read the rounded 16-bit result r: sigmoid's
    g (1 - r) r (bfloat16's in float32, float16's each step in it), tanh's g (1 - r²),
    softmax's r (g - sum(g r)) and log_softmax's g - exp(r) sum(g) in float32, rounded once;
    g r ln 2, g (r + 1), -0.5 g r³, sqrt(pi)/2 exp(r²) g, g (i1e(x) - sgn(x) r), g r log(1.7)
    and g exp(x - r) each step in the type. clgrad's read the unrounded float32 value (30-90%
    of the elements an ulp or more off); logsumexp's value is PyTorch's steps too. (Rows of
    256: PyTorch's scalar code for a tail past its vectors rounds i0e and softmax otherwise.)"""
    lib = library
    x = make((4, 256), low=-3, high=3)
    functions = (lambda h: h.sigmoid(), lambda h: h.tanh(), lambda h: h.exp2(),
                 lambda h: h.expm1(), lambda h: (h / 2.5).erfinv(),
                 lambda h: lib(h).special.i0e(h), lambda h: 1.7 ** h,
                 lambda h: h.softmax(1), lambda h: h.softmax(0), lambda h: h.log_softmax(1),
                 lambda h: h.logsumexp(1))
    # (each of its own leaf: one schedule, and no leaf sums gradients in an order of its own)
    check_16_bit_exactly(lambda *h: tuple(f(t) for f, t in zip(functions, h)),
                         *[x] * len(functions), dtype=dtype)
    # (PyTorch's vector rsqrt of a 16-bit float is an ulp off in some elements: not those)
    h = torch.tensor(x).to(getattr(torch, dtype)).abs() + 0.25
    right = (h.rsqrt() == h.float().rsqrt().to(h.dtype)).numpy()
    check_16_bit_exactly(lambda h: ((h.abs() + 0.25).rsqrt(),), x[right], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_batch_norm_output_is_a_multiply_add_rounded_once(dtype):
    """PyTorch's output is x * alpha + beta by its vector kernel's fmadd, rounded once to
    float32: near the mean the sum cancels, and float32's product and sum (rounded twice)
    left a float16 output an ulp off at a tie (fuzz seed 99704556). Far from zero, with and
    without a bias, batches whose rows have vector tails."""
    rng = np.random.default_rng(SEED)
    for shape in ((16, 104, 1, 2), (33, 8), (4, 6, 17, 3), (2, 5, 130)):
        x = (rng.standard_normal(shape) * 0.7 - 2.5).astype(np.float32)
        w, b = (rng.standard_normal(shape[1]).astype(np.float32) for _ in range(2))
        for bias in (None, b):
            outs = [F(lib.ones(1)).batch_norm(
                lib.tensor(x).to(getattr(lib, dtype)), None, None,
                weight=lib.tensor(w).to(getattr(lib, dtype)), training=True,
                bias=None if bias is None else lib.tensor(bias).to(getattr(lib, dtype)))
                for lib in (cg, torch)]
            np.testing.assert_array_equal(*(np.array(o.float().tolist()) for o in outs),
                                          err_msg=f"{shape} {bias is not None}")


@pytest.mark.parametrize("native", [False, True])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_16_bit_batch_norm_in_training_takes_pytorch_s_steps(dtype, native):
    """PyTorch's CPU batch_norm of a 16-bit float in training sums in float32, keeps its
    statistics in the parameters' dtype (float32 if any is, else the input's: a bfloat16's
    rounded at each step), computes x * alpha + beta and rounds once, and its backward
    kernel's gradients from the saved statistics; clgrad normalised in float32 throughout
    (a third of the outputs, and the running statistics, an ulp or more off). Float32
    parameters' gradients are float32 sums in PyTorch's own order: compared to 1e-6.
    torch.native_batch_norm takes the same steps and returns the saved statistics too."""
    x, g = make((8, 6, 5), low=-1, high=3), make((8, 6, 5), seed=SEED + 1)
    w, b = make((6,), low=0.5, high=2), make((6,), low=-1, high=1)
    for params, affine, running in ((dtype, False, False), (dtype, True, True),
                                    ("float32", False, True), ("float32", True, True)):
        runs = []
        for lib in (cg, torch):
            kind = getattr(lib, params)
            leaf = lib.tensor(x, requires_grad=True)
            weights = [lib.tensor(v).to(kind).requires_grad_() for v in (w, b)] if affine \
                else [None, None]
            stats = [lib.zeros(6).to(kind), lib.ones(6).to(kind)] if running else [None, None]
            x16 = leaf.to(getattr(lib, dtype))
            if native:
                out, *saved = lib.native_batch_norm(x16, *weights, *stats, True, 0.1, 1e-5)
            else:
                out, saved = F(leaf).batch_norm(x16, *stats, *weights, training=True), []
            out.backward(lib.tensor(g).to(out.dtype))
            found = [out, leaf.grad] + [t.grad for t in weights if t is not None] + \
                [t for t in stats if t is not None] + saved
            runs.append([(str(t.dtype).split(".")[1], np.array(t.float().tolist())) for t in found])
        for k, ((got_dtype, got), (want_dtype, want)) in enumerate(zip(*runs)):
            assert got_dtype == want_dtype, (params, affine, running, k)
            # (a float32 sum in PyTorch's CPU order, but its weight's gradient; a GPU sums
            # a row's partials across a work-group, its saved statistics an ulp apart)
            other_order = params == "float32" and affine and k == 2 or \
                got_dtype == "float32" and cg.device().kind != "cpu"
            tolerance = 1e-6 if other_order else 0
            np.testing.assert_allclose(got, want, rtol=tolerance, atol=0,
                                       err_msg=f"{params} {affine} {running} {k}")


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_a_long_16_bit_product_into_few_outputs_rounds_once(dtype):
    # a product this long into one output runs as partial products over slices of k where
    # it is float32 (compiler/splits.py); a 16-bit one sums in float32 and rounds once, as
    # PyTorch's, not each slice's sum too (fuzz seed 100600404: 5 ulps of bfloat16 off)
    rng = np.random.default_rng(3)
    a, b = rng.uniform(0.25, 1.25, 4096), rng.standard_normal((4096, 1)) * 0.01
    a, b, rows = a.astype(np.float32), b.astype(np.float32), rng.standard_normal((2, 1 << 16))
    ours, theirs = getattr(cg, dtype), getattr(torch, dtype)
    product = cg.tensor(a).to(ours) @ cg.tensor(b).to(ours)
    expected = torch.tensor(a).to(theirs) @ torch.tensor(b).to(theirs)
    np.testing.assert_array_equal(product.float().numpy(), expected.float().numpy())
    rows = rows.astype(np.float32)
    np.testing.assert_array_equal(cg.tensor(rows).to(ours).sum(1).float().numpy(),
                                  torch.tensor(rows).to(theirs).sum(1).float().numpy())
