"""nn.Module bookkeeping, layer shapes/initialisation/names, state_dict round trips."""
import math
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad as cg
from clgrad import nn

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from lenet import Net  # noqa: E402


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 2, 3, padding=1)
        self.bn = nn.BatchNorm2d(2)
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * 4 * 4, 3))
        self.register_buffer("scale", cg.ones(1))
        self.register_buffer("scratch", cg.zeros(1), persistent=False)
        self.note = "plain attribute"

    def forward(self, x):
        return self.head(self.bn(self.conv(x)).relu() * self.scale)


def test_lenet_names_shapes_and_repr():
    net = Net()
    shapes = {name: tuple(p.shape) for name, p in net.named_parameters()}
    assert shapes == {"conv1.weight": (6, 1, 3, 3), "conv1.bias": (6,),
                      "conv2.weight": (16, 6, 3, 3), "conv2.bias": (16,),
                      "fc1.weight": (120, 576), "fc1.bias": (120,), "fc2.weight": (84, 120),
                      "fc2.bias": (84,), "fc3.weight": (10, 84), "fc3.bias": (10,)}
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert repr(net).splitlines()[1] == "  (conv1): Conv2d(1, 6, kernel_size=(3, 3), stride=(1, 1))"
    assert "(fc1): Linear(in_features=576, out_features=120, bias=True)" in repr(net)
    out = net(cg.randn(1, 1, 32, 32))
    assert out.shape == (1, 10) and out.grad_fn.name() == "AddmmBackward0"
    out.backward(cg.randn(1, 10))
    assert all(p.grad is not None and p.grad.shape == p.shape for p in net.parameters())


def test_registration_traversal_and_modes():
    m = Block()
    assert [n for n, _ in m.named_parameters()] == [
        "conv.weight", "conv.bias", "bn.weight", "bn.bias", "head.1.weight", "head.1.bias"]
    assert [n for n, _ in m.named_buffers()] == [
        "scale", "scratch", "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]
    assert [n for n, _ in m.named_children()] == ["conv", "bn", "head"]
    assert len(list(m.modules())) == 6 and m.note == "plain attribute"
    assert m.training and all(x.training for x in m.modules())
    m.eval()
    assert not any(x.training for x in m.modules())
    m.train()
    with pytest.raises(TypeError, match="parameter"):
        m.conv.weight = cg.ones(2, 1, 3, 3)
    m.conv.weight = nn.Parameter(cg.ones(2, 1, 3, 3))
    assert m.conv.weight.detach().numpy().sum() == 18
    assert m(cg.randn(2, 1, 4, 4)).shape == (2, 3)
    del m.scale
    assert "scale" not in dict(m.named_buffers())


def test_zero_grad_and_sequential_modulelist():
    seq = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    assert isinstance(seq[0], nn.Linear) and len(seq) == 3 and len(seq[1:]) == 2
    seq(cg.randn(5, 3)).sum().backward()
    assert seq[0].weight.grad is not None
    seq.zero_grad()
    assert all(p.grad is None for p in seq.parameters())
    ml = nn.ModuleList([nn.Linear(2, 2) for _ in range(3)])
    ml.append(nn.Tanh())
    assert len(ml) == 4 and len(list(ml.parameters())) == 6
    assert [n for n, _ in ml.named_parameters()][:2] == ["0.weight", "0.bias"]


def test_default_init_bounds_like_pytorch():
    cg.manual_seed(0)
    lin = nn.Linear(100, 50)
    bound = 1 / math.sqrt(100)
    w, b = lin.weight.detach().numpy(), lin.bias.detach().numpy()
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.9 * bound
    assert np.abs(b).max() <= bound
    conv = nn.Conv2d(4, 8, 3, groups=2)
    assert conv.weight.shape == (8, 2, 3, 3)
    assert np.abs(conv.weight.detach().numpy()).max() <= 1 / math.sqrt(2 * 9)
    bn = nn.BatchNorm1d(5)
    assert bn.weight.tolist() == [1] * 5 and bn.running_var.tolist() == [1] * 5
    emb = nn.Embedding(10, 4, padding_idx=2)
    assert not emb.weight.detach().numpy()[2].any()
    w = cg.zeros(30, 20)
    nn.init.xavier_uniform_(w)
    assert np.abs(w.numpy()).max() <= math.sqrt(6 / 50)
    nn.init.constant_(w, 0.5)
    assert (w.numpy() == 0.5).all()


def test_layer_reprs():
    assert repr(nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)) == \
        "Conv2d(3, 8, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)"
    assert repr(nn.MaxPool2d(2)) == \
        "MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    assert repr(nn.BatchNorm2d(16)) == \
        "BatchNorm2d(16, eps=1e-05, momentum=0.1, affine=True, bias=True, track_running_stats=True)"
    assert repr(nn.Dropout(0.2)) == "Dropout(p=0.2, inplace=False)"
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.LayerNorm(10)) == "LayerNorm((10,), eps=1e-05, elementwise_affine=True, bias=True)"


def test_batchnorm_module_running_stats_and_eval():
    bn = nn.BatchNorm1d(3, momentum=0.5)
    x = np.random.default_rng(0).standard_normal((8, 3)).astype(np.float32)
    for _ in range(2):
        bn(cg.tensor(x))
    assert int(bn.num_batches_tracked.item()) == 2
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.75 * x.mean(0), atol=1e-6)
    bn.eval()
    expect = (x - bn.running_mean.numpy()) / np.sqrt(bn.running_var.numpy() + 1e-5)
    np.testing.assert_allclose(bn(cg.tensor(x)).detach().numpy(), expect, atol=1e-5)
    assert int(bn.num_batches_tracked.item()) == 2


def test_state_dict_round_trip_and_errors():
    a, b = Block(), Block()
    a(cg.randn(2, 1, 4, 4))     # moves the running stats
    state = a.state_dict()
    assert "scratch" not in state and "bn.num_batches_tracked" in state
    keep = b.conv.weight
    result = b.load_state_dict(state)
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert b.conv.weight is keep        # loaded in place
    for key, value in a.state_dict().items():
        np.testing.assert_array_equal(b.state_dict()[key].numpy(), value.numpy())
    bad = dict(state)
    bad["extra"] = cg.ones(1)
    del bad["conv.bias"]
    with pytest.raises(RuntimeError, match='(?s)Missing key.*"conv.bias".*Unexpected key.*"extra"'):
        b.load_state_dict(bad)
    assert b.load_state_dict(bad, strict=False).missing_keys == ["conv.bias"]
    wrong = dict(state, **{"conv.weight": cg.ones(3, 1, 3, 3)})
    with pytest.raises(RuntimeError, match="size mismatch for conv.weight"):
        b.load_state_dict(wrong)


def test_to_keeps_parameter_identity():
    lin = nn.Linear(2, 2)
    params = list(lin.parameters())
    assert lin.to("cpu") is lin and list(lin.parameters()) == params


def test_assignment_to_a_registered_name_keeps_its_kind_and_none_clears_it():
    layer = nn.Linear(2, 3)
    with pytest.raises(TypeError, match=r"as parameter 'weight' \(nn.Parameter or None"):
        layer.weight = cg.zeros(3, 2)
    layer.bias = None
    assert layer.bias is None and list(layer.state_dict()) == ["weight"]
    net = nn.Sequential(nn.ReLU())
    net.extra = nn.Tanh()
    with pytest.raises(TypeError, match=r"as child module 'extra' \(nn.Module or None"):
        net.extra = 3
    net.extra = None
    assert list(net._modules) == ["0", "extra"] and net.extra is None
    block = Block()
    with pytest.raises(TypeError, match=r"as buffer 'scale' \(a Tensor or None"):
        block.scale = 1.0

    class Early(nn.Module):
        def __init__(self):
            self.weight = nn.Parameter(cg.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign Parameter 'weight' before"):
        Early()


def test_deepcopy_copies_parameters_and_their_gradients():
    import copy
    model = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    model(cg.ones(1, 3)).sum().backward()
    twin = copy.deepcopy(model)
    w, w2 = model[0].weight, twin[0].weight
    assert type(w2) is nn.Parameter and w2 is not w and w2.requires_grad
    np.testing.assert_array_equal(w2.detach().numpy(), w.detach().numpy())
    np.testing.assert_array_equal(w2.grad.numpy(), w.grad.numpy())
    with cg.no_grad():
        w.mul_(2)                   # the copy keeps its own value
    np.testing.assert_array_equal(w2.detach().numpy() * 2, w.detach().numpy())
    with pytest.raises(RuntimeError, match="Only Tensors created explicitly by the user"):
        copy.deepcopy(w * 2)


def test_modulelist_prints_a_run_of_equal_entries_once():
    layers = nn.ModuleList([nn.ReLU(), nn.ReLU(), nn.Tanh(), nn.ReLU()])
    assert repr(layers) == ("ModuleList(\n  (0-1): 2 x ReLU()\n  (2): Tanh()\n  (3): ReLU()\n)")
    assert repr(nn.ModuleList()) == "ModuleList()"


def test_forward_hooks_as_torchs():
    """Pre-hooks replace arguments (with_kwargs: arguments and keywords), hooks replace the
    output, prepend runs first, removed hooks stop, always_call hooks run when forward raised."""
    torch = pytest.importorskip("torch")
    seen = {}
    for lib in (cg, torch):
        calls = []
        m = lib.nn.Identity()
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        m.register_forward_pre_hook(lambda mod, args: calls.append("first"), prepend=True)
        m.register_forward_pre_hook(lambda mod, args, kw: (args, {**kw}), with_kwargs=True)
        handle = m.register_forward_hook(lambda mod, args, out: out + 1)
        m.register_forward_hook(lambda mod, args, kw, out: calls.append(sorted(kw)),
                                with_kwargs=True)
        first = m(lib.ones(2)).tolist()
        handle.remove()
        second = m(lib.ones(2)).tolist()
        failing = lib.nn.Linear(2, 2)
        failing.register_forward_hook(lambda mod, args, out: calls.append(out), always_call=True)
        with pytest.raises(RuntimeError):
            failing(lib.ones(3))
        seen[lib.__name__] = (first, second, calls)
    assert seen["clgrad"] == seen["torch"] == ([3.0, 3.0], [2.0, 2.0],
                                               ["first", [], "first", [], None])
