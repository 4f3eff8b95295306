"""Dense factorizations against PyTorch, forward and backward: the LU family (inv, det,
slogdet, logdet, solve, matrix_power, lu_factor, lu, lu_unpack, lu_solve), the Cholesky family
and triangular solves, QR (and lstsq, pinv through it), householder_product, geqrf,
matrix_exp, eigh, eigvalsh, svd, svdvals, and what is measured with them (matrix_norm, cond,
matrix_rank, multi_dot); batched and not, float64 and float32; size-0 and 1x1 matrices;
singular and indefinite inputs; the errors PyTorch raises. Many ops share one graph (one
`check`) to keep the kernels compiled few."""
import math

import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import interpret

from helpers import check, library, make, torch


def well_conditioned(shape, dtype=np.float64, seed=0):
    """Random matrices plus 4 I, rows cycled so that LU must pivot."""
    n = shape[-1]
    a = make(shape, dtype, seed=seed) + 4 * np.eye(n, dtype=dtype)
    return np.ascontiguousarray(np.roll(a, 1, axis=-2))


def spd(m):
    """A symmetric positive-definite matrix from any square m, in m's library."""
    n = m.shape[-1]
    return m @ m.mT + n * library(m).eye(n, dtype=m.dtype)


def test_lu_family_batched_float64():
    a, b = well_conditioned((2, 3, 3)), make((2, 3, 2), np.float64)

    def fn(a, b):
        linalg = library(a).linalg
        return (linalg.inv(a), a.inverse(), linalg.det(a), *linalg.slogdet(a),
                linalg.solve(a, b), linalg.solve(a, b[..., 0]), linalg.solve(a, b.mT, left=False),
                linalg.matrix_power(a, 3), linalg.matrix_power(a, -2),
                linalg.matrix_power(a, 0), spd(a).logdet(), a.det())
    check(fn, a, b, atol=1e-10, rtol=1e-9)


@pytest.mark.filterwarnings("ignore:torch.lu(_solve)? is deprecated")
def test_lu_factor_unpack_and_solve():
    a, b = well_conditioned((2, 3, 3)), make((2, 3, 2), np.float64)

    def fn(a, b):
        lib = library(a)
        lu, pivots = lib.linalg.lu_factor(a)
        p, lower, upper = lib.linalg.lu(a)
        return (lu, pivots, p, lower, upper, *lib.lu_unpack(lu, pivots),
                lib.linalg.lu_solve(lu, pivots, b),
                lib.linalg.lu_solve(lu, pivots, b, adjoint=True),
                lib.linalg.lu_solve(lu, pivots, b.mT, left=False),
                lib.linalg.lu_factor_ex(a).info, *a.lu(get_infos=True),
                b.lu_solve(*lib.lu(a)))
    outs = check(fn, a, b, atol=1e-10, rtol=1e-9)
    assert outs[1].dtype == cg.int32 and outs[1].numpy().min() >= 1


@pytest.mark.filterwarnings("ignore:torch.(cholesky|triangular_solve) is deprecated")
def test_cholesky_and_triangular_solves():
    m, b = make((2, 3, 3), np.float64), make((2, 3, 2), np.float64)

    def fn(m, b):
        lib = library(m)
        lower = lib.linalg.cholesky(spd(m))
        tri = m.triu() + 3 * lib.eye(3, dtype=m.dtype)
        return (lower, lib.linalg.cholesky(spd(m), upper=True), spd(m).cholesky(),
                lib.linalg.cholesky_ex(spd(m)).L,
                lib.cholesky_solve(b, lower), lib.cholesky_solve(b, lower.mT, upper=True),
                lib.cholesky_inverse(lower), lib.cholesky_inverse(lower.mT, upper=True),
                lib.linalg.solve_triangular(tri, b, upper=True),
                lib.linalg.solve_triangular(tri.mT, b.mT, upper=False, left=False),
                lib.linalg.solve_triangular(tri, b, upper=True, unitriangular=True),
                *lib.triangular_solve(b, tri, upper=True, transpose=True))
    check(fn, m, b, atol=1e-10, rtol=1e-9)


@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_differentiates_all_of_a_given_factor(upper):
    # PyTorch's cholesky_solve_backward: the triangle the solve never reads has a gradient too
    m, b = make((2, 3, 3), np.float64), make((3, 2), np.float64)

    def fn(m, b):
        lib = library(m)
        factor = lib.linalg.cholesky(spd(m)).detach()
        factor = (factor.mT if upper else factor).requires_grad_()
        return lib.cholesky_solve(b, factor, upper=upper), factor
    ours, theirs = fn(cg.tensor(m), cg.tensor(b)), fn(torch.tensor(m), torch.tensor(b))
    for (x, factor), lib in ((ours, cg), (theirs, torch)):
        (x * lib.tensor(make(x.shape, np.float64))).sum().backward()
    grad = ours[1].grad.numpy()
    np.testing.assert_allclose(grad, theirs[1].grad.numpy(), rtol=1e-9, atol=1e-10)
    assert np.abs(np.tril(grad, -1) if upper else np.triu(grad, 1)).max() > 0


@pytest.mark.filterwarnings("ignore:torch.qr is deprecated")
def test_qr_lstsq_pinv():
    tall, wide, b = make((2, 4, 3), np.float64), make((2, 3, 4), np.float64), \
        make((2, 4, 2), np.float64)

    def fn(tall, wide, b):
        linalg = library(tall).linalg
        return (*linalg.qr(tall), *linalg.qr(wide), *linalg.qr(wide, mode="complete"),
                *tall.qr(), linalg.lstsq(tall, b).solution,
                linalg.lstsq(wide, b[:, :3]).solution, wide.pinverse())
    check(fn, tall, wide, b, atol=1e-10, rtol=1e-9)
    # PyTorch refuses the gradient of mode "r" (clgrad has it); its values:
    check(lambda a: tuple(library(a).linalg.qr(a, mode="r")), tall, grad=False, atol=1e-12)
    rank = cg.linalg.lstsq(cg.tensor(tall), cg.tensor(b)).rank
    assert rank.dtype == cg.int64 and rank.numpy().tolist() == [3, 3]


def test_matrix_exp():
    """A large norm (squarings) and a small one (none)."""
    big, small = 2 * make((2, 3, 3), np.float64), 0.1 * make((2, 3, 3), np.float64, seed=1)
    check(lambda a, b: (library(a).linalg.matrix_exp(a), b.matrix_exp()), big, small,
          atol=1e-10, rtol=1e-9)


def test_householder_product():
    """Tall and square, batched, fewer reflectors than columns (torch.orgqr is the same)."""
    tall, tau = make((2, 4, 3), np.float64), make((2, 2), np.float64, low=0.0)
    square, tau_square = make((3, 3), np.float64, seed=1), make((3,), np.float64, low=0.0)
    check(lambda a, t, b, u: (library(a).linalg.householder_product(a, t), b.orgqr(u)),
          tall, tau, square, tau_square, atol=1e-10, rtol=1e-9)


def test_geqrf():
    """LAPACK's reflectors (no gradient, as PyTorch has none): tall, wide and batched, and a
    column already zero below its diagonal (tau 0, no reflection)."""
    zeroed = make((3, 3), np.float64, seed=4)
    zeroed[1:, 0] = 0
    check(lambda *ms: [out for m in ms for out in library(m).geqrf(m)], make((2, 4, 3),
          np.float64), make((2, 3), np.float64, seed=1), zeroed, grad=False, atol=1e-12)


def test_eigh_and_eigvalsh():
    """Eigenvector signs are not part of either library's contract: compared with each
    vector's first element made non-negative."""
    m = make((2, 4, 4), np.float64)

    def fn(m):
        linalg = library(m).linalg
        values, vectors = linalg.eigh(m + m.mT)
        fixed = vectors * library(m).where(vectors[..., :1, :] < 0, -1.0, 1.0)
        return values, fixed, linalg.eigvalsh(m, UPLO="U")
    check(fn, m, atol=1e-10, rtol=1e-9)


def test_svd_and_svdvals():
    """Singular vector signs are not part of either library's contract: compared with U's
    first row made non-negative (and Vh's rows to match)."""
    tall, wide = make((2, 4, 3), np.float64), make((3, 5), np.float64)

    def fixed(lib, u, s, vh):
        sign = lib.where(u[..., :1, :] < 0, -1.0, 1.0)
        return u * sign, s, vh * sign.mT

    def fn(tall, wide):
        lib = library(tall)
        return (*fixed(lib, *lib.linalg.svd(tall, full_matrices=False)),
                *fixed(lib, *lib.linalg.svd(wide, full_matrices=False)), lib.linalg.svdvals(wide))
    check(fn, tall, wide, atol=1e-10, rtol=1e-9)
    u, s, v = (t.numpy() for t in cg.svd(cg.tensor(tall)))      # V, not Vh
    np.testing.assert_allclose((u * s[..., None, :]) @ v.swapaxes(-1, -2), tall, atol=1e-12)
    u, s, vh = cg.linalg.svd(cg.tensor(tall))     # full_matrices: U completed to 4 x 4
    assert u.shape == (2, 4, 4) and vh.shape == (2, 3, 3)
    np.testing.assert_allclose(u.mT.numpy() @ u.numpy(), np.broadcast_to(np.eye(4), (2, 4, 4)),
                               atol=1e-12)


def test_matrix_norms_cond_rank_multi_dot():
    a, square = make((2, 3, 4), np.float64), well_conditioned((2, 3, 3))

    def fn(a, square):
        linalg = library(a).linalg
        return (linalg.matrix_norm(a), linalg.matrix_norm(a, "nuc"),
                linalg.matrix_norm(a, -2, keepdim=True),
                linalg.matrix_norm(a, -math.inf, dim=(0, 2)),
                linalg.cond(square), linalg.matrix_rank(a),
                linalg.multi_dot([a[0, 0], a[0].mT, a[1], a[1, 1]]))
    check(fn, a, square, atol=1e-10, rtol=1e-9)
    ones = cg.ones(2, 3, 3, dtype=cg.float64)
    assert cg.linalg.matrix_rank(ones).numpy().tolist() == [1, 1]
    assert cg.linalg.matrix_rank(ones, atol=10.0).numpy().tolist() == [0, 0]


def test_float32_values():
    """float32 runs the same kernels' float variant (gradients: the float64 tests above)."""
    a, b = well_conditioned((2, 3, 3), np.float32), make((3, 2), np.float32)

    def fn(a, b):
        linalg = library(a).linalg
        return (linalg.inv(a), linalg.det(a), *linalg.slogdet(a), linalg.solve(a, b),
                linalg.cholesky(spd(a)), linalg.solve_triangular(a, b, upper=False),
                *linalg.qr(a), linalg.matrix_exp(a), linalg.eigvalsh(a))
    check(fn, a, b, grad=False, atol=1e-5, rtol=1e-4)


def test_empty_and_one_by_one():
    """Empty matrices (gradients too: zeros of their shapes, no kernel), and 1x1 ones
    (values: their gradients run the kernels the 3x3 tests check)."""
    def fn(*matrices):
        linalg = library(matrices[0]).linalg
        return [out for a in matrices for out in (linalg.inv(a), linalg.det(a), *linalg.slogdet(a),
                                                  linalg.cholesky(a), linalg.solve(a, a),
                                                  *linalg.qr(a), linalg.matrix_exp(a),
                                                  linalg.eigvalsh(a))]
    empty = [make(shape, np.float64) for shape in [(0, 0), (2, 0, 0), (0, 2, 2)]]
    check(fn, *empty)
    check(fn, make((2, 1, 1), np.float64) + 3, grad=False, atol=1e-12)


def test_singular_and_indefinite_matrices():
    """Lazy: no error when recorded. det is 0, slogdet (0, -inf), the info of the `_ex`
    functions says where factorization failed, and check_errors raises LinAlgError."""
    singular = well_conditioned((2, 3, 3))
    singular[0, :, 1] = 0           # exactly singular: the elimination meets an exact 0
    check(lambda a: (library(a).linalg.det(a), *library(a).linalg.slogdet(a),
                     library(a).linalg.lu_factor_ex(a).info, library(a).linalg.inv_ex(a).info,
                     library(a).linalg.cholesky_ex(a).info), singular, grad=False, atol=1e-12)
    assert not np.isfinite(cg.linalg.inv(cg.tensor(singular)).numpy()[0]).all()
    indefinite = cg.tensor([[1.0, 0.0], [0.0, -1.0]])
    assert np.isnan(cg.linalg.cholesky(indefinite).numpy()[1, 1])
    with pytest.raises(cg.linalg.LinAlgError, match="linalg.inv_ex"):
        cg.linalg.inv_ex(cg.tensor(singular), check_errors=True)
    with pytest.raises(RuntimeError, match="positive-definite"):
        cg.linalg.cholesky_ex(indefinite, check_errors=True)


@pytest.mark.parametrize("call,message", [
    (lambda lib: lib.linalg.inv(lib.ones(2, 3)), "linalg.inv: A must be batches of square"),
    (lambda lib: lib.linalg.det(lib.ones(3)), "linalg.det: The input tensor A must have at least"),
    (lambda lib: lib.linalg.inv(lib.ones(2, 2, dtype=lib.int64)), "Got Long"),
    (lambda lib: lib.linalg.solve(lib.ones(2, 2), lib.ones(3, 1)), "linalg.solve: Incompatible"),
    (lambda lib: lib.linalg.solve(lib.ones(2, 2), lib.ones(2, 1, dtype=lib.float64)),
     "same dtype"),
    (lambda lib: lib.linalg.solve_triangular(lib.ones(2, 3, 3), lib.ones(4, 3, 1), upper=True),
     "linalg.solve_triangular"),
    (lambda lib: lib.linalg.cholesky(lib.ones(2, 3)), "linalg.cholesky: A must be batches"),
    (lambda lib: lib.linalg.qr(lib.ones(2, 3), mode="full"), "unrecognized mode 'full'"),
    (lambda lib: lib.linalg.lstsq(lib.ones(3, 2), lib.ones(4, 1)), "lstsq: input.size"),
    (lambda lib: lib.linalg.eigh(lib.ones(3, 3), UPLO="X"), "UPLO"),
    (lambda lib: lib.linalg.householder_product(lib.ones(2, 3), lib.ones(2)),
     "householder_product: input.shape\\[-2\\] must be greater"),
    (lambda lib: lib.linalg.householder_product(lib.ones(3, 2), lib.ones(3)),
     "input.shape\\[-1\\] must be greater than or equal to tau"),
])
def test_errors_name_the_op_and_shapes(call, message):
    import torch
    with pytest.raises(RuntimeError):
        call(torch)
    with pytest.raises(RuntimeError, match=message):
        call(cg)


def test_interpreter_agrees_with_kernels():
    a = cg.tensor(well_conditioned((2, 3, 3)))
    x = cg.linalg.inv(a) + cg.linalg.cholesky(spd(a)) + cg.linalg.qr(a).R
    (expected,) = interpret.evaluate([x.node], {a.node.arg: a.numpy()})
    np.testing.assert_allclose(x.numpy(), expected, atol=1e-12)
