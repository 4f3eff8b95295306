"""CPU matmul kernel variants: k blocking, transposed (C^T = B^T A^T) operands, long k; and the
sign of a product of one term (K = 1) on each matmul entry point."""
import dataclasses

import numpy as np
import pytest
from helpers import F, check, library, torch

import clgrad as cg
from clgrad.engine.targets import codegen_target


def test_transposed_kernel_reads_a_realized_transpose():
    # N = 6 makes the kernel transposed; swapping the operands' axes back must not fold
    # a.t() into a, whose buffer the kernel does not have
    a, b = cg.randn(13, 16), cg.randn(13, 6)
    at = a.t()
    product = at @ b
    at.numpy()          # realized after the product's graph was built: the kernel loads it
    np.testing.assert_allclose(product.numpy(), a.numpy().T @ b.numpy(), rtol=1e-4, atol=1e-4)


@pytest.mark.usefixtures("cpu_codegen")
def test_long_k_over_image_rows_blocks_by_row():
    # k runs over (batch, 30 x 30 pixels), as in a convolution's weight gradient: blocks of
    # one 30-pixel row index the operands without divisions
    def fn(x, g):
        return x.permute(1, 0, 2, 3).reshape(3, -1) @ g.reshape(-1, 6)
    check(fn, (2, 3, 30, 30), (2, 30, 30, 6), atol=1e-3)
    x, g = cg.randn(2, 3, 30, 30), cg.randn(2, 30, 30, 6)
    (kernel,) = cg.compile(fn(x, g)).kernels
    assert "t < 30;" in kernel.source and "t < 128;" not in kernel.source


def test_long_k_with_a_tail_block_and_epilogue():
    # 131 is prime: a block of 128 and a tail of 3; the epilogue and batch ride along
    check(lambda a, b, c: (a @ b) * 2 - c, (2, 16, 131), (2, 131, 24), (2, 16, 24), atol=1e-3)
    check(lambda a, b: a.t() @ b, (1000, 8), (1000, 12), atol=1e-3)


def test_long_product_into_few_outputs_splits_k():
    # 9 x 6 outputs of 8192 products each: partial products over 16 slices of k fill the
    # result's buffer, and a second kernel sums them in place
    check(lambda a, b: a.t() @ b, (8192, 9), (8192, 6), atol=1e-3)
    a, b = cg.randn(2, 9, 8192), cg.randn(2, 8192, 6)
    # slices lead the partials' layout, so each batch's sum overwrites its own slice 0 only
    assert [k.name[:9] for k in cg.compile(a @ b).kernels] == ["M_16x2x9x", "R_16x2x9x"]
    np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-3, atol=1e-3)


def test_tile_of_two_rows_by_five_vectors(codegen_for):
    # N = 40 is five vectors of 8: a 2 x 5 register tile, over panels of 25 row pairs, where
    # ten accumulators fit (not in AVX2's 16 registers, which Intel's runtime gives 8)
    codegen_for(dataclasses.replace(codegen_target(cg.device()), width=8, accumulators=10))
    check(lambda a, b: (a @ b).relu(), (200, 70), (70, 40), atol=1e-3)
    (kernel,) = cg.compile(cg.randn(200, 70) @ cg.randn(70, 40)).kernels
    assert "acc1_4" in kernel.source


def test_split_k_on_the_vectorless_gpu_path(codegen_for):
    # GPUs lower matmuls with one lane per work-item (_matmul_simple); split k must hold there
    from clgrad.compiler.target import Target
    codegen_for(Target(width=1))
    a, b = cg.randn(2, 5, 8200), cg.randn(2, 8200, 3)
    assert [k.name[0] for k in cg.compile(a @ b).kernels] == ["M", "R"]
    np.testing.assert_allclose((a @ b).numpy(), a.numpy() @ b.numpy(), rtol=1e-3, atol=1e-3)


def _product_and_its_relu(m, n, k):
    a, b = cg.randn(m, k), cg.randn(k, n)
    h = a @ b
    relu = h.clamp(min=0)       # h is kept too (a custom ReLU saves it for its backward)
    expect = a.numpy() @ b.numpy()
    return h, relu, expect


def test_matmul_stores_an_elementwise_consumer_too():
    # N = 100 runs transposed, N = 24 not: either way the ReLU of the products is a second
    # output of the matmul kernel, not a kernel of its own
    for m, n, k in ((64, 100, 40), (16, 24, 20)):
        h, relu, expect = _product_and_its_relu(m, n, k)
        assert [k.kind for k in cg.compile(h, relu)] == ["matmul"]
        cg.realize(h, relu)
        np.testing.assert_allclose(h.numpy(), expect, rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(relu.numpy(), np.maximum(expect, 0), rtol=1e-4, atol=1e-4)


def test_second_matmul_output_on_the_vectorless_gpu_path(monkeypatch):
    from clgrad.compiler.target import Target
    from clgrad.engine import plan
    monkeypatch.setattr(plan, "codegen_target", lambda device: Target(width=1))
    h, relu, expect = _product_and_its_relu(8, 12, 16)
    assert [k.kind for k in cg.compile(h, relu)] == ["matmul"]
    cg.realize(h, relu)
    np.testing.assert_allclose(h.numpy(), expect, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(relu.numpy(), np.maximum(expect, 0), rtol=1e-4, atol=1e-4)


def _zeros_and_signs(shape, start: int):
    """An operand whose products with the others include -0.0 and +0.0 (0 * -1, -0.0 * -1)
    and nonzero values: a cycle of zeros and numbers of both signs, from start."""
    pattern = [0.0, -1.0, -0.0, 1.5, 0.0, -2.0, -0.0, 0.5]
    values = [pattern[(start + i) % len(pattern)] for i in range(int(np.prod(shape)))]
    return np.array(values, np.float32).reshape(shape)


# PyTorch's CPU product of one term (K = 1) keeps a -0.0 term where it runs one BLAS gemm of
# more than one row and column, or adds it onto addmm's input; gemv, bmm's loops and sums add
# it to +0.0 (linalg.py). (fn, operand shapes, with gradients: a 2-D @ 3-D product folds
# into an mm only when the matrix requires grad)
SOLE_TERMS = [
    (lambda a, b: a.mm(b), [(4, 1), (1, 5)], True),                 # gemm: -0.0 stays
    (lambda a, b: a.mm(b), [(1, 1), (1, 5)], True),                 # one row, a gemv: +0.0
    (lambda a, b: a @ b, [(3, 4, 1), (1, 5)], True),                # folded into one mm
    (lambda a, b: a @ b, [(4, 1), (2, 1, 5)], False),               # not folded: a bmm
    (lambda a, b: a.bmm(b), [(2, 4, 1), (2, 1, 5)], True),          # several batches: +0.0
    (lambda a, b: a.bmm(b), [(1, 20, 1), (1, 1, 20)], True),        # one large batch: gemm
    (lambda a, b: a.mv(b), [(4, 1), (1,)], True),
    (lambda a, b: a.dot(b), [(1,), (1,)], True),
    (lambda a, b: F(a).linear(a, b), [(2, 4, 1), (5, 1)], True),
    (lambda a, b, c: F(a).linear(a, b, c), [(1, 1), (5, 1), (5,)], True),   # onto the bias
    (lambda a, b, c: F(a).linear(a, b, c), [(3, 0), (5, 0), (5,)], True),   # the bias itself
    (lambda i, a, b: i.addmm(a, b, alpha=2), [(1, 5), (1, 1), (1, 5)], True),
    (lambda i, a, b: i.addmv(a, b), [(4,), (4, 1), (1,)], True),
    (lambda i, a, b: i.addmm(a, b, beta=0, alpha=-1), [(1, 5), (1, 1), (1, 5)], True),  # gemv
    (lambda i, a, b: i.addmm(a, b, beta=0), [(4, 5), (4, 1), (1, 5)], True),   # gemm: stays
    (lambda i, a, b: i.baddbmm(a, b), [(1, 20, 20), (1, 20, 1), (1, 1, 20)], True),  # a gemm
    (lambda i, a, b: i.baddbmm(a, b, beta=0), [(1, 20, 20), (1, 20, 1), (1, 1, 20)], True),
    (lambda i, a, b: i.baddbmm(a, b), [(1, 4, 5), (1, 4, 1), (1, 1, 5)], True),  # its loops
    (lambda i, a, b: i.addbmm(a, b), [(4, 5), (1, 4, 1), (1, 1, 5)], True),  # an addmm a batch
    (lambda i, a, b: i.addbmm(a, b, beta=0), [(1, 5), (2, 1, 1), (2, 1, 5)], True),
    (lambda a, b: library(a).einsum("bik,bkj->bij", a, b), [(2, 4, 1), (2, 1, 5)], True),
]


@pytest.mark.parametrize("fn,shapes,grad", SOLE_TERMS)
def test_sole_term_keeps_the_sign_torch_gives_it(fn, shapes, grad):
    arrays = [_zeros_and_signs(s, k) for k, s in enumerate(shapes)]
    ours = check(fn, *arrays, grad=grad)[0].detach().numpy()
    theirs = fn(*[torch.tensor(a, requires_grad=grad) for a in arrays]).detach().numpy()
    np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_batched_gemm_onto_input_adds_the_sole_term_summed_from_plus_zero():
    # PyTorch's baddbmm of several batches runs MKL's batched gemm, whose sign here depends on
    # the CPU MKL dispatches for: on an Intel Xeon (AVX-512) it sums the term from +0.0 and
    # adds that to input (-0.0 + (+0.0 + -0.0) is +0.0), on an AMD EPYC (Zen 4) it adds the
    # term to input itself (-0.0). clgrad follows the first, as its loops and bmm do; PyTorch
    # on this machine must give one of the two.
    arrays = [_zeros_and_signs(s, k) for k, s in enumerate([(2, 20, 20), (2, 20, 1), (2, 1, 20)])]
    i, a, b = (torch.tensor(x) for x in arrays)
    from_plus_zero = np.signbit((i + (a * b + 0.0)).numpy())
    onto_input = np.signbit((i + a * b).numpy())
    assert not np.array_equal(from_plus_zero, onto_input)
    theirs = np.signbit(i.baddbmm(a, b).numpy())
    assert np.array_equal(theirs, from_plus_zero) or np.array_equal(theirs, onto_input)
    ours = check(lambda i, a, b: i.baddbmm(a, b), *arrays)[0]
    np.testing.assert_array_equal(np.signbit(ours.detach().numpy()), from_plus_zero)


def test_addbmm_adds_its_batches_in_a_chain():
    """An addmm per batch: -0.0 terms added to a -0.0 input leave -0.0, where a sum from +0.0
    would give +0.0; one +0.0 among them gives +0.0."""
    start = np.array([[-0.0, -0.0], [0.0, -0.0]], np.float32)
    left = np.full((3, 2, 1), -1.0, np.float32)
    right = np.zeros((3, 1, 2), np.float32)
    right[1, 0, 1] = -0.0       # (-1) * -0.0: one +0.0 term in column 1
    for beta in (1, 0):
        fn = lambda i, a, b: i.addbmm(a, b, beta=beta)      # noqa: E731
        ours = check(fn, start, left, right)[0].detach().numpy()
        theirs = fn(*map(torch.tensor, (start, left, right))).numpy()
        np.testing.assert_array_equal(np.signbit(ours), np.signbit(theirs))


def test_empty_product_is_plus_zero():
    # K = 0: a sum of nothing, +0.0 (and a matmul kernel over no terms is never built)
    out = (cg.zeros(3, 0) @ cg.zeros(0, 4)).numpy()
    assert out.shape == (3, 4) and not np.any(np.signbit(out))
