"""One time step of each recurrent cell, and the loop that records them step by step.

A step reads its input projection gx (x_t @ weight_ih.T + bias_ih, computed for every step at
once by the caller) and the previous state; the loop gives each step's projection and state a
buffer of its own (frontend/step_slices.py), so every step records the same graph over
different buffers and shares its kernels."""
from __future__ import annotations

from ..frontend.elementwise import where
from ..frontend.joining import stack
from ..frontend.step_slices import kept, step_slices
from . import functional as F


def rnn_step(gx, h, w_hh, b_hh, relu: bool):
    pre = gx + F.linear(h, w_hh, b_hh)
    return pre.relu() if relu else pre.tanh()


def lstm_step(gx, state, w_hh, b_hh, w_hr=None):
    h, c = state
    i, f, g, o = (gx + F.linear(h, w_hh, b_hh)).chunk(4, -1)
    c = f.sigmoid() * c + i.sigmoid() * g.tanh()
    h = o.sigmoid() * c.tanh()
    return (h if w_hr is None else F.linear(h, w_hr)), c


def gru_step(gx, h, w_hh, b_hh):
    x_r, x_z, x_n = gx.chunk(3, -1)
    h_r, h_z, h_n = F.linear(h, w_hh, b_hh).chunk(3, -1)
    r, z = (x_r + h_r).sigmoid(), (x_z + h_z).sigmoid()
    n = (x_n + r * h_n).tanh()
    return n + z * (h - n)


def recorded_loop(step, gates, state, reverse: bool, masks=None):
    """step(gx_t, state) over the (L, N, gate features) projections gates, recorded op by op
    for autograd: the stacked outputs and the final state. A state is a tensor or a tuple whose
    first entry is the output. masks[t] (N, 1), when given, says which rows step t changes (the
    others keep their state)."""
    paired = isinstance(state, tuple)
    gates = step_slices(gates)
    steps = range(len(gates) - 1, -1, -1) if reverse else range(len(gates))
    outputs = []
    for t in steps:
        new = step(gates[t], state)
        if masks is not None:
            new = tuple(where(masks[t], a, b) for a, b in zip(new, state)) if paired \
                else where(masks[t], new, state)
        state = tuple(kept(s) for s in new) if paired else kept(new)
        outputs.append(state[0] if paired else state)
    if reverse:
        outputs.reverse()
    return stack(outputs), state
