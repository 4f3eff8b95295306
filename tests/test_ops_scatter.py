"""Writing at indices: scatter, scatter_add, scatter_reduce, index_add, index_copy,
index_fill, index_put, put and take, forward and backward against PyTorch; the SCATTER
primitive against the interpreter; and the cost of a gathered gradient, linear in the number
of indices."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import ir
from clgrad.compiler.interpret import evaluate
from clgrad.compiler.ops import SCATTER_MODES
from helpers import check, library, torch

X = (3, 4)
SRC = (2, 4)
DUPLICATES = np.array([[0, 1, 2, 0], [2, 1, 0, 1]])     # every column writes a row twice
UNIQUE = np.array([[0, 1, 2, 0], [2, 0, 1, 1]])


def test_scatter_src_and_value():
    check(lambda x, i, s: x.scatter(0, i, s), X, UNIQUE, SRC)
    check(lambda x, i, s: x.scatter(1, i, s), X, np.array([[3, 0], [1, 2]]), (2, 2))
    # an index smaller than src reads src's corner (PyTorch's own backward fails on it)
    check(lambda x, i, s: x.scatter(1, i, s), X, np.array([[3, 0], [1, 2]]), SRC, grad=False)
    check(lambda x, i: x.scatter(1, i, 2.5), X, np.array([[3, 0], [1, 2]]))
    check(lambda x, i: x.scatter(0, i, value=-1.0), X, UNIQUE[:1])
    # (PyTorch has no derivative for scatter with reduce=)
    check(lambda x, i, s: x.scatter(0, i, s, reduce="add"), X, DUPLICATES, SRC, grad=False)
    check(lambda x, i, s: x.scatter(0, i, s, reduce="multiply"), X, DUPLICATES, SRC, grad=False)


def test_scatter_with_duplicates_keeps_one_of_the_values():
    # which write wins is the kernel's choice (PyTorch: "nondeterministic"); each source value
    # still gets the gradient of the element it was written to, as in PyTorch
    x = cg.zeros(3, requires_grad=True)
    src = cg.tensor([1.0, 2.0, 5.0], requires_grad=True)
    out = x.scatter(0, cg.tensor([0, 0, 2]), src)
    assert out.detach().numpy()[0] in (1.0, 2.0) and out.detach().numpy()[1:].tolist() == [0.0, 5.0]
    (out * cg.tensor([1.0, 2.0, 3.0])).sum().backward()
    assert x.grad.numpy().tolist() == [0.0, 2.0, 0.0]
    assert src.grad.numpy().tolist() == [1.0, 1.0, 3.0]


def test_scatter_add():
    check(lambda x, i, s: x.scatter_add(0, i, s), X, DUPLICATES, SRC)
    check(lambda x, i, s: x.scatter_add(1, i, s), X, np.array([[3, 3, 3]] * 3), (3, 3))
    check(lambda x, i, s: x.scatter_add(1, i, s), X, np.array([[3, 3, 3]] * 3), (3, 5), grad=False)
    check(lambda x, i, s: x.scatter_add(0, i, s), (1, 4), np.zeros((3, 4), np.int64), (3, 4))
    check(lambda x, i, s: x.scatter_add(0, i, s), X, np.zeros((0, 4), np.int64), (0, 4))
    check(lambda x, i, s: library(x).scatter_add(x, 0, i, s), X, DUPLICATES, SRC)


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce(reduce, include_self):
    fn = lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self)  # noqa
    check(fn, X, DUPLICATES, SRC)
    check(fn, X, UNIQUE, SRC)
    ties = np.array([[1.0, 2.0, 0.0, 0.0], [1.0, -2.0, 0.0, 3.0]], np.float32)
    self_ties = np.array([[1.0, 2.0, 0.0, 3.0]] * 3, np.float32)
    check(fn, self_ties, np.array([[0, 0, 0, 0], [0, 1, 0, 0]]), ties)    # ties and zeros


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_integers(reduce):
    x = np.arange(-6, 6).reshape(X).astype(np.int64)
    src = np.array([[5, -7, 3, 2], [-1, 4, 9, -8]], np.int64)
    for include_self in (True, False):
        check(lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
              x, DUPLICATES, src)
        check(lambda x, i, s: x.scatter_reduce(0, i, s, reduce, include_self=include_self),
              x.astype(np.int32), DUPLICATES, src.astype(np.int32))


def test_scatter_reduce_aliases():
    for reduce in ("max", "min"):
        # (PyTorch's backward refuses the aliases)
        check(lambda x, i, s: x.scatter_reduce(0, i, s, reduce), X, DUPLICATES, SRC, grad=False)


def test_scatter_reduce_nan_and_inf():
    src = np.array([[np.nan, 1.0, 2.0, 3.0], [0.0, np.nan, -1.0, 4.0]], np.float32)
    for reduce in ("amax", "amin", "sum", "prod"):
        check(lambda x, i, s: x.scatter_reduce(0, i, s, reduce), X, DUPLICATES, src, grad=False)
    src = np.array([[np.inf, 1.0, -np.inf, 3.0], [0.0, 2.0, -1.0, 4.0]], np.float32)
    for reduce in ("amax", "amin"):     # an infinite result keeps its value with gradients on
        check(lambda x, i, s: x.scatter_reduce(0, i, s, reduce), X, DUPLICATES, src,
              grad=False)
        x = cg.zeros(X, requires_grad=True)
        got = x.scatter_reduce(0, cg.tensor(DUPLICATES), cg.tensor(src), reduce).detach().numpy()
        want = torch.zeros(X).scatter_reduce(0, torch.tensor(DUPLICATES), torch.tensor(src),
                                             reduce).numpy()
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32, np.int64])
def test_scatter_dtypes(dtype):
    x = (np.arange(12).reshape(X) - 4).astype(dtype)
    src = (np.arange(8).reshape(SRC) * 3 - 7).astype(dtype)
    check(lambda x, i, s: x.scatter_add(0, i, s), x, DUPLICATES, src, atol=1e-2)
    check(lambda x, i, s: x.scatter(0, i, s), x, UNIQUE, src, atol=1e-2)


def test_index_add():
    index = np.array([2, 0, 2])
    check(lambda x, i, s: x.index_add(0, i, s), X, index, (3, 4))
    check(lambda x, i, s: x.index_add(1, i, s, alpha=-2.0), X, index, (3, 3))
    check(lambda x, i, s: x.index_add(0, i, s), X, np.zeros(0, np.int64), (0, 4))
    check(lambda x, i, s: x.index_add(0, i, s), (1, 4), np.array([0, 0]), (2, 4))
    check(lambda x, i, s: x.index_add(0, i, s), (5,), np.array(3), (1,))
    check(lambda x, i, s: x.index_add(0, i, s), X, index.astype(np.int32), (3, 4))
    check(lambda x, i, s: x.index_add(0, i, s), np.zeros(X, np.int64), index,
          np.ones((3, 4), np.int64))


def test_index_copy_and_fill():
    check(lambda x, i, s: x.index_copy(0, i, s), X, np.array([2, 0]), SRC)
    check(lambda x, i, s: x.index_copy(1, i, s), X, np.array([3]), (3, 1))
    check(lambda x, i, s: x.index_copy(0, i, s), X, np.zeros(0, np.int64), (0, 4))
    check(lambda x, i: x.index_fill(1, i, -1.0), X, np.array([-1, 0, 0]))
    check(lambda x, i, v: x.index_fill(0, i, v), X, np.array([2]), np.array(4.0, np.float32))
    check(lambda x, i: x.index_fill(0, i, 3), X, np.zeros(0, np.int64))


def test_index_put():
    for accumulate in (True, False):
        put = lambda x, i, v: x.index_put((i,), v, accumulate=accumulate)  # noqa: E731
        check(put, X, np.array([0, 2]), (2, 4))
        check(put, X, np.array([-1, 0]), (4,))                   # broadcast values
        check(lambda x, i, j, v: x.index_put((i, j), v, accumulate=accumulate), X,
              np.array([0, 2, 1]), np.array([3, 3, -4]), (3,))
    check(lambda x, i, v: x.index_put((i,), v, accumulate=True), X, np.array([0, 0, 2, 0]),
          (4, 4))
    check(lambda x, i, v: library(x).index_put(x, (i,), v), X, np.array([1]), (1, 4))


def test_sums_keep_signed_zeros_as_pytorch():
    # a -0.0 of self that nothing lands on stays -0.0, and a sum without self starts from
    # +0.0 (edge fuzz seed 11002189: 2 / x.round().scatter_add(...) was inf, PyTorch -inf)
    x = np.array([5.0, -0.0, 7.0, -0.0, 0.0], np.float32)
    index, src = np.array([0, 0, 4]), np.array([-0.0, -0.0, 0.0], np.float32)
    rows = [lambda fw, x, i, s: x.scatter_add(0, i, s),
            lambda fw, x, i, s: x.index_add(0, i, s),
            lambda fw, x, i, s: x.index_put((i,), s, accumulate=True),
            lambda fw, x, i, s: x.put(i, s, accumulate=True)]
    rows += [lambda fw, x, i, s, r=r, k=k: x.scatter_reduce(0, i, s, r, include_self=k)
             for r in ("sum", "mean") for k in (True, False)]
    for fn in rows:
        want = fn(torch, *map(torch.tensor, (x, index, src))).numpy()
        got = fn(cg, *map(cg.tensor, (x, index, src))).numpy()
        np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
        np.testing.assert_array_equal(got, want)
    # a gathered gradient is a sum from zeros too: rows picked only by -0.0s, or by nothing,
    # get +0.0
    w = cg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w.gather(0, cg.tensor([0, 0])).backward(cg.tensor([-0.0, -0.0]))
    assert not np.signbit(w.grad.numpy()).any()


def test_empty_self():
    check(lambda x, i, s: x.index_add(0, i, s), (0, 3), np.zeros(0, np.int64), (0, 3))
    check(lambda x, i, s: x.scatter_add(1, i, s), (2, 0), np.zeros((2, 0), np.int64), (2, 0))
    check(lambda x, i: x.take(i), (0,), np.zeros(0, np.int64))


def test_put_and_take():
    check(lambda x, i, s: x.put(i, s), X, np.array([0, -1, 5]), (3,))
    check(lambda x, i, s: x.put(i, s, accumulate=True), X, np.array([[0, -1], [0, 0]]), (2, 2))
    check(lambda x, i, s: x.put(i, s), X, np.zeros(0, np.int64), (0,))
    check(lambda x, i: x.take(i), X, np.array([[0, -1], [5, 5]]))
    check(lambda x, i: x.take(i), X, np.array(7))
    check(lambda x, i: x.take(i), X, np.zeros((0, 2), np.int64))
    check(lambda x, i: library(x).take(x, i), (5,), np.array([4, 4, 0]))


def test_in_place_forms():
    for name, args in [("scatter_", (0, UNIQUE, "src")), ("scatter_add_", (0, DUPLICATES, "src")),
                       ("index_add_", (0, np.array([1, 1]), "src")),
                       ("index_copy_", (0, np.array([2, 1]), "src")),
                       ("index_fill_", (1, np.array([0, 3]), 2.0)),
                       ("index_put_", ((np.array([0, 1]),), "src")),
                       ("put_", (np.array([0, 9]), "flat")),
                       ("scatter_reduce_", (0, DUPLICATES, "src", "amax"))]:
        results = []
        for lib in (cg, torch):
            x = lib.ones(X)
            src = lib.tensor(np.arange(8, dtype=np.float32).reshape(SRC))
            given = [lib.tensor(a) if isinstance(a, np.ndarray) else a for a in args]
            given = [{"src": src, "flat": src[0, :2]}.get(a, a) if isinstance(a, str) else a
                     for a in given]
            given = [tuple(lib.tensor(i) for i in a) if isinstance(a, tuple) else a for a in given]
            assert getattr(x, name)(*given) is x
            results.append(x.numpy())
        np.testing.assert_allclose(*results, err_msg=name)


ERRORS = {
    "scatter_index_out_of_range": lambda L, x: x.scatter(0, L.tensor([[3, 0]]), 1.0),
    "scatter_negative_index": lambda L, x: x.scatter(0, L.tensor([[-1, 0]]), 1.0),
    "scatter_float_index": lambda L, x: x.scatter(0, L.tensor([[0.0]]), 1.0),
    "scatter_rank": lambda L, x: x.scatter(0, L.tensor([0]), 1.0),
    "scatter_dtype": lambda L, x: x.scatter(0, L.tensor([[0]]), L.ones(1, 4, dtype=L.float64)),
    "scatter_index_too_big": lambda L, x: x.scatter_add(0, L.tensor([[0] * 5]), L.ones(1, 5)),
    "scatter_reduce_mode": lambda L, x: x.scatter_reduce(0, L.tensor([[0]]), L.ones(1, 4), "add"),
    "index_add_out_of_range": lambda L, x: x.index_add(0, L.tensor([3]), L.ones(1, 4)),
    "index_add_negative": lambda L, x: x.index_add(0, L.tensor([-1]), L.ones(1, 4)),
    "index_add_count": lambda L, x: x.index_add(0, L.tensor([0, 1]), L.ones(1, 4)),
    "index_add_2d_index": lambda L, x: x.index_add(0, L.tensor([[0]]), L.ones(1, 4)),
    "index_add_shape": lambda L, x: x.index_add(0, L.tensor([0]), L.ones(1, 3)),
    "index_add_dtype": lambda L, x: x.index_add(0, L.tensor([0]), L.ones(1, 4, dtype=L.float64)),
    "index_copy_out_of_range": lambda L, x: x.index_copy(0, L.tensor([-1]), L.ones(1, 4)),
    "index_fill_out_of_range": lambda L, x: x.index_fill(0, L.tensor([3]), 2.0),
    "index_fill_value_dims": lambda L, x: x.index_fill(0, L.tensor([0]), L.ones(1)),
    "index_put_out_of_range": lambda L, x: x.index_put((L.tensor([3]),), L.ones(4)),
    "index_put_dtype": lambda L, x: x.index_put((L.tensor([0]),), L.ones(4, dtype=L.float64)),
    "put_out_of_range": lambda L, x: x.put(L.tensor([12]), L.ones(1)),
    "put_count": lambda L, x: x.put(L.tensor([0]), L.ones(2)),
    "take_out_of_range": lambda L, x: x.take(L.tensor([-13])),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_as_pytorch(name):
    with pytest.raises(Exception) as expected:
        ERRORS[name](torch, torch.zeros(X))
    with pytest.raises(expected.type):
        ERRORS[name](cg, cg.zeros(X))


PRIMITIVE_CASES = [(mode, dtype) for mode in SCATTER_MODES
                   for dtype in (cg.float32, cg.float64, cg.int32, cg.int64, cg.float16)]
PRIMITIVE_CASES += [(mode, cg.bool) for mode in ("add", "add_to", "replace")]   # add: an any


@pytest.mark.parametrize("mode, dtype", PRIMITIVE_CASES)
def test_scatter_primitive_matches_the_interpreter(mode, dtype):
    index = cg.tensor([0, 2, 0, 1, 2, 2, -1, 9])       # the last two land nowhere
    src = (cg.arange(16.0) - 5).reshape(8, 2).to(dtype)
    got = cg.Tensor(ir.scatter(index.node, src.node, 4, mode), index.device).numpy()
    (want,) = evaluate(ir.scatter(index[:6].node, src[:6].node, 4, mode))
    if mode != "replace":
        np.testing.assert_array_equal(got, want)
        return
    values = src.numpy()        # of values written to one element, any one wins
    for row, written in ((0, [0, 2]), (1, [3]), (2, [1, 4, 5])):
        assert all(np.isin(got[row, c], values[written, c]) for c in range(2)), (row, got)
    assert not got[3].any()


@pytest.mark.parametrize("mode, dtype", PRIMITIVE_CASES)
def test_scatter_primitive_with_a_row_per_work_item(mode, dtype):
    # 2,048 indices: an atomic scatter's (integers', "replace"'s) work-item combines a whole
    # row (lower_scatter._MIN_ITEMS); a float one combines in index order
    rng = np.random.default_rng(3)
    rows = rng.integers(0, 5, 2048)
    values = rng.integers(-3, 4, (2048, 3))
    index = cg.tensor(np.append(rows, [-1, 6]))            # the last two land nowhere
    src = cg.tensor(np.append(values, [[9] * 3] * 2, 0)).to(dtype)
    got = cg.Tensor(ir.scatter(index.node, src.node, 6, mode), index.device).numpy()
    (want,) = evaluate(ir.scatter(index[:-2].node, src[:-2].node, 6, mode))
    if mode != "replace":       # float sums in any order of small integers are exact
        np.testing.assert_array_equal(got, want)
        return
    written = src.numpy()[:-2]
    for row in range(5):
        for c in range(3):
            assert got[row, c] in written[rows == row, c], (row, c)
    assert not got[5].any()


def test_gathered_gradient_costs_linear_in_indices():
    # 65,536 random indices into 65,536 rows: as a one-hot matmul this asked for 16 GiB
    n = 65536
    index = np.random.default_rng(0).integers(0, n, n)
    w = cg.randn(n, requires_grad=True)
    w[cg.tensor(index)].sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.bincount(index, minlength=n))
    w.grad = None
    with cg.profile() as launched:  # (a backward this large computes the gradient as it ends)
        w[cg.tensor(index)].sum().backward()
        cg.realize(w.grad)
    kinds = [row.name[0] for row in launched.rows]
    assert "X" in kinds and "M" not in kinds, launched.table()      # a scatter, no matmul


def test_embedding_gradient_is_a_scatter():
    emb = cg.nn.Embedding(50000, 64)
    tokens = cg.tensor(np.random.default_rng(1).integers(0, 50000, 4096))
    cg.realize(tokens, emb.weight)
    with cg.profile() as launched:
        emb(tokens).sum().backward()
        cg.realize(emb.weight.grad)
    # the zeros filled, then the scatter-add into them (the detached gradient is that buffer);
    # beside them, the loss's sum where backward() computed it
    kinds = sorted(row.name[0] for row in launched.rows if row.name[0] != "R")
    assert kinds == ["E", "X"], launched.table()
    counts = np.bincount(tokens.numpy(), minlength=50000).astype(np.float32)
    np.testing.assert_allclose(emb.weight.grad.numpy(), np.repeat(counts[:, None], 64, 1))


def test_index_assignment_costs_linear_in_indices():
    x = cg.zeros(40960)
    perm = cg.tensor(np.random.default_rng(2).permutation(40960))
    x[perm[:20000]] = 1.0
    kinds = [k.kind for k in cg.compile(x)]
    assert kinds.count("scatter") == 2 and "matmul" not in kinds, kinds
    assert x.sum().item() == 20000
