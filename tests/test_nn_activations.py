"""Activations, functional and Module forms: values and gradients against PyTorch, at ordinary
inputs and at the extremes (|x| up to 1e4, infinities, NaN, the branch points)."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
import clgrad.nn.functional as CF
from helpers import F, check, nn, torch




EDGES = np.array([-np.inf, -1e4, -100, -88.5, -20, -3, -1, -0.06, -1e-6, -0.0, 0.0, 1e-6, 0.04,
                  1, 3, 6, 20, 90, 100, 1e4, np.inf, np.nan], np.float32)

ACTIVATIONS = {
    "silu": lambda x: F(x).silu(x),
    "mish": lambda x: F(x).mish(x),
    "leaky_relu": lambda x: F(x).leaky_relu(x),
    "leaky_relu_slope": lambda x: F(x).leaky_relu(x, 0.2),
    "elu": lambda x: F(x).elu(x),
    "elu_alpha": lambda x: F(x).elu(x, alpha=0.5),
    "selu": lambda x: F(x).selu(x),
    "celu": lambda x: F(x).celu(x),
    "celu_alpha": lambda x: F(x).celu(x, alpha=2.0),
    "hardtanh": lambda x: F(x).hardtanh(x),
    "hardtanh_bounds": lambda x: F(x).hardtanh(x, -3.0, 1.0),
    "relu6": lambda x: F(x).relu6(x),
    "hardswish": lambda x: F(x).hardswish(x),
    "hardsigmoid": lambda x: F(x).hardsigmoid(x),
    "softplus": lambda x: F(x).softplus(x),
    "softplus_beta": lambda x: F(x).softplus(x, beta=2.0, threshold=10.0),
    "softsign": lambda x: F(x).softsign(x),
    "logsigmoid": lambda x: F(x).logsigmoid(x),
    "tanhshrink": lambda x: F(x).tanhshrink(x),
    "threshold": lambda x: F(x).threshold(x, 1.0, -5.0),
    "hardshrink": lambda x: F(x).hardshrink(x),
    "softshrink": lambda x: F(x).softshrink(x, 0.3),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation(name):
    check(ACTIVATIONS[name], (4, 5), low=-6, high=6)


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_activation_at_extremes(name):
    """inf, NaN, 1e4 and the points where the formulas branch: values and gradients as
    PyTorch's (NaN where PyTorch's are NaN)."""
    check(ACTIVATIONS[name], EDGES)


@pytest.mark.parametrize("name", ["silu", "mish", "elu", "selu", "celu", "softplus",
                                  "logsigmoid", "hardswish"])
def test_activation_near_zero_is_accurate(name):
    """Where log1p and expm1 switch from their series (small |x|) to log and exp."""
    x = np.concatenate([np.linspace(-0.2, 0.2, 41), [1e-8, -1e-8, 1e-30]]).astype(np.float32)
    check(ACTIVATIONS[name], x, rtol=2e-6, atol=1e-9, grad_rtol=2e-6, grad_atol=1e-9)


@pytest.mark.parametrize("name", ["silu", "mish", "elu", "softplus", "logsigmoid"])
def test_activation_float64(name):
    x = np.concatenate([np.linspace(-30, 30, 31), np.linspace(-0.01, 0.01, 21)])
    check(ACTIVATIONS[name], x, dtype=np.float64, rtol=1e-12, atol=1e-14,
          grad_rtol=1e-12, grad_atol=1e-14)


def test_prelu():
    check(lambda x, w: F(x).prelu(x, w), (2, 3, 4), np.array([0.1, -0.2, 0.3], np.float32))
    check(lambda x, w: F(x).prelu(x, w), (2, 3), np.array([0.25], np.float32))
    check(lambda x, w: F(x).prelu(x, w), EDGES, np.array([0.25], np.float32))


def test_glu_and_softmin():
    check(lambda x: F(x).glu(x), (3, 4), low=-6, high=6)
    check(lambda x: F(x).glu(x, dim=0), (4, 3))
    # an infinite first half would meet the sigmoid's gradient as an infinite cotangent, whose
    # parts (two paths through the stable sigmoid) add up to NaN where PyTorch gives inf
    finite = EDGES[np.isfinite(EDGES) | np.isnan(EDGES)]
    x = np.stack([np.concatenate([finite, finite[:2]]), EDGES])
    check(lambda x: F(x).glu(x, 0), x)
    check(lambda x: (F(x).softmin(x, 1), F(x).softmin(x, dim=0)), (3, 4))
    out = check(lambda x: F(x).softmin(x, dim=1, dtype=library_float64(x)), (2, 3))
    assert out[0].dtype == cg.float64


def library_float64(x):
    return torch.float64 if torch is not None and isinstance(x, torch.Tensor) else cg.float64


def test_grad_fn_names():
    x = cg.randn(3, 4, requires_grad=True)
    expect = {"silu": "SiluBackward0", "mish": "MishBackward0", "leaky_relu": "LeakyReluBackward0",
              "elu": "EluBackward0", "selu": "EluBackward0", "celu": "CeluBackward0",
              "hardtanh": "HardtanhBackward0", "relu6": "HardtanhBackward0",
              "hardswish": "HardswishBackward0", "hardsigmoid": "HardsigmoidBackward0",
              "softplus": "SoftplusBackward0", "softsign": "DivBackward0",
              "logsigmoid": "LogSigmoidBackward0", "tanhshrink": "SubBackward0",
              "hardshrink": "HardshrinkBackward0", "softshrink": "SoftshrinkBackward0",
              "glu": "GluBackward0", "softmin": "SoftmaxBackward0"}
    for name, grad_fn in expect.items():
        assert getattr(CF, name)(x).grad_fn.name() == grad_fn, name
    assert CF.threshold(x, 0.1, 0.0).grad_fn.name() == "ThresholdBackward0"
    assert CF.prelu(x, cg.tensor([0.25])).grad_fn.name() == "PreluKernelBackward0"


def test_integer_inputs():
    """PyTorch: hardtanh, relu6 and threshold keep integers, softsign and tanhshrink give
    floats, the others are not implemented for integers."""
    x = cg.tensor([-3, 0, 2, 8])
    assert CF.hardtanh(x).dtype == cg.int64 and CF.hardtanh(x).tolist() == [-1, 0, 1, 1]
    assert CF.relu6(x).tolist() == [0, 0, 2, 6]
    assert CF.threshold(x, 1, 7).tolist() == [7, 7, 2, 8]
    assert CF.softsign(x).dtype == cg.float32
    assert CF.tanhshrink(x).dtype == cg.float32
    for name in ["silu", "mish", "leaky_relu", "elu", "selu", "celu", "hardswish",
                 "hardsigmoid", "softplus", "logsigmoid", "hardshrink", "softshrink", "glu"]:
        with pytest.raises(NotImplementedError, match=f"{name}.*int64"):
            getattr(CF, name)(x)


def test_errors_name_the_op_and_shapes():
    x = cg.randn(2, 3, 5)
    with pytest.raises(RuntimeError, match=r"glu.*dimension 2 is size 5"):
        CF.glu(x)
    with pytest.raises(RuntimeError, match="glu does not support scalars"):
        CF.glu(cg.tensor(1.0))
    with pytest.raises(RuntimeError, match=r"prelu.*parameter numbers = 4.*channel size = 3"):
        CF.prelu(x, cg.ones(4))
    with pytest.raises(RuntimeError, match="prelu.*scalar or 1D"):
        CF.prelu(x, cg.ones(3, 1))
    with pytest.raises(RuntimeError, match="prelu: Type promoting not supported"):
        CF.prelu(x, cg.ones(3, dtype=cg.float64))
    with pytest.raises(ValueError, match="min_val cannot be greater than max_val"):
        CF.hardtanh(x, 2.0, 1.0)
    with pytest.raises(RuntimeError, match="alpha cannot be 0"):
        CF.celu(x, 0.0)
    with pytest.raises(RuntimeError, match="softshrink: lambda"):
        CF.softshrink(x, -1.0)
    with pytest.raises(AssertionError, match="must be greater than min_val"):
        cnn.Hardtanh(2.0, 1.0)


def test_inplace():
    base = cg.randn(3, 4, requires_grad=True)
    y = base * 1.0
    out = CF.leaky_relu(y, 0.2, inplace=True)
    assert out is y
    y.sum().backward()
    expect = np.where(base.detach().numpy() > 0, 1.0, 0.2)
    np.testing.assert_allclose(base.grad.numpy(), expect)
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        CF.elu(base, inplace=True)
    z = cg.tensor([-2.0, 0.5, 9.0])
    cnn.ReLU6(inplace=True)(z)
    assert z.tolist() == [0.0, 0.5, 6.0]


MODULES = [
    ("SiLU", (), ()), ("Mish", (), ()), ("LeakyReLU", (0.2,), ()), ("ELU", (), (0.5,)),
    ("SELU", (), ()), ("CELU", (1.5,), ()), ("Hardtanh", (-2.0, 2.0), ()), ("ReLU6", (), ()),
    ("Hardswish", (), ()), ("Hardsigmoid", (), ()), ("Softplus", (2.0, 5.0), ()),
    ("Softsign", (), ()), ("LogSigmoid", (), ()), ("GLU", (), ()), ("Softmin", (1,), ()),
    ("Tanhshrink", (), ()), ("Threshold", (0.1, 20.0), ()), ("Hardshrink", (), ()),
    ("Softshrink", (0.2,), ()),
]


@pytest.mark.parametrize("name,args,_", MODULES, ids=[m[0] for m in MODULES])
def test_modules(name, args, _):
    check(lambda x: getattr(nn(x), name)(*args)(x), (3, 4), low=-5, high=5)
    assert repr(getattr(cnn, name)(*args)) == repr(getattr(torch.nn, name)(*args)) \
        if torch is not None else True


@pytest.mark.skipif(torch is None, reason="compares reprs with PyTorch's")
def test_module_reprs_and_defaults():
    for make in [lambda m: m.SiLU(inplace=True), lambda m: m.LeakyReLU(),
                 lambda m: m.LeakyReLU(0.2, True), lambda m: m.ELU(inplace=True),
                 lambda m: m.CELU(), lambda m: m.Hardtanh(), lambda m: m.Softplus(),
                 lambda m: m.PReLU(), lambda m: m.PReLU(3), lambda m: m.GLU(),
                 lambda m: m.Softmin(), lambda m: m.Threshold(0.1, 20), lambda m: m.Hardshrink(),
                 lambda m: m.Softshrink(), lambda m: m.ReLU6(True), lambda m: m.Hardtanh(0, 1)]:
        assert repr(make(cnn)) == repr(make(torch.nn))


def test_prelu_module_learns_its_weight():
    m = cnn.PReLU(3, init=0.1)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [("weight", (3,))]
    np.testing.assert_allclose(m.weight.detach().numpy(), [0.1] * 3)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    out = m(cg.tensor(x))
    out.sum().backward()
    expect = np.where(x > 0, 0, x).sum(axis=(0, 2))
    np.testing.assert_allclose(m.weight.grad.numpy(), expect, rtol=1e-5)
    if torch is not None:
        tm = torch.nn.PReLU(3, init=0.1)
        np.testing.assert_allclose(out.detach().numpy(), tm(torch.tensor(x)).detach().numpy(),
                                   rtol=1e-6)


def test_rrelu_softmax2d_and_inplace_forms():
    check(lambda x: F(x).rrelu(x), EDGES)                   # eval: the mean slope
    check(lambda x: F(x).rrelu(x, 0.1, 0.3), (3, 4))
    check(lambda x: nn(x).RReLU(0.2, 0.4).eval()(x), (3, 4))
    x = cg.tensor(np.linspace(-2, 2, 41).astype(np.float32), requires_grad=True)
    out = CF.rrelu(x, 0.1, 0.3, training=True)
    got, given = out.detach().numpy(), x.detach().numpy()
    ratio = got[:20] / given[:20]      # the negative half: random slopes
    assert ((ratio >= 0.1) & (ratio < 0.3)).all() and len(set(ratio.round(6))) > 5
    np.testing.assert_array_equal(got[20:], given[20:])
    out.sum().backward()
    np.testing.assert_allclose(x.grad.numpy()[:20], ratio, rtol=1e-5)
    check(lambda x: nn(x).Softmax2d()(x), (2, 3, 2, 2))
    with pytest.raises(ValueError, match="Softmax2d: expected input to be 3D or 4D"):
        cnn.Softmax2d()(cg.randn(3, 4))
    for name, args in [("elu_", ()), ("selu_", ()), ("celu_", (2.0,)), ("leaky_relu_", (0.2,)),
                       ("hardtanh_", (-0.5, 0.5)), ("threshold_", (0.1, -1.0))]:
        data = np.linspace(-2, 2, 9).astype(np.float32)
        t = cg.tensor(data)
        assert getattr(CF, name)(t, *args) is t
        if torch is not None:
            ref = getattr(torch.nn.functional, name)(torch.tensor(data), *args)
            np.testing.assert_allclose(t.numpy(), ref.numpy(), rtol=1e-6, atol=1e-7)
    if torch is not None:
        assert repr(cnn.RReLU(0.1, 0.3, True)) == repr(torch.nn.RReLU(0.1, 0.3, True))
