"""A GRU layer's loop over time as one autograd Function whose backward is written by hand.

Recorded op by op, the loop makes autograd nodes for every step's ops, derives some hundred IR
nodes a step for its backward each pass, and sums weight_hh's gradient from one small matmul a
step. Here forward records the steps' values only (two kernels a step: the state's projection
with r and z in its epilogue, then n and the new state). Backward first computes, for every
step at once, what each step's output gradient is multiplied by (the gates' derivatives), then
walks the steps with a few ops each (three kernels: the state projection's gradient, its matmul
with weight_hh, the gradient carried to the previous state); weight_hh's and bias_hh's
gradients are then one matmul and one sum over every step at once, as cuDNN computes them.

Under create_graph backward differentiates the recorded loop instead (rnn_steps.py), so the
gradients it returns can be differentiated again.
"""
from __future__ import annotations

from ..frontend.backward import grad
from ..frontend.function import Function
from ..frontend.grad_mode import is_grad_enabled
from ..frontend.joining import cat
from ..frontend.step_slices import kept, step_slices
from ..frontend.tensor import realize
from . import functional as F
from .rnn_steps import gru_step, recorded_loop


class GruSequence(Function):
    """gates (L, N, 3H): every step's input projection; h (N, H) the initial state; reverse
    steps from the last to the first. Returns the (L, N, H) outputs and the final state."""

    @staticmethod
    def forward(ctx, gates, h, w_hh, b_hh, reverse: bool):
        length, hidden = gates.shape[0], h.shape[-1]
        x, x_n = step_slices(gates), step_slices(_columns(gates, 2 * hidden, 3 * hidden))
        outputs, projections = [None] * length, [None] * length
        h0 = h
        for t in (range(length - 1, -1, -1) if reverse else range(length)):
            projections[t] = F.linear(h, w_hh, b_hh)
            r, z, n, _ = _gates(x[t], x_n[t], projections[t], hidden)
            h = outputs[t] = kept(n + z * (h - n))
        # (L*N, H): joined along rows, no (1, N, H) view of each step to stack
        joined = cat(outputs, 0)
        ctx.save_for_backward(gates, h0, w_hh, b_hh, joined, *projections)
        ctx.reverse = reverse
        return joined.view(length, *h.shape), h

    @staticmethod
    def backward(ctx, d_out, d_h):
        gates, h0, w_hh, b_hh, joined, *projections = ctx.saved_tensors
        if is_grad_enabled():
            return _recorded_gradients(ctx, (gates, h0, w_hh, b_hh), d_out, d_h)
        length, (batch, hidden) = len(projections), h0.shape
        previous = _previous_states(joined, h0, ctx.reverse)
        to_hidden, z, to_n = _factors(gates.reshape(-1, 3 * hidden), cat(projections, 0),
                                      previous, hidden)
        to_hidden = step_slices(to_hidden.view(length, batch, 3, hidden))
        z = step_slices(z.view(length, batch, hidden))
        d_outs = step_slices(d_out)
        order = range(length) if ctx.reverse else range(length - 1, -1, -1)
        d_states, d_hidden = [None] * length, [None] * length
        d_h = kept(d_h + d_outs[order[0]])
        for k, t in enumerate(order):
            d_states[t] = d_h       # the gradient of step t's output, all of it
            d_hidden[t] = kept((d_h.unsqueeze(1) * to_hidden[t]).view(batch, 3 * hidden))
            d_h = d_h * z[t] + d_hidden[t] @ w_hh
            d_h = kept(d_h if k + 1 == length else d_h + d_outs[order[k + 1]])
        d_hidden = cat(d_hidden, 0)
        d_gates = cat([_columns(d_hidden, 0, 2 * hidden), cat(d_states, 0) * to_n], -1)
        d_w_hh = d_hidden.t() @ previous if ctx.needs_input_grad[2] else None
        d_b_hh = d_hidden.sum(0) if b_hh is not None and ctx.needs_input_grad[3] else None
        grads = (d_gates.view(gates.shape), d_h, d_w_hh, d_b_hh)
        # computed now, in one schedule: the gradients then reach the rest of the pass as
        # buffers, whose every later walk (backward's templates, realize) stops there rather
        # than going through every step of this loop again
        realize(*(g for g in grads if g is not None))
        return (*grads, None)


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


def _previous_states(joined, h0, reverse: bool):
    """The state each step started from, joined as the (L*N, H) outputs are."""
    batch = h0.shape[0]
    return cat([joined[batch:], h0], 0) if reverse else cat([h0, joined[:-batch]], 0)


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
