"""nn.functional and the layers' maths: forward and backward against PyTorch (or, without it,
the float64 interpreter and finite differences), plus NumPy formulas that always run."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as CF
from helpers import F, check, make, torch



# ---- convolution and pooling ----------------------------------------------------------------

@pytest.mark.parametrize("kw", [
    {}, dict(stride=2, padding=1), dict(dilation=2, padding=(2, 1)), dict(groups=2),
    dict(stride=(2, 1), padding=(0, 1), dilation=(1, 2)),
])
def test_conv2d(kw):
    weight = (4, 2, 3, 3) if kw.get("groups") == 2 else (4, 4, 3, 3)
    check(lambda x, w, b: F(x).conv2d(x, w, b, **kw), (2, 4, 7, 6), weight, (4,),
          atol=1e-4, grad_atol=1e-3)


def _conv2d_input_gradient(channels=8, **kw):
    x = cg.randn(2, channels, 8, 8, requires_grad=True)
    w = cg.randn(4, channels, 3, 3)
    (dx,) = cg.autograd.grad(CF.conv2d(x, w, **kw).sum(), [x])
    kernels = [k.name for k in cg.compile(dx)]
    if torch is not None:
        tx = torch.tensor(x.detach().numpy(), requires_grad=True)
        torch.nn.functional.conv2d(tx, torch.tensor(w.numpy()), **kw).sum().backward()
        np.testing.assert_allclose(dx.numpy(), tx.grad.numpy(), atol=1e-4)
    return kernels


def test_conv2d_input_gradient_is_a_convolution_of_the_output_gradient():
    # one product of the output gradient's windows, a row per input place (2 x 8 x 8), by the
    # flipped weight; then the copy into NCHW. No product per window slot summed back.
    kernels = _conv2d_input_gradient(padding=1)
    assert len(kernels) == 2 and kernels[0].startswith("M_1x128x8_")


@pytest.mark.parametrize("channels, kw", [(8, dict(padding=1, stride=2)), (3, dict(padding=1))])
def test_conv2d_input_gradient_sums_both_window_axes_in_one_kernel(channels, kw):
    # strided, or of too few input channels to fill a vector: the columns' gradient (a
    # matmul), its 3x3 shifted pieces summed (one kernel, not one per axis), the padding
    # cropped off
    assert len(_conv2d_input_gradient(channels, **kw)) == 3


def test_conv2d_no_bias_unbatched_and_kernel_equal_stride():
    check(lambda x, w: F(x).conv2d(x, w, stride=2), (2, 5, 6), (3, 2, 2, 2), atol=1e-4)


@pytest.mark.parametrize("kw", [
    dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=3, stride=1),
    dict(kernel_size=2, dilation=2), dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(5, 4), stride=1),
])
def test_max_pool2d(kw):
    x = np.random.default_rng(3).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6) / 10.0
    check(lambda x: F(x).max_pool2d(x, **kw), x.astype(np.float32))   # no ties: one argmax


@pytest.mark.parametrize("kw", [
    dict(kernel_size=2), dict(kernel_size=(2, 3), padding=1), dict(kernel_size=3, ceil_mode=True),
    dict(kernel_size=2, stride=1),
    dict(kernel_size=(5, 4), stride=1), dict(kernel_size=5, stride=2),     # reductions
])
def test_max_pool2d_ties_go_to_the_first_max(kw):
    """Windows full of equal values (and relu-like zeros): PyTorch gives each window's gradient
    to its first largest element, row-major, for non-overlapping windows (the select chain)
    as for overlapping ones, and for windows of more than 16 elements (a reduction)."""
    x = np.random.default_rng(4).integers(0, 3, (8, 2, 7, 9)).astype(np.float32)
    check(lambda x: F(x).max_pool2d(x, **kw), x)


def test_max_pool2d_non_overlapping_keeps_infinities_and_lanes():
    """Batch 8: the pooling kernels run their lanes down the batch axis. The max and the
    position of the first max are one kernel."""
    x = np.random.default_rng(5).standard_normal((8, 3, 6, 10)).astype(np.float32)
    x[0, 0, :2, :2] = -np.inf
    x[1, 1, 2:4, 4:6] = np.inf
    check(lambda x: F(x).max_pool2d(x, 2), x)
    assert len(cg.compile(CF.max_pool2d(cg.tensor(x), 2))) == 1


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=3, stride=2, padding=1,
                                     count_include_pad=False)])
def test_avg_pool2d(kw):
    check(lambda x: F(x).avg_pool2d(x, **kw), (2, 3, 7, 6))


def _conv_numpy(x, w, b, stride, padding):
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    ho = (h + 2 * padding - kh) // stride + 1
    wo = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, ho, wo))
    for i in range(ho):
        for j in range(wo):
            patch = xp[:, :, i * stride:i * stride + kh, j * stride:j * stride + kw]
            out[:, :, i, j] = np.einsum("nckl,ockl->no", patch, w) + b
    return out


def test_conv2d_and_max_pool_match_numpy_formulas():
    x, w, b = make((2, 3, 6, 5)), make((4, 3, 3, 3)), make((4,))
    got = CF.conv2d(cg.tensor(x), cg.tensor(w), cg.tensor(b), stride=2, padding=1).numpy()
    np.testing.assert_allclose(got, _conv_numpy(x, w, b, 2, 1), atol=1e-4)
    pooled = CF.max_pool2d(cg.tensor(x), 2).numpy()
    expect = x[:, :, :6, :4].reshape(2, 3, 3, 2, 2, 2).max(axis=(3, 5))
    np.testing.assert_array_equal(pooled, expect)


# ---- activations, linear, normalisation, embedding, dropout ---------------------------------

def test_linear():
    check(lambda x, w, b: F(x).linear(x, w, b), (5, 3, 4), (6, 4), (6,))


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu(approximate):
    check(lambda x: F(x).gelu(x, approximate=approximate), (4, 5), low=-4, high=4)


def test_gelu_keeps_its_digits_in_the_far_tails():
    # 0.5 x (1 + erf(x / sqrt 2)) loses most digits where erf nears -1; clgrad's erfc form
    # keeps them: float32 close to the float64 value PyTorch computes there (where its float32
    # gives 0 at x = -6 and 1.19e-6 for 1.43e-6 at x = -5), and the ends (inf, NaN) as PyTorch's
    import math
    x = np.array([-12, -9, -6, -4.5, -3, -1, -1e-3, 0, 1e-3, 2, 6, 1e30, -1e30], np.float32)
    check(lambda t: F(t).gelu(t), x.astype(np.float64), dtype=np.float64, atol=1e-14)
    got = CF.gelu(cg.tensor(x)).numpy().astype(np.float64)
    want = np.array([0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x.astype(np.float64)])
    np.testing.assert_allclose(got, want, rtol=2e-5, atol=0)  # (x / sqrt 2 rounds to float)
    ends = CF.gelu(cg.tensor([float("-inf"), float("nan")])).numpy()
    assert np.isnan(ends).all()


def test_activations_and_softmax():
    check(lambda x: (F(x).relu(x), F(x).softmax(x, dim=1), F(x).log_softmax(x, dim=0),
                     F(x).sigmoid(x), F(x).tanh(x)), (3, 5))


def test_layer_norm():
    check(lambda x, w, b: F(x).layer_norm(x, (4, 5), w, b), (3, 4, 5), (4, 5), (4, 5),
          atol=1e-4)


def test_batch_norm_training_and_eval():
    def fn(x, w, b):
        lib = F(x)
        rm, rv = _like(x, np.zeros(3, np.float32)), _like(x, np.ones(3, np.float32))
        train = lib.batch_norm(x, rm, rv, w, b, training=True, momentum=0.3)
        stats = _like(x, np.full(3, 0.5, np.float32)), _like(x, np.full(3, 2.0, np.float32))
        evaluated = lib.batch_norm(x, *stats, w, b, training=False)
        return train, evaluated, rm * 1.0, rv * 1.0
    check(fn, (4, 3, 2, 2), (3,), (3,), atol=1e-4)
    # 3 channels of 32,768 values: statistics over the batch's slices, then their totals
    check(fn, (32, 3, 32, 32), (3,), (3,), atol=1e-4)


@pytest.mark.parametrize("norm", ["batch_norm", "layer_norm"])
def test_normalisation_of_a_convolution_reads_it_in_its_own_layout(norm):
    # a convolution's output is its product's rows (N, H, W, C) seen as (N, C, H, W): the
    # normalisation's passes over it (statistics, the normalised values, backward) read a copy
    # in its own layout, not each vector gathered across the rows
    def fn(x, w):
        out = F(x).conv2d(x, w, padding=1)
        if norm == "batch_norm":
            return F(x).batch_norm(out, None, None, training=True)
        return F(x).layer_norm(out, (8, 6, 6))
    check(fn, (4, 8, 6, 6), (8, 8, 3, 3), atol=1e-4, grad_atol=1e-3)
    names = [k.name for k in cg.compile(fn(cg.randn(4, 8, 6, 6), cg.randn(8, 8, 3, 3)))]
    assert names[0].startswith("M_1x144x8_") and names[1].startswith("E_4x8x6x6_")
    assert "matmul" not in names[1] and len(names) == 3     # a copy, then the fused statistics


def _like(x, array):
    if torch is not None and isinstance(x, torch.Tensor):
        return torch.tensor(array)
    return cg.tensor(array)


def test_batch_norm_matches_numpy_formula():
    x = make((6, 3))
    rm, rv = cg.zeros(3).realize(), cg.ones(3).realize()
    y = CF.batch_norm(cg.tensor(x), rm, rv, training=True, momentum=0.1, eps=1e-5).numpy()
    mean, var = x.mean(0), x.var(0)
    np.testing.assert_allclose(y, (x - mean) / np.sqrt(var + 1e-5), atol=1e-5)
    np.testing.assert_allclose(rm.numpy(), 0.1 * mean, atol=1e-6)
    np.testing.assert_allclose(rv.numpy(), 0.9 + 0.1 * x.var(0, ddof=1), atol=1e-6)


def test_embedding():
    idx = np.array([[1, 3, 3], [0, 4, 1]], np.int64)
    check(lambda w: F(w).embedding(_like(w, idx), w), (5, 4))
    check(lambda w: F(w).embedding(_like(w, idx), w, padding_idx=3), (5, 4))
    # each row's gradient divided by how often idx picks it; none to the padding row
    check(lambda w: F(w).embedding(_like(w, idx), w, padding_idx=-2, scale_grad_by_freq=True),
          (5, 4))


def test_dropout_scales_kept_values_and_masks_gradient():
    x = cg.ones(200, 50, requires_grad=True)
    y = CF.dropout(x, p=0.3, training=True)
    values = y.detach().numpy()
    assert set(np.unique(values)) <= {0.0, np.float32(1 / 0.7)}
    assert 0.6 < (values != 0).mean() < 0.8
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), values)
    assert CF.dropout(x, 0.3, training=False) is x


# ---- losses ---------------------------------------------------------------------------------

@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    check(lambda a, b: F(a).mse_loss(a, b, reduction=reduction), (4, 3), (4, 3))


@pytest.mark.parametrize("kw", [{}, dict(reduction="sum"), dict(reduction="none"),
                                dict(ignore_index=2), dict(label_smoothing=0.1)])
def test_cross_entropy_class_indices(kw):
    target = np.array([0, 2, 4, 1, 2, 3], np.int64)
    check(lambda x: F(x).cross_entropy(x, _like(x, target), **kw), (6, 5))


def test_cross_entropy_unread_target_and_ignored_smoothing():
    target = np.array([0, 2, 4, 1, 2, 3], np.int64)
    # a computed target is not read, so the ignore mask stays in the graph
    check(lambda x: F(x).cross_entropy(x, _like(x, target) + 0), (6, 5))
    check(lambda x: F(x).cross_entropy(x, _like(x, target), ignore_index=2, label_smoothing=0.1),
          (6, 5))
    weight = make((5,), low=0.5, high=2.0, seed=3)
    for reduction in ("mean", "sum", "none"):
        check(lambda x: F(x).cross_entropy(x, _like(x, target), _like(x, weight), ignore_index=2,
                                           reduction=reduction, label_smoothing=0.3), (6, 5))


def test_cross_entropy_reads_a_target_once_until_it_changes(monkeypatch):
    x = cg.tensor(make((4, 3)))
    target = cg.tensor(np.array([0, 2, 1, 2]))
    reads = []
    numpy = cg.Tensor.numpy
    monkeypatch.setattr(cg.Tensor, "numpy", lambda t: reads.append(1) or numpy(t))
    first = CF.cross_entropy(x, target).item()
    assert CF.cross_entropy(x, target).item() == first and len(reads) == 1   # (item() is no read)
    target[1] = -100            # now ignored: a new node, read again
    target.realize()
    assert CF.cross_entropy(x, target).item() != first and len(reads) == 2
    target[1] = 7
    target.realize()
    with pytest.raises(IndexError):
        CF.cross_entropy(x, target)


def test_cross_entropy_weight_spatial_and_probabilities():
    target = np.array([[[0, 2], [1, 1]], [[2, 0], [1, 2]]], np.int64)
    weight = np.array([0.2, 1.0, 3.0], np.float32)
    check(lambda x: F(x).cross_entropy(x, _like(x, target), weight=_like(x, weight)),
          (2, 3, 2, 2))
    probs = np.random.default_rng(1).dirichlet(np.ones(5), 4).astype(np.float32)
    check(lambda x: F(x).cross_entropy(x, _like(x, probs)), (4, 5))


def test_nll_loss_and_cross_entropy_match_numpy():
    x, target = make((6, 5)), np.array([0, 2, 4, 1, 2, 3])
    logp = x - np.log(np.exp(x).sum(1, keepdims=True))
    expect = -logp[np.arange(6), target].mean()
    got = CF.cross_entropy(cg.tensor(x), cg.tensor(target)).item()
    assert abs(got - expect) < 1e-5
    assert abs(CF.nll_loss(cg.tensor(logp.astype(np.float32)), cg.tensor(target)).item()
               - expect) < 1e-5
    assert CF.cross_entropy(cg.tensor(x, requires_grad=True),
                            cg.tensor(target)).grad_fn.name() == "NllLossBackward0"


def test_bce_with_logits():
    y = (make((4, 3), seed=5) > 0).astype(np.float32)
    pos = np.array([1.0, 2.0, 0.5], np.float32)
    check(lambda x: F(x).binary_cross_entropy_with_logits(x, _like(x, y)), (4, 3), low=-6,
          high=6)
    check(lambda x: F(x).binary_cross_entropy_with_logits(x, _like(x, y),
                                                          pos_weight=_like(x, pos)), (4, 3))
    x = make((4, 3), low=-30, high=30)
    expect = np.mean(np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x))))
    got = CF.binary_cross_entropy_with_logits(cg.tensor(x), cg.tensor(y)).item()
    assert abs(got - expect) < 1e-5


def test_loss_errors_name_the_problem():
    with pytest.raises(ValueError, match="reduction"):
        CF.mse_loss(cg.ones(2), cg.ones(2), reduction="avg")
    with pytest.raises(IndexError, match="out of bounds"):
        CF.cross_entropy(cg.ones(2, 3), cg.tensor([0, 3]))
    with pytest.raises(RuntimeError, match="conv2d"):
        CF.conv2d(cg.ones(1, 3, 5, 5), cg.ones(2, 2, 3, 3))


def test_cross_entropy_on_a_target_not_read_back_is_nan_at_an_out_of_range_class():
    x = cg.tensor(make((4, 3)))
    target = cg.tensor([0, 3, -100, 2]) + 0     # lazy: its classes are not checked on the host
    got = CF.cross_entropy(x, target, reduction="none").numpy()
    logp = x.numpy() - np.log(np.exp(x.numpy()).sum(1, keepdims=True))
    np.testing.assert_allclose(got[[0, 2, 3]], [-logp[0, 0], 0.0, -logp[3, 2]], rtol=1e-5)
    assert np.isnan(got[1]) and np.isnan(CF.cross_entropy(x, target).item())


def test_batch_norm_gradient_through_a_permuted_view_is_the_numeric_one():
    # PyTorch 2.13's backward of a 4-d batch_norm is wrong where the gradient reaching it
    # is a permuted view it reads as channels-last (fuzz seed 100500815); clgrad's is the
    # float64 central difference's
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 18, 1, 5))
    g = np.linspace(-1, 1, 90).reshape(5, 1, 18, 1)

    def loss(a):
        m = a.mean(axis=(0, 2, 3), keepdims=True)
        v = ((a - m) ** 2).mean(axis=(0, 2, 3), keepdims=True)
        return (((a - m) / np.sqrt(v + 1e-5)).transpose(3, 0, 1, 2) * g).sum()
    numeric = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[i] = 1e-6
        numeric[i] = (loss(x + step) - loss(x - step)) / 2e-6
    t = cg.tensor(x.astype(np.float32), requires_grad=True)
    out = CF.batch_norm(t, None, None, training=True).permute(3, 0, 1, 2)
    (out * cg.tensor(g.astype(np.float32))).sum().backward()
    np.testing.assert_allclose(t.grad.numpy(), numeric, atol=2e-5)
