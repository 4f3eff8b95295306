"""Recurrent layers and cells against PyTorch: outputs, final states, every gradient."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import check, library, make, torch

needs_torch = pytest.mark.skipif(torch is None, reason="copies PyTorch's parameters")


def check_module(kind, args, kwargs, *inputs, call=None, **tolerances):
    """Builds torch.nn.kind and cnn.kind, copies torch's parameters into ours, runs both on the
    same inputs through check, then compares every parameter's gradient."""
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(*args, **kwargs)
    ours = getattr(cnn, kind)(*args, **kwargs)
    assert repr(ours) == repr(ref)
    assert list(ours.state_dict()) == list(ref.state_dict())
    ours.load_state_dict({k: cg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    modules = {"clgrad": ours, "torch": ref}
    call = call or (lambda m, *xs: m(*xs))
    check(lambda *xs: call(modules[library(xs[0]).__name__], *xs), *inputs, **tolerances)
    grad_atol = tolerances.get("atol", 1e-5) * 10
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=grad_atol,
                                       rtol=1e-3, err_msg=name)
    return ours, ref


def _flat(out):
    """(output, h_n) or (output, (h_n, c_n)) as a flat tuple of tensors."""
    output, state = out
    return (output, *state) if isinstance(state, tuple) else (output, state)


@needs_torch
@pytest.mark.parametrize("kind", ["RNNCell", "LSTMCell", "GRUCell"])
@pytest.mark.parametrize("bias", [True, False])
def test_cells(kind, bias):
    flat = lambda out: out if isinstance(out, tuple) else (out,)  # noqa: E731
    check_module(kind, (3, 5), dict(bias=bias), (4, 3), call=lambda m, x: flat(m(x)), atol=1e-5)
    check_module(kind, (3, 5), dict(bias=bias), (3,), call=lambda m, x: flat(m(x)))
    states = ((2, 5), (2, 5)) if kind == "LSTMCell" else ((2, 5),)
    check_module(kind, (3, 5), dict(bias=bias), (2, 3), *states,
                 call=lambda m, x, *h: flat(m(x, tuple(h) if len(h) > 1 else h[0])))


@needs_torch
def test_rnn_cell_relu():
    check_module("RNNCell", (3, 4), dict(nonlinearity="relu"), (5, 3))


CONFIGS = [dict(), dict(num_layers=2), dict(bidirectional=True), dict(batch_first=True),
           dict(num_layers=2, bidirectional=True, bias=False)]


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_sequence_layers(kind, config):
    # three steps: recurrence through two hidden states, and few kernels to build per test
    check_module(kind, (3, 4), config, (3, 2, 3), call=lambda m, x: _flat(m(x)), atol=1e-5)


@needs_torch
@pytest.mark.parametrize("kind", ["RNN", "GRU"])
def test_initial_state_and_unbatched(kind):
    check_module(kind, (3, 4), dict(num_layers=2), (3, 2, 3), (2, 2, 4),
                 call=lambda m, x, h: _flat(m(x, h)))
    check_module(kind, (3, 4), dict(bidirectional=True), (3, 3), (2, 4),
                 call=lambda m, x, h: _flat(m(x, h)))


@needs_torch
def test_lstm_initial_states_projection_and_relu_rnn():
    check_module("LSTM", (3, 4), dict(num_layers=2, bidirectional=True), (3, 2, 3), (4, 2, 4),
                 (4, 2, 4), call=lambda m, x, h, c: _flat(m(x, (h, c))))
    check_module("LSTM", (3, 5), dict(proj_size=2, num_layers=2, batch_first=True), (2, 3, 3),
                 call=lambda m, x: _flat(m(x)))
    check_module("LSTM", (3, 4), dict(), (1, 1, 3), call=lambda m, x: _flat(m(x)))
    check_module("RNN", (3, 4), dict(nonlinearity="relu", num_layers=2), (3, 2, 3),
                 call=lambda m, x: _flat(m(x)))


@needs_torch
@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
@pytest.mark.parametrize("hidden,inputs", [(16, (5, 3, 6)), (32, (4, 2, 3)), (8, (1, 1, 2))],
                         ids=["16 wide", "32 wide", "one step of one row"])
def test_loop_kernels(kind, hidden, inputs):
    # a hidden size that vectors of 8 and 16 tile (each step's products written in vectors,
    # compiler/lower_recurrence.py), both directions, from a given initial state
    states = [(2, inputs[1], hidden)] * (2 if kind == "LSTM" else 1)

    def call(m, x, *state):
        return _flat(m(x, tuple(state) if len(state) > 1 else state[0]))
    check_module(kind, (inputs[2], hidden), dict(bidirectional=True), inputs, *states,
                 call=call, atol=1e-5)


@needs_torch
@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
@pytest.mark.parametrize("batch,side_by_side", [(8, 4), (6, 2), (5, 1)])
def test_loop_kernels_run_rows_side_by_side(cpu_device, codegen_for, kind, batch, side_by_side):
    # a work-item runs 4 or 2 batch rows where they divide the batch and leave each core a
    # work-item, each vector of weight_hh loaded once for all of them (5 rows: one each);
    # a CPU's alone: a GPU runs the loop as recorded (nn/fused_loops.py)
    from clgrad.compiler.target import Target
    codegen_for(Target(width=8, accumulators=8, cores=1))
    states = [(2, batch, 16)] * (2 if kind == "LSTM" else 1)

    def call(m, x, *state):
        return _flat(m(x, tuple(state) if len(state) > 1 else state[0]))
    ours, _ = check_module(kind, (5, 16), dict(bidirectional=True), (3, batch, 5), *states,
                           call=call, atol=1e-5)
    out, _ = ours(cg.randn(3, batch, 5))
    loops = [k for k in cg.compile(out).kernels if k.name.startswith("T_")]
    assert loops and all((f"nb * {side_by_side}" in k.source) == (side_by_side > 1)
                         for k in loops)


@needs_torch
@pytest.mark.parametrize("kind", ["GRU", "LSTM"])
def test_loop_kernels_in_float64(kind):
    torch.manual_seed(0)
    ref = getattr(torch.nn, kind)(3, 16, bidirectional=True).double()
    ours = getattr(cnn, kind)(3, 16, bidirectional=True).double()
    ours.load_state_dict({k: cg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    x = make((4, 2, 3), np.float64)
    out, h = ours(cg.tensor(x))
    ref_out, ref_h = ref(torch.tensor(x))
    assert out.dtype == cg.float64
    np.testing.assert_allclose(out.detach().numpy(), ref_out.detach().numpy(), rtol=1e-12,
                               atol=1e-12)
    for o, finals in ((out, h), (ref_out, ref_h)):      # an LSTM's: (h_n, c_n)
        finals = finals if kind == "LSTM" else (finals,)
        (o.sum() + sum(f.square().sum() * (k + 1) for k, f in enumerate(finals))).backward()
    for (name, p), q in zip(ours.named_parameters(), ref.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-10, atol=1e-12,
                                   err_msg=name)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_empty_sequence_is_refused(kind):
    layer = getattr(cnn, kind)(3, 4)
    with pytest.raises(RuntimeError, match=f"{kind}: Expected sequence length to be larger"):
        layer(cg.zeros(0, 2, 3))
    out, _ = layer(cg.zeros(2, 0, 3))       # no batch rows: an empty output, as PyTorch's
    assert out.shape == (2, 0, 4)


def _input_gradient(m, x, h):
    """d(sum of squared outputs)/dx with create_graph, to be differentiated again."""
    out, h_n = m(x, h)
    loss = (out * out).sum() + (h_n * h_n).sum()
    return library(x).autograd.grad(loss, x, create_graph=True)[0]


@needs_torch
def test_gru_second_derivatives():
    # create_graph: backward differentiates the recorded loop, not the hand-written one
    check_module("GRU", (3, 4), dict(bidirectional=True), (3, 2, 3), (2, 2, 4),
                 call=_input_gradient, atol=1e-5)


def _frozen_state_weights(m, x):
    m.weight_hh_l0.requires_grad_(False)
    m.bias_hh_l0.requires_grad_(False)
    return _flat(m(x))


@needs_torch
def test_gru_with_frozen_state_weights():
    check_module("GRU", (3, 4), dict(), (3, 2, 3), call=_frozen_state_weights, atol=1e-5)


def _packed(m, x, *hx, lengths=(2, 4, 3)):
    """m over x (4, 3, features) packed with lengths: the packed output's data and h_n."""
    rnn = library(x).nn.utils.rnn
    state = tuple(hx) if len(hx) == 2 else hx[0] if hx else None
    out, h_n = m(rnn.pack_padded_sequence(x, list(lengths), enforce_sorted=False), state)
    return _flat((out.data, h_n))


PACKED = [("GRU", dict(num_layers=2, bidirectional=True), ((4, 3, 3),)),
          ("LSTM", dict(bidirectional=True), ((4, 3, 3), (2, 3, 4), (2, 3, 4))),
          ("RNN", dict(batch_first=True), ((4, 3, 3), (1, 3, 4)))]


@needs_torch
@pytest.mark.parametrize("kind,config,inputs", PACKED, ids=str)
def test_packed_sequence(kind, config, inputs):
    # each sequence's final state at its own length (backwards: from its own last step)
    check_module(kind, (3, 4), config, *inputs, call=_packed, atol=1e-5)


def test_packed_sequence_errors():
    packed = cnn.utils.rnn.pack_sequence([cg.ones(2, 3), cg.ones(1, 3)])
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \(1, 3, 4\)"):
        cnn.GRU(3, 4)(packed, cg.zeros(1, 3, 4))
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size"):
        cnn.GRU(2, 4)(packed)


def test_init_range_and_names():
    m = cnn.GRU(3, 16, num_layers=2, bidirectional=True)
    values = np.concatenate([p.detach().numpy().ravel() for p in m.parameters()])
    assert np.all(np.abs(values) <= 0.25) and values.std() > 0.1
    assert [w.shape for w in m.all_weights[1]] == [(48, 3), (48, 16), (48,), (48,)]
    assert [tuple(w.shape) for w in m.all_weights[2]][0] == (48, 32)


def test_dropout_between_layers_only_in_training():
    cg.manual_seed(0)
    m = cnn.LSTM(3, 4, num_layers=2, dropout=0.5)
    x = cg.tensor(make((5, 2, 3)))
    m.eval()
    first, second = m(x)[0].detach().numpy(), m(x)[0].detach().numpy()
    np.testing.assert_array_equal(first, second)
    m.train()
    assert not np.allclose(m(x)[0].detach().numpy(), first)


def test_errors():
    with pytest.raises(RuntimeError, match="input.size\\(-1\\) must be equal to input_size. "
                                           "Expected 3, got 4"):
        cnn.GRU(3, 4)(cg.randn(5, 2, 4))
    with pytest.raises(ValueError, match="Expected input to be 2D or 3D, got 4D"):
        cnn.RNN(3, 4)(cg.randn(5, 2, 3, 1))
    with pytest.raises(RuntimeError, match=r"Expected hidden size \(1, 2, 4\), got \(1, 3, 4\)"):
        cnn.RNN(3, 4)(cg.randn(5, 2, 3), cg.randn(1, 3, 4))
    with pytest.raises(ValueError, match="proj_size has to be smaller than hidden_size"):
        cnn.LSTM(3, 4, proj_size=4)
    with pytest.raises(ValueError, match="Unknown nonlinearity"):
        cnn.RNN(3, 4, nonlinearity="gelu")


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_forward_steps_share_one_kernel_whatever_the_length(kind):
    # each step reads its input projection from a buffer of its own (frontend/step_slices.py):
    # a slice of one buffer would put the step's offset into every step kernel's source
    layer = getattr(cnn, kind)(4, 8)

    def kernels(length: int) -> set:
        out, state = layer(cg.randn(length, 2, 4))
        return {k.name for k in cg.compile(out, *(state if kind == "LSTM" else [state]))}
    assert len(kernels(5)) == len(kernels(9))


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_backward_steps_share_their_kernels_whatever_the_length(kind):
    # the state's gradient chains elementwise from step to step: recomputed in every later
    # step's kernels, each kernel was a different program and the whole pass O(T^2) (a GRU of
    # 32 steps took 650 s to compile its first backward pass)
    layer = getattr(cnn, kind)(4, 8)

    def kernels(length: int) -> set:
        x = cg.randn(length, 2, 4, requires_grad=True)
        out, _ = layer(x)
        grads = cg.autograd.grad(out.sum(), [x, *layer.parameters()])
        return {k.name for k in cg.compile(*grads)}
    assert len(kernels(5)) == len(kernels(9))
