"""Losses and distances, functional and Module forms: values and gradients against PyTorch."""
import warnings

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
import clgrad.nn.functional as CF
from helpers import F, check, make, nn, torch


def _like(x, array):
    """array as a tensor of x's library that does not require grad (a target or weight that
    PyTorch does not differentiate)."""
    if torch is not None and isinstance(x, torch.Tensor):
        return torch.tensor(array)
    return cg.tensor(array)




REDUCTIONS = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_l1_smooth_l1_and_huber(reduction):
    r = reduction
    check(lambda x, y: F(x).l1_loss(x, y, reduction=r), (3, 4), (3, 4))
    check(lambda x, y: F(x).smooth_l1_loss(x, y, reduction=r), (3, 4), (3, 4))
    check(lambda x, y: F(x).smooth_l1_loss(x, y, reduction=r, beta=0.5), (3, 4), (3, 4))
    check(lambda x, y: F(x).smooth_l1_loss(x, y, reduction=r, beta=0.0), (3, 4), (3, 4))
    check(lambda x, y: F(x).huber_loss(x, y, reduction=r), (3, 4), (3, 4))
    check(lambda x, y: F(x).huber_loss(x, y, reduction=r, delta=0.3), (3, 4), (3, 4))
    check(lambda x, y, w: F(x).l1_loss(x, y, reduction=r, weight=w), (3, 4), (3, 4),
          make((3, 4), low=0.1, high=1))
    check(lambda x, y, w: F(x).huber_loss(x, y, reduction=r, weight=w, delta=0.5), (3, 4),
          (3, 4), make((3, 4), low=0.1, high=1))


def test_regression_losses_at_extremes():
    x = np.array([0.0, 1.0, -1.0, 1e4, -1e4, np.inf, 0.5, 2.0], np.float32)
    y = np.array([0.0, 0.0, 0.0, 0.0, 3.0, 0.0, 1.5, 1.0], np.float32)
    for fn in [lambda x, y: F(x).l1_loss(x, y, reduction="none"),
               lambda x, y: F(x).smooth_l1_loss(x, y, reduction="none"),
               lambda x, y: F(x).huber_loss(x, y, reduction="none", delta=1.0)]:
        check(fn, x, y)


def test_broadcast_target_warns():
    with pytest.warns(UserWarning, match="different to the input size"):
        out = CF.l1_loss(cg.ones(3, 4), cg.zeros(4))
    assert out.item() == 1.0


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    check(lambda x, y: F(x).binary_cross_entropy(x, y, reduction=reduction),
          make((3, 4), low=0.01, high=0.99), make((3, 4), low=0, high=1, seed=5))
    w = make((4,), low=0.5, high=2)
    check(lambda x, y: F(x).binary_cross_entropy(x, y, weight=_like(x, w), reduction=reduction),
          make((3, 4), low=0.01, high=0.99), make((3, 4), low=0, high=1, seed=5))


def test_binary_cross_entropy_at_zero_and_one():
    """log clamped at -100, and PyTorch's gradient (x - y) / max(x (1 - x), 1e-12): finite at
    0 and 1; near 0 log1p keeps 1 - x's digits."""
    x = np.array([0, 0, 1, 1, 1e-7, 1e-30, 1 - 6e-8, 0.5, 1e-3], np.float32)
    y = np.array([0, 1, 0, 1, 0, 1, 0, 0.3, 0.0], np.float32)
    check(lambda x: F(x).binary_cross_entropy(x, _like(x, y), reduction="none"), x,
          rtol=1e-5, grad_rtol=1e-5)


def test_binary_cross_entropy_errors():
    x = cg.tensor([0.2, 1.5])
    with pytest.raises(RuntimeError, match="between 0 and 1"):
        CF.binary_cross_entropy(x, cg.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"target size \[2\].*input size \[2, 1\]"):
        CF.binary_cross_entropy(cg.rand(2, 1), cg.rand(2))
    with pytest.raises(RuntimeError, match="int64 target"):
        CF.binary_cross_entropy(cg.rand(2), cg.tensor([0, 1]))
    with pytest.raises(ValueError, match="foo is not a valid value for reduction"):
        CF.binary_cross_entropy(cg.rand(2), cg.rand(2), reduction="foo")


def test_sigmoid_then_bce_matches_bce_with_logits_gradient():
    z = cg.tensor(np.linspace(-5, 5, 11).astype(np.float32), requires_grad=True)
    y = cg.tensor((np.arange(11) % 2).astype(np.float32))
    CF.binary_cross_entropy(z.sigmoid(), y).backward()
    g1 = z.grad.numpy()
    z.grad = None
    CF.binary_cross_entropy_with_logits(z, y).backward()
    np.testing.assert_allclose(g1, z.grad.numpy(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(reduction, log_target):
    logp = np.log(make((3, 5), low=0.05, high=1))
    target = make((3, 5), low=0.0, high=1, seed=9)
    target[0, :2] = 0       # 0 log 0 = 0
    if log_target:
        target = np.log(target + 0.1).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda x: F(x).kl_div(x, _like(x, target), reduction=reduction,
                                    log_target=log_target), logp.astype(np.float32))


def test_kl_div_target_gradient():
    check(lambda x, t: F(x).kl_div(x, t, reduction="sum"), (3, 4),
          make((3, 4), low=0.1, high=1, seed=3))


@pytest.mark.parametrize("dtypes", [("int64", "float32"), ("float32", "int32"),
                                    ("float32", "bool")])
def test_kl_div_refuses_integral_inputs(dtypes):
    input, target = (cg.ones(3, dtype=getattr(cg, d)) for d in dtypes)
    with pytest.raises(RuntimeError, match="kl_div: Integral inputs not supported"):
        CF.kl_div(input, target, reduction="sum")


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_cosine_and_soft_margin(reduction):
    r = reduction
    sign = np.where(make((6,), seed=4) > 0, 1.0, -1.0).astype(np.float32)
    check(lambda a, b, y: F(a).margin_ranking_loss(a, b, y, margin=0.3, reduction=r), (6,),
          make((6,), seed=8), sign)
    check(lambda a, b, y: F(a).cosine_embedding_loss(a, b, y, margin=0.2, reduction=r),
          (6, 4), make((6, 4), seed=8), sign)
    check(lambda a, b, y: F(a).cosine_embedding_loss(a, b, y, reduction=r), (4,),
          make((4,), seed=8), np.array(-1.0, np.float32))
    target = np.where(make((3, 4), seed=6) > 0, 1.0, -1.0).astype(np.float32)
    check(lambda x: F(x).soft_margin_loss(x, _like(x, target), reduction=r), (3, 4))


def test_cosine_similarity_and_pairwise_distance():
    check(lambda a, b: F(a).cosine_similarity(a, b), (3, 4), (3, 4))
    check(lambda a, b: F(a).cosine_similarity(a, b, dim=0, eps=1e-3), (3, 4), (1, 4))
    zeros = np.zeros((2, 3), np.float32)
    zeros[1] = [1, 2, 3]
    check(lambda a, b: F(a).cosine_similarity(a, b), zeros, make((2, 3)))   # a zero vector
    for p in [2.0, 1.0, 3.0, float("inf"), 0.5]:
        check(lambda a, b: F(a).pairwise_distance(a, b, p=p), (3, 4), (3, 4), atol=1e-4)
    check(lambda a, b: F(a).pairwise_distance(a, b, keepdim=True), (3, 4), (4,))
    check(lambda a, b: F(a).pairwise_distance(a, b, eps=0.0), zeros, zeros.copy())


def test_normalize():
    check(lambda x: F(x).normalize(x), (3, 4))
    check(lambda x: F(x).normalize(x, p=1, dim=0), (3, 4))
    check(lambda x: F(x).normalize(x, dim=-1), np.zeros((2, 3), np.float32))


def test_grad_fn_names():
    x = cg.rand(3, 4, requires_grad=True)
    y = cg.rand(3, 4)
    names = {
        CF.l1_loss(x, y, reduction="none"): "AbsBackward0",
        CF.l1_loss(x, y): "MeanBackward0",
        CF.smooth_l1_loss(x, y): "SmoothL1LossBackward0",
        CF.huber_loss(x, y, reduction="sum"): "HuberLossBackward0",
        CF.binary_cross_entropy(x, y): "BinaryCrossEntropyBackward0",
        CF.kl_div(x, y, reduction="batchmean"): "DivBackward0",
        CF.kl_div(x, y, reduction="none"): "SubBackward0",
        CF.margin_ranking_loss(x, y, y, reduction="none"): "ClampMinBackward0",
        CF.soft_margin_loss(x, y): "SoftMarginLossBackward0",
        CF.cosine_similarity(x, y): "SumBackward1",
        CF.pairwise_distance(x, y): "NormBackward1",
        CF.normalize(x): "DivBackward0",
    }
    for out, name in names.items():
        assert out.grad_fn.name() == name


def test_errors():
    x = cg.rand(3, 4)
    with pytest.raises(RuntimeError, match="negative values for beta"):
        CF.smooth_l1_loss(x, x, beta=-1.0)
    with pytest.raises(RuntimeError, match="non-positive values for delta"):
        CF.huber_loss(x, x, delta=0.0)
    with pytest.raises(ValueError, match="Weights and input must have the same size"):
        CF.l1_loss(x, x, weight=cg.ones(4))
    with pytest.raises(RuntimeError, match="same dimension.*input2: \\(4,\\)"):
        CF.margin_ranking_loss(x, x[0], cg.ones(4))
    with pytest.raises(RuntimeError, match="1D target tensor expects 2D input"):
        CF.cosine_embedding_loss(x[0], x[0], cg.ones(4))
    with pytest.raises(RuntimeError, match="floating point.*int64"):
        CF.cosine_similarity(cg.ones(2, 3, dtype=cg.int64), cg.ones(2, 3, dtype=cg.int64))
    with pytest.raises(ValueError, match="batchmean is not a valid value"):
        cnn.L1Loss(reduction="batchmean")
    with pytest.raises(RuntimeError, match=r"shapes \(3, 4\) and \(5,\) cannot be broadcast"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            CF.l1_loss(x, cg.ones(5))


def test_modules():
    x, y = make((3, 4), low=0.05, high=0.95), make((3, 4), low=0, high=1, seed=3)
    for build in [lambda m: m.L1Loss(), lambda m: m.L1Loss(reduction="sum"),
                  lambda m: m.SmoothL1Loss(beta=0.5), lambda m: m.HuberLoss(delta=0.5),
                  lambda m: m.BCELoss(), lambda m: m.KLDivLoss(reduction="batchmean"),
                  lambda m: m.KLDivLoss(log_target=True, reduction="sum"),
                  lambda m: m.L1Loss(size_average=False),
                  lambda m: m.PairwiseDistance(), lambda m: m.CosineSimilarity(dim=0)]:
        check(lambda a, b: build(nn(a))(a, b), x, y)
    for build in [lambda m: m.BCELoss(reduce=False), lambda m: m.SoftMarginLoss()]:
        check(lambda a: build(nn(a))(a, _like(a, y)), x)
    sign = np.array([1, -1, 1], np.float32)
    check(lambda a, b, t: nn(a).CosineEmbeddingLoss(0.1)(a, b, t), x, y, sign)
    check(lambda a, b, t: nn(a).MarginRankingLoss(0.1)(a, b, t), x[:, 0], y[:, 0], sign)
    m = cnn.BCELoss(weight=cg.ones(4))
    assert [n for n, _ in m.named_buffers()] == ["weight"]
    assert repr(cnn.HuberLoss()) == "HuberLoss()"


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_more_losses(reduction):
    r = reduction
    sign = np.where(make((3, 4), seed=6) > 0, 1.0, -1.0).astype(np.float32)
    check(lambda x: F(x).hinge_embedding_loss(x, _like(x, sign), margin=0.5, reduction=r),
          (3, 4))
    counts = np.round(make((3, 4), low=0, high=4, seed=2)).astype(np.float32)
    check(lambda x: F(x).poisson_nll_loss(x, _like(x, counts), reduction=r), (3, 4))
    check(lambda x: F(x).poisson_nll_loss(x, _like(x, counts), log_input=False, full=True,
                                          reduction=r), make((3, 4), low=0.1, high=3))
    check(lambda x, v: F(x).gaussian_nll_loss(x, _like(x, counts), v, reduction=r), (3, 4),
          make((3, 4), low=0.1, high=2))
    check(lambda x, v: F(x).gaussian_nll_loss(x, _like(x, counts), v, full=True, reduction=r),
          (3, 4), make((3,), low=0.1, high=2))
    check(lambda x, v: F(x).gaussian_nll_loss(x, _like(x, counts), v, reduction=r, eps=0.5),
          (3, 4), make((3, 1), low=0.1, high=2))
    labels = (make((3, 4), seed=7) > 0).astype(np.float32)
    check(lambda x: F(x).multilabel_soft_margin_loss(x, _like(x, labels), reduction=r), (3, 4))
    w = make((4,), low=0.5, high=2)
    check(lambda x: F(x).multilabel_soft_margin_loss(x, _like(x, labels), weight=_like(x, w),
                                                     reduction=r), (3, 4))
    check(lambda a, p, n: F(a).triplet_margin_loss(a, p, n, reduction=r), (3, 4),
          make((3, 4), seed=11), make((3, 4), seed=12), atol=1e-4)
    check(lambda a, p, n: F(a).triplet_margin_loss(a, p, n, margin=2.0, p=1, swap=True,
                                                   reduction=r), (3, 4),
          make((3, 4), seed=11), make((3, 4), seed=12), atol=1e-4)


def test_more_loss_modules_and_errors():
    x, y = make((3, 4)), np.abs(make((3, 4), seed=3))
    for build in [lambda m: m.PoissonNLLLoss(), lambda m: m.HingeEmbeddingLoss(),
                  lambda m: m.MultiLabelSoftMarginLoss()]:
        check(lambda a: build(nn(a))(a, _like(a, y)), x)
    check(lambda a: nn(a).GaussianNLLLoss(full=True)(a, _like(a, y), _like(a, y + 0.5)), x)
    check(lambda a, p, n: nn(a).TripletMarginLoss(margin=0.5)(a, p, n), x, y, make((3, 4)))
    with pytest.raises(ValueError, match="var has negative entry"):
        CF.gaussian_nll_loss(cg.tensor(x), cg.tensor(y), cg.tensor(-np.ones((3, 4))))
    with pytest.raises(ValueError, match="var is of incorrect size"):
        CF.gaussian_nll_loss(cg.tensor(x), cg.tensor(y), cg.ones(2))
    with pytest.raises(RuntimeError, match="same number of dimensions.*positive 1D"):
        CF.triplet_margin_loss(cg.tensor(x), cg.tensor(y[0]), cg.tensor(y))
    with pytest.raises(ValueError, match="margin to be greater than 0"):
        cnn.TripletMarginLoss(margin=0)
    if torch is not None:
        for build in [lambda m: m.PoissonNLLLoss(), lambda m: m.GaussianNLLLoss(),
                      lambda m: m.TripletMarginLoss(), lambda m: m.HingeEmbeddingLoss(),
                      lambda m: m.MultiLabelSoftMarginLoss()]:
            assert repr(build(cnn)) == repr(build(torch.nn))


def _second_derivative(lib, fn, x_np, y_np):
    """d/dx sum(v * d/dx sum(fn(x, y))) for a fixed v: create_graph through the op."""
    v = np.linspace(-1, 1, x_np.size).reshape(x_np.shape).astype(np.float32)
    if lib is cg:
        x = cg.tensor(x_np, requires_grad=True)
        (g,) = cg.autograd.grad(fn(x, cg.tensor(y_np)).sum(), [x], create_graph=True)
        (h,) = cg.autograd.grad((g * cg.tensor(v)).sum(), [x])
    else:
        x = torch.tensor(x_np, requires_grad=True)
        (g,) = torch.autograd.grad(fn(x, torch.tensor(y_np)).sum(), [x], create_graph=True)
        (h,) = torch.autograd.grad((g * torch.tensor(v)).sum(), [x])
    return g.detach().numpy(), h.numpy()


@pytest.mark.skipif(torch is None, reason="compares with PyTorch's double backward")
@pytest.mark.parametrize("name", ["bce", "silu", "mish", "softplus", "elu", "logsigmoid",
                                  "smooth_l1", "glu", "cosine_similarity"])
def test_double_backward(name):
    fns = {
        "bce": lambda x, y: F(x).binary_cross_entropy(x, y, reduction="sum"),
        "silu": lambda x, y: F(x).silu(x) * y,
        "mish": lambda x, y: F(x).mish(x) * y,
        "softplus": lambda x, y: F(x).softplus(x, beta=2.0) * y,
        "elu": lambda x, y: F(x).elu(x, 0.7) * y,
        "logsigmoid": lambda x, y: F(x).logsigmoid(x) * y,
        "smooth_l1": lambda x, y: F(x).smooth_l1_loss(x, y, beta=2.0),
        "glu": lambda x, y: F(x).glu(x) * y[:, :2],
        "cosine_similarity": lambda x, y: F(x).cosine_similarity(x, y),
    }
    x = make((3, 4), low=0.05, high=0.95) if name == "bce" else make((3, 4), low=-3, high=3)
    y = make((3, 4), low=0, high=1, seed=4)
    ours = _second_derivative(cg, fns[name], x, y)
    ref = _second_derivative(torch, fns[name], x, y)
    for got, want in zip(ours, ref):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin_loss(reduction):
    target = np.array([0, 4, 2], np.int64)
    w = make((5,), low=0.5, high=2)
    check(lambda x: F(x).multi_margin_loss(x, _like(x, target), reduction=reduction), (3, 5))
    check(lambda x: F(x).multi_margin_loss(x, _like(x, target), p=2, margin=0.5,
                                           weight=_like(x, w), reduction=reduction), (3, 5))
    check(lambda x: F(x).multi_margin_loss(x, _like(x, np.array(3)), reduction=reduction), (5,))
    check(lambda x: nn(x).MultiMarginLoss(margin=2.0)(x, _like(x, target)), (3, 5))
    with pytest.raises(IndexError, match="target 7 is out of bounds for 5 classes"):
        CF.multi_margin_loss(cg.randn(3, 5), cg.tensor([0, 7, 1]))
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        CF.multi_margin_loss(cg.randn(3, 5), cg.tensor([0, 1, 1]), p=3)


def test_gumbel_softmax():
    cg.manual_seed(1)
    logits = cg.tensor(np.log(np.array([[0.1, 0.6, 0.3]] * 4000, np.float32)),
                       requires_grad=True)
    soft = CF.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(soft.detach().numpy().sum(-1), 1, rtol=1e-5)
    hard = CF.gumbel_softmax(logits, hard=True)
    values = hard.detach().numpy()
    assert set(np.unique(values)) == {0.0, 1.0} and (values.sum(-1) == 1).all()
    np.testing.assert_allclose(values.mean(0), [0.1, 0.6, 0.3], atol=0.03)   # Gumbel-max
    (hard * cg.tensor(np.arange(3, dtype=np.float32))).sum().backward()
    assert logits.grad is not None and np.abs(logits.grad.numpy()).sum() > 0   # straight through


UNDIFFERENTIABLE = {    # PyTorch refuses, when recorded, these arguments requiring grad
    "soft_margin_loss target": lambda L, x, w: L.nn.functional.soft_margin_loss(x, w),
    "multi_margin_loss weight": lambda L, x, w: L.nn.functional.multi_margin_loss(
        x, L.tensor([0, 2, 1]), weight=w[0]),
    "binary_cross_entropy weight": lambda L, x, w: L.nn.functional.binary_cross_entropy(
        x.sigmoid(), w.detach(), weight=w),
    "binary_cross_entropy_with_logits pos_weight":
        lambda L, x, w: L.nn.functional.binary_cross_entropy_with_logits(x, w.detach(),
                                                                         pos_weight=w[0]),
    "nll_loss weight": lambda L, x, w: L.nn.functional.nll_loss(x, L.tensor([0, 2, 1]), weight=w[0]),
    "cross_entropy weight (2-d)": lambda L, x, w: L.nn.CrossEntropyLoss(weight=w[0])(
        x.reshape(3, 4, 1), L.zeros(3, 1, dtype=L.int64)),
}


@pytest.mark.skipif(torch is None, reason="PyTorch's messages are the reference")
@pytest.mark.parametrize("case", UNDIFFERENTIABLE)
def test_arguments_pytorch_cannot_differentiate_are_refused_when_recorded(case):
    messages = []
    for lib in (cg, torch):
        x = lib.tensor(make((3, 4)), requires_grad=True)
        w = lib.tensor(make((3, 4), seed=1), requires_grad=True).sigmoid()
        with pytest.raises(RuntimeError, match="is not differentiable with respect to argument") \
                as error:
            UNDIFFERENTIABLE[case](lib, x, w)
        with lib.no_grad():          # outside grad mode nothing is refused
            UNDIFFERENTIABLE[case](lib, x, w)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_soft_label_cross_entropy_with_class_weights():
    """Soft labels take the class weights into their sum (differentiable, unlike class
    indices'); the (N, C, d) form reshaped the weight with a Node's ndim, which it lacks."""
    probs = make((3, 4, 2), low=0.1, high=1.0)
    probs /= probs.sum(1, keepdims=True)
    w = np.array([0.5, 1.0, 2.0, 0.25], np.float32)
    check(lambda x, t, ww: F(x).cross_entropy(x, t, weight=ww), (3, 4, 2), probs, w)
    check(lambda x, t, ww: F(x).cross_entropy(x, t, weight=ww, label_smoothing=0.1,
                                              reduction="sum"), (3, 4), probs[..., 0].copy(), w)


@pytest.mark.parametrize("dtypes", [("float16", "float32"), ("bfloat16", "float32"),
                                    ("float32", "float16"), ("float16", "float64"),
                                    ("float32", "float64")])
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_huber_loss_is_of_its_input_s_dtype(dtypes, reduction):
    """PyTorch's huber_loss is empty_like(input): a wider target's common dtype rounded to the
    input's (a float16 input and a float32 target of a dim gave float32; fuzz seed 101600231),
    unlike mse_loss, l1_loss and smooth_l1_loss, which promote."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)) * 3, rng.standard_normal((1, 4)) * 3
    runs = []
    for lib in (torch, cg):
        x, t = (lib.tensor(v.astype(np.float32)).to(getattr(lib, d))
                for v, d in zip((a, b), dtypes))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")         # the target's other size
            loss = lib.nn.functional.huber_loss(x, t, reduction=reduction)
        runs.append((str(loss.dtype).split(".")[-1], loss.double().numpy()))
    (dtype, value), (want_dtype, want) = runs[1], runs[0]
    assert dtype == want_dtype == dtypes[0]
    # (a float32 sum's order is each runtime's: an ulp; 16-bit ones round once, alike)
    summed = dtype == "float32" and reduction != "none"
    np.testing.assert_allclose(value, want, rtol=2 * np.finfo(np.float32).eps if summed else 0)
