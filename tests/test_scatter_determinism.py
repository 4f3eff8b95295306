"""Float scatters combine their values in index order (lower_scatter.py's ordered kernel), as
PyTorch's CPU kernels do: the gradients of indexing and embedding, index_add_, scatter_add_,
index_put_ with accumulate and scatter_reduce are PyTorch's bit for bit, and the same at every
run, where many values of mixed magnitudes land on one element (an order of additions that
differs rounds differently). Also: which index axes the kernel walks in parallel
(scatter_order.walk)."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import dtype as dt
from clgrad.compiler import ir
from clgrad.compiler.scatter_order import walk
from clgrad.compiler.target import Target
from helpers import torch

pytestmark = pytest.mark.skipif(torch is None, reason="compares with PyTorch's own rounding")


@pytest.fixture(autouse=True)
def _pytorch_in_index_order():
    """PyTorch's CPU index_put_ with accumulate (the gradient of indexing too) adds float32
    values with atomics, in parallel, from 32,768 of them on more than one thread; in its
    deterministic mode it adds them in index order, as it does other dtypes."""
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    yield
    torch.use_deterministic_algorithms(was)


def mixed(shape, seed=0, special=()):
    """Normal values scaled by 1e-6..1e6, so that the order of their sum changes its rounding;
    with `special` (NaN, inf, -0.0, ...) scattered among them."""
    rng = np.random.default_rng(seed)
    values = rng.standard_normal(shape) * 10.0 ** rng.integers(-6, 7, shape)
    flat = values.reshape(-1)
    for value in special:
        flat[rng.integers(0, flat.size)] = value
    return values.astype(np.float32)


def assert_identical(got, want):
    """Bit for bit: -0.0 is not 0.0; any NaN matches a NaN."""
    got = np.asarray(got.detach().numpy() if hasattr(got, "detach") else got)
    want = want.detach().numpy()
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, want.shape)
    nan = np.isnan(want)
    np.testing.assert_array_equal(np.isnan(got), nan)
    bits, want_bits = got.view(np.uint32), want.view(np.uint32)
    mismatched = np.flatnonzero((bits != want_bits) & ~nan)
    assert mismatched.size == 0, (f"{mismatched.size} elements differ, first at "
                                  f"{mismatched[0]}: {got.reshape(-1)[mismatched[0]]!r} vs "
                                  f"{want.reshape(-1)[mismatched[0]]!r}")


def both(fn, *arrays):
    """fn on clgrad tensors and on torch tensors of the same arrays."""
    return fn(cg, *map(cg.tensor, arrays)), fn(torch, *map(torch.tensor, arrays))


# ---- gradients ----

def index_gradient(lib, x, index, g):
    x = x.detach().requires_grad_()
    x[index].backward(g)
    return x.grad


@pytest.mark.parametrize("rows, shape, index", [
    (1, (32, 16), [0, -1, 0, 0, -1]),       # fuzz seed 98600031: five rows into one
    (7, (64,), np.random.default_rng(1).integers(0, 7, 3000)),
    (3, (), np.random.default_rng(2).integers(0, 3, 5000)),      # a 1-d x: one column
])
def test_index_gradient_is_pytorchs(rows, shape, index):
    x = mixed((rows,) + shape, seed=1)
    g = mixed((len(index),) + shape, seed=2)
    ours, theirs = both(index_gradient, x, np.array(index), g)
    assert_identical(ours, theirs)


def test_index_gradient_of_two_index_tensors():
    rng = np.random.default_rng(3)
    i, j = rng.integers(0, 4, 2000), rng.integers(-5, 5, 2000)

    def grad(lib, x, i, j, g):
        x = x.detach().requires_grad_()
        x[i, :, j].backward(g)
        return x.grad
    assert_identical(*both(grad, mixed((4, 3, 5)), i, j, mixed((2000, 3), seed=4)))


def test_embedding_gradient_with_repeated_tokens_is_pytorchs():
    # examples/train_gpt.py's shapes: a (16, 64) batch of 65 tokens, 128 features
    tokens = np.random.default_rng(5).integers(0, 65, (16, 64))

    def grad(lib, w, tokens, g):
        w = w.detach().requires_grad_()
        lib.nn.functional.embedding(tokens, w).backward(g)
        return w.grad
    assert_identical(*both(grad, mixed((65, 128)), tokens, mixed((16, 64, 128), seed=6)))


@pytest.mark.parametrize("dim", [0, 1])
def test_gather_gradient_is_pytorchs(dim):
    shape = (6, 40) if dim == 0 else (40, 6)
    index = np.random.default_rng(7).integers(0, 6, (40, 40))

    def grad(lib, x, index, g):
        x = x.detach().requires_grad_()
        x.gather(dim, index).backward(g)
        return x.grad
    assert_identical(*both(grad, mixed(shape), index, mixed((40, 40), seed=8)))


def test_cummax_gradient_is_pytorchs():
    x = np.random.default_rng(9).integers(0, 3, (5, 300)).astype(np.float32)   # long ties

    def grad(lib, x, g):
        x = x.detach().requires_grad_()
        x.cummax(1).values.backward(g)
        return x.grad
    assert_identical(*both(grad, x, mixed((5, 300), seed=10)))


# ---- writing at indices ----

@pytest.mark.parametrize("shape, dim", [((5, 8), 0), ((7, 5, 9), 1), ((6, 5), 1), ((5,), 0)])
def test_index_add_is_pytorchs(shape, dim):
    n = 2000
    index = np.random.default_rng(11).integers(0, shape[dim], n)
    source = mixed(shape[:dim] + (n,) + shape[dim + 1:], seed=12)
    zeros = np.zeros(shape, np.float32)
    assert_identical(*both(lambda lib, x, i, s: x.index_add_(dim, i, s), zeros, index, source))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_scatter_add_is_pytorchs(dim):
    shape = (4, 6, 5)
    index_shape = tuple(300 if a == dim else n for a, n in enumerate(shape))
    index = np.random.default_rng(13).integers(0, shape[dim], index_shape)
    zeros = np.zeros(shape, np.float32)
    assert_identical(*both(lambda lib, x, i, s: x.scatter_add_(dim, i, s), zeros, index,
                           mixed(index_shape, seed=14)))


def test_index_put_accumulate_is_pytorchs():
    rng = np.random.default_rng(15)
    i, j = rng.integers(0, 3, 4000), rng.integers(0, 4, 4000)

    def put(lib, x, i, j, v):
        return x.index_put_((i, j), v, accumulate=True)
    assert_identical(*both(put, np.zeros((3, 4, 8), np.float32), i, j, mixed((4000, 8), seed=16)))


def test_put_accumulate_is_pytorchs():
    index = np.random.default_rng(17).integers(-12, 12, 3000)

    def put(lib, x, i, v):
        return x.put_(i, v, accumulate=True)
    assert_identical(*both(put, np.zeros((3, 4), np.float32), index, mixed(3000, seed=18)))


@pytest.mark.parametrize("reduce", ["sum", "prod", "amax", "amin"])
def test_scatter_reduce_without_self_is_pytorchs(reduce):
    rng = np.random.default_rng(19)
    index = rng.integers(0, 3, (500, 4))
    if reduce == "prod":        # near 1, so that the products stay finite and order matters
        values = (1 + rng.standard_normal((500, 4)) * 0.05).astype(np.float32)
    elif reduce == "sum":
        values = mixed((500, 4), seed=20)
    else:                       # zeros of both signs tie: the first one met stays, as in PyTorch
        values = rng.choice(np.array([0.0, -0.0, 1.0, -1.0, 2.0], np.float32), (500, 4))
        values[:, 0] = rng.choice(np.array([0.0, -0.0], np.float32), 500)

    def reduced(lib, x, i, s):
        return x.scatter_reduce(0, i, s, reduce, include_self=False)
    assert_identical(*both(reduced, np.full((3, 4), 7.0, np.float32), index, values))


# ---- edges ----

def test_nan_and_infinities_land_as_in_pytorch():
    index = np.random.default_rng(20).integers(0, 4, 600)
    g = mixed((600, 6), seed=21, special=(np.nan, np.inf, -np.inf, np.inf, -0.0))
    assert_identical(*both(index_gradient, mixed((4, 6)), index, g))
    ones = np.ones((600, 6), np.float32)
    ones[::7, 2] = np.inf
    ones[::11, 3] = -np.inf
    ones[5, 4] = np.nan
    assert_identical(*both(lambda lib, x, i, s: x.index_add_(0, i, s),
                           np.zeros((4, 6), np.float32), index, ones))


def test_negative_zeros_stay_where_they_land():
    # -0.0 + -0.0 is -0.0: from zeros, PyTorch's 0.0 + -0.0 gives 0.0
    index = np.array([0, 0, 2])
    values = np.array([[-0.0, 1.0], [-0.0, -1.0], [-0.0, -0.0]], np.float32)
    assert_identical(*both(lambda lib, x, i, s: x.index_add_(0, i, s),
                           np.full((3, 2), -0.0, np.float32), index, values))
    assert_identical(*both(index_gradient, np.zeros((3, 2), np.float32), index, values))


def test_empty_index_and_size_one_dims():
    empty, no_values = np.zeros(0, np.int64), np.zeros((0, 1, 4), np.float32)
    assert_identical(*both(index_gradient, mixed((3, 1, 4)), empty, no_values))
    assert_identical(*both(lambda lib, x, i, s: x.index_add_(1, i, s),
                           np.zeros((1, 3, 1), np.float32), np.array([2, 2, 0, 2]),
                           mixed((1, 4, 1), seed=22)))
    assert_identical(*both(index_gradient, mixed((1,)), np.zeros(1000, np.int64),
                           mixed(1000, seed=23)))


# ---- at every run ----

def test_repeated_runs_give_the_same_bits():
    index = np.random.default_rng(24).integers(0, 3, 20000)
    x, g, self_values = mixed((3, 16)), mixed((20000, 16), seed=25), mixed((3, 16), seed=26)
    runs = [index_gradient(cg, cg.tensor(x), cg.tensor(index), cg.tensor(g)).numpy().tobytes()
            for _ in range(3)]
    # onto a tensor of its own values: the sum added to it (frontend/scatter.py), the same too
    runs_onto = [cg.tensor(self_values).index_add_(0, cg.tensor(index), cg.tensor(g)).numpy()
                 .tobytes() for _ in range(3)]
    assert len(set(runs)) == 1 and len(set(runs_onto)) == 1


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sixteen_bit_sums_are_pytorchs(dtype):
    # PyTorch's index_add_ and scatter_add_ of 16-bit floats add in float and round once
    index = np.random.default_rng(27).integers(0, 4, 1000)
    values = mixed((1000, 8), seed=28) * 1e-3

    def added(lib, x, i, s):
        kind = getattr(lib, dtype)
        x, s = x.to(kind), s.to(kind)
        summed = x.clone().scatter_add_(0, i.reshape(-1, 1).expand(-1, 8), s)
        return x.index_add_(0, i, s).float(), summed.float()     # (exact: NumPy has no bf16)
    (ours, ours2), (theirs, theirs2) = both(added, np.zeros((4, 8), np.float32), index, values)
    assert_identical(ours, theirs)
    assert_identical(ours2, theirs2)


# ---- the walk ----

@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_add_walks_columns_in_parallel(dim):
    # along dim 1 nothing keeps an index below the row's length: one work-item walks them all
    index = cg.tensor(np.random.default_rng(29).integers(0, 5, (64, 256)))
    shape = (5, 256) if dim == 0 else (64, 5)
    out = cg.zeros(*shape).scatter_add(dim, index, cg.randn(64, 256))
    (scatter,) = [k for k in cg.compile(out) if k.kind == "scatter"]
    assert (scatter.global_size[0] > 1) == (dim == 0), scatter.global_size


def test_gpu_code_gives_each_column_a_work_item(codegen_for):
    # a GPU's work-items side by side read a line of columns together (lower_scatter._run)
    codegen_for(Target(width=1, no_contraction=True, float_to_int_min=True))
    index = np.random.default_rng(30).integers(0, 5, (300, 33))
    values = mixed((300, 33), seed=31)
    zeros = np.zeros((5, 33), np.float32)
    assert_identical(*both(lambda lib, x, i, s: x.scatter_add_(0, i, s), zeros, index, values))
    assert_identical(*both(index_gradient, zeros, index[:, 0], values))
    out = cg.zeros(5, 33).scatter_add(0, cg.tensor(index), cg.tensor(values))
    (scatter,) = [k for k in cg.compile(out) if k.kind == "scatter"]
    assert scatter.global_size == (33,)


def _iota(shape, axis):
    ones = tuple(n if a == axis else 1 for a, n in enumerate(shape))
    return ir.iota(shape[axis], dt.int64).reshape(ones).expand(shape)


def _data(shape):
    return cg.tensor(np.zeros(shape, np.int64)).node


def _walk(index):
    return walk(index, lambda node: node.op is ir.Op.BUFFER)


@pytest.mark.parametrize("shape, terms, parallel", [
    ((4, 6), [(None, 6), (1, 1)], (1,)),            # scatter along dim 0 of (n, 6)
    ((4, 5, 6), [(0, 30), (None, 6), (2, 1)], (2,)),    # along the middle dim
    ((4, 6), [(0, 6), (None, 1)], ()),              # along the last: the data's range unknown
    ((4, 6), [(None, 1)], ()),                      # data alone: a work-item a column
    ((4, 6), [(None, 6), (1, 2)], ()),              # iota values past the data's stride
    ((4, 6), [(0, 6), (1, 1), ((), 1)], (0, 1)),    # a slice at an offset read from a buffer
    ((4, 6), [(0, 2), (1, 1)], ()),                 # overlapping windows: (0, 2) meets (1, 0)
])
def test_walk_gives_work_items_the_axes_that_never_meet(shape, terms, parallel):
    """terms: (axis, stride) for an iota along axis, (None, stride) for data of the index's
    shape, ((), stride) for one datum at every position; their sum is the index, as
    frontend/scatter.py and frontend/index_inputs.py lay out destinations."""
    index = None
    for axis, stride in terms:
        if axis is None:
            term = _data(shape)
        elif axis == ():
            term = _data((1, 1)).expand(shape)
        else:
            term = _iota(shape, axis)
        term = term * stride if stride != 1 else term
        index = term if index is None else index + term
    assert _walk(index).parallel == parallel


def test_walk_finds_the_shape_a_flat_index_was_made_in():
    # an index computed in (5, 7) and flattened: along its columns, in that shape only
    rows = _iota((5, 7), 1) + _data((5, 7)) * 7
    order = _walk(rows.reshape((35,)))
    assert (order.shape, order.parallel) == ((5, 7), (1,))
