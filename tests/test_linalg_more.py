"""cg.linalg's norm, vecdot, matmul, diagonal, vander, solve_ex, tensorinv, tensorsolve,
ldl_factor, ldl_factor_ex and ldl_solve against PyTorch: values and gradients in float64
and float32, batched and broadcast, empty and size-1 dims, NaN and inf, singular matrices,
and the errors PyTorch raises for bad input. Many outputs share one `check` (one graph) to
keep the kernels compiled few."""
import math

import numpy as np
import pytest

import clgrad as cg

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


# ---- errors -------------------------------------------------------------------------------

@pytest.mark.parametrize("call,error,message", SOLVE_EX_ERRORS)
def test_errors_as_pytorch_raises_them(call, error, message):
    """Raised when the op is recorded: PyTorch's exception type, and its wording (with the
    op, shapes or dtypes named where PyTorch's message leaves them out)."""
    import torch
    with pytest.raises(error):
        call(torch)
    with pytest.raises(error, match=message):
        call(cg)
