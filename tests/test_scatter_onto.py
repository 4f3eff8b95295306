"""Scatters onto a tensor, and 16-bit scatters, bit for bit with PyTorch's CPU kernels.

A scatter takes the tensor it combines onto as its base (ir.scatter): values landing on an
element combine onto the element's own value one after another, in index order, as PyTorch
adds each onto self in turn (not self + their sum: index_add_ of two 4e-8 onto 1.0 is 1.0).
A 16-bit float's steps are rounded to the type where PyTorch's are (index_put_ and put_ with
accumulate, indexing's, embedding's and take's backward, index_add_ of 1 dim or along a middle
dim, index_reduce_), and kept in float32 and rounded once where PyTorch's are (scatter_add_,
scatter_reduce_, index_add_ along the first or last dim, gather's backward). Forward values
and the gradients to self and to the source, float32, float16 and bfloat16, onto selves of
mixed magnitudes, -0.0 and +0.0, NaN and inf, in place and not."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler.target import Target
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="compares with PyTorch's own rounding")

DTYPES = ["float32", "float16", "bfloat16"]
# orders of magnitude each dtype's values span, such that sums of them stay finite
SPAN = {"float32": 6, "float16": 2, "bfloat16": 6}


@pytest.fixture(autouse=True)
def _pytorch_in_index_order():
    """PyTorch's CPU index_put_ with accumulate adds float32 values with atomics from 32,768
    of them; in its deterministic mode it adds them in index order."""
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(was)


def mixed(shape, dtype="float32", seed=0, special=()):
    """Normal values of many orders of magnitude, so that an order of additions, or a rounding
    at each step, that differs from PyTorch's rounds differently; `special` values (NaN, inf,
    -0.0) among them."""
    rng = np.random.default_rng(seed)
    span = SPAN[dtype]
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-span, span + 1, shape)
    flat = values.reshape(-1)
    for value in special:
        flat[rng.integers(0, flat.size)] = value
    return values.astype(np.float32)


def near_one(shape, seed=0):
    """Factors near 1, whose products stay finite and round at every step."""
    return (1 + np.random.default_rng(seed).standard_normal(shape) * 0.3).astype(np.float32)


def bits(t) -> np.ndarray:
    """A tensor's values as float32 (exact from 16-bit floats), from either library."""
    return np.array(t.detach().float().tolist(), np.float32)


def assert_identical(got, want, what):
    """Bit for bit: -0.0 is not 0.0; any NaN matches a NaN."""
    got, want = bits(got), bits(want)
    assert got.shape == want.shape, (what, got.shape, want.shape)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan, what)
    differ = np.flatnonzero((got.view(np.uint32) != want.view(np.uint32)) & ~nan)
    assert differ.size == 0, (f"{what}: {differ.size} of {got.size} elements differ, first "
                              f"at {differ[0]}: {got.reshape(-1)[differ[0]]!r} vs "
                              f"{want.reshape(-1)[differ[0]]!r}")


def check(fn, self_values, src_values, *fixed, dtype, grad=True):
    """fn(lib, x, src, *fixed) of x and src cast to dtype, and the gradients to both for a
    cotangent of mixed values, against PyTorch's bit for bit. fixed: index arrays, passed as
    each library's tensors."""
    runs = []
    for lib in (cg, torch):
        kind = getattr(lib, dtype)
        x, src = (lib.tensor(a).to(kind).requires_grad_(grad) for a in (self_values, src_values))
        out = fn(lib, x, src, *(lib.tensor(a) for a in fixed))
        grads = ()
        if grad:
            cotangent = lib.tensor(mixed(tuple(out.shape), dtype, seed=99)).to(kind)
            out.backward(cotangent)
            grads = (x.grad, src.grad)
        runs.append((out, *grads))
    for what, got, want in zip(("value", "self's gradient", "src's gradient"), *runs):
        if want is None:        # (a source the op does not read)
            assert got is None, what
        else:
            assert_identical(got, want, what)


# ---- sums onto a tensor ----

def test_a_sum_adds_each_value_onto_self_in_turn():
    # 1.0 + 4e-8 is 1.0, twice: the values' sum, 8e-8, would make it 1.0000001
    check(lambda L, x, s, i: x.index_add(0, i, s), np.ones(2, np.float32),
          np.full(2, 4e-8, np.float32), np.zeros(2, np.int64), dtype="float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape, dim, index_dtype, alpha", [
    ((5, 8), 0, np.int64, 1),       # 16-bit: float32, rounded once (scatter_add_)
    ((8, 5), 1, np.int64, 1),
    ((6, 65, 5), 0, np.int64, 1),   # fuzz seed 99002097's
    ((4, 5, 6), 1, np.int64, 1),    # 16-bit from here on: each step rounded (add_ a slice)
    ((5,), 0, np.int64, 1),
    ((5, 8), 0, np.int32, 1),
    ((5, 8), 0, np.int64, 2),
    ((1, 3, 1), 1, np.int64, 1),
])
def test_index_add_is_pytorchs(dtype, shape, dim, index_dtype, alpha):
    n = 300
    index = np.random.default_rng(1).integers(0, shape[dim], n).astype(index_dtype)
    source = mixed(shape[:dim] + (n,) + shape[dim + 1:], dtype, seed=2)
    x = mixed(shape, dtype, seed=3, special=(-0.0, 0.0))
    check(lambda L, x, s, i: x.index_add(dim, i, s, alpha=alpha), x, source, index, dtype=dtype)
    check(lambda L, x, s, i: x.clone().index_add_(dim, i, s, alpha=alpha), x, source, index,
          dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add_is_pytorchs(dtype, dim):
    shape = (4, 6)
    index_shape = (300, 6) if dim == 0 else (4, 300)
    index = np.random.default_rng(4).integers(0, shape[dim], index_shape)
    src = mixed(index_shape, dtype, seed=5)
    x = mixed(shape, dtype, seed=6)
    check(lambda L, x, s, i: x.scatter_add(dim, i, s), x, src, index, dtype=dtype)
    check(lambda L, x, s, i: x.clone().scatter_add_(dim, i, s), x, src, index, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_index_put_with_accumulate_is_pytorchs(dtype):
    rng = np.random.default_rng(7)
    i, j = rng.integers(0, 3, 400), rng.integers(-4, 4, 400)
    x = mixed((3, 4, 8), dtype, seed=8)
    check(lambda L, x, v, i, j: x.index_put((i, j), v, accumulate=True), x,
          mixed((400, 8), dtype, seed=9), i, j, dtype=dtype)
    check(lambda L, x, v, i: x.clone().index_put_((i,), v, accumulate=True), x,
          mixed((400, 4, 8), dtype, seed=10), i, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_put_with_accumulate_is_pytorchs(dtype):
    index = np.random.default_rng(11).integers(-12, 12, 300)
    check(lambda L, x, v, i: x.put(i, v, accumulate=True), mixed((3, 4), dtype, seed=12),
          mixed(300, dtype, seed=13), index, dtype=dtype)


# ---- reductions onto a tensor ----

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_is_pytorchs(dtype, reduce, include_self):
    rng = np.random.default_rng(14)
    index = rng.integers(0, 3, (60, 4))
    if reduce == "prod":
        x, src = near_one((4, 4), seed=15), near_one((60, 4), seed=16)
        src[5, 1] = src[9, 2] = src[17, 2] = x[0, 3] = 0.0     # a lone zero, two, one in self
    elif reduce in ("amax", "amin"):    # ties, of zeros of both signs too
        choices = np.array([0.0, -0.0, 1.0, -1.0, 2.0], np.float32)
        x, src = rng.choice(choices, (4, 4)), rng.choice(choices, (60, 4))
    else:
        x, src = mixed((4, 4), dtype, seed=15), mixed((60, 4), dtype, seed=16)

    def reduced(L, x, s, i):
        return x.scatter_reduce(0, i, s, reduce, include_self=include_self)
    check(reduced, x, src, index, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("shape", [(4, 3), (4,)])
def test_index_reduce_is_pytorchs(dtype, reduce, shape):
    index = np.random.default_rng(17).integers(0, 4, 40)
    if reduce == "prod":
        x, src = near_one(shape, seed=18), near_one((40,) + shape[1:], seed=19)
    else:
        x, src = mixed(shape, dtype, seed=18), mixed((40,) + shape[1:], dtype, seed=19)
    for include_self in (True, False):
        check(lambda L, x, s, i: x.index_reduce(0, i, s, reduce, include_self=include_self),
              x, src, index, dtype=dtype)


# ---- gradients that are scatters ----

def _picked(how):
    def fn(L, x, unused, i):
        if how == "index":
            return x[i]
        if how == "embedding":
            return L.nn.functional.embedding(i, x)
        if how == "gather":
            return x.gather(0, i.reshape(-1, 1).expand(-1, x.shape[1]))
        if how == "take_along_dim":
            return L.take_along_dim(x, i.reshape(-1, 1).expand(-1, x.shape[1]), 0)
        if how == "take":
            return x.take(i)
        return x.index_select(0, i)
    return fn


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("how", ["index", "embedding", "gather", "take_along_dim", "take",
                                 "index_select"])
def test_gradients_of_picking_rows_are_pytorchs(dtype, how):
    # indexing's, embedding's and take's sum rounds each step; gather's, take_along_dim's and
    # index_select's (2 dims, int64) keeps float32
    index = np.random.default_rng(20).integers(0, 3, 300)
    check(_picked(how), mixed((3, 8), dtype, seed=21), np.zeros(1, np.float32), index,
          dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("shape, dim, index_dtype", [
    ((3,), 0, np.int64), ((2, 3, 4), 1, np.int64), ((3, 4), 0, np.int32)])
def test_index_select_gradient_rounds_where_index_add_does(dtype, shape, dim, index_dtype):
    index = np.random.default_rng(22).integers(0, 3, 300).astype(index_dtype)
    check(lambda L, x, unused, i: x.index_select(dim, i), mixed(shape, dtype, seed=23),
          np.zeros(1, np.float32), index, dtype=dtype)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cummax_gradient_is_pytorchs(dtype):
    x = np.random.default_rng(24).integers(0, 3, (5, 300)).astype(np.float32)   # long ties
    check(lambda L, x, unused: x.cummax(1).values, x, np.zeros(1, np.float32), dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_code_combines_onto_self(codegen_for, dtype):
    # a work-item a column (lower_scatter._run), after the fill with self's values
    codegen_for(Target(width=1, no_contraction=True, float_to_int_min=True))
    index = np.random.default_rng(28).integers(0, 5, 300)
    x, src = mixed((5, 33), dtype, seed=29), mixed((300, 33), dtype, seed=30)
    check(lambda L, x, s, i: x.index_add(0, i, s), x, src, index, dtype=dtype)
    check(lambda L, x, s, i: x.index_put((i,), s, accumulate=True), x, src, index, dtype=dtype)


# ---- edges ----

@pytest.mark.parametrize("dtype", DTYPES)
def test_signed_zeros_nan_and_inf_onto_self(dtype):
    # -0.0 + -0.0 stays -0.0 and -0.0 + 0.0 is 0.0; a NaN or inf in self or among the values
    x = np.array([[-0.0, 0.0, -0.0, np.nan], [1.0, np.inf, -0.0, 2.0], [-0.0] * 4], np.float32)
    src = np.array([[-0.0, -0.0, 0.0, 1.0], [np.inf, -np.inf, -0.0, np.nan], [0.0, 1.0, -0.0, 3.0]],
                   np.float32)
    index = np.array([0, 1, 0])
    for fn in (lambda L, x, s, i: x.index_add(0, i, s),
               lambda L, x, s, i: x.index_put((i,), s, accumulate=True),
               lambda L, x, s, i: x.scatter_reduce(0, i.reshape(-1, 1).expand(-1, 4), s, "amax"),
               lambda L, x, s, i: x.scatter_reduce(0, i.reshape(-1, 1).expand(-1, 4), s, "amin"),
               lambda L, x, s, i: x.scatter_reduce(0, i.reshape(-1, 1).expand(-1, 4), s, "prod")):
        check(fn, x, src, index, dtype=dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_an_empty_index_leaves_self(dtype):
    x, empty = mixed((3, 4), dtype, special=(-0.0,)), np.zeros(0, np.int64)
    check(lambda L, x, s, i: x.index_add(0, i, s), x, np.zeros((0, 4), np.float32), empty,
          dtype=dtype)
    check(lambda L, x, s, i: x.index_put((i,), s, accumulate=True), x,
          np.zeros((0, 4), np.float32), empty, dtype=dtype)
    check(lambda L, x, s, i: x.scatter_reduce(0, i.reshape(0, 1), s, "prod"), x,
          np.zeros((0, 1), np.float32), empty, dtype=dtype)


@pytest.mark.parametrize("op", ["index_add", "scatter_add", "index_put", "put",
                                "scatter_reduce"])
def test_out_of_place_leaves_self_unchanged(op):
    rng = np.random.default_rng(25)
    values = mixed((4, 5), seed=26)
    x = cg.tensor(values)
    cg.realize(x)
    index = cg.tensor(rng.integers(0, 4, 7))
    src = cg.tensor(mixed((7, 5), seed=27))
    rows = index.reshape(-1, 1).expand(-1, 5)
    out = {"index_add": lambda: x.index_add(0, index, src),
           "scatter_add": lambda: x.scatter_add(0, rows, src),
           "index_put": lambda: x.index_put((index,), src, accumulate=True),
           "put": lambda: x.put(index, src[:, 0], accumulate=True),
           "scatter_reduce": lambda: x.scatter_reduce(0, rows, src, "amax")}[op]()
    cg.realize(out)
    np.testing.assert_array_equal(x.numpy(), values)
    assert not np.array_equal(out.numpy(), values)

