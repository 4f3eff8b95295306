"""A GRU's or an LSTM's loop over time as one autograd Function with a hand-written backward,
on a CPU device: forward is one kernel (GRU_STATES, LSTM_STATES), backward one kernel
(GRU_GRADIENTS, LSTM_GRADIENTS) beside products over every step at once
(compiler/recurrences.py: a work-item per batch row, or per 2 or 4, carries their state
through the steps).
Recorded op by op a GRU's loop made autograd nodes and some seventy IR nodes a step, whose
recording was most of a small GRU's pass; an LSTM's took 9x PyTorch's time.

A GRU's backward first computes, for every step at once, what each step's output gradient is
multiplied by (the gates' derivatives, from the projections forward stored), then walks the
steps in one kernel; an LSTM's kernel has the gates' activations forward stored and computes
their gradients itself. weight_hh's and bias_hh's gradients are then one matmul and one sum
over every step at once, as cuDNN computes them.

Under create_graph backward differentiates the recorded loop instead (rnn_steps.py), so the
gradients it returns can be differentiated again. A GPU takes the recorded loop too (its
threads would otherwise run the batch rows' loops alone, one each), and so do dtypes other
than float32 and float64, an LSTM with projections and a packed sequence.
"""
from __future__ import annotations

from ..compiler import ir
from ..compiler.dtype import float32, float64
from ..compiler.recurrences import gru_gradients, gru_states, lstm_gradients, lstm_states
from ..frontend.backward import grad
from ..frontend.function import Function
from ..frontend.grad_mode import is_grad_enabled
from ..frontend.joining import cat
from ..frontend.tensor import Tensor, realize
from . import functional as F
from .rnn_steps import gru_step, lstm_step, recorded_loop


def fuses(gates) -> bool:
    """Whether a layer over gates runs as one of these Functions (else as the recorded loop)."""
    return gates.device.kind == "cpu" and gates.dtype in (float32, float64)


class GruSequence(Function):
    """gates (L, N, 3H): every step's input projection; h (N, H) the initial state; reverse
    steps from the last to the first. Returns the (L, N, H) outputs and the final state."""

    @staticmethod
    def forward(ctx, gates, h, w_hh, b_hh, reverse: bool):
        length, hidden = gates.shape[0], h.shape[-1]
        w_hh_t, bias = _weights(w_hh, b_hh)
        states = Tensor(gru_states(gates.node, h.node, w_hh_t, bias, reverse), gates.device)
        ctx.save_for_backward(gates, h, w_hh, b_hh, states)
        ctx.reverse = reverse
        outputs = Tensor(_slabs(states, 0 if reverse else 1, length, 0, hidden), gates.device)
        return outputs, _rows(states, 0 if reverse else length, 1, 0, hidden)

    @staticmethod
    def backward(ctx, d_out, d_h):
        gates, h0, w_hh, b_hh, states = ctx.saved_tensors
        if is_grad_enabled():
            return _recorded_gradients(ctx, gru_step, (gates, h0, w_hh, b_hh), (d_out, d_h))
        length, (batch, hidden), reverse = gates.shape[0], h0.shape, ctx.reverse
        projections = _rows(states, 0 if reverse else 1, length, hidden, 4 * hidden)
        previous = _rows(states, 1 if reverse else 0, length, 0, hidden)
        to_hidden, z, to_n = _factors(gates.reshape(-1, 3 * hidden), projections, previous,
                                      hidden)
        walked = Tensor(gru_gradients(to_hidden.node.reshape((length, batch, 3 * hidden)),
                                      z.node.reshape((length, batch, hidden)), d_out.node,
                                      d_h.node, w_hh.node, reverse), gates.device)
        d_hidden = _rows(walked, 0, length, 0, 3 * hidden)
        d_states = _rows(walked, 0, length, 3 * hidden, 4 * hidden)
        d_h0 = _rows(walked, length, 1, 0, hidden)
        d_gates = cat([_columns(d_hidden, 0, 2 * hidden), d_states * to_n], -1)
        d_w_hh = d_hidden.t() @ previous if ctx.needs_input_grad[2] else None
        d_b_hh = d_hidden.sum(0) if b_hh is not None and ctx.needs_input_grad[3] else None
        grads = (d_gates.view(gates.shape), d_h0, d_w_hh, d_b_hh)
        # computed now, in one schedule: the gradients then reach the rest of the pass as
        # buffers, whose every later walk (backward's templates, realize) stops there rather
        # than going through this loop's graph again
        realize(*(g for g in grads if g is not None))
        return (*grads, None)


class LstmSequence(Function):
    """gates (L, N, 4H): every step's input projection; h and c (N, H) the initial state;
    reverse steps from the last to the first. Returns the (L, N, H) outputs and the final h
    and c."""

    @staticmethod
    def forward(ctx, gates, h, c, w_hh, b_hh, reverse: bool):
        length, hidden = gates.shape[0], h.shape[-1]
        w_hh_t, bias = _weights(w_hh, b_hh)
        states = Tensor(lstm_states(gates.node, h.node, c.node, w_hh_t, bias, reverse),
                        gates.device)
        ctx.save_for_backward(gates, h, c, w_hh, b_hh, states)
        ctx.reverse = reverse
        last = 0 if reverse else length
        return (Tensor(_slabs(states, 0 if reverse else 1, length, 0, hidden), gates.device),
                _rows(states, last, 1, 0, hidden), _rows(states, last, 1, hidden, 2 * hidden))

    @staticmethod
    def backward(ctx, d_out, d_h, d_c):
        gates, h0, c0, w_hh, b_hh, states = ctx.saved_tensors
        if is_grad_enabled():
            return _recorded_gradients(ctx, lstm_step, (gates, h0, c0, w_hh, b_hh),
                                       (d_out, d_h, d_c))
        length, hidden = gates.shape[0], h0.shape[-1]
        walked = Tensor(lstm_gradients(states.node, d_out.node, d_h.node, d_c.node, w_hh.node,
                                       ctx.reverse), gates.device)
        d_gates = _rows(walked, 0, length, 0, 4 * hidden)
        d_h0, d_c0 = _rows(walked, length, 1, 0, hidden), _rows(walked, length, 1, hidden,
                                                                2 * hidden)
        previous = _rows(states, 1 if ctx.reverse else 0, length, 0, hidden)
        d_w_hh = d_gates.t() @ previous if ctx.needs_input_grad[3] else None
        d_b_hh = d_gates.sum(0) if b_hh is not None and ctx.needs_input_grad[4] else None
        grads = (d_gates.view(gates.shape), d_h0, d_c0, d_w_hh, d_b_hh)
        realize(*(g for g in grads if g is not None))     # (as GruSequence's)
        return (*grads, None)


def _weights(w_hh, b_hh) -> tuple[ir.Node, ir.Node]:
    """weight_hh transposed, into a buffer of its own (a step's product reads its rows as
    vectors of the outputs), and bias_hh (zeros where the layer has none)."""
    bias = ir.const(0, w_hh.dtype, (w_hh.shape[0],)) if b_hh is None else b_hh.node
    return ir.contiguous(ir.permute(w_hh.node, (1, 0))), bias


def _slabs(t: Tensor, first: int, count: int, start: int, stop: int) -> ir.Node:
    """Slabs first..first+count-1 of an (L+1, N, columns) recurrence node, columns
    start:stop."""
    _, batch, _ = t.shape
    return t.node.shrink(((first, first + count), (0, batch), (start, stop)))


def _rows(t: Tensor, first: int, count: int, start: int, stop: int) -> Tensor:
    """_slabs as a tensor of (count * N) rows: a step's and batch row's values each."""
    return Tensor(_slabs(t, first, count, start, stop).reshape((count * t.shape[1], stop - start)),
                  t.device)


def _columns(x, start: int, stop: int):
    """x[..., start:stop], as a crop (padding by negative widths): recorded for less than an
    index."""
    return F.pad(x, (-start, stop - x.shape[-1]))


def _gates(x, x_n, hh, hidden: int):
    """r, z, n and the state's projection for n, from the input's projection x (x_n: its n
    part) and the state's hh (N, 3H); r and z from one sigmoid over all three sums (n's is
    not used)."""
    gate = (x + hh).sigmoid()
    r, z = _columns(gate, 0, hidden), _columns(gate, hidden, 2 * hidden)
    h_n = _columns(hh, 2 * hidden, 3 * hidden)
    return r, z, (x_n + r * h_n).tanh(), h_n


def _factors(x, hh, previous, hidden: int):
    """What a step's output gradient is multiplied by to give (L*N, 3, H) the pre-activation
    gradients of the state's projections (r, z and n's, which is times r), (L*N, H) the
    gradient carried straight to the previous state (z), and (L*N, H) that of n's input
    projection: for every step at once, from the projections as forward computed them."""
    r, z, n, h_n = _gates(x, _columns(x, 2 * hidden, 3 * hidden), hh, hidden)
    one_minus_z = 1 - z
    to_n = one_minus_z * (1 - n * n)
    to_hidden = [to_n * h_n * (r * (1 - r)), (previous - n) * (z * one_minus_z), to_n * r]
    return cat([f.unsqueeze(1) for f in to_hidden], 1), z, to_n


def _recorded_gradients(ctx, step, inputs: tuple, gradients: tuple) -> tuple:
    """The gradients of the recorded loop of step over the same inputs (gates, the initial
    state's tensors, weight_hh, bias_hh), themselves differentiable."""
    gates, *initial, w_hh, b_hh = inputs
    wanted = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
    state = initial[0] if len(initial) == 1 else tuple(initial)
    out, final = recorded_loop(lambda x, s: step(x, s, w_hh, b_hh), gates, state, ctx.reverse)
    finals = final if isinstance(final, tuple) else (final,)
    grads = iter(grad((out, *finals), wanted, gradients, create_graph=True, allow_unused=True))
    return tuple(next(grads) if need else None
                 for need in ctx.needs_input_grad[:len(inputs)]) + (None,)


def gru_sequence(gates, h, w_hh, b_hh, reverse: bool):
    """A GRU layer over every step's input projection gates (L, N, 3H) from the state h (N, H):
    the (L, N, H) outputs and the final state."""
    return GruSequence.apply(gates, h, w_hh, b_hh, reverse)


def lstm_sequence(gates, state: tuple, w_hh, b_hh, reverse: bool):
    """An LSTM layer (without projections) over every step's input projection gates
    (L, N, 4H) from the state (h, c) (N, H) each: the (L, N, H) outputs and the final (h, c)."""
    out, h, c = LstmSequence.apply(gates, *state, w_hh, b_hh, reverse)
    return out, (h, c)
