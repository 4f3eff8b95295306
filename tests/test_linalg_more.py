"""cg.linalg's norm, vecdot, matmul, diagonal, vander, solve_ex, tensorinv, tensorsolve,
ldl_factor, ldl_factor_ex and ldl_solve against PyTorch: values and gradients in float64
and float32, batched and broadcast, empty and size-1 dims, NaN and inf, singular matrices,
and the errors PyTorch raises for bad input. Many outputs share one `check` (one graph) to
keep the kernels compiled few."""
import math

import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import interpret

from helpers import check, library, make

INF, NAN = math.inf, math.nan
TOLERANCES = {np.float64: dict(atol=1e-10, rtol=1e-9), np.float32: dict(atol=1e-4, rtol=1e-4)}


def linalg(t):
    return library(t).linalg


def symmetric(shape, dtype=np.float64, seed=0, zero_diagonal=False):
    """Random symmetric matrices, indefinite; with a zero diagonal Bunch-Kaufman must take
    2x2 pivots."""
    a = make(shape, dtype, seed=seed)
    a = a + np.swapaxes(a, -1, -2)
    if zero_diagonal:
        a = a * (1 - np.eye(shape[-1], dtype=dtype))
    return np.ascontiguousarray(a)


def well_conditioned(shape, dtype=np.float64, seed=0):
    return make(shape, dtype, seed=seed) + 4 * np.eye(shape[-1], dtype=dtype)


# ---- linalg.norm ---------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_norm_dispatch_values_and_gradients(dtype):
    """ord None over everything, vector norms over one dim, matrix norms over two ('fro',
    'nuc', ±2 through singular values, ±1 and ±inf through column and row sums), keepdim,
    dims in any order, dtype."""
    def fn(a, m, v):
        L = linalg(a)
        lib = library(a)
        return (L.norm(a), L.norm(a, keepdim=True), L.norm(a, dim=1), L.norm(a, 3, dim=(2,)),
                L.norm(a, None, (1, 2)), L.norm(a, -1, dim=-1, keepdim=True),
                L.norm(m), L.norm(m, "fro"), L.norm(m, "nuc"), L.norm(m, 2), L.norm(m, -2),
                L.norm(m, 1), L.norm(m, -1), L.norm(m, INF), L.norm(m, -INF),
                L.norm(a, "nuc", dim=(2, 0), keepdim=True), L.norm(a, INF, dim=(2, 0),
                                                                 keepdim=True),
                L.norm(a, -1, dim=(0, 2)), L.norm(a, 2, dim=(-1, -2)),
                L.norm(v), L.norm(v, 0.5), L.norm(v, -INF), L.norm(v, INF), L.norm(v, 0),
                L.norm(m, 1, dtype=lib.float64), L.norm(v, dtype=lib.float64))
    check(fn, (2, 3, 4), (3, 5), (6,), dtype=dtype, **TOLERANCES[dtype])


def test_norm_edges():
    """Empty inputs (zeros, their gradients zeros; a largest of nothing is 0 autograd does
    not see, as PyTorch's), zero vectors (gradient 0, not NaN), size-1 dims, ties between
    the largest column or row sums (they share the gradient), and NaN and inf where no
    singular values are taken (PyTorch's SVD refuses NaN: a LinAlgError, where clgrad's
    gives NaN)."""
    def empty(e, f):
        L = linalg(e)
        return (L.norm(e), L.norm(e[:, 0]), L.norm(e, 2), L.norm(e, 1), L.norm(e, INF),
                L.norm(e, -1), L.norm(e, "fro"), L.norm(e, "nuc"),
                L.norm(f, INF, dim=(1, 2), keepdim=True), L.norm(f, 1, dim=(2, 1)),
                L.norm(e, -1, dim=1))
    check(empty, np.zeros((0, 3)), np.zeros((2, 0, 3)))

    def small(z, one):
        L = linalg(z)
        return (L.norm(z), L.norm(z, 3, dim=1), L.norm(z, "fro"), L.norm(one, 2),
                L.norm(one, "nuc"), L.norm(one, -INF), L.norm(one, dim=0))
    check(small, np.zeros((2, 3)), make((1, 1), np.float64) + 3)
    ties = np.array([[1.0, -2.0, 3.0], [2.0, -1.0, -3.0], [-3.0, 3.0, 0.0]])   # equal sums
    check(lambda t: tuple(linalg(t).norm(t, o) for o in (1, -1, INF, -INF))
          + (linalg(t).norm(t[0], INF), linalg(t).norm(t[0], -INF),
             linalg(t).norm(t, INF, dim=1)), ties, atol=1e-12)
    special = np.array([[INF, 1.0, -2.0], [NAN, 0.5, 3.0]])
    check(lambda s: tuple(linalg(s).norm(s, o) for o in (None, "fro", 1, -1, INF, -INF))
          + (linalg(s).norm(s, 3, dim=1), linalg(s).norm(s[:1], -1, dim=1)), special, grad=False)


NORM_ERRORS = [
    (lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), 2), RuntimeError, "must be 1D or 2D. Got 3D"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), "fro"), RuntimeError, "1D or 2D. Got 3D"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 3, 4), dim=(0, 1, 2)), RuntimeError,
     r"must be of length 1 or 2. Got \[0, 1, 2\]"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 3), dim=()), RuntimeError, "of length 1 or 2"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 3), "fro", dim=1), RuntimeError,
     "matrix_norm: dim must be a 2-tuple. Got 1"),
    (lambda lib: lib.linalg.norm(lib.ones(3, 4), 3), RuntimeError, "Order 3 not supported"),
    (lambda lib: lib.linalg.norm(lib.ones(3, 4), 2.5), RuntimeError, "Order 2.5 not supported"),
    (lambda lib: lib.linalg.norm(lib.ones(3, 4), "bad"), RuntimeError, "Order bad not supp"),
    (lambda lib: lib.linalg.norm(lib.ones(3, 4), 2, dim=(0, -2)), RuntimeError,
     r"dims must be different. Got \(0, 0\)"),
    (lambda lib: lib.linalg.norm(lib.ones(3, 4), 2, dim=(0, 5)), IndexError, "5"),
    (lambda lib: lib.linalg.norm(lib.ones(4), "nuc"), RuntimeError, "at least 2 dimensions"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 2, dtype=lib.int64)), RuntimeError, "Got Long"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 2, dtype=lib.int64), dtype=lib.float32),
     RuntimeError, "vector_norm: Expected a floating point"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 2, dtype=lib.float16), "nuc"), RuntimeError,
     "Low precision dtypes not supported. Got Half"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 2, dtype=lib.float64), 1, dtype=lib.float32),
     RuntimeError, r"the dtype of the input \(Double\) should be convertible without narrowing"),
    (lambda lib: lib.linalg.norm(lib.ones(2, 2), dtype=lib.int64), RuntimeError,
     "dtype should be floating point or complex, but got Long"),
    (lambda lib: lib.linalg.norm(lib.ones(0, 3), -2), IndexError, "non-zero size"),
    (lambda lib: lib.linalg.norm(lib.ones(0, 3), -INF), IndexError, "non-zero size"),
    (lambda lib: lib.linalg.norm(lib.ones(0), INF), RuntimeError,
     "cannot compute the inf norm on an empty tensor"),
    (lambda lib: lib.linalg.norm(lib.ones(0, 3), -1, dim=0), RuntimeError,
     "cannot compute the -1 norm on the dimension 0"),
    (lambda lib: lib.linalg.matrix_norm(lib.ones(3, 4), 1, dim=(0,)), RuntimeError,
     "dim must be a 2-tuple. Got 0"),
]


# ---- vecdot, matmul, diagonal, vander ------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vecdot_matmul_diagonal(dtype):
    """vecdot broadcast over batches and along any dim (two 1-d tensors: vdot, dim unread),
    linalg.matmul as torch.matmul, linalg.diagonal of the last two dims by default."""
    def fn(a, b, v, w, s, m):
        L = linalg(a)
        return (L.vecdot(a, b), L.vecdot(a, b[0, :1], dim=0), L.vecdot(a, v, dim=-1),
                L.vecdot(v, w), L.vecdot(v, w, dim=5), L.vecdot(s, s), L.vecdot(s, v),
                L.matmul(a, m), L.matmul(v, m), L.matmul(m.mT, v), L.matmul(a, a.mT),
                L.diagonal(a), L.diagonal(a, offset=1), L.diagonal(a, offset=-1, dim1=0, dim2=2),
                L.diagonal(m, offset=10), L.diagonal(a, dim1=2, dim2=1))
    check(fn, (2, 3, 4), (2, 3, 4), (4,), (4,), (), (4, 3), dtype=dtype, **TOLERANCES[dtype])


def test_vecdot_edges():
    """Empty vectors (a sum of nothing, 0), empty batches, NaN and inf, float16 (products
    rounded to half, summed in float: PyTorch's)."""
    check(lambda a, b, c, d: (linalg(a).vecdot(a, b), linalg(a).vecdot(c, d),
                              linalg(a).vecdot(b, b)),
          np.zeros((2, 0)), np.zeros((0,)), np.zeros((0, 3)), make((3,), np.float64))
    special = np.array([[INF, 1.0, NAN], [INF, 0.0, 2.0], [-INF, 2.0, 1.0]])
    check(lambda s, t: linalg(s).vecdot(s, t), special, np.array([0.0, 1.0, 1.0]), grad=False)
    halves = make((3, 5), np.float16), make((5,), np.float16, seed=1)
    check(lambda a, b: linalg(a).vecdot(a, b), *halves, grad=False, atol=1e-3, rtol=1e-3)


PRODUCT_ERRORS = [
    (lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(3, dtype=lib.float64)), RuntimeError,
     "Expected x and y to have the same dtype, but found x of type Float and y of type Double"),
    (lambda lib: lib.linalg.vecdot(lib.ones(3, dtype=lib.int64), lib.ones(3, dtype=lib.int64)),
     RuntimeError, "vecdot: Expected a floating point or complex tensor as input. Got Long"),
    (lambda lib: lib.linalg.vecdot(lib.ones(2, 3), lib.ones(4)), RuntimeError, "4"),
    (lambda lib: lib.linalg.vecdot(lib.ones(3), lib.ones(1)), RuntimeError, "inconsistent"),
    (lambda lib: lib.linalg.vecdot(lib.ones(2, 3), lib.ones(3), dim=2), IndexError, "2"),
    (lambda lib: lib.linalg.vecdot(lib.ones(3), 2.0), TypeError, "'y' .* must be Tensor"),
    (lambda lib: lib.linalg.diagonal(lib.ones(3)), IndexError, "-2"),
    (lambda lib: lib.linalg.diagonal(lib.ones(2, 3), dim1=1, dim2=-1), RuntimeError,
     "diagonal dimensions cannot be identical"),
    (lambda lib: lib.linalg.diagonal(lib.ones(2, 3), 1), TypeError, "positional"),
    (lambda lib: lib.linalg.vander(lib.ones(3), N=1), RuntimeError, "N must be greater than 1"),
    (lambda lib: lib.linalg.vander(lib.ones(())), RuntimeError, "N must be greater than 1"),
    (lambda lib: lib.linalg.vander(lib.ones(0)), RuntimeError, "N must be greater than 1"),
    (lambda lib: lib.linalg.vander(lib.ones(2), N=2.0), TypeError, "'N' must be int"),
    (lambda lib: lib.linalg.vander(lib.ones(2, dtype=lib.bool)), RuntimeError, "but got Bool"),
    (lambda lib: lib.linalg.vander(lib.ones(2, dtype=lib.float16)), RuntimeError,
     "but got Half"),
]


def test_vander():
    """Batched, N given or not, 0-d x, zeros (cumprod's gradient through a zero), NaN and
    inf, integers (int64 results, exact), empty x."""
    x = make((2, 3), np.float64)
    x[0, 1] = 0.0
    check(lambda x, s: (linalg(x).vander(x), linalg(x).vander(x, N=5), linalg(x).vander(x, N=2),
                        linalg(x).vander(s, N=4)), x, np.array(1.5))
    check(lambda x: linalg(x).vander(x, N=4), make((3,), np.float32), atol=1e-5, rtol=1e-5)
    check(lambda x: linalg(x).vander(x, N=4), np.array([0.0, INF, NAN, -INF, -2.0]), grad=False)
    for dtype in (np.int64, np.int32, np.int8, np.uint8):
        ints = np.array([[3, -2, 7], [0, 1, 2]], dtype=dtype) if dtype != np.uint8 else \
            np.array([[3, 2, 7], [0, 1, 2]], dtype=dtype)
        check(lambda x: linalg(x).vander(x), ints)
    check(lambda x, y: (linalg(x).vander(x, N=3), linalg(x).vander(y, N=2)),
          np.zeros((0,)), np.zeros((2, 0)))


# ---- solve_ex -----------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_solve_ex(dtype):
    """Batched, broadcast (B's batch dims and A's), vector B (1-d, or A's shape less one),
    left=False; info 0 for these; gradients of both operands."""
    a = well_conditioned((3, 3, 3), dtype)

    def fn(a, b, v, w, c):
        L = linalg(a)
        return (*L.solve_ex(a, b), L.solve_ex(a, v).result, L.solve_ex(a, w).result,
                L.solve_ex(a[0], c, left=False).result, L.solve_ex(a, b[:1, None]).result,
                L.solve_ex(a[0], v).info)
    check(fn, a, (3, 3, 2), (3,), (3, 3), (4, 3), dtype=dtype, **TOLERANCES[dtype])


def test_solve_ex_singular_and_edges():
    """A singular matrix: info (LAPACK's 1 + the first zero pivot), and PyTorch's
    LinAlgError with check_errors=True (naming the batch element when batched). NaN gives
    NaN with info 0, as LAPACK. Empty and 1x1 systems."""
    singular = well_conditioned((3, 3, 3))
    singular[1, :, 1] = 0
    singular[2] = 0
    nan = well_conditioned((3, 3), seed=1)
    nan[0, 0] = NAN
    check(lambda a, n, b: (linalg(a).solve_ex(a, b).info, *linalg(a).solve_ex(n, b[0])),
          singular, nan, make((3, 3, 1), np.float64), grad=False)
    with pytest.raises(cg.linalg.LinAlgError, match=r"^torch.linalg.solve_ex: \(Batch element 1\)"
                       ": The solver failed because the input matrix is singular."):
        cg.linalg.solve_ex(cg.tensor(singular), cg.ones(3, 3, 1, dtype=cg.float64),
                           check_errors=True)
    with pytest.raises(cg.linalg.LinAlgError, match=r"^torch.linalg.solve_ex: The solver"):
        cg.linalg.solve_ex(cg.zeros(2, 2), cg.ones(2), check_errors=True)
    cg.linalg.solve_ex(cg.eye(2), cg.ones(2), check_errors=True)        # nothing to raise
    check(lambda a, b, c, d, e: (*linalg(a).solve_ex(a, b), *linalg(a).solve_ex(c, d),
                                 linalg(a).solve_ex(e, e).result),
          np.zeros((0, 0)), np.zeros((0,)), np.zeros((2, 0, 0)), np.zeros((0, 3)),
          make((2, 1, 1), np.float64) + 3)


def test_check_errors_as_pytorch():
    """check_errors=True of the _ex functions raises what PyTorch's does, message for
    message (the batch element named when batched); a NaN pivot is no zero (info 0, as
    LAPACK's getrf)."""
    import torch
    calls = [lambda lib: lib.linalg.solve_ex(lib.zeros(2, 2), lib.ones(2), check_errors=True),
             lambda lib: lib.linalg.solve_ex(lib.zeros(3, 2, 2), lib.ones(2), check_errors=True),
             lambda lib: lib.linalg.inv_ex(lib.zeros(2, 2), check_errors=True),
             lambda lib: lib.linalg.inv_ex(lib.zeros(3, 2, 2), check_errors=True),
             lambda lib: lib.linalg.cholesky_ex(-lib.eye(2), check_errors=True),
             lambda lib: lib.linalg.cholesky_ex(-lib.eye(2).expand(2, 2, 2), check_errors=True),
             lambda lib: lib.linalg.lu_factor_ex(lib.zeros(2, 2), check_errors=True)]
    for call in calls:
        with pytest.raises(RuntimeError) as expected:
            call(torch)
        with pytest.raises(RuntimeError) as got:
            call(cg)
        assert str(got.value) == str(expected.value)
        assert isinstance(got.value, cg.linalg.LinAlgError) == \
            isinstance(expected.value, torch.linalg.LinAlgError)
    nan = np.array([[[NAN]], [[0.0]]])
    check(lambda a: (linalg(a).inv_ex(a).info, linalg(a).lu_factor_ex(a).info), nan, grad=False)


SOLVE_EX_ERRORS = [
    (lambda lib: lib.linalg.solve_ex(lib.ones(2, 3), lib.ones(2)), RuntimeError,
     "linalg.solve: A must be batches of square matrices, but they are 2 by 3 matrices"),
    (lambda lib: lib.linalg.solve_ex(lib.eye(2), lib.ones(2), left=False), RuntimeError,
     r"Incompatible shapes of A and B for the equation XA = B \(2x2 and 2x1\)"),
    (lambda lib: lib.linalg.solve_ex(lib.eye(2).expand(3, 2, 2), lib.ones(3, 2), left=False),
     RuntimeError, r"equation XA = B \(2x2 and 2x1\)"),
    (lambda lib: lib.linalg.solve_ex(lib.ones(3, 1, 1), lib.ones(3, 1), left=False),
     RuntimeError, "Vector broadcasting of the left hand side is not supported for left=False"),
    (lambda lib: lib.linalg.solve_ex(lib.eye(2, dtype=lib.int64), lib.ones(2, dtype=lib.int64)),
     RuntimeError, "Expected a floating point or complex tensor as input. Got Long"),
]


# ---- tensorinv, tensorsolve ----------------------------------------------------------------

@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_tensorinv_and_tensorsolve(dtype):
    """tensorinv over ind = 1, 2 and all dims; tensorsolve with and without dims, B of
    another shape of the same size, 0-d; gradients through inv and solve."""
    a6 = well_conditioned((6, 6), dtype).reshape(2, 3, 6)
    a4 = well_conditioned((4, 4), dtype, seed=1).reshape(4, 2, 2)

    def fn(a6, a4, b, s):
        L = linalg(a6)
        return (L.tensorinv(a6), L.tensorinv(a4, ind=1), L.tensorinv(a6.reshape(6, 6), ind=1),
                L.tensorinv(a4.reshape(2, 2, 2, 2)),
                L.tensorsolve(a6, b), L.tensorsolve(a6, b.reshape(3, 2)),
                L.tensorsolve(a6.permute(2, 0, 1), b, dims=(0,)),
                L.tensorsolve(a4.reshape(2, 2, 2, 2), b[:, :2]), L.tensorsolve(s, s * 2),
                L.tensorsolve(a4.permute(1, 2, 0), b.reshape(6)[:4], dims=(0, 1)))
    check(fn, a6, a4, (2, 3), np.array(1.5, dtype), dtype=dtype, **TOLERANCES[dtype])


def test_tensor_solves_edges():
    """Empty tensors, size-1 dims, and a singular matrix: inf or NaN, not an error (clgrad
    is lazy, as its inv and solve: PyTorch raises LinAlgError here)."""
    check(lambda e, f, v, o: (linalg(e).tensorinv(e, ind=1), linalg(e).tensorinv(f, ind=1),
                              linalg(e).tensorsolve(e, v), linalg(e).tensorinv(o, ind=1),
                              linalg(e).tensorsolve(o, o[0])),
          np.zeros((0, 0)), np.zeros((0, 2, 0)), np.zeros((0,)), make((1, 1, 1), np.float64) + 2)
    singular = cg.linalg.tensorinv(cg.zeros(2, 3, 6), ind=2)
    assert singular.shape == (6, 2, 3) and not np.isfinite(singular.numpy()).all()
    x = cg.linalg.tensorsolve(cg.zeros(2, 3, 6), cg.ones(2, 3))
    assert x.shape == (6,) and not np.isfinite(x.numpy()).all()


TENSOR_SOLVE_ERRORS = [
    (lambda lib: lib.linalg.tensorinv(lib.ones(6, 2, 3)), RuntimeError,
     r"prod\(self.shape\[ind:\]\) == prod\(self.shape\[:ind\]\), but got 3 != 12"),
    (lambda lib: lib.linalg.tensorinv(lib.ones(2, 3, 6), ind=0), RuntimeError,
     "Expected a strictly positive integer for 'ind', but got 0"),
    (lambda lib: lib.linalg.tensorinv(lib.ones(2, 3, 6), ind=4), RuntimeError, "invalid slice"),
    (lambda lib: lib.linalg.tensorinv(lib.ones(2, 3, 6), ind=2.0), TypeError, "'ind' must be"),
    (lambda lib: lib.linalg.tensorinv(lib.ones(2, 2, dtype=lib.int64), ind=1), RuntimeError,
     "linalg.inv: Expected a floating point or complex tensor as input. Got Long"),
    (lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 6), lib.ones(2)), RuntimeError,
     r"prod\(self.shape\[other.ndim:\]\) == prod\(self.shape\[:other.ndim\]\), but got 18 != 2"),
    (lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 6), lib.ones(2, 3, 6, 1)), RuntimeError,
     "more dims"),
    (lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 6), lib.ones(2, 3, dtype=lib.float64)),
     RuntimeError, "linalg.solve: Expected A and B to have the same dtype"),
    (lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 6), lib.ones(2, 3), dims=2), TypeError,
     "'dims' must be tuple of ints"),
    (lambda lib: lib.linalg.tensorsolve(lib.ones(2, 3, 6), lib.ones(2, 3), dims=(5,)),
     IndexError, "5"),
    (lambda lib: lib.linalg.tensorsolve(lib.ones(4, 3, 6), lib.ones(2, 3)), RuntimeError,
     "invalid for input of size 72"),
]


# ---- ldl_factor, ldl_factor_ex, ldl_solve --------------------------------------------------

def _ldl_cases(n: int, count: int, seed: int) -> np.ndarray:
    """Symmetric matrices of every kind Bunch-Kaufman distinguishes: random, integers (ties
    between candidate pivots), zero diagonals (2x2 pivots), many zeros (zero columns: info),
    and NaN and inf."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(count):
        a = rng.standard_normal((n, n))
        if k % 5 == 1:
            a = rng.integers(-2, 3, (n, n)).astype(float)
        elif k % 5 == 2:
            a[np.diag_indices(n)] = 0
        elif k % 5 == 3:
            a[rng.random((n, n)) < 0.5] = 0
        elif k % 5 == 4:
            mask = rng.random((n, n)) < 0.1
            a[mask] = rng.choice([NAN, INF, -INF], mask.sum())
        with np.errstate(invalid="ignore"):     # inf + -inf
            out.append(a + a.T)
    return np.array(out)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ldl_factor_matches_lapack(dtype):
    """LD, pivots and info equal PyTorch's (LAPACK's sytrf) on 60 matrices of each size,
    NaN and inf included; hermitian=True the same for real matrices; ldl_solve solves with
    them as PyTorch's sytrs."""
    tol = TOLERANCES[dtype]
    for n, seed in ((4, 0), (7, 1)):
        a = _ldl_cases(n, 60, seed).astype(dtype)
        b = make((60, n, 2), dtype, seed=seed)

        def fn(a, b):
            L = linalg(a)
            ld, pivots, info = L.ldl_factor_ex(a)
            return (ld, pivots, info, *L.ldl_factor_ex(a, hermitian=True),
                    L.ldl_solve(ld, pivots, b))
        outs = check(fn, a, b, grad=False, **tol)
        assert outs[1].dtype == cg.int32 and outs[2].dtype == cg.int32
        assert (outs[1].numpy() < 0).any() and outs[2].numpy().any()   # 2x2 blocks; zero columns


def test_ldl_edges():
    """1x1, 2x2 and empty matrices (batched), the upper triangle unread (PyTorch's LD is
    lower), 2x2 blocks in a larger matrix, and a singular one (info, no error)."""
    cases = [np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]]),
             np.array([[1.0, 5.0], [7.0, 1.0]]), np.array([[NAN, 1.0], [1.0, 2.0]]),
             np.zeros((3, 3)), np.array([[-3.0]]), np.zeros((0, 0)), np.zeros((2, 0, 0)),
             symmetric((2, 9, 9), zero_diagonal=True), symmetric((5, 5), seed=3)]
    check(lambda *ms: [t for m in ms for t in linalg(m).ldl_factor_ex(m)], *cases, grad=False,
          atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_ldl_solve(dtype):
    """A X = B with A's factors: batched, B's batch dims broadcast against LD's (and LD's
    against B's), int64 pivots, no right-hand columns, and an empty system."""
    tol = TOLERANCES[dtype]
    a = symmetric((3, 5, 5), dtype, zero_diagonal=True) + symmetric((3, 5, 5), dtype, seed=2)
    b = make((3, 5, 2), dtype, seed=1)

    def fn(a, b):
        L = linalg(a)
        ld, pivots = L.ldl_factor(a)
        return (L.ldl_solve(ld, pivots, b), L.ldl_solve(ld, pivots, b[0]),
                L.ldl_solve(ld[0], pivots[0], b), L.ldl_solve(ld, pivots.long(), b),
                L.ldl_solve(ld, pivots, b[..., :0]),
                L.ldl_solve(ld[:, :0, :0], pivots[:, :0], b[:, :0]))
    outs = check(fn, a, b, grad=False, **tol)
    np.testing.assert_allclose(a @ outs[0].numpy(), b, **tol)


def test_ldl_has_no_gradient():
    """As PyTorch: results that require grad, a NotImplemented grad_fn, backward raises."""
    a = cg.tensor(symmetric((3, 3)), requires_grad=True)
    ld, pivots, info = cg.linalg.ldl_factor_ex(a)
    assert ld.requires_grad and not pivots.requires_grad and not info.requires_grad
    assert ld.grad_fn.name() == "torch::autograd::NotImplemented"
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_factor_ex is not"):
        (ld * 2).sum().backward()
    b = cg.ones(3, 1, dtype=cg.float64, requires_grad=True)
    x = cg.linalg.ldl_solve(ld.detach(), pivots, b)
    with pytest.raises(RuntimeError, match="derivative for aten::linalg_ldl_solve is not"):
        x.sum().backward()
    with cg.no_grad():
        assert not cg.linalg.ldl_factor(a).LD.requires_grad


def test_ldl_check_errors():
    """check_errors=True waits for info and raises what PyTorch raises for a zero pivot
    column (its internal assert: 'Unknown error code'); nothing for a regular matrix."""
    with pytest.raises(RuntimeError, match="torch.linalg.ldl_factor_ex: Unknown error code: 2"):
        cg.linalg.ldl_factor_ex(cg.tensor([[1.0, 0.0], [0.0, 0.0]]), check_errors=True)
    cg.linalg.ldl_factor_ex(cg.tensor(symmetric((2, 3, 3))), check_errors=True)


LDL_ERRORS = [
    (lambda lib: lib.linalg.ldl_factor(lib.ones(2, 3)), RuntimeError,
     "torch.linalg.ldl_factor_ex: A must be batches of square matrices, but they are 2 by 3"),
    (lambda lib: lib.linalg.ldl_factor(lib.ones(3)), RuntimeError, "at least 2 dimensions"),
    (lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3, dtype=lib.int32)), RuntimeError,
     "Expected a floating point or complex tensor as input. Got Int"),
    (lambda lib: lib.linalg.ldl_factor(lib.ones(3, 3, dtype=lib.float16)), NotImplementedError,
     "\"ldl_factor_kernel_cpu\" not implemented for 'Half'"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3), lib.ones(3, dtype=lib.int32), lib.ones(3)),
     IndexError, r"Dimension out of range \(expected to be in range of \[-1, 0\], but got -2\)"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3), lib.ones(3), lib.ones(3, 1)), RuntimeError,
     "Expected pivots to be integers. Got Float"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3), lib.ones(2, dtype=lib.int32), lib.ones(3, 1)),
     RuntimeError, r"Expected LD.shape\[:-1\] and pivots.shape to be the same, but got pivots "
     r"with shape \[2\] instead"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3), lib.ones(3, dtype=lib.int32),
                                      lib.ones(3, 1, dtype=lib.float64)), RuntimeError,
     "Expected b and A to have the same dtype, but found b of type Double and A of type Float"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3), lib.ones(3, dtype=lib.int32), lib.ones(2, 1)),
     RuntimeError, "Incompatible matrix sizes for torch.linalg.ldl_solve: each A matrix is 3 by "
     "3 but each b matrix is 2 by 1"),
    (lambda lib: lib.linalg.ldl_solve(lib.ones(2, 3), lib.ones(2, dtype=lib.int32),
                                      lib.ones(2, 2)), RuntimeError, "A must be batches of square"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3), lib.tensor([1, 2, 5], dtype=lib.int32),
                                      lib.ones(3, 2)), RuntimeError,
     r"Pivots given to ldl_solve must all satisfy \|pivot\| <= LD.size\(-2\)"),
    (lambda lib: lib.linalg.ldl_solve(lib.eye(3).expand(2, 3, 3),
                                      lib.ones(2, 3, dtype=lib.int32), lib.ones(3, 3, 2)),
     RuntimeError, "3"),
]


def test_ldl_interpreter_agrees_with_kernels():
    """The NumPy meaning of LDL and LDL_SOLVE (compiler/ldl.py) is the kernels' own."""
    a = cg.tensor(_ldl_cases(6, 20, 4))
    b = cg.tensor(make((20, 6, 2), np.float64))
    ld, pivots, info = cg.linalg.ldl_factor_ex(a)
    x = cg.linalg.ldl_solve(ld, pivots, b)
    expected = interpret.evaluate([ld.node, pivots.node, info.node, x.node],
                                  {a.node.arg: a.numpy(), b.node.arg: b.numpy()})
    for got, want in zip((ld, pivots, info, x), expected):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12, equal_nan=True)


# ---- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,message",
                         NORM_ERRORS + PRODUCT_ERRORS + SOLVE_EX_ERRORS + TENSOR_SOLVE_ERRORS
                         + LDL_ERRORS)
def test_errors_as_pytorch_raises_them(call, error, message):
    """Raised when the op is recorded: PyTorch's exception type, and its wording (with the
    op, shapes or dtypes named where PyTorch's message leaves them out)."""
    import torch
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error, match=message):
        call(cg)
