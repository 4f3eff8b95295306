"""Normalisation, channel dropout, Unflatten, Bilinear and the dict/list containers, against
PyTorch."""
import warnings

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
import clgrad.nn.functional as CF
from helpers import F, check, make, nn, torch




def _like(x, array):
    if torch is not None and isinstance(x, torch.Tensor):
        return torch.tensor(array)
    return cg.tensor(array)


needs_torch = pytest.mark.skipif(torch is None, reason="compares with PyTorch")


# ---- group_norm and instance_norm ---------------------------------------------------------

def test_group_norm():
    check(lambda x, w, b: F(x).group_norm(x, 2, w, b), (2, 4, 3, 3), (4,), (4,), atol=1e-4)
    check(lambda x: F(x).group_norm(x, 3, eps=1e-3), (2, 6, 5), atol=1e-4)
    check(lambda x: F(x).group_norm(x, 1), (3, 4), atol=1e-4)
    x = cg.randn(2, 4, 3, requires_grad=True)
    assert CF.group_norm(x, 2).grad_fn.name() == "NativeGroupNormBackward0"


def test_group_norm_errors():
    with pytest.raises(RuntimeError, match=r"divisible by num_groups.*\[2, 4, 3\].*num_groups=3"):
        CF.group_norm(cg.randn(2, 4, 3), 3)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        CF.group_norm(cg.randn(4), 2)
    with pytest.raises(ValueError, match=r"num_channels \(4\) must be divisible by num_groups"):
        cnn.GroupNorm(3, 4)


def test_instance_norm():
    check(lambda x: F(x).instance_norm(x), (2, 3, 4, 4), atol=1e-4)
    check(lambda x, w, b: F(x).instance_norm(x, weight=w, bias=b, eps=1e-3), (2, 3, 5), (3,),
          (3,), atol=1e-4)

    def with_stats(x):
        rm, rv = _like(x, np.full(3, 0.5, np.float32)), _like(x, np.full(3, 2.0, np.float32))
        train = F(x).instance_norm(x, rm, rv, momentum=0.3)
        evaluated = F(x).instance_norm(x, rm * 1.0, rv * 1.0, use_input_stats=False)
        return train, evaluated, rm * 1.0, rv * 1.0
    check(with_stats, (4, 3, 2, 3), atol=1e-4)
    with pytest.raises(ValueError, match="more than 1 spatial element"):
        CF.instance_norm(cg.randn(2, 3, 1))
    with pytest.raises(RuntimeError, match="running_mean and running_var to be defined"):
        CF.instance_norm(cg.randn(2, 3, 4), use_input_stats=False)


@needs_torch
@pytest.mark.parametrize("kind,shape", [("InstanceNorm1d", (2, 3, 5)), ("InstanceNorm1d", (3, 5)),
                                        ("InstanceNorm2d", (2, 3, 4, 4)),
                                        ("InstanceNorm2d", (3, 4, 4))])
def test_instance_norm_modules(kind, shape):
    x = make(shape)
    for kw in [{}, dict(affine=True), dict(track_running_stats=True, momentum=0.2)]:
        ours, ref = getattr(cnn, kind)(3, **kw), getattr(torch.nn, kind)(3, **kw)
        assert repr(ours) == repr(ref)
        assert list(ours.state_dict()) == list(ref.state_dict())
        for train in (True, False):
            ours.train(train)
            ref.train(train)
            for _ in range(2):
                got = ours(cg.tensor(x)).detach().numpy()
                want = ref(torch.tensor(x)).detach().numpy()
                np.testing.assert_allclose(got, want, atol=1e-4)
        for name, value in ref.state_dict().items():
            np.testing.assert_allclose(ours.state_dict()[name].numpy(), value.numpy(), atol=1e-5)


def test_instance_norm_module_checks():
    with pytest.raises(ValueError, match=r"expected 3D or 4D input \(got 5D"):
        cnn.InstanceNorm2d(3)(cg.randn(1, 3, 2, 2, 2))
    with pytest.raises(ValueError, match=r"size at dim=1 to match num_features \(4\), but got: 3"):
        cnn.InstanceNorm2d(4, affine=True)(cg.randn(2, 3, 4, 4))
    with pytest.warns(UserWarning, match="does not match num_features"):
        cnn.InstanceNorm2d(4)(cg.randn(2, 3, 4, 4))


@needs_torch
def test_group_norm_module():
    x = make((2, 6, 3))
    ours, ref = cnn.GroupNorm(3, 6), torch.nn.GroupNorm(3, 6)
    assert repr(ours) == repr(ref)
    assert repr(cnn.GroupNorm(2, 4, affine=False)) == repr(torch.nn.GroupNorm(2, 4, affine=False))
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in ref.named_parameters()]
    np.testing.assert_allclose(ours(cg.tensor(x)).detach().numpy(),
                               ref(torch.tensor(x)).detach().numpy(), atol=1e-5)


# ---- dropout --------------------------------------------------------------------------------

@pytest.mark.parametrize("fn,shape", [("dropout1d", (4, 6, 5)), ("dropout1d", (6, 5)),
                                      ("dropout2d", (4, 6, 3, 3)), ("dropout3d", (2, 6, 2, 2, 2)),
                                      ("dropout3d", (6, 2, 2, 2))])
def test_channel_dropout_zeroes_whole_channels(fn, shape):
    x = cg.tensor(make(shape, low=1, high=2), requires_grad=True)
    out = getattr(CF, fn)(x, p=0.5)
    values = out.detach().numpy()
    channel_axes = 2 if len(shape) in (3, 4) and fn != "dropout3d" or len(shape) == 5 else 1
    lead = int(np.prod(shape[:channel_axes]))
    per_channel = values.reshape(lead, -1)
    zero = (per_channel == 0).all(axis=1)
    scaled = np.isclose(per_channel, 2 * x.detach().numpy().reshape(lead, -1)).all(axis=1)
    assert (zero | scaled).all()            # a channel is dropped whole, or kept and scaled
    assert 0 < zero.sum() < lead
    out.sum().backward()
    grads = x.grad.numpy().reshape(lead, -1)
    np.testing.assert_array_equal(grads, np.where(zero[:, None], 0.0, 2.0) * np.ones_like(grads))


def test_dropout_variants_in_eval_and_p_bounds():
    x = cg.randn(2, 3, 4, 4)
    for fn in (CF.dropout1d, CF.dropout2d, CF.dropout3d, CF.alpha_dropout):
        arg = x[0] if fn is CF.dropout1d else x
        if fn is CF.dropout3d:
            arg = x.reshape(2, 3, 4, 2, 2)
        assert fn(arg, 0.5, training=False) is arg
        with pytest.raises(ValueError, match="between 0 and 1"):
            fn(arg, 1.5)
    with pytest.raises(RuntimeError, match="dropout1d: Expected 2D or 3D input"):
        CF.dropout1d(x, 0.5)
    with pytest.warns(UserWarning, match="3D input to dropout2d"):
        CF.dropout2d(x[0], 0.5)
    assert CF.dropout2d(x, 1.0).numpy().max() == 0


def test_alpha_dropout_keeps_mean_and_variance():
    cg.manual_seed(3)
    x = cg.randn(200, 200)
    out = CF.alpha_dropout(x, 0.2, training=True).numpy()
    assert abs(out.mean()) < 0.05 and abs(out.std() - 1) < 0.05
    alpha, p = 1.7580993408473766, 0.2
    a = 1 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = np.isclose(out, -alpha * a * (1 - p))     # -alpha' a + b, for every dropped one
    assert 0.15 < dropped.mean() < 0.25


@needs_torch
def test_dropout_module_reprs():
    for name, shape in [("Dropout1d", (2, 3, 4)), ("Dropout2d", (2, 3, 4, 4)),
                        ("Dropout3d", (2, 3, 2, 2, 2)), ("AlphaDropout", (2, 3))]:
        assert repr(getattr(cnn, name)(0.2)) == repr(getattr(torch.nn, name)(0.2))
        m = getattr(cnn, name)(0.3).eval()
        x = cg.randn(*shape)
        assert m(x) is x


# ---- Unflatten, Bilinear --------------------------------------------------------------------

def test_unflatten():
    check(lambda x: nn(x).Unflatten(1, (2, 3))(x), (2, 6, 4))
    check(lambda x: nn(x).Unflatten(-1, (2, -1))(x), (2, 6, 4))
    assert repr(cnn.Unflatten(1, (2, 3))) == "Unflatten(dim=1, unflattened_size=(2, 3))"
    with pytest.raises(RuntimeError, match="don't multiply up"):
        cnn.Unflatten(1, (4, 2))(cg.randn(2, 6))


def test_bilinear():
    check(lambda a, b, w, bias: F(a).bilinear(a, b, w, bias), (4, 3), (4, 5), (2, 3, 5), (2,),
          atol=1e-4)
    check(lambda a, b, w: F(a).bilinear(a, b, w), (2, 4, 3), (2, 4, 5), (2, 3, 5), atol=1e-4)
    m = cnn.Bilinear(3, 5, 2)
    assert [(n, tuple(p.shape)) for n, p in m.named_parameters()] == [("weight", (2, 3, 5)),
                                                                      ("bias", (2,))]
    assert m(cg.randn(4, 3), cg.randn(4, 5)).shape == (4, 2)
    assert repr(m) == "Bilinear(in1_features=3, in2_features=5, out_features=2, bias=True)"


# ---- containers ---------------------------------------------------------------------------

def test_module_dict():
    d = cnn.ModuleDict({"a": cnn.Linear(2, 3), "b": cnn.ReLU()})
    d["c"] = cnn.Linear(3, 1)
    assert list(d) == ["a", "b", "c"] and len(d) == 3 and "b" in d
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    d.update([("d", cnn.Tanh())])
    assert list(d.keys()) == ["a", "b", "c", "d"]
    assert isinstance(d.pop("b"), cnn.ReLU) and "b" not in d
    del d["d"]
    x = cg.randn(4, 2)
    assert d["c"](d["a"](x)).shape == (4, 1)
    assert list(d.state_dict()) == ["a.weight", "a.bias", "c.weight", "c.bias"]


def test_parameter_list_and_dict():
    class Model(cnn.Module):
        def __init__(self):
            super().__init__()
            self.ws = cnn.ParameterList([cnn.Parameter(cg.ones(2, 2)), cg.zeros(2)])
            self.extra = cnn.ParameterDict({"scale": cnn.Parameter(cg.ones(1))})

        def forward(self, x):
            return (x @ self.ws[0] + self.ws[1]) * self.extra["scale"]

    m = Model()
    assert [n for n, _ in m.named_parameters()] == ["ws.0", "ws.1", "extra.scale"]
    assert isinstance(m.ws[1], cnn.Parameter)
    m.ws.append(cg.ones(3))
    m.extra["shift"] = cg.zeros(1)
    assert len(m.ws) == 3 and list(m.extra) == ["scale", "shift"]
    assert list(m.state_dict()) == ["ws.0", "ws.1", "ws.2", "extra.scale", "extra.shift"]
    m(cg.ones(3, 2)).sum().backward()
    np.testing.assert_allclose(m.ws[0].grad.numpy(), np.full((2, 2), 3.0))
    np.testing.assert_allclose(m.extra["scale"].grad.numpy(), [12.0])
    assert [tuple(p.shape) for p in m.ws] == [(2, 2), (2,), (3,)]
    assert m.extra.get("missing") is None and m.extra.pop("shift").shape == (1,)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert "ParameterList" in repr(m)


# ---- the new layers in a jitted training step -----------------------------------------------

def test_jit_replays_a_step_through_the_new_layers():
    """Conv, GroupNorm, SiLU, bilinear upsampling, reflect padding, adaptive pooling, an
    InstanceNorm with running statistics and the new losses: a jitted step replays to the
    eager step's numbers."""
    from clgrad import optim

    def setup():
        cg.manual_seed(5)
        model = cnn.Sequential(
            cnn.Conv2d(2, 4, 3, padding=1), cnn.GroupNorm(2, 4), cnn.SiLU(),
            cnn.Upsample(scale_factor=2, mode="bilinear"), cnn.ReflectionPad2d(1),
            cnn.InstanceNorm2d(4, affine=True, track_running_stats=True), cnn.Mish(),
            cnn.AdaptiveMaxPool2d((3, 2)), cnn.Flatten(), cnn.Linear(24, 3), cnn.ELU())
        return model, optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def train(model, opt, x, t):
        opt.zero_grad()
        out = model(x)
        loss = CF.huber_loss(out, t, delta=0.5) + CF.smooth_l1_loss(out, t) + \
            CF.binary_cross_entropy(out.sigmoid(), (t > 0).float())
        loss.backward()
        opt.step()
        return loss

    rng = np.random.default_rng(1)
    step, eager, jitted = cg.jit(train), setup(), setup()
    for _ in range(5):
        x = cg.from_numpy(rng.standard_normal((2, 2, 5, 4)).astype(np.float32))
        t = cg.from_numpy(rng.standard_normal((2, 3)).astype(np.float32))
        assert step(*jitted, x, t).item() == pytest.approx(train(*eager, x, t).item(),
                                                           rel=1e-5)
    assert step.replaying
    for (name, e), (_, j) in zip(eager[0].state_dict().items(), jitted[0].state_dict().items()):
        np.testing.assert_allclose(j.numpy(), e.numpy(), rtol=1e-4, atol=1e-6, err_msg=name)


# ---- local response norm, feature alpha dropout, BatchNorm3d ------------------------------------

def test_local_response_norm():
    check(lambda x: F(x).local_response_norm(x, 3), (2, 5, 4), atol=1e-5)
    check(lambda x: F(x).local_response_norm(x, 2, alpha=0.1, beta=0.5, k=2.0), (2, 4, 3, 3))
    check(lambda x: nn(x).LocalResponseNorm(4, alpha=0.5)(x), (1, 6, 2, 2, 2))
    with pytest.raises(ValueError, match="3D or higher"):
        CF.local_response_norm(cg.randn(2, 3), 2)
    if torch is not None:
        assert repr(cnn.LocalResponseNorm(3)) == repr(torch.nn.LocalResponseNorm(3))


def test_feature_alpha_dropout_and_batch_norm3d():
    cg.manual_seed(2)
    x = cg.randn(40, 50, 3, 3)
    out = CF.feature_alpha_dropout(x, 0.3, training=True).numpy()
    alpha, p = 1.7580993408473766, 0.3
    a = 1 / np.sqrt((alpha * alpha * p + 1) * (1 - p))
    dropped = np.isclose(out, -alpha * a * (1 - p)).all(axis=(2, 3))    # whole channels
    assert 0.2 < dropped.mean() < 0.4
    assert CF.feature_alpha_dropout(x, 0.3) is x                          # not training
    assert repr(cnn.FeatureAlphaDropout(0.2)) == "FeatureAlphaDropout(p=0.2, inplace=False)"
    if torch is not None:
        data = make((2, 3, 2, 2, 3))
        ours, ref = cnn.BatchNorm3d(3), torch.nn.BatchNorm3d(3)
        for _ in range(2):
            np.testing.assert_allclose(ours(cg.tensor(data)).detach().numpy(),
                                       ref(torch.tensor(data)).detach().numpy(), atol=1e-5)
        np.testing.assert_allclose(ours.running_var.numpy(), ref.running_var.numpy(),
                                   rtol=1e-5)
    with pytest.raises(ValueError, match="5"):
        cnn.BatchNorm3d(3)(cg.randn(2, 3, 4, 4))


# ---- layers built on FunctionalModule: PyTorch's reprs and attributes --------------------------

FUNCTIONAL_LAYERS = {
    "ReLU": lambda nn: nn.ReLU(True), "GELU": lambda nn: nn.GELU("tanh"),
    "Softmax": lambda nn: nn.Softmax(1), "LogSoftmax": lambda nn: nn.LogSoftmax(dim=0),
    "Flatten": lambda nn: nn.Flatten(0, 2), "Dropout": lambda nn: nn.Dropout(0.3, True),
    "Dropout2d": lambda nn: nn.Dropout2d(0.1), "SiLU": lambda nn: nn.SiLU(inplace=True),
    "Softsign": lambda nn: nn.Softsign(), "LeakyReLU": lambda nn: nn.LeakyReLU(0.2, True),
    "CELU": lambda nn: nn.CELU(2.0), "Hardtanh": lambda nn: nn.Hardtanh(-2.0, 2.0, True),
    "ReLU6": lambda nn: nn.ReLU6(True), "Softplus": lambda nn: nn.Softplus(2.0, 10.0),
    "Threshold": lambda nn: nn.Threshold(0.1, 20.0), "Softshrink": lambda nn: nn.Softshrink(0.3),
    "GLU": lambda nn: nn.GLU(0), "Softmin": lambda nn: nn.Softmin(1),
    "RReLU": lambda nn: nn.RReLU(0.1, 0.3, True),
    "AdaptiveAvgPool2d": lambda nn: nn.AdaptiveAvgPool2d((2, 3)),
    "AdaptiveMaxPool1d": lambda nn: nn.AdaptiveMaxPool1d(2, True),
    "MaxPool1d": lambda nn: nn.MaxPool1d(3, 2, 1, 1, True, True),
    "AvgPool3d": lambda nn: nn.AvgPool3d(2, 1, 0, True, False, 2),
    "AvgPool1d": lambda nn: nn.AvgPool1d(3), "LPPool2d": lambda nn: nn.LPPool2d(2, 3, 2, True),
    "ChannelShuffle": lambda nn: nn.ChannelShuffle(2), "Fold": lambda nn: nn.Fold((4, 5), 2),
    "PixelUnshuffle": lambda nn: nn.PixelUnshuffle(2),
    "LocalResponseNorm": lambda nn: nn.LocalResponseNorm(2, k=2.0),
}


@needs_torch
@pytest.mark.parametrize("name", FUNCTIONAL_LAYERS)
def test_layers_binding_a_functional_have_pytorchs_repr_and_attributes(name):
    ours, ref = FUNCTIONAL_LAYERS[name](cnn), FUNCTIONAL_LAYERS[name](torch.nn)
    assert repr(ours) == repr(ref)
    for attribute, value in vars(ref).items():
        if not attribute.startswith("_") and attribute != "training":
            assert getattr(ours, attribute) == value, attribute
    assert list(ours.state_dict()) == list(ref.state_dict())
