"""Training-step workloads: W1 the seed two-layer net with a custom ReLU, W2 a LeNet step
with SGD, W6 one Adam step over 10M parameters, W7 a GRU and an LSTM over a sequence, and the
example GPT's step, and W10 a small ResNet's step. W1, W2 and W7's GPT time the examples' own
steps and models, loaded on clgrad and on PyTorch (registry.example)."""
from __future__ import annotations

import numpy as np

import clgrad as cg

from .registry import Case, example, randn, rng, same_weights, try_torch, workload
from .timing import synced

# ---- W1: the seed program (examples/custom_relu.py's step) -------------------------------

def seed_arrays():
    return randn(64, 1000), randn(64, 10), randn(1000, 100), randn(100, 10)


def _seed_numpy(x, y, w1, w2, lr=1e-6):
    h = x @ w1
    h_relu = np.maximum(h, 0)
    grad_y = 2 * (h_relu @ w2 - y)
    grad_w2 = h_relu.T @ grad_y
    grad_h = grad_y @ w2.T
    grad_h[h < 0] = 0
    w1 -= lr * (x.T @ grad_h)
    w2 -= lr * grad_w2


def _eager_and_jitted(id: str, name: str):
    """Registers a training-step workload twice: its clgrad step as written, and under cg.jit.
    build(wrap) makes the case with its step wrapped by wrap. A jitted step replays from its
    fourth call: its warm-up and two captures run untimed, so the row times replays (the
    cold start is measured apart)."""
    def register(build):
        def jitted(quick: bool) -> Case:
            case = build(cg.jit)
            for _ in range(3):
                case.clgrad()
            return case
        workload(id, name)(lambda quick: build(lambda step: step))
        workload(id, "the same step, replayed by cg.jit")(jitted)
        return build
    return register


@_eager_and_jitted("W1", "seed MLP step (custom ReLU) 64x1000x100x10")
def seed_mlp(wrap) -> Case:
    """W1, with its clgrad step wrapped by wrap."""
    x, y, w1, w2 = seed_arrays()
    cx, cy = cg.from_numpy(x), cg.from_numpy(y)
    cw1, cw2 = cg.from_numpy(w1, requires_grad=True), cg.from_numpy(w2, requires_grad=True)
    step = wrap(example("custom_relu").train_step)

    def run_clgrad():
        loss = step(cx, cy, cw1, cw2)
        synced(loss, cw1, cw2)

    torch = try_torch()
    run_torch = None
    if torch:
        tx, ty = torch.from_numpy(x), torch.from_numpy(y)
        tw1 = torch.from_numpy(w1.copy()).requires_grad_()
        tw2 = torch.from_numpy(w2.copy()).requires_grad_()
        torch_step = example("custom_relu", "torch").train_step

        def run_torch():
            with torch.enable_grad():
                torch_step(tx, ty, tw1, tw2)
    nw1, nw2 = w1.copy(), w2.copy()
    return Case(clgrad=run_clgrad, numpy=lambda: _seed_numpy(x, y, nw1, nw2), torch=run_torch,
                flop=2.0 * 3 * (64 * 1000 * 100 + 64 * 100 * 10))


# ---- W2: LeNet (examples/lenet.py's Net) -------------------------------------------------

def classifier_step(net, optimizer, x, target, F):
    optimizer.zero_grad()
    loss = F.cross_entropy(net(x), target)
    loss.backward()
    optimizer.step()
    return loss


@_eager_and_jitted("W2", "LeNet train step, batch 64, 1x32x32, SGD")
def lenet_train(wrap) -> Case:
    """W2, with its clgrad step wrapped by wrap."""
    from clgrad import optim
    x = randn(64, 1, 32, 32)
    target = rng.integers(0, 10, 64)
    net = example("lenet").Net()
    opt = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)

    def reference(torch):
        tnet = example("lenet", "torch").Net()
        return tnet, torch.optim.SGD(tnet.parameters(), lr=0.01, momentum=0.9)
    return _training_case(wrap, classifier_step, net, opt, [x, target], reference)


def _training_case(wrap, step, model, optimizer, arrays, reference) -> Case:
    """A Case timing step(model, optimizer, *inputs, F) on clgrad, wrapped by wrap, and on
    PyTorch with reference(torch) -> (its model, its optimizer), over the same arrays."""
    import clgrad.nn.functional as F
    inputs, wrapped = [cg.from_numpy(a) for a in arrays], wrap(step)

    def run_clgrad():
        loss = wrapped(model, optimizer, *inputs, F)
        synced(loss, *model.parameters())

    torch = try_torch()
    run_torch = None
    if torch:
        import torch.nn.functional as TF
        tmodel, toptimizer = reference(torch)
        tinputs = [torch.from_numpy(a) for a in arrays]

        def run_torch():
            with torch.enable_grad():
                step(tmodel, toptimizer, *tinputs, TF)
    return Case(clgrad=run_clgrad, torch=run_torch)


# ---- W6: Adam ----------------------------------------------------------------------------

_ADAM_TENSORS, _ADAM_SIZE = 10, 1_000_000


def _adam_case(torch_fused: bool) -> Case:
    from clgrad import optim
    values = [randn(_ADAM_SIZE) for _ in range(_ADAM_TENSORS)]
    grads = [randn(_ADAM_SIZE) for _ in range(_ADAM_TENSORS)]
    params = [cg.from_numpy(v, requires_grad=True) for v in values]
    for p, g in zip(params, grads):
        p.grad = cg.from_numpy(g)
    opt = optim.Adam(params, lr=1e-3)

    def run_clgrad():
        opt.step()
        params[0].device.synchronize()

    torch = try_torch()
    run_torch = None
    if torch:
        tparams = [torch.from_numpy(v.copy()).requires_grad_() for v in values]
        for p, g in zip(tparams, grads):
            p.grad = torch.from_numpy(g)
        topt = torch.optim.Adam(tparams, lr=1e-3, fused=torch_fused)
        run_torch = topt.step
    state = [(v.copy(), np.zeros_like(v), np.zeros_like(v)) for v in values]
    step = [0]

    def run_numpy(lr=1e-3, b1=0.9, b2=0.999, eps=1e-8):
        step[0] += 1
        for (p, m, v), g in zip(state, grads):
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * g * g
            p -= lr / (1 - b1 ** step[0]) * m / (np.sqrt(v / (1 - b2 ** step[0])) + eps)
    return Case(clgrad=run_clgrad, numpy=run_numpy, torch=run_torch)


@workload("W6", "Adam step, 10M params in 10 tensors (torch default)")
def adam_default(quick: bool) -> Case:
    return _adam_case(torch_fused=False)


@workload("W6", "Adam step, 10M params in 10 tensors (torch fused=True)")
def adam_fused(quick: bool) -> Case:
    return _adam_case(torch_fused=True)


# ---- W7: a GRU and an LSTM over a sequence ------------------------------------------------

_RNN_STEPS, _RNN_BATCH, _RNN_IN, _RNN_HIDDEN = 32, 16, 32, 64


def _recurrent_case(kind: str) -> Case:
    """A recurrent layer's step loop, forward and backward: on a CPU one kernel each way."""
    x = randn(_RNN_STEPS, _RNN_BATCH, _RNN_IN)
    cg.manual_seed(0)
    layer = getattr(cg.nn, kind)(_RNN_IN, _RNN_HIDDEN)
    cx = cg.from_numpy(x)

    def run_clgrad():
        layer.zero_grad()
        out, _ = layer(cx)
        out.sum().backward()
        synced(*(p.grad for p in layer.parameters()))

    torch = try_torch()
    run_torch = None
    if torch:
        reference = getattr(torch.nn, kind)(_RNN_IN, _RNN_HIDDEN)
        with torch.no_grad():
            for p, q in zip(reference.parameters(), layer.parameters()):
                p.copy_(torch.from_numpy(q.detach().numpy()))
        tx = torch.from_numpy(x)

        def run_torch():
            with torch.enable_grad():
                reference.zero_grad()
                out, _ = reference(tx)
                out.sum().backward()
    return Case(clgrad=run_clgrad, torch=run_torch)


@workload("W7", "GRU 32->64, 32 steps, batch 16: forward and backward")
def gru_sequence(quick: bool) -> Case:
    return _recurrent_case("GRU")


@workload("W7", "LSTM 32->64, 32 steps, batch 16: forward and backward")
def lstm_sequence(quick: bool) -> Case:
    return _recurrent_case("LSTM")


# ---- W7: the example GPT's training step (examples/train_gpt.py) -------------------------

_GPT_BATCH = 16


def gpt_step(model, optimizer, idx, target, F):
    optimizer.zero_grad()
    logits = model(idx)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss


@_eager_and_jitted("W7", "GPT step: 4 layers, 4 heads, 128 wide, 64 tokens x 16, AdamW")
def gpt_train(wrap) -> Case:
    """The example GPT's step, with its clgrad step wrapped by wrap; PyTorch's model gets
    clgrad's initial weights."""
    gpt = example("train_gpt")
    cg.manual_seed(0)
    model = gpt.GPT()
    shape = (_GPT_BATCH, model.block)
    idx, target = rng.integers(0, len(gpt.CHARS), shape), rng.integers(0, len(gpt.CHARS), shape)
    opt = cg.optim.AdamW(model.parameters(), lr=3e-4)

    def reference(torch):
        tmodel = same_weights(example("train_gpt", "torch").GPT(), model, torch)
        return tmodel, torch.optim.AdamW(tmodel.parameters(), lr=3e-4)
    return _training_case(wrap, gpt_step, model, opt, [idx, target], reference)


# ---- W10: a small ResNet (convolutions, BatchNorm, residual adds) on CIFAR-sized images ----

def small_resnet(fw):
    """A convolution and BatchNorm stem, a residual block of 32 channels, a strided step to
    64, a residual block of 64 and a global average pool, built from framework fw's nn."""
    nn, F = fw.nn, fw.nn.functional

    class Block(nn.Module):
        def __init__(self, channels: int):
            super().__init__()
            self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(channels)
            self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(channels)

        def forward(self, x):
            return F.relu(x + self.bn2(self.conv2(F.relu(self.bn1(self.conv1(x))))))

    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(), Block(32),
        nn.Conv2d(32, 64, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
        Block(64), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10))


@_eager_and_jitted("W10", "small ResNet step: BatchNorm, 64 x 3x32x32, SGD momentum")
def resnet_train(wrap) -> Case:
    """W10, with its clgrad step wrapped by wrap; PyTorch's model gets clgrad's weights."""
    cg.manual_seed(0)
    model = small_resnet(cg)
    opt = cg.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x, target = randn(64, 3, 32, 32), rng.integers(0, 10, 64)

    def reference(torch):
        tmodel = same_weights(small_resnet(torch), model, torch)
        return tmodel, torch.optim.SGD(tmodel.parameters(), lr=0.01, momentum=0.9)
    return _training_case(wrap, classifier_step, model, opt, [x, target], reference)
