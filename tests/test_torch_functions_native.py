"""The native and helper forms of torch.* (native_layer_norm, native_dropout, embedding_bag's
four outputs, ...) against PyTorch, a section each: values, gradients, dtypes and errors where
they are deterministic; the random ones by their masks and statistics; the ones PyTorch has
for CUDA only (SyncBatchNorm's statistics helpers) by composing them into PyTorch's batch
norm, and against NumPy."""
import math

import numpy as np
import pytest

from helpers import check, library, make, torch

import clgrad as cg

F32 = np.float32
pytestmark = pytest.mark.skipif(torch is None, reason="compares with PyTorch")


def same_error(fn, prefix_free=False):
    """fn(library) raises the same exception type, with the same message, on both."""
    with pytest.raises(Exception) as theirs:
        fn(torch)
    with pytest.raises(type(theirs.value)) as ours:
        fn(cg)
    expected = str(theirs.value).split("\n[ torch.")[0]    # (a tensor PyTorch prints after)
    if prefix_free:
        assert str(ours.value).endswith(expected), (ours.value, expected)
    else:
        assert str(ours.value) == expected


# ---- dropouts -----------------------------------------------------------------------------------

SELU_LIMIT = 1.7580993408473766


def _alpha_ab(p):
    a = 1 / math.sqrt((SELU_LIMIT ** 2 * p + 1) * (1 - p))
    return a, SELU_LIMIT * a * p - SELU_LIMIT * a       # a, the value a dropped element takes


@pytest.mark.parametrize("name,feature,alpha", [
    ("dropout_", False, False), ("alpha_dropout_", False, True),
    ("feature_dropout_", True, False), ("feature_alpha_dropout_", True, True),
    ("feature_dropout", True, False)])
def test_dropouts_masks_statistics_and_gradients(name, feature, alpha):
    cg.manual_seed(0)
    p = 0.3
    x = cg.tensor(make((64, 32, 6), low=0.5, high=1.5), requires_grad=True)
    y = x * 1
    out = getattr(cg, name)(y, p, True)
    assert (out is y) == name.endswith("_")
    assert out.grad_fn.name() == ("AddBackward0" if alpha else "MulBackward0")
    out.backward(cg.ones(*out.shape))
    xs, o, g = x.detach().numpy(), out.detach().numpy(), x.grad.numpy()
    if alpha:
        a, dropped_value = _alpha_ab(p)
        kept = ~np.isclose(o, dropped_value, atol=1e-5)
        np.testing.assert_allclose(o[kept], xs[kept] * a + dropped_value + SELU_LIMIT * a,
                                   rtol=1e-5)
        np.testing.assert_allclose(g, kept * a, rtol=1e-6)
    else:
        kept = o != 0
        np.testing.assert_allclose(o[kept], xs[kept] / (1 - p), rtol=1e-6)
        np.testing.assert_allclose(g, kept / (1 - p), rtol=1e-6)
    if feature:     # whole channels of each sample, kept or dropped together
        assert np.all(kept.all(-1) | ~kept.any(-1))
        assert abs(kept[..., 0].mean() - (1 - p)) < 0.05
    else:
        assert abs(kept.mean() - (1 - p)) < 0.015


def test_alpha_dropout_keeps_selu_statistics():
    cg.manual_seed(1)
    x = cg.randn(200, 100)
    for out in (cg.alpha_dropout_(x.clone(), 0.2, True),
                cg.feature_alpha_dropout_(x.clone(), 0.2, True)):
        assert abs(float(out.mean())) < 0.05 and abs(float(out.std()) - 1) < 0.05


def test_dropouts_that_change_nothing_or_zero_everything():
    x = cg.tensor(make((3, 4)))
    for name in ("dropout_", "alpha_dropout_", "feature_dropout_", "feature_alpha_dropout_",
                 "feature_dropout"):
        fn = getattr(cg, name)
        assert fn(x, 0.5, False) is x and fn(x, 0.0, True) is x
        empty = cg.zeros(0, 3)
        assert fn(empty, 0.5, True) is empty
        w = cg.tensor(make((3, 4)), requires_grad=True)
        zero = fn(w * 1, 1.0, True)
        assert zero.grad_fn.name() == "MulBackward0" and not zero.detach().numpy().any()
        zero.sum().backward()
        assert not w.grad.numpy().any()


@pytest.mark.parametrize("call", [
    lambda lib: lib.dropout_(lib.ones(3), 1.5, True),
    lambda lib: lib.feature_dropout(lib.ones(3, 2), -0.5, True),
    lambda lib: lib.dropout(lib.ones(3), 1.5, True),
    lambda lib: lib.alpha_dropout(lib.ones(3), -1.0, True),
    lambda lib: lib.feature_dropout(lib.ones(3), 0.5, True),
    lambda lib: lib.feature_alpha_dropout_(lib.ones(3), 0.5, True),
    lambda lib: lib.dropout_(lib.arange(4), 0.5, True),
    lambda lib: lib.feature_dropout(lib.arange(4).reshape(2, 2), 0.5, True),
    lambda lib: lib.native_dropout(lib.ones(3), 1.5, True),
    lambda lib: lib.native_dropout(lib.arange(3), 0.5, True)])
def test_dropout_errors(call):
    same_error(call)


def test_dropout_in_place_on_a_leaf_is_refused():
    for lib in (torch, cg):
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib.dropout_(lib.ones(3, requires_grad=True), 0.5, True)


@pytest.mark.parametrize("train", [True, None])
def test_native_dropout_training(train):
    cg.manual_seed(2)
    p = 0.25
    x = cg.tensor(make((100, 50), low=0.5, high=1.5), requires_grad=True)
    out, mask = cg.native_dropout(x, p, train)
    assert mask.dtype == cg.bool and out.grad_fn.name() == "NativeDropoutBackward0"
    m = mask.numpy()
    np.testing.assert_allclose(out.detach().numpy(), x.detach().numpy() * m / (1 - p), rtol=1e-6)
    assert abs(m.mean() - (1 - p)) < 0.02
    out.backward(cg.ones(100, 50))
    np.testing.assert_allclose(x.grad.numpy(), m / (1 - p), rtol=1e-6)


def test_native_dropout_eval_p1_empty_and_integers():
    def outputs(lib, x, p, train):
        out, mask = lib.native_dropout(x, p, train)
        return out * 1, mask
    check(lambda x: outputs(library(x), x, 0.5, False), (3, 4))
    check(lambda x: outputs(library(x), x, 1.0, True), (3, 4))
    check(lambda x: library(x).native_dropout(x, 0.5, True), (0, 3), grad=False)
    check(lambda x: library(x).native_dropout(x, 0.5, False), np.arange(4), grad=False)
    check(lambda x: library(x).native_dropout(x, 0.0, True)[1], (2, 3), grad=False)


# ---- native_layer_norm, native_batch_norm, native_group_norm ------------------------------------

@pytest.mark.parametrize("shape,normalized,affine", [
    ((2, 3, 4), [4], True), ((2, 3, 4), (3, 4), False), ((5,), [5], True),
    ((0, 3), [3], False), ((2, 0), [0], False), ((2, 1), [1], True)])
def test_native_layer_norm(shape, normalized, affine):
    params = [make(tuple(normalized), seed=5), make(tuple(normalized), seed=6)] if affine \
        else [None, None]
    check(lambda x, w, b: library(x).native_layer_norm(x, normalized, w, b, 1e-5), shape,
          *params)


def test_native_layer_norm_dtypes_and_nan():
    x = make((3, 4))
    check(lambda x, w: library(x).native_layer_norm(x, [4], w, None, 1e-5), x.astype(np.float16),
          make((4,)), atol=2e-3, rtol=2e-3)
    check(lambda x: library(x).native_layer_norm(x, [4], None, None, 1e-5),
          x.astype(np.float16), atol=2e-3, rtol=2e-3, grad=False)
    x[1, 2] = np.nan
    check(lambda x: library(x).native_layer_norm(x, [4], None, None, 1e-5), x, grad=False)
    check(lambda x: library(x).native_layer_norm(x, [4], None, None, 1e-5), make((3, 4), F32))


@pytest.mark.parametrize("call", [
    lambda lib: lib.native_layer_norm(lib.ones(2, 3), [4], None, None, 1e-5),
    lambda lib: lib.native_layer_norm(lib.ones(2, 3), [3], lib.ones(2), None, 1e-5),
    lambda lib: lib.native_layer_norm(lib.ones(2, 3), [3], None, lib.ones(2), 1e-5),
    lambda lib: lib.native_layer_norm(lib.ones(2, 3), 3, None, None, 1e-5),
    lambda lib: lib.native_layer_norm(lib.ones(2, 3), [], None, None, 1e-5),
    lambda lib: lib.native_layer_norm(lib.ones(2, 3), [3], lib.ones(3).double(), None, 1e-5),
    lambda lib: lib.native_layer_norm(lib.ones(2, 3).long(), [3], None, None, 1e-5)])
def test_native_layer_norm_errors(call):
    same_error(call)


def _batch_norm(x, w, b, training, running=True, momentum=0.1):
    lib = library(x)
    c = x.shape[1]
    rm = lib.tensor(np.linspace(-1, 1, c, dtype=F32)) if running else None
    rv = lib.tensor(np.linspace(0.5, 2, c, dtype=F32)) if running else None
    out = lib.native_batch_norm(x, w, b, rm, rv, training, momentum, 1e-5)
    return out + ((rm, rv) if running else ())


@pytest.mark.parametrize("shape,training,running,affine", [
    ((4, 3, 5), True, True, True), ((4, 3, 5), False, True, True),
    ((2, 3, 2, 2), True, False, False), ((5, 3), True, True, False),
    ((1, 3), True, True, True)])
def test_native_batch_norm(shape, training, running, affine):
    params = [make((shape[1],), seed=5), make((shape[1],), seed=6)] if affine else [None, None]
    check(lambda x, w, b: _batch_norm(x, w, b, training, running), shape, *params,
          atol=1e-4)


def test_native_batch_norm_mixed_dtypes():
    x = make((4, 3, 2)).astype(np.float16)
    check(lambda x, w: _batch_norm(x, w, None, True), x, make((3,)), atol=2e-3, rtol=2e-3)
    check(lambda x: _batch_norm(x, None, None, False), x, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("call", [
    lambda lib: lib.native_batch_norm(lib.ones(3), None, None, None, None, True, 0.1, 1e-5),
    lambda lib: lib.native_batch_norm(lib.ones(4, 3), None, None, lib.zeros(3), None, True,
                                      0.1, 1e-5),
    lambda lib: lib.native_batch_norm(lib.ones(0, 3), None, None, None, None, True, 0.1, 1e-5),
    lambda lib: lib.native_batch_norm(lib.ones(4, 3).long(), None, None, None, None, True,
                                      0.1, 1e-5),
    lambda lib: lib.native_batch_norm(lib.ones(4, 3), lib.ones(3).double(), None, None, None,
                                      True, 0.1, 1e-5),
    lambda lib: lib.native_batch_norm(lib.ones(4, 3), None, None, lib.zeros(3).double(),
                                      lib.ones(3).double(), True, 0.1, 1e-5)])
def test_native_batch_norm_errors(call):
    same_error(call)


def test_native_batch_norm_eval_needs_running_statistics():
    with pytest.raises(RuntimeError, match="running_mean and running_var are needed"):
        cg.native_batch_norm(cg.ones(4, 3), None, None, None, None, False, 0.1, 1e-5)


@pytest.mark.parametrize("shape,n,c,hxw,group,affine", [
    ((4, 6, 5), 4, 6, 5, 3, True), ((2, 6, 2, 3), 2, 6, 6, 2, False),
    ((2, 6), 2, 6, 1, 2, True), ((0, 6, 3), 0, 6, 3, 2, False), ((2, 6, 0), 2, 6, 0, 3, False)])
def test_native_group_norm(shape, n, c, hxw, group, affine):
    # mean and rstd are differentiable outputs in PyTorch: check's cotangents reach them too
    params = [make((c,), seed=5), make((c,), seed=6)] if affine else [None, None]
    check(lambda x, w, b: library(x).native_group_norm(x, w, b, n, c, hxw, group, 1e-5), shape,
          *params, atol=1e-4)


def test_native_group_norm_half():
    check(lambda x: library(x).native_group_norm(x, None, None, 2, 4, 3, 2, 1e-5),
          make((2, 4, 3)).astype(np.float16), atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("args", [(2, 6, 4, 3), (3, 6, 5, 3), (2, 6, 5, 4), (2, 6, 5, 0)])
def test_native_group_norm_errors(args):
    same_error(lambda lib: lib.native_group_norm(lib.ones(2, 6, 5), None, None, *args, 1e-5))
    same_error(lambda lib: lib.native_group_norm(lib.ones(2, 6, 5), lib.ones(5), None, 2, 6, 5,
                                                 3, 1e-5))


# ---- native_norm, norm_except_dim ---------------------------------------------------------------

def _native_norm(x, *args):
    if isinstance(x, cg.Tensor):
        return cg.native_norm(x, *args)
    return torch.native_norm(x.detach().to_sparse(), *args)    # PyTorch's is sparse-only


@pytest.mark.parametrize("p", [2, 1, 0, 3, 0.5, math.inf, -math.inf, -1])
def test_native_norm(p):
    x = make((3, 4))
    x[1, 1] = 0
    check(lambda x: _native_norm(x, p), x, grad=False)
    check(lambda x: _native_norm(x, p, [1, 0], False, None), x, grad=False)
    check(lambda x: _native_norm(x, p), x.astype(np.float16), grad=False, atol=1e-2)


def test_native_norm_edges_and_errors():
    check(lambda x: _native_norm(x), np.zeros(0, F32), grad=False)
    check(lambda x: _native_norm(x, None, [], False, None), make((2, 3)), grad=False)
    check(lambda x: _native_norm(x, math.inf), np.array([1, np.nan], F32), grad=False)
    for p in (math.inf, -math.inf, -1):
        same_error(lambda lib: _native_norm(lib.zeros(3), p))
    for args in ((2, [1], False, None), (2, [0, 0], False, None), (2, [0, 1], True, None),
                 (2, [], False, torch.float64), (2, [0, 2], False, None)):
        same_error(lambda lib: _native_norm(lib.ones(2, 3), *[
            cg.float64 if lib is cg and a is torch.float64 else a for a in args]))
    same_error(lambda lib: _native_norm(lib.arange(3)))
    x = cg.tensor(make((3,)), requires_grad=True)
    with pytest.raises(RuntimeError, match="derivative for aten::native_norm is not "):
        cg.native_norm(x).backward()


@pytest.mark.parametrize("shape,pow,dim", [
    ((3, 4), 2, 0), ((3, 4), 2, 1), ((3, 4), 2, -1), ((3, 4), 3, -2), ((2, 3, 4), 2, 1),
    ((2, 3, 4), 1, 2), ((2, 3, 4), 2, -3), ((5,), 2, 0), ((0, 3), 2, 1)])
def test_norm_except_dim(shape, pow, dim):
    check(lambda v: library(v).norm_except_dim(v, pow, dim), shape, low=0.5, high=2.0)


def test_norm_except_dim_errors():
    same_error(lambda lib: lib.norm_except_dim(lib.tensor(3.0), 2, 0))
    same_error(lambda lib: lib.norm_except_dim(lib.ones(2, 3), 2.5, 0))


# ---- SyncBatchNorm's statistics helpers ---------------------------------------------------------

def test_batch_norm_helpers_compose_into_batch_norm():
    """Two processes' halves of a batch (of unequal sizes), through batch_norm_stats,
    gather_stats_with_counts, batch_norm_elemt and the backward pair, give PyTorch's
    batch_norm over the whole batch: running statistics, output and all three gradients."""
    x, w, b, g = make((6, 3, 2, 2)) * 2 + 1, make((3,), seed=5), make((3,), seed=6), \
        make((6, 3, 2, 2), seed=7)
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    rm, rv = torch.zeros(3), torch.ones(3)
    ty = torch.nn.functional.batch_norm(tx, rm, rv, tw, tb, True, 0.1, 1e-5)
    ty.backward(torch.tensor(g))
    parts, grads = (x[:2], x[2:]), (g[:2], g[2:])
    stats = [cg.batch_norm_stats(cg.tensor(p), 1e-5) for p in parts]
    counts = cg.tensor([p.size // 3 for p in parts], dtype=cg.float32)
    crm, crv = cg.zeros(3), cg.ones(3)
    mean, invstd = cg.batch_norm_gather_stats_with_counts(
        cg.tensor(x), cg.stack([s[0] for s in stats]), cg.stack([s[1] for s in stats]), crm, crv,
        0.1, 1e-5, counts)
    np.testing.assert_allclose(crm.numpy(), rm.numpy(), atol=1e-6)
    np.testing.assert_allclose(crv.numpy(), rv.numpy(), atol=1e-5)
    out = [cg.batch_norm_elemt(cg.tensor(p), cg.tensor(w), cg.tensor(b), mean, invstd, 1e-5)
           for p in parts]
    np.testing.assert_allclose(np.concatenate([o.numpy() for o in out]), ty.detach().numpy(),
                               atol=1e-5)
    reduced = [cg.batch_norm_backward_reduce(cg.tensor(gp), cg.tensor(p), mean, invstd,
                                             cg.tensor(w), True, True, True)
               for gp, p in zip(grads, parts)]
    sum_dy, sum_dy_xmu, grad_w, grad_b = (r0 + r1 for r0, r1 in zip(*reduced))
    np.testing.assert_allclose(grad_w.numpy(), tw.grad.numpy(), atol=1e-5)
    np.testing.assert_allclose(grad_b.numpy(), tb.grad.numpy(), atol=1e-5)
    count = cg.tensor([p.size // 3 for p in parts], dtype=cg.int32)
    grad_x = [cg.batch_norm_backward_elemt(cg.tensor(gp), cg.tensor(p), mean, invstd,
                                           cg.tensor(w), sum_dy, sum_dy_xmu, count)
              for gp, p in zip(grads, parts)]
    np.testing.assert_allclose(np.concatenate([t.numpy() for t in grad_x]), tx.grad.numpy(),
                               atol=1e-5)


def _stats64(x, eps):
    axes = (0,) + tuple(range(2, x.ndim))
    x = x.astype(np.float64)
    return x.mean(axes), 1 / np.sqrt(x.var(axes) + eps)


def test_batch_norm_stats_gather_and_elemt_against_numpy():
    x = make((4, 3, 5))
    mean, invstd = cg.batch_norm_stats(cg.tensor(x), 1e-3)
    m64, i64 = _stats64(x, 1e-3)
    np.testing.assert_allclose(mean.numpy(), m64, atol=1e-6)
    np.testing.assert_allclose(invstd.numpy(), i64, rtol=1e-5)
    h = cg.batch_norm_stats(cg.tensor(x).half(), 1e-3)
    assert h[0].dtype == cg.float32 and h[1].dtype == cg.float32
    halves = [_stats64(x[:2], 1e-3), _stats64(x[2:], 1e-3)]
    rm, rv = cg.zeros(3), cg.ones(3)
    m, i = cg.batch_norm_gather_stats(cg.tensor(x), cg.tensor(np.stack([s[0] for s in halves])),
                                      cg.tensor(np.stack([s[1] for s in halves])), rm, rv, 0.5,
                                      1e-3, 10)
    np.testing.assert_allclose(m.numpy(), m64, atol=1e-6)
    np.testing.assert_allclose(i.numpy(), i64, rtol=1e-5)
    np.testing.assert_allclose(rm.numpy(), 0.5 * m64, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.5 + 0.5 * x.astype(np.float64).var((0, 2), ddof=1),
                               rtol=1e-5)
    y = cg.batch_norm_elemt(cg.tensor(x).half(), None, None, mean, invstd, 1e-3)
    assert y.dtype == cg.float16
    np.testing.assert_allclose(y.numpy(), (x - m64[:, None]) * i64[:, None], atol=2e-3)


def test_batch_norm_backward_helpers_outputs_and_errors():
    x, g = make((4, 3, 5)), make((4, 3, 5), seed=3)
    mean, invstd = cg.batch_norm_stats(cg.tensor(x), 1e-5)
    out = cg.batch_norm_backward_reduce(cg.tensor(g), cg.tensor(x), mean, invstd, None, False,
                                        True, False)
    assert out[0] is None and out[1] is None and out[3] is None
    m64, i64 = _stats64(x, 1e-5)
    sum_dy_xmu = (g * (x - m64[:, None])).sum((0, 2))
    assert out[2].dtype == cg.float32
    np.testing.assert_allclose(out[2].numpy(), sum_dy_xmu * i64, rtol=1e-4, atol=1e-5)
    sum_dy = cg.tensor(g.sum((0, 2)))
    grad = cg.batch_norm_backward_elemt(cg.tensor(g), cg.tensor(x), mean, invstd, None, sum_dy,
                                        cg.tensor(sum_dy_xmu.astype(F32)),
                                        cg.tensor(np.array([20], np.int32)))
    expected = (g - g.sum((0, 2))[:, None] / 20 - (x - m64[:, None]) * i64[:, None] ** 2 *
                sum_dy_xmu[:, None] / 20) * i64[:, None]
    np.testing.assert_allclose(grad.numpy(), expected, atol=1e-5)
    with pytest.raises(RuntimeError, match="expected scalar type Int but found Long"):
        cg.batch_norm_backward_elemt(cg.tensor(g), cg.tensor(x), mean, invstd, None, sum_dy,
                                     sum_dy, cg.tensor([20]))


def test_batch_norm_helpers_refuse_backward():
    x = cg.tensor(make((4, 3, 5)), requires_grad=True)
    mean, invstd = cg.batch_norm_stats(x, 1e-5)
    results = {"batch_norm_stats": mean,
               "batch_norm_elemt": cg.batch_norm_elemt(x, None, None, mean, invstd, 1e-5),
               "batch_norm_update_stats": cg.batch_norm_update_stats(x, None, None, 0.1)[1]}
    for op, t in results.items():
        assert t.grad_fn.name() == "torch::autograd::NotImplemented"
        with pytest.raises(RuntimeError, match=f"derivative for aten::{op} is not implemented"):
            t.sum().backward()


@pytest.mark.parametrize("dtype,running", [(F32, True), (F32, False), (np.float16, True),
                                           (np.float16, False)])
def test_batch_norm_update_stats(dtype, running):
    def updated(x):
        lib = library(x)
        rm = lib.tensor(np.linspace(-1, 1, 3, dtype=F32)) if running else None
        rv = lib.tensor(np.linspace(0.5, 2, 3, dtype=F32)) if running else None
        return lib.batch_norm_update_stats(x, rm, rv, 0.2) + ((rm, rv) if running else ())
    tol = 1e-5 if dtype == F32 else 2e-3
    check(updated, make((4, 3, 5)).astype(dtype), grad=False, atol=tol, rtol=tol)
    check(updated, make((1, 3)).astype(dtype), grad=False, atol=tol, rtol=tol)
    same_error(lambda lib: lib.batch_norm_update_stats(lib.ones(0, 3), lib.zeros(3),
                                                       lib.ones(3), 0.1))


# ---- segment_reduce -----------------------------------------------------------------------------

SEGMENT_DATA = np.array([1, 2, 3, 4, 0, 6], F32)     # a zero; no ties (see below)


@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min", "prod"])
def test_segment_reduce(reduce):
    lengths = np.array([2, 0, 3, 1])

    def reduced(d, kind, initial=None, unsafe=False):
        lib = library(d)
        lens = lib.tensor(np.array([2, 2]) if unsafe else lengths)
        if kind == "offsets":
            return lib.segment_reduce(d, reduce, offsets=lib.tensor(np.array([0, 2, 2, 5, 6])),
                                      initial=initial)
        return lib.segment_reduce(d, reduce, lengths=lens, initial=initial, unsafe=unsafe)
    check(lambda d: reduced(d, "lengths"), SEGMENT_DATA)
    check(lambda d: reduced(d, "offsets", initial=2.0), SEGMENT_DATA)
    check(lambda d: reduced(d, "lengths", unsafe=True), SEGMENT_DATA)
    with_nan = SEGMENT_DATA.copy()
    with_nan[[0, 3]] = np.nan
    check(lambda d: reduced(d, "lengths"), with_nan)
    two_d = np.arange(24, dtype=F32).reshape(2, 6, 2) * 0.7 % 5 - 1
    check(lambda d: library(d).segment_reduce(
        d, reduce, lengths=library(d).tensor(np.array([[2, 4], [3, 3]], np.int32)), axis=1),
        two_d)
    check(lambda d: library(d).segment_reduce(d, reduce, lengths=library(d).tensor(
        np.array([1, 0, 5])), axis=-3), two_d.transpose(1, 0, 2).copy())


@pytest.mark.parametrize("reduce", ["max", "min"])
def test_segment_reduce_ties_share_the_gradient(reduce):
    # PyTorch 2.13 divides a tied segment's gradient among its ties only where it is positive
    # (its kernel tests grad > 0 to find the elements it wrote): compared where it is
    data = np.array([3, 3, 1, 3, 3, 5] if reduce == "max" else [3, 3, 1, 1, 3, 5], F32)
    grads = []
    for lib in (torch, cg):
        d = lib.tensor(data, requires_grad=True)
        out = lib.segment_reduce(d, reduce, lengths=lib.tensor([2, 4]), initial=3.0)
        out.backward(lib.tensor([1.0, 2.0]))
        grads.append(d.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0])


def test_segment_reduce_edges():
    check(lambda d: library(d).segment_reduce(d, "sum", lengths=library(d).tensor([0, 0])),
          np.zeros(0, F32))
    check(lambda d: library(d).segment_reduce(d, "max", lengths=library(d).tensor([2, 4]),
                                              initial=math.nan), SEGMENT_DATA)
    check(lambda d: library(d).segment_reduce(d, "mean", lengths=library(d).tensor([2, 4])),
          SEGMENT_DATA.astype(np.float16), atol=1e-3, rtol=1e-3, grad=False)


@pytest.mark.parametrize("call", [
    lambda lib: lib.segment_reduce(lib.ones(6), "avg", lengths=lib.tensor([2, 4])),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum"),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum", indices=lib.tensor([0])),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum", lengths=lib.tensor([2, 2])),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum", lengths=lib.tensor([-1, 7])),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum", offsets=lib.tensor([0, 4, 2, 6])),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum", lengths=lib.tensor([2.0, 4.0])),
    lambda lib: lib.segment_reduce(lib.arange(6), "sum", lengths=lib.tensor([2, 4])),
    lambda lib: lib.segment_reduce(lib.ones(2, 6), "sum", lengths=lib.tensor([2, 4]), axis=1),
    lambda lib: lib.segment_reduce(lib.ones(6), "sum", lengths=lib.tensor([2, 4]), axis=1)])
def test_segment_reduce_errors(call):
    same_error(call)


# ---- svd_lowrank, pca_lowrank -------------------------------------------------------------------

def _low_rank(m, n, rank=4, batch=()):
    rng = np.random.default_rng(3)
    return (rng.standard_normal(batch + (m, rank)) @ rng.standard_normal(batch + (rank, n))).astype(
        F32)


@pytest.mark.parametrize("shape,q,with_mean", [((20, 12), 6, False), ((12, 20), 5, True),
                                                ((2, 16, 10), 6, False)])
def test_svd_lowrank(shape, q, with_mean):
    cg.manual_seed(4)
    a = _low_rank(*shape[-2:], batch=shape[:-2])
    mean = a.mean(-2, keepdims=True) if with_mean else None
    U, S, V = cg.svd_lowrank(cg.tensor(a), q=q, M=None if mean is None else cg.tensor(mean))
    centered = a - (0 if mean is None else mean)
    assert U.shape == shape[:-1] + (q,) and S.shape == shape[:-2] + (q,) and \
        V.shape == shape[:-2] + (shape[-1], q)
    u, s, v = U.numpy(), S.numpy(), V.numpy()
    np.testing.assert_allclose((u * s[..., None, :]) @ np.swapaxes(v, -1, -2), centered,
                               atol=1e-4)
    np.testing.assert_allclose(np.swapaxes(u, -1, -2) @ u, np.broadcast_to(np.eye(q), s.shape +
                                                                          (q,)), atol=1e-4)
    _, ts, _ = torch.svd_lowrank(torch.tensor(a), q=q,
                                 M=None if mean is None else torch.tensor(mean))
    exact = np.linalg.svd(centered.astype(np.float64), compute_uv=False)[..., :4]
    np.testing.assert_allclose(s[..., :4], exact, rtol=1e-4)
    np.testing.assert_allclose(ts.numpy()[..., :4], s[..., :4], rtol=1e-4)


def test_pca_lowrank():
    cg.manual_seed(5)
    a = _low_rank(30, 8) + 3.0
    U, S, V = cg.pca_lowrank(cg.tensor(a))
    _, ts, _ = torch.pca_lowrank(torch.tensor(a))
    assert U.shape == (30, 6) and S.shape == (6,) and V.shape == (8, 6)
    np.testing.assert_allclose(S.numpy()[:4], ts.numpy()[:4], rtol=1e-4)
    centered = a - a.mean(0)
    np.testing.assert_allclose((U.numpy() * S.numpy()) @ V.numpy().T, centered, atol=1e-4)
    U, S, V = cg.pca_lowrank(cg.tensor(a), q=3, center=False, niter=3)
    assert S.shape == (3,)
    np.testing.assert_allclose(S.numpy(), np.linalg.svd(a, compute_uv=False)[:3], rtol=1e-3)
    same_error(lambda lib: lib.pca_lowrank(lib.ones(4, 3), q=4))
    same_error(lambda lib: lib.pca_lowrank(lib.ones(4, 3), niter=-1))


# ---- embedding_bag, embedding_renorm_ -----------------------------------------------------------

BAG_INDICES, BAG_OFFSETS = np.array([1, 2, 4, 5, 4, 3, 2, 0]), np.array([0, 2, 2, 5])


def _bags(weight, indices, offsets, *args, per_sample_weights=None):
    lib = library(weight)
    if per_sample_weights is not None:
        args = args + (False, per_sample_weights)
    return lib.embedding_bag(weight, lib.tensor(indices), lib.tensor(offsets), *args)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx,last", [(None, False), (2, False), (-2, True)])
def test_embedding_bag(mode, padding_idx, last):
    offsets = np.append(BAG_OFFSETS, 8) if last else BAG_OFFSETS
    check(lambda w: _bags(w, BAG_INDICES, offsets, False, mode, False, None, last, padding_idx),
          (6, 3))


@pytest.mark.parametrize("mode", [0, 1, 2])
def test_embedding_bag_dtypes_and_empty(mode):
    check(lambda w: _bags(w, BAG_INDICES.astype(np.int32), BAG_OFFSETS.astype(np.int32), False,
                          mode), (6, 3))
    check(lambda w: _bags(w, BAG_INDICES, BAG_OFFSETS, False, mode), (6, 3), dtype=np.float64)
    check(lambda w: _bags(w, np.zeros(0, np.int64), np.array([0, 0]), False, mode), (6, 3))
    # no bags at all (one offset, the last): PyTorch's kernel crashes there
    out = _bags(cg.ones(6, 3), BAG_INDICES, np.array([0]), False, mode, False, None, True)
    assert [tuple(t.shape) for t in out] == [(0, 3), (0,), (0,), (0, 3) if mode == 2 else (0,)]


def test_embedding_bag_weights_and_frequency():
    check(lambda w, p: _bags(w, BAG_INDICES, BAG_OFFSETS, False, 0, per_sample_weights=p), (6, 3),
          (8,))
    # (PyTorch 2.13's CPU embedding_bag divides by other rows' counts where rows are missing or
    # repeated before others; these indices are ones it gets right)
    check(lambda w: _bags(w, np.array([3, 3, 1, 1, 0]), np.array([0, 2]), True, 1), (6, 3))


@pytest.mark.parametrize("call", [
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1, 9]), lib.tensor([0]), False, 0),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1, 2]), lib.tensor([1]), False, 0),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1, 2]), lib.tensor([0, 3]), False,
                                  0),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1.0]), lib.tensor([0]), False, 0),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1]), None, False, 0),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1]), lib.tensor([0]), False, 3),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1]), lib.tensor([0]), False, 1,
                                  False, lib.ones(1)),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1]), lib.tensor([0]), False, 0,
                                  False, lib.ones(2)),
    lambda lib: lib.embedding_bag(lib.ones(6, 3), lib.tensor([1]), lib.tensor([0]), False, 0,
                                  False, None, False, 7),
    lambda lib: lib.embedding_bag(lib.ones(6), lib.tensor([1]), lib.tensor([0]), False, 0)])
def test_embedding_bag_errors(call):
    same_error(call)


@pytest.mark.parametrize("norm_type", [2.0, 1.0, math.inf])
def test_embedding_renorm_(norm_type):
    def renormed(w):
        y = w * 3
        lib = library(w)
        out = lib.embedding_renorm_(y, lib.tensor([0, 2, 2, -1]), 1.5, norm_type)
        assert out is y
        return out
    check(renormed, (5, 3), grad=False)


def test_embedding_renorm_refuses_backward_and_errors():
    for lib in (torch, cg):
        w = lib.tensor(make((5, 3)), requires_grad=True)
        y = lib.embedding_renorm_(w * 1, lib.tensor([1]), 0.1, 2.0)
        assert y.grad_fn.name() == "EmbeddingRenormBackward0"
        with pytest.raises(NotImplementedError,
                           match="the derivative for 'embedding_renorm' is not implemented"):
            y.sum().backward()
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
            lib.embedding_renorm_(w, lib.tensor([1]), 0.1, 2.0)
    same_error(lambda lib: lib.embedding_renorm_(lib.ones(5, 3), lib.tensor([0.0]), 1.0, 2.0))
    same_error(lambda lib: lib.embedding_renorm_(lib.ones(5), lib.tensor([0]), 1.0, 2.0))
    same_error(lambda lib: lib.embedding_renorm_(lib.ones(5, 3), lib.tensor([7]), 1.0, 2.0))
    same_error(lambda lib: lib.embedding_renorm_(lib.ones(5, 3).long(), lib.tensor([0]), 1.0,
                                                 2.0))


# ---- addmv_ -------------------------------------------------------------------------------------

def test_addmv_():
    def updated(x, m, v):
        y = x * 1
        out = library(x).addmv_(y, m, v, beta=0.5, alpha=2.0)
        assert out is y
        return out
    check(updated, (3,), (3, 2), (2,))
    same_error(lambda lib: lib.addmv_(lib.ones(3), lib.ones(3, 2), lib.ones(2), 2, 3))


# ---- slice_copy, slice_inverse ------------------------------------------------------------------

@pytest.mark.parametrize("args", [(), (1, 1, 3), (1, 0, None, 2), (-1, -3, -1), (0, 1, 100),
                                  (0, 2, 1)])
def test_slice_copy(args):
    check(lambda x: library(x).slice_copy(x, *args), (3, 4))


def test_slice_inverse():
    def inverse(x, y):
        lib = library(x)
        if lib is torch:    # PyTorch's is a view of a view: its slice of x, written with y
            base = x * 1
            view = base[:, 1:4:2]
            view.copy_(y)
            return lib.slice_inverse(view, base, 1, 1, 4, 2)
        return lib.slice_inverse(y, x * 1, 1, 1, 4, 2)
    check(inverse, (3, 5), (3, 2), grad=False)
    y = cg.tensor(make((3, 2)), requires_grad=True)
    out = y.slice_inverse(cg.tensor(make((3, 5))), 1, 1, 4, 2)
    assert out.grad_fn.name() == "SliceInverseBackward0"
    g = make((3, 5), seed=9)
    out.backward(cg.tensor(g))
    np.testing.assert_array_equal(y.grad.numpy(), g[:, 1:4:2])      # PyTorch's: grad.slice(...)


@pytest.mark.parametrize("call", [
    lambda lib: lib.slice_copy(lib.ones(3, 4), 2),
    lambda lib: lib.slice_copy(lib.ones(3, 4), 0, 0, 3, 0),
    lambda lib: lib.slice_copy(lib.tensor(1.0))])
def test_slice_copy_errors(call):
    same_error(call)
