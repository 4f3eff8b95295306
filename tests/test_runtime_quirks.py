"""Code shapes that OpenCL runtimes get wrong, and the kernels clgrad writes instead."""

import math
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as F
from clgrad.engine import codegen_target
from helpers import check, library

REPO = Path(__file__).resolve().parents[1]
NAN = float("nan")


def sources(*tensors) -> str:
    return "\n".join(kernel.source for kernel in cg.compile(*tensors))


@pytest.mark.parametrize("fn", ["exp", "tanh", "floor", "sigmoid", "sqrt"])
def test_a_nan_constant_survives_a_folding_compiler(fn):
    # PoCL folds exp/tanh/exp2/floor of a NaN literal into garbage and drops the store
    y = getattr(cg.ones(3) * NAN, fn)()
    assert "NAN" not in sources(y)
    assert np.isnan(y.numpy()).all()


def test_variance_of_one_element_is_nan_after_exp():
    y = cg.ones(3, 1).var(dim=1).exp()
    assert np.isnan(y.numpy()).all()


def test_float64_nan_constant():
    y = (cg.ones(3, dtype=cg.float64) * NAN).exp()
    assert np.isnan(y.numpy()).all()


def test_int64_to_float_in_vector_code_goes_lane_by_lane():
    # PoCL's LLVM 14 aborts on a vectorised int64-to-float conversion for AVX2 targets
    y = cg.arange(1, 17).float() * 2
    source = sources(y)
    assert "convert_float8(" not in source and "(float)" in source
    np.testing.assert_array_equal(y.numpy(), np.arange(1, 17, dtype=np.float32) * 2)


def test_mse_loss_against_integer_targets():
    out = cg.randn(10, requires_grad=True)
    loss = F.mse_loss(out, cg.arange(1, 11))
    loss.backward()
    x = out.detach().numpy()
    target = np.arange(1, 11, dtype=np.float32)
    assert math.isclose(loss.item(), float(((x - target) ** 2).mean()), rel_tol=1e-5)
    np.testing.assert_allclose(out.grad.numpy(), 2 * (x - target) / 10, rtol=1e-5)


def test_intel_loop_vectoriser_reproducer():
    # Intel's runtime returned 114.48 for x2's gradient: its loop vectoriser summed two selects
    # wrongly (PyTorch: -80.70)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((8, 13, 1)).astype("f")
    x2 = rng.standard_normal((1, 1)).astype("f")

    def fn(x0, x2):
        v0 = x0 - x2
        both = library(x0).cat([v0, v0 * 2], 0)
        return (both.clamp(max=1.27).sum(dim=1) / (x2.abs() + 0.5)).sum()
    check(fn, x0, x2)


AVX2_SCRIPT = """
import numpy as np, clgrad as cg
import clgrad.nn.functional as F
x = np.linspace(-3, 3, 1000, dtype=np.float32).reshape(40, 25)
t = cg.tensor(x, requires_grad=True)
loss = F.mse_loss((t @ t.T).softmax(-1).sum(-1), cg.arange(40)) + t.exp().mean()
loss.backward()
ref_sm = np.exp(x @ x.T - (x @ x.T).max(-1, keepdims=True))
ref_sm = (ref_sm / ref_sm.sum(-1, keepdims=True)).sum(-1)
ref = ((ref_sm - np.arange(40)) ** 2).mean() + np.exp(x).mean()
assert np.isclose(loss.item(), ref, rtol=1e-4), (loss.item(), ref)
assert np.isfinite(t.grad.numpy()).all()
# a GRU layer's loops in vectors (compiler/lower_recurrence.py)
gru, xs = cg.nn.GRU(5, 16), np.random.default_rng(0).standard_normal((4, 3, 5)).astype("f")
out, h = gru(cg.tensor(xs))
w_ih, w_hh, b_ih, b_hh = (p.detach().numpy() for p in gru.parameters())
state = np.zeros((3, 16), np.float32)
for step in xs:
    gx, gh = step @ w_ih.T + b_ih, state @ w_hh.T + b_hh
    r, z = (1 / (1 + np.exp(-(gx[:, k:k + 16] + gh[:, k:k + 16]))) for k in (0, 16))
    n = np.tanh(gx[:, 32:] + r * gh[:, 32:])
    state = n + z * (state - n)
assert np.allclose(h.detach().numpy(), state, atol=1e-5), (h, state)
out.sum().backward()
assert np.isfinite(gru.weight_hh_l0.grad.numpy()).all()
print("ok")
"""


def intel_is_usable():
    return any(d.runtime == "intel" and d.usable for d in cg.devices())


@pytest.mark.skipif(not intel_is_usable(), reason="Intel's OpenCL runtime does not work here")
def test_code_for_an_avx2_cpu(tmp_path):
    """Intel's runtime compiles for AVX2 when told to: the kernels clgrad writes for an AVX-512
    machine must also build and run right for an AVX2 one."""
    env = dict(os.environ, CLGRAD_DEVICE="cpu:intel", CL_CONFIG_CPU_TARGET_ARCH="core-avx2",
               CLGRAD_CACHE_DIR=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", AVX2_SCRIPT], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_sine_and_cosine_of_one_value_are_one_call():
    # Intel's compiler, pairing sin and cos itself, crashed (SIGSEGV) building this gradient
    check(lambda x: x.cos().cos().cos().sum(), (16,))
    check(lambda x: x.sin().sin().sin().sum(), (16,))
    x = cg.randn(16, requires_grad=True)
    (grad,) = cg.autograd.grad(x.cos().cos().cos().sum(), [x])
    # (not on PoCL, whose vector sin and cos take their far lanes apart: the next test)
    assert ("sincos(" in sources(grad)) != (x.device.runtime == "pocl")


def test_cosine_of_a_value_is_one_float_beside_its_sine_or_not():
    # Intel's compiler merges sin(x) and cos(x) into a sincos whose cos differs from its lone
    # cos by an ulp in a third of all floats; the backward of this maximum takes the sine of
    # x beside one cosine, so the two cosines of x[i] no longer tied there and the gradient
    # was not split (fuzz seed 1002609). On Intel every sin and cos is a sincos.
    x = np.random.default_rng(3).uniform(-2, 2, 16).astype(np.float32)
    check(lambda t: library(t).maximum(t.cos(), t.reshape(16, 1).cos()), x)
    check(lambda t: library(t).minimum(t.sin(), t.reshape(16, 1).sin()), x)


@pytest.mark.parametrize("reduce", ["max", "amax"])
def test_gradient_of_the_max_of_a_sine(reduce):
    # Intel's runtime gave all-zero or inf gradients: the max and the equality that routes its
    # gradient saw different values of sin
    a = np.random.default_rng(1).uniform(-2, 2, (4, 13)).astype(np.float32)
    check(lambda x: getattr(x.sin(), reduce)(dim=1)[0] if reduce == "max"
          else x.sin().amax(dim=1), a)


def test_subtracting_a_negative_constant():
    # `v0--3.0f` is a decrement in C: negative literals are parenthesised
    check(lambda x: x - -3, (5,))
    check(lambda x: x - -3, np.arange(5, dtype=np.int64), grad=False)


def test_min_and_max_of_a_transcendental_find_their_element_on_every_runtime():
    """A max compares each element with the max; computed in two loops (or the backward's
    kernel), Intel's sin of one x differed, so no element was the min: a NaN gradient (fuzz
    seed 31252). The max of an inexact expression reads it from a buffer."""
    x0 = np.array([0.3, -1.2, 2.5, 1.9], dtype=np.float32)
    x = cg.tensor(x0, requires_grad=True)
    x.sin().amin(dim=-1).sum().backward()
    expected = np.where(np.sin(x0) == np.sin(x0).min(), np.cos(x0), 0.0)
    np.testing.assert_allclose(x.grad.numpy(), expected, rtol=1e-5, atol=1e-7)
    y0 = np.random.default_rng(0).uniform(-3, 3, (30, 5)).astype(np.float32)
    y = cg.tensor(y0, requires_grad=True)
    y.cos().amax(dim=-2).sum().backward()
    top = np.cos(y0) == np.cos(y0).max(0)
    np.testing.assert_allclose(y.grad.numpy(), np.where(top, -np.sin(y0), 0), rtol=1e-5,
                               atol=1e-7)


def test_softmax_of_a_cosine_has_a_finite_gradient():
    """Softmax's shift by the row max is detached: its gradient is zero, and building it
    compared each recomputed cos with the max, which Intel's compiler rounded differently in
    the backward's loop (sincos there, cos in the max): no element equalled the max, a NaN
    gradient everywhere (fuzz seed 52688). The backward reads no max and counts no ties."""
    a = np.random.default_rng(52688).uniform(-2, 2, (1, 16, 7)).astype(np.float32)
    check(lambda x: (x.cos().softmax(dim=1).sigmoid() + 0.25) ** 1.5, a)
    x = cg.tensor(a, requires_grad=True)
    (grad,) = cg.autograd.grad(x.cos().softmax(dim=1).sum(), [x])
    assert "==" not in sources(grad)


def test_index_of_the_min_of_bools_in_vector_code():
    """A vector's true is -1 and a scalar's 1: the lanes of a vector OR were combined as they
    were, so a row's min of bools matched no element and its index was the row length."""
    for n in (64, 4096):
        a = np.random.default_rng(n).random(n) < 0.5
        t = cg.tensor(a)
        assert t.min(dim=0).indices.item() == np.argmin(a)
        assert t.max(dim=0).indices.item() == np.argmax(a)


def test_int64_min_in_intel_vectors_and_short_loops():
    """Intel's compiler got int64 wrong twice: in two-register vectors (long16: the min of a
    (13, 104) int64 tensor, seed 50248) and in a fully unrolled 5-step max of ~x (the min
    [4, 2, 0, -3, -2] came out -1 when its last step was fused into the next kernel, seed
    31952). int64 vectors stay within one register, and int64 rows stay rolled."""
    rng = np.random.default_rng(0)
    a = rng.integers(-5, 6, 5)
    b = rng.integers(-5, 6, 1000)
    x, y = cg.tensor(a), cg.tensor(b)
    low = x.amin(dim=-1)
    np.testing.assert_array_equal((low != y).numpy(), a.min() != b)
    assert low.item() == a.min()
    for seed in range(5):
        c = np.random.default_rng(seed).integers(-5, 6, (13, 104))
        t = cg.tensor(c)
        assert t.min().item() == c.min() and t.max().item() == c.max()


def test_int32_min_after_a_vector_loop_and_its_tail():
    """Intel's compiler unrolled the 8-element tail of an int32 max of ~x after its 16-lane
    loop into a wrong answer (the min of 840 ints was 0, not -5; fuzz seed 100705): integer
    rows stay rolled."""
    a = np.random.default_rng(0).integers(-5, 6, 840).astype(np.int32)
    a[3] = np.iinfo(np.int32).max
    for values in (a, a.astype(np.int16)):
        t = cg.tensor(values)
        assert t.amin().item() == -5 and t.min().item() == -5
        assert t.max().item() == values.max()


@pytest.mark.parametrize("dtype", [np.int64, np.int32])
def test_integer_min_beside_the_values_it_is_the_min_of(dtype):
    """Intel's compiler turned a rolled max of ~x, followed in the same kernel by the min of
    its inverse with x, into x itself (fuzz seed 1508309): an int32 or int64 amin is a min
    of x in the kernel, inverted once, by an xor with a -1 it cannot see."""
    a = np.array([3, -2, 5, 1], dtype)
    x = cg.tensor(a)
    np.testing.assert_array_equal(cg.minimum(x.amin(dim=-1, keepdim=True), x).numpy(),
                                  [-2, -2, -2, -2])
    np.testing.assert_array_equal(x.argmin().numpy(), 1)
    # and it turned ~ of a min of vector lanes into the min itself (fuzz seed 2005240)
    b = np.random.default_rng(1).integers(-100, 100, (4, 3, 16)).astype(dtype)
    np.testing.assert_array_equal(cg.tensor(b).min(dim=2).values.sum(dim=0).numpy(),
                                  b.min(2).sum(0))


def test_gpu_code_rounds_each_op_and_converts_floats_out_of_range_as_x86(codegen_for):
    # NVIDIA's compiler fused a multiply and an add of separate statements: gumbel_softmax's
    # hard zeros, (1 - y) + y with y a product, were -1.5e-8. Its float-to-int conversion
    # saturates: 1 / x.int() of NaN was inf, PyTorch's -4.7e-10. The GPU target writes out
    # both; here its code runs on this CPU device
    codegen_for(codegen_target(SimpleNamespace(kind="gpu", compute_units=2, has_fp64=True)))
    x = np.array([NAN, math.inf, -math.inf, 3e9, -3e9, 1e20, -1e20, 2.7, -0.5, -2.5, 0.0],
                 np.float32)
    for convert in ("int", "long", "byte"):
        check(lambda t: getattr(t, convert)(), x, grad=False)
        check(lambda t: getattr(t.double(), convert)(), x, grad=False)
    (kernel,) = cg.compile(cg.tensor(x) * 2 + 1).kernels
    assert "#pragma OPENCL FP_CONTRACT OFF" in kernel.source


def test_gpu_factorizations_fuse_their_updates_as_lapack_does(codegen_for):
    # with every GPU kernel's FP_CONTRACT OFF, a rank-deficient Wishart draw's Cholesky
    # residual (a22 - l21 * l21) was always 0 on an H200, and every redraw singular again;
    # LAPACK's (and a CPU's OpenCL compiler's) is one fused rounding. LDL rounds twice, as
    # LAPACK's sytf2 (its pivots compare such values)
    codegen_for(codegen_target(SimpleNamespace(kind="gpu", compute_units=2, has_fp64=True)))
    a = np.random.default_rng(0).standard_normal((3, 4, 4)).astype(np.float32)
    a = a @ a.transpose(0, 2, 1) + 4 * np.eye(4, dtype=np.float32)
    check(lambda t: library(t).linalg.cholesky(t), a, grad=False, atol=1e-5)
    (cholesky,) = cg.compile(cg.linalg.cholesky(cg.tensor(a))).kernels
    ldl = next(k for k in cg.compile(cg.linalg.ldl_factor(cg.tensor(a))[0]).kernels
               if "_ldl_" in k.name)
    assert "FP_CONTRACT OFF" not in cholesky.source and "FP_CONTRACT OFF" in ldl.source


def test_sines_of_small_lanes_beside_a_huge_one():
    # PoCL's vector sin, cos and tan were wrong in the lanes under 2^-7 once another lane took
    # their slow path: sin(0.0048) was 0.0097 beside a -inf (fuzz edge seed 6200209)
    x = np.random.default_rng(0).uniform(-2 ** -7, 2 ** -7, 64).astype(np.float32)
    x[1::8], x[4::16], x[10::16] = 1e8, -math.inf, 3e5
    for name in ("sin", "cos", "tan"):
        check(lambda t: getattr(t, name)(), x, atol=1e-7, rtol=1e-6)
    # bfloat16 (computed as float) reaches the slow path too
    check(lambda t: t.bfloat16().sin().float(), x, atol=1e-7, rtol=1e-2)


def test_float_to_int_to_float_is_not_a_truncation():
    # Intel's compiler folded (float)(int)x into trunc(x) in scalar code: -0.0 for x in
    # (-1, 0) (1 / that was -inf, PyTorch's inf) and NaN, inf, 3e9 kept where PyTorch's int is
    # INT_MIN; a maximum's gradient then went to the wrong side (fuzz seed 401274)
    x = np.array([-0.5, -0.0, 0.5, -1.5, 2.7, NAN, math.inf, -math.inf, 3e9, -3e9, 1e20,
                  -0.9, 0.9, -2.5, 16777217.0, -0.25, 1.0], np.float32)
    x = np.stack([x, x[::-1], np.roll(x, 5)], 1)
    y = np.linspace(-2, 2, 17).astype(np.float32).reshape(17, 1)
    check(lambda t: 1 / t.int().float(), x, grad=False)
    check(lambda t, u: library(t).maximum(1 / t.int().float(), u), x, y)


PADDED_ROWS_SCRIPT = """
import math, numpy as np
from helpers import check, library

def padded(t, before, value):       # `before` rows of `value`, then t's (30, 3)
    return library(t).nn.functional.pad(t, (0, 0, before, 0), value=value)

x = np.random.default_rng(0).uniform(0.5, 1.5, (30, 3)).astype(np.float32)
check(lambda t: (-padded(t, 30, 0.0)).sum(0), x)          # acc + -0.0
check(lambda t: padded(t, 50, 1.0).prod(0), x)            # acc * 1
check(lambda t: padded(t, 30, -math.inf).amax(0), x)      # max(acc, -inf)
check(lambda t: padded(t, 30, 0).sum(0), np.arange(90).reshape(30, 3), grad=False)   # acc + 0
print("ok")
"""


def run_in_a_child(script: str, cwd: Path) -> subprocess.CompletedProcess:
    """script run by a Python process of its own, which can import helpers: a compiler that
    hangs or crashes fails the test, not the test run."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        filter(None, [str(REPO), str(REPO / "tests"), os.environ.get("PYTHONPATH")])))
    # (a cold cache on a loaded 2-core machine took over 20 s)
    return subprocess.run([sys.executable, "-c", script], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=120)


def test_rows_that_start_with_padding_end(tmp_path):
    """Intel's compiler made a reduction loop whose first iterations read padding, each a
    no-op (acc - 0, acc * 1), into an infinite loop: the gradient of (x - c)[-1, 0] summed
    (fuzz seed 403506) never returned. A row is reduced in one loop per stretch of padding
    or data, with no bound tested inside. A child process runs it, so a hang is a failure."""
    try:
        done = run_in_a_child(PADDED_ROWS_SCRIPT, tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("a reduction over a row that starts with padding did not finish")
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    x = cg.ones(30, 3)
    assert "if (" not in sources((-F.pad(x, (0, 0, 30, 0))).sum(0))


BFLOAT16_BESIDE_A_DIFF_SCRIPT = """
from helpers import check
check(lambda t: (t.diff(dim=-1), t.bfloat16().amin(dim=0).amin().float()), (104,))
print("ok")
"""


def test_bfloat16_rounding_beside_a_bounds_tested_read(tmp_path):
    """Intel's compiler (2026.22) died of SIGSEGV building x's gradient: a loop rounding an
    amin's bfloat16 gradient with `isnan(x) ? :` beside the read a diff's gradient
    tests the bounds of (fuzz seed 99501351). rounded.py's function chooses the NaN with
    select()."""
    done = run_in_a_child(BFLOAT16_BESIDE_A_DIFF_SCRIPT, tmp_path)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
