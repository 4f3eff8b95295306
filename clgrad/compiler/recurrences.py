"""A GRU's or an LSTM's loop over time in the IR: the GRU_STATES and GRU_GRADIENTS, LSTM_STATES
and LSTM_GRADIENTS nodes (each one kernel, a work-item per batch row, or per 2 or 4, looping
over the steps: lower_recurrence.py) and what they mean in NumPy (the interpreter's reference).

Recorded op by op, a GRU's loop of L steps was some 70 IR nodes and 6 kernels a step, forward
and backward, and Python's time recording them was most of a small GRU's pass (an LSTM's,
recorded for autograd, took 9x PyTorch's). The batch rows' recurrences are independent of
each other: a work-item per row carries its state from step to step in the output it
writes, reading the weights from the cache.

GRU_STATES of gates (L, N, 3H) (every step's input projection, r z n), h0 (N, H), weight_hh
transposed, (H, 3H) (a step's product then reads rows of it, as vectors of its outputs), and
bias_hh (3H,) is (L+1, N, 4H): step t's state h_t and the state's projection
hh_t = h_{t-1} weight_hh^T + bias_hh it used, in slab t + 1 (slab t when reverse, whose
steps run from the last to the first), beside the initial state in slab 0 (slab L when
reverse), the rest of that slab zero:
    r, z = sigmoid(g_r + hh_r), sigmoid(g_z + hh_z);  n = tanh(g_n + r * hh_n)
    h_t = n + z * (h_{t-1} - n)
GRU_GRADIENTS walks the steps the other way. From every step's to_hidden (L, N, 3H) (what
the gradient of its output is multiplied by for each part of its projection's: three H-wide
factors), z (L, N, H), the outputs' gradients d_out (L, N, H), the final state's d_h (N, H)
and weight_hh, it gives (L+1, N, 4H): per step slab t, the gradient of its projection
d_hidden_t = [d_t, d_t, d_t] * to_hidden_t and the gradient of its output d_t (all of it),
and in slab L the initial state's gradient (then zeros):
    d = d_h + d_out[first step]
    per step: d_t = d;  d = d * z_t + d_hidden_t weight_hh (+ d_out[next step])

LSTM_STATES of gates (L, N, 4H) (i f g o), h0 and c0 (N, H), weight_hh transposed (H, 4H) and
bias_hh (4H,) is (L+1, N, 6H): step t's h_t, c_t and its gates' activations i f g o, in the
slabs as GRU_STATES's (the initial slab: h0, c0, zeros):
    i, f, o = sigmoid(...), g = tanh(...) of gates_t + h_{t-1} weight_hh^T + bias_hh
    c_t = f * c_{t-1} + i * g;  h_t = o * tanh(c_t)
LSTM_GRADIENTS of those states, d_out (L, N, H), the final h's and c's gradients d_h, d_c
(N, H) and weight_hh (4H, H) is (L+1, N, 4H): per step slab t the gradient of its gates'
pre-activations, and in slab L the initial h's and c's gradients (then zeros):
    dh = d_h + d_out[first step], dc = d_c; per step, with tc = tanh(c_t):
    dc += dh * o * (1 - tc^2);  d_pre = (dc g i(1-i), dc c_{t-1} f(1-f), dc i (1-g^2),
    dh tc o(1-o));  dc = dc * f;  dh = d_pre weight_hh (+ d_out[next step])
"""
from __future__ import annotations

import numpy as np

from .ir import Node
from .ops import Op


def gru_states(gates: Node, h0: Node, w_hh_t: Node, b_hh: Node, reverse: bool) -> Node:
    length, batch, three = gates.shape
    hidden = h0.shape[-1]
    assert three == 3 * hidden and h0.shape == (batch, hidden), (gates.shape, h0.shape)
    assert w_hh_t.shape == (hidden, three) and b_hh.shape == (three,), (w_hh_t.shape, b_hh.shape)
    assert len({n.dtype for n in (gates, h0, w_hh_t, b_hh)}) == 1 and gates.dtype.is_float
    return Node(Op.GRU_STATES, gates.dtype, (length + 1, batch, 4 * hidden),
                (gates, h0, w_hh_t, b_hh), bool(reverse))


def gru_gradients(to_hidden: Node, z: Node, d_out: Node, d_h: Node, w_hh: Node,
                  reverse: bool) -> Node:
    length, batch, hidden = z.shape
    assert to_hidden.shape == (length, batch, 3 * hidden) and d_out.shape == z.shape, \
        (to_hidden.shape, z.shape, d_out.shape)
    assert d_h.shape == (batch, hidden) and w_hh.shape == (3 * hidden, hidden), \
        (d_h.shape, w_hh.shape)
    assert len({n.dtype for n in (to_hidden, z, d_out, d_h, w_hh)}) == 1
    return Node(Op.GRU_GRADIENTS, z.dtype, (length + 1, batch, 4 * hidden),
                (to_hidden, z, d_out, d_h, w_hh), bool(reverse))


def lstm_states(gates: Node, h0: Node, c0: Node, w_hh_t: Node, b_hh: Node,
                reverse: bool) -> Node:
    length, batch, four = gates.shape
    hidden = h0.shape[-1]
    assert four == 4 * hidden and h0.shape == c0.shape == (batch, hidden), \
        (gates.shape, h0.shape, c0.shape)
    assert w_hh_t.shape == (hidden, four) and b_hh.shape == (four,), (w_hh_t.shape, b_hh.shape)
    assert len({n.dtype for n in (gates, h0, c0, w_hh_t, b_hh)}) == 1 and gates.dtype.is_float
    return Node(Op.LSTM_STATES, gates.dtype, (length + 1, batch, 6 * hidden),
                (gates, h0, c0, w_hh_t, b_hh), bool(reverse))


def lstm_gradients(states: Node, d_out: Node, d_h: Node, d_c: Node, w_hh: Node,
                   reverse: bool) -> Node:
    length, batch, hidden = d_out.shape
    assert states.shape == (length + 1, batch, 6 * hidden), (states.shape, d_out.shape)
    assert d_h.shape == d_c.shape == (batch, hidden) and w_hh.shape == (4 * hidden, hidden), \
        (d_h.shape, d_c.shape, w_hh.shape)
    assert len({n.dtype for n in (states, d_out, d_h, d_c, w_hh)}) == 1
    return Node(Op.LSTM_GRADIENTS, d_out.dtype, (length + 1, batch, 4 * hidden),
                (states, d_out, d_h, d_c, w_hh), bool(reverse))


def steps(length: int, reverse: bool, backward: bool) -> range:
    """The steps in the order a loop runs them: a reverse layer's forward from the last."""
    return range(length - 1, -1, -1) if reverse != backward else range(length)


# ---- NumPy meaning (compiler/interpret.py) ---------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _gru_states_numpy(gates, h0, w_hh_t, b_hh, reverse: bool) -> np.ndarray:
    length, batch, _ = gates.shape
    hidden = h0.shape[-1]
    out = np.zeros((length + 1, batch, 4 * hidden), gates.dtype)
    out[length if reverse else 0, :, :hidden] = h0
    h = h0
    for t in steps(length, reverse, backward=False):
        hh = h @ w_hh_t + b_hh
        g = gates[t]
        r = _sigmoid(g[:, :hidden] + hh[:, :hidden])
        z = _sigmoid(g[:, hidden:2 * hidden] + hh[:, hidden:2 * hidden])
        n = np.tanh(g[:, 2 * hidden:] + r * hh[:, 2 * hidden:])
        h = n + z * (h - n)
        out[t if reverse else t + 1] = np.concatenate([h, hh], -1)
    return out


def _gru_gradients_numpy(to_hidden, z, d_out, d_h, w_hh, reverse: bool) -> np.ndarray:
    length, batch, hidden = z.shape
    out = np.zeros((length + 1, batch, 4 * hidden), z.dtype)
    order = list(steps(length, reverse, backward=True))
    d = d_h + d_out[order[0]]
    for k, t in enumerate(order):
        d_hidden = np.tile(d, 3) * to_hidden[t]
        out[t] = np.concatenate([d_hidden, d], -1)
        d = d * z[t] + d_hidden @ w_hh
        if k + 1 < length:
            d = d + d_out[order[k + 1]]
    out[length, :, :hidden] = d
    return out


def _lstm_states_numpy(gates, h0, c0, w_hh_t, b_hh, reverse: bool) -> np.ndarray:
    length, batch, _ = gates.shape
    hidden = h0.shape[-1]
    out = np.zeros((length + 1, batch, 6 * hidden), gates.dtype)
    out[length if reverse else 0, :, :2 * hidden] = np.concatenate([h0, c0], -1)
    h, c = h0, c0
    for t in steps(length, reverse, backward=False):
        pre = gates[t] + h @ w_hh_t + b_hh
        i, f, o = (_sigmoid(pre[:, k * hidden:(k + 1) * hidden]) for k in (0, 1, 3))
        g = np.tanh(pre[:, 2 * hidden:3 * hidden])
        c = f * c + i * g
        h = o * np.tanh(c)
        out[t if reverse else t + 1] = np.concatenate([h, c, i, f, g, o], -1)
    return out


def _lstm_gradients_numpy(states, d_out, d_h, d_c, w_hh, reverse: bool) -> np.ndarray:
    length, batch, hidden = d_out.shape
    out = np.zeros((length + 1, batch, 4 * hidden), d_out.dtype)
    order = list(steps(length, reverse, backward=True))
    dh, dc = d_h + d_out[order[0]], d_c
    for k, t in enumerate(order):
        now, before = states[t if reverse else t + 1], states[t + 1 if reverse else t]
        c, i, f, g, o = (now[:, p * hidden:(p + 1) * hidden] for p in range(1, 6))
        tc = np.tanh(c)
        dc = dc + dh * o * (1 - tc * tc)
        d_pre = np.concatenate([dc * g * i * (1 - i), dc * before[:, hidden:2 * hidden] * f *
                                (1 - f), dc * i * (1 - g * g), dh * tc * o * (1 - o)], -1)
        out[t] = d_pre
        dc = dc * f
        dh = d_pre @ w_hh
        if k + 1 < length:
            dh = dh + d_out[order[k + 1]]
    out[length, :, :2 * hidden] = np.concatenate([dh, dc], -1)
    return out


def numpy_meaning(node: Node, srcs: list[np.ndarray]) -> np.ndarray:
    meaning = {Op.GRU_STATES: _gru_states_numpy, Op.GRU_GRADIENTS: _gru_gradients_numpy,
               Op.LSTM_STATES: _lstm_states_numpy, Op.LSTM_GRADIENTS: _lstm_gradients_numpy}
    return meaning[node.op](*srcs, node.arg)
