"""The CPU matmul kernel's shapes (compiler/lower_matmul.py): a ragged last vector of columns,
the transposed kernel (C^T = B^T A^T) for wide products that no vectors tile, and the im2col
views of convolutions, whose index divisions unrolled code folds."""
import re

import numpy as np
import pytest
from helpers import F, check

import clgrad as cg
from clgrad.compiler import ir
from clgrad.compiler.interpret import evaluate
from clgrad.compiler.lower_matmul import MatmulTile
from clgrad.compiler.target import Target


@pytest.mark.parametrize("width", [16, 8])
@pytest.mark.parametrize("m, k, n", [(64, 37, 6), (24, 16, 54), (64, 130, 100), (9, 40, 6),
                                     (10, 3, 20), (57600 // 64, 9, 6)])
def test_ragged_last_vector(codegen_for, width, m, k, n):
    # N = 6, 54, 100 and 20 end in a partly filled vector: no transposition, the panel's
    # missing columns are zeros and the epilogue stores only the columns there are
    codegen_for(Target(width=width, accumulators=width, cores=2))
    check(lambda a, b, c: (a @ b) * 2 - c, (m, k), (k, n), (m, n), atol=1e-3)
    check(lambda a, b: a.t() @ b, (k, m), (k, n), atol=1e-3)
    (kernel,) = cg.compile(cg.randn(m, k) @ cg.randn(k, n)).kernels
    if -(-n // width) <= 8:
        assert f".s{n % width - 1:x};" in kernel.source and f"float{width}" in kernel.source


def test_ragged_batched_and_half(codegen_for):
    codegen_for(Target(width=16, accumulators=16, cores=2))
    check(lambda a, b: (a @ b).relu(), (3, 24, 20), (3, 20, 10), atol=1e-3)
    x, w = cg.randn(32, 40), cg.randn(40, 10)
    np.testing.assert_allclose((x.half() @ w.half()).numpy().astype(np.float32),
                               x.numpy() @ w.numpy(), rtol=2e-2, atol=5e-2)


@pytest.mark.parametrize("width", [16, 8, 4])
@pytest.mark.parametrize("m, k, n", [(64, 512, 128), (48, 200, 40), (24, 37, 100),
                                     (10, 8, 16), (6, 130, 48)])
def test_weight_read_along_k_is_copied_down_its_columns(codegen_for, width, m, k, n):
    # x @ w.T with w (N, K), as nn.Linear keeps it: B's k steps are next to each other and its
    # columns K floats apart, so its panel is copied in squares of `width` k steps transposed
    # by shuffles, and a k block's last steps short of a square element by element down each
    # column; a ragged last vector of columns (N = 100, 40 on 16 lanes) as before; batched,
    # as attention's scores q @ k^T; and in float64, whose vectors have half the lanes
    codegen_for(Target(width=width, accumulators=width, cores=2, transposes_panels=True))
    check(lambda x, w, c: (x @ w.t()) * 2 - c, (m, k), (n, k), (m, n), atol=1e-3)
    check(lambda q, kt: q @ kt.transpose(-2, -1), (3, m, k), (3, n, k), atol=1e-3)
    check(lambda x, w: x @ w.t(), (m, k), (n, k), dtype=np.float64, atol=1e-10)
    (kernel,) = cg.compile(cg.randn(m, k) @ cg.randn(n, k).t()).kernels
    assert ("shuffle2(" in kernel.source) == (k >= width)
    # each k here is one block (its panel fits _ONE_PANEL_BYTES): a tail short of a square
    # of the panel's lanes (8 where they tile n and `width` do not) is copied element-wise
    lanes = int(re.search(r"float(\d+) panel\[", kernel.source).group(1))
    assert ("(__private float*)panel" in kernel.source) == (k % lanes != 0)


def test_attention_keys_split_from_one_projection_are_transposed_too(codegen_for):
    # scores q @ k^T with q and k heads of one (batch, tokens, 3 x heads x 32) projection: the
    # batch index divides into batch and head, k's steps are still next to each other
    codegen_for(Target(width=16, accumulators=16, cores=2, transposes_panels=True))

    def scores(qkv):
        q, k, _ = qkv.reshape(2, 24, 3, 4, 32).permute(2, 0, 3, 1, 4).unbind(0)
        return q @ k.transpose(-2, -1)
    check(scores, (2, 24, 384), atol=1e-3)
    (kernel,) = cg.compile(scores(cg.randn(2, 24, 384))).kernels
    assert "shuffle2(" in kernel.source


def test_whole_vectors_of_eight_stay_on_sixteen_lanes(codegen_for):
    # N = 40: five vectors of 8 tile it, which beats three of 16 with the last half empty
    codegen_for(Target(width=16, accumulators=16, cores=2))
    (kernel,) = cg.compile(cg.randn(200, 70) @ cg.randn(70, 40)).kernels
    assert "float8" in kernel.source and "float16" not in kernel.source


def test_wide_product_no_vectors_tile_runs_transposed(codegen_for):
    # N = 201 is no multiple of 8 and too many vectors for a ragged last one, M = 64 is: the
    # kernel computes C^T = B^T A^T, its lanes down C's columns, every output stored lane by
    # lane
    codegen_for(Target(width=8, accumulators=10, cores=2))
    x, w, c = cg.randn(64, 37), cg.randn(37, 201), cg.randn(64, 201)
    y = (x @ w) * 2 + c
    (kernel,) = cg.compile(y).kernels
    assert ".s7;" in kernel.source          # a stored lane
    ref = x.numpy() @ w.numpy() * 2 + c.numpy()
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)
    half = x.half() @ w.half()
    np.testing.assert_allclose(half.numpy().astype(np.float32), x.numpy() @ w.numpy(),
                               rtol=2e-2, atol=5e-2)


def test_panel_of_b_fits_the_l1_cache(codegen_for):
    # 7 vectors of 16 columns (N = 100): blocks of 50 k steps, a 22 KiB panel, not 125
    import re
    codegen_for(Target(width=16, accumulators=16, cores=2))
    check(lambda a, b: a @ b, (64, 1000), (1000, 100), atol=1e-2, rtol=1e-3)
    (kernel,) = cg.compile(cg.randn(64, 1000) @ cg.randn(1000, 100)).kernels
    (vectors,) = re.findall(r"float16 panel\[(\d+)\]", kernel.source)
    assert int(vectors) * 64 <= 32 * 1024 and "kb < 20;" in kernel.source


@pytest.mark.parametrize("m, n", [(64, 6), (64, 201), (5, 1), (64, 32)])
def test_products_over_no_k_are_zeros(codegen_for, m, n):
    # ragged, transposed and whole-vector shapes: k = 0 has no blocks to copy or run
    codegen_for(Target(width=16, accumulators=16, cores=2))
    out = (cg.randn(m, 0) @ cg.randn(0, n)) + 1
    np.testing.assert_array_equal(out.numpy(), np.ones((m, n), np.float32))


def test_a_read_across_k_in_aliasing_steps_runs_k_in_blocks(codegen_for):
    # g^T @ x, a weight gradient over 384 rows: g's rows of 128 floats put A's k steps 512
    # bytes apart, in a few sets of the L1 cache, so k runs in blocks of 128, though all of
    # k's panel would fit _ONE_PANEL_BYTES; rows of 100 floats spread over every set and keep
    # k in one block, as an A read along k does
    codegen_for(Target(width=8, accumulators=8, tile_unroll=4, cores=2))
    check(lambda g, x: g.t() @ x, (384, 128), (384, 32), atol=1e-3)
    aliased, spread, along = (cg.compile(a @ cg.randn(384, 32)).kernels[0].source for a in
                              (cg.randn(384, 128).t(), cg.randn(384, 100).t(), cg.randn(48, 384)))
    assert "kb < 3;" in aliased and "kb < 1;" in spread and "kb < 1;" in along


@pytest.mark.parametrize("k, unrolled", [(128, True), (40, True), (37, False)])
def test_register_tile_unrolled_where_its_k_steps_divide(codegen_for, k, unrolled):
    # Intel's target runs 4 k steps of the register tile per iteration (W3 2048^3 ~7%
    # faster); a k block of 37 steps keeps one, so that no remainder loop is written
    codegen_for(Target(width=16, accumulators=16, tile_unroll=4, cores=2))
    check(lambda a, b: a @ b, (64, k), (k, 32), atol=1e-3)
    (kernel,) = cg.compile(cg.randn(64, k) @ cg.randn(k, 32)).kernels
    assert ("unroll_count(4)" in kernel.source) == unrolled


_INTEL_LIKE = Target(width=16, accumulators=16, tile_unroll=4, cores=2)


def test_conv_forward_unrolls_its_im2col_k_steps(codegen_for):
    # k = (channel, kernel row, kernel column) = 54 steps, each A load dividing it: unrolled
    # whole, the divisions fold into constant offsets
    codegen_for(_INTEL_LIKE)
    check(lambda x, w: F(x).conv2d(x, w), (4, 6, 15, 15), (16, 6, 3, 3), atol=1e-3)
    x, w = cg.randn(4, 6, 15, 15), cg.randn(16, 6, 3, 3)
    (matmul,) = [k for k in cg.compile(F(x).conv2d(x, w)) if k.name[0] == "M"]
    assert "unroll_count(54)" in matmul.source


def test_conv_weight_gradient_copies_its_im2col_panel_unrolled(codegen_for):
    # B is the im2col view (k = image positions, n = 54): each panel vector's lanes divide
    # their column number, so its 4 vectors are copied by 4 blocks of constant offsets, not a
    # loop over them
    codegen_for(_INTEL_LIKE)
    x, w = cg.randn(4, 6, 15, 15), cg.randn(16, 6, 3, 3, requires_grad=True)
    y = F(x).conv2d(x, w)
    (gw,) = cg.autograd.grad((y * cg.randn(*y.shape)).sum(), [w])
    (matmul,) = [k for k in cg.compile(gw) if k.name[0] == "M"]
    assert "panel[t*4+c]" not in matmul.source and "panel[t*4+2] =" in matmul.source
    check(lambda x, w: F(x).conv2d(x, w), (4, 6, 15, 15), (16, 6, 3, 3), atol=1e-3)


def test_tile_rows_count_the_batch_as_parallel_work():
    # 16 rows by 54 columns in 16 split-k parts on 2 cores: the parts keep both cores busy,
    # so a work-item takes all 16 rows (one panel copy) rather than 8
    assert MatmulTile.choose(16, 54, 16, 16, 2).block_rows == 8
    assert MatmulTile.choose(16, 54, 16, 16, 2, batch=16).block_rows == 16


@pytest.mark.parametrize("target", [Target(width=16, accumulators=16, cores=2),
                                    Target(width=8, accumulators=16, cores=2), Target(width=1)])
@pytest.mark.parametrize("absent", ["a", "b", "both"])
@pytest.mark.parametrize("m, k, n", [(16, 5, 32), (24, 7, 6), (6, 5, 32), (8, 8189, 16)])
def test_products_with_absent_elements_are_skipped(codegen_for, target, absent, m, k, n):
    # an ABSENT pad (a convolution's input gradient: compiler/convolutions.py) forms no
    # product, with the other operand's inf or NaN there either: in A's rows, tile by tile; in
    # B (the panel), by running transposed, or scalar where it cannot; in both; split in k
    codegen_for(target)
    rng = np.random.default_rng(m + k)
    x, y = rng.standard_normal((m, k + 3)), rng.standard_normal((k + 3, n))
    x[0, [1, k]], y[[1, k], 0] = np.inf, np.nan     # real products: non-finite results too
    x[:, [0, k + 1, k + 2]], y[[0, k + 1, k + 2]] = np.inf, -np.inf     # where the pads lie
    a, b = (cg.tensor(v.astype(np.float32)) for v in (x, y))
    a_node, b_node = a.node, b.node
    if absent in ("a", "both"):
        a_node = a[:, 1:k + 1].node.pad(((0, 0), (1, 2)), ir.ABSENT)
    if absent in ("b", "both"):
        b_node = b[1:k + 1].node.pad(((1, 2), (0, 0)), ir.ABSENT)
    got = cg.Tensor(a_node @ b_node, a.device).numpy()
    (want,) = evaluate([a_node @ b_node])
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4, equal_nan=True)
    assert np.isfinite(got[1:, 1:]).all()      # inf and NaN met only absent elements there


@pytest.mark.parametrize("m, k, n", [(64, 40, 96), (16, 1100, 32), (64, 37, 20), (64, 37, 201)])
def test_epilogue_calls_the_math_library_in_loops_of_its_own(codegen_for, m, k, n):
    # GELU's erfc, called among the epilogue's loads and stores, cost twice as much as alone:
    # its arguments over a register tile's sums go into an array, then a loop of nothing but
    # erfc over it. k in one block and in several (then at the end, a tile's rows at a time),
    # a ragged last vector (n = 20), transposed (n = 201)
    codegen_for(Target(width=8, accumulators=10, cores=2))
    check(lambda x, w, b: F(x).gelu(x @ w + b), (m, k), (k, n), (n,), grad=False, atol=1e-4)
    x, w, b = cg.randn(m, k), cg.randn(k, n), cg.randn(n)
    (kernel,) = cg.compile(cg.nn.functional.gelu(x @ w + b)).kernels
    assert "called0[i] = erfc(called0[i]);" in kernel.source
    (cheap,) = cg.compile((x @ w + b).relu()).kernels
    assert "called0" not in cheap.source


def test_epilogue_calls_in_a_chain_and_read_reshaped(codegen_for):
    # erfc's argument reads exp's array; a tanh that another output reads reshaped (as a
    # Linear on (B, T, C) finishes its (B*T, N) product) is read there at the same element
    codegen_for(Target(width=8, accumulators=10, cores=2))
    check(lambda x, w: ((x @ w).exp() * 0.1).erfc(), (64, 40), (40, 64), grad=False)
    x, w = cg.randn(64, 40), cg.randn(40, 64)
    (kernel,) = cg.compile(((x @ w).exp() * 0.1).erfc()).kernels
    assert "called1[i] = erfc(called1[i]);" in kernel.source
    y = (x @ w).tanh()
    z = y.reshape(32, 128) * 2
    (kernel,) = cg.compile(y, z).kernels
    assert "called0[i] = " in kernel.source
    want = np.tanh(x.numpy().astype(np.float64) @ w.numpy())
    np.testing.assert_allclose(z.numpy(), want.reshape(32, 128) * 2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-4, atol=1e-4)
