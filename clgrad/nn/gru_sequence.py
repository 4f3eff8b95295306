"""A GRU layer's loop over time as one autograd Function with a hand-written backward, on a
CPU device: forward is one GRU_STATES kernel, backward one GRU_GRADIENTS kernel between
products over every step at once (compiler/recurrences.py: a work-item per batch row carries
its state through the steps). Recorded op by op the loop made autograd nodes and some
seventy IR nodes a step, whose recording was most of a small GRU's pass.

Backward first computes, for every step at once, what each step's output gradient is
multiplied by (the gates' derivatives, from the projections forward stored), then walks the
steps in one kernel; weight_hh's and bias_hh's gradients are then one matmul and one sum over
every step at once, as cuDNN computes them.

Under create_graph backward differentiates the recorded loop instead (rnn_steps.py), so the
gradients it returns can be differentiated again. A GPU takes the recorded loop too (its
threads would otherwise run the batch rows' loops alone, one each), and so do dtypes other
than float32 and float64.
"""
from __future__ import annotations

from ..compiler import ir
from ..compiler.dtype import float32, float64
from ..compiler.recurrences import gru_gradients, gru_states
from ..frontend.backward import grad
from ..frontend.function import Function
from ..frontend.grad_mode import is_grad_enabled
from ..frontend.joining import cat
from ..frontend.tensor import Tensor, realize
from . import functional as F
from .rnn_steps import gru_step, recorded_loop


def fuses(gates) -> bool:
    """Whether a GRU layer over gates runs as GruSequence (else as the recorded loop)."""
    return gates.device.kind == "cpu" and gates.dtype in (float32, float64)


class GruSequence(Function):
    """gates (L, N, 3H): every step's input projection; h (N, H) the initial state; reverse
    steps from the last to the first. Returns the (L, N, H) outputs and the final state."""

    @staticmethod
    def forward(ctx, gates, h, w_hh, b_hh, reverse: bool):
        length, (batch, hidden) = gates.shape[0], h.shape
        bias = ir.const(0, gates.dtype, (3 * hidden,)) if b_hh is None else b_hh.node
        w_hh_t = ir.contiguous(ir.permute(w_hh.node, (1, 0)))
        states = Tensor(gru_states(gates.node, h.node, w_hh_t, bias, reverse), gates.device)
        ctx.save_for_backward(gates, h, w_hh, b_hh, states)
        ctx.reverse = reverse
        outputs = _slabs(states, 0 if reverse else 1, length, 0, hidden)
        final = _slabs(states, 0 if reverse else length, 1, 0, hidden)
        return Tensor(outputs, gates.device), Tensor(final.reshape((batch, hidden)), gates.device)

    @staticmethod
    def backward(ctx, d_out, d_h):
        gates, h0, w_hh, b_hh, states = ctx.saved_tensors
        if is_grad_enabled():
            return _recorded_gradients(ctx, (gates, h0, w_hh, b_hh), d_out, d_h)
        length, (batch, hidden), device = gates.shape[0], h0.shape, gates.device
        rows = length * batch

        def steps(first: int, start: int, stop: int) -> Tensor:
            """Columns start:stop of the slabs from first on, one row per step and batch row."""
            node = _slabs(states, first, length, start, stop)
            return Tensor(node.reshape((rows, stop - start)), device)
        reverse = ctx.reverse
        projections = steps(0 if reverse else 1, hidden, 4 * hidden)
        previous = steps(1 if reverse else 0, 0, hidden)
        to_hidden, z, to_n = _factors(gates.reshape(-1, 3 * hidden), projections, previous,
                                      hidden)
        walked = gru_gradients(to_hidden.node.reshape((length, batch, 3 * hidden)),
                               z.node.reshape((length, batch, hidden)), d_out.node, d_h.node,
                               w_hh.node, reverse)
        walked = Tensor(walked, device)
        d_hidden = Tensor(_slabs(walked, 0, length, 0, 3 * hidden).reshape((rows, 3 * hidden)),
                          device)
        d_states = Tensor(_slabs(walked, 0, length, 3 * hidden, 4 * hidden)
                          .reshape((rows, hidden)), device)
        d_h0 = Tensor(_slabs(walked, length, 1, 0, hidden).reshape((batch, hidden)), device)
        d_gates = cat([_columns(d_hidden, 0, 2 * hidden), d_states * to_n], -1)
        d_w_hh = d_hidden.t() @ previous if ctx.needs_input_grad[2] else None
        d_b_hh = d_hidden.sum(0) if b_hh is not None and ctx.needs_input_grad[3] else None
        grads = (d_gates.view(gates.shape), d_h0, d_w_hh, d_b_hh)
        # computed now, in one schedule: the gradients then reach the rest of the pass as
        # buffers, whose every later walk (backward's templates, realize) stops there rather
        # than going through this loop's graph again
        realize(*(g for g in grads if g is not None))
        return (*grads, None)


def _slabs(t: Tensor, first: int, count: int, start: int, stop: int) -> ir.Node:
    """Slabs first..first+count-1 of an (L+1, N, 4H) recurrence node, columns start:stop."""
    _, batch, _ = t.shape
    return t.node.shrink(((first, first + count), (0, batch), (start, stop)))


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


def _recorded_gradients(ctx, inputs, d_out, d_h):
    """The gradients of the recorded loop over the same inputs, themselves differentiable."""
    gates, h0, w_hh, b_hh = inputs
    wanted = [t for t, need in zip(inputs, ctx.needs_input_grad) if need]
    out, h = recorded_loop(lambda x, state: gru_step(x, state, w_hh, b_hh), gates, h0,
                           ctx.reverse)
    grads = iter(grad((out, h), wanted, (d_out, d_h), create_graph=True, allow_unused=True))
    return tuple(next(grads) if need else None for need in ctx.needs_input_grad[:4]) + (None,)


def gru_sequence(gates, h, w_hh, b_hh, reverse: bool):
    """A GRU layer over every step's input projection gates (L, N, 3H) from the state h (N, H):
    the (L, N, H) outputs and the final state."""
    return GruSequence.apply(gates, h, w_hh, b_hh, reverse)
