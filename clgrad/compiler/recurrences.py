"""A GRU layer's loop over time in the IR: the GRU_STATES and GRU_GRADIENTS nodes (each one
kernel, a work-item per batch row looping over the steps: lower_recurrence.py) and what they
mean in NumPy (the interpreter's reference).

Recorded op by op, a loop of L steps is some 70 IR nodes and 6 kernels a step, forward and
backward, and Python's time recording them is most of a small GRU's pass. The batch rows'
recurrences are independent of each other: a work-item per row carries its state from step
to step in the output it writes, reading the weights from the cache.

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


def steps(length: int, reverse: bool, backward: bool) -> range:
    """The steps in the order a loop runs them: a reverse layer's forward from the last."""
    return range(length - 1, -1, -1) if reverse != backward else range(length)


# ---- NumPy meaning (compiler/interpret.py) ---------------------------------------------------

def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-x))


def _states_numpy(gates, h0, w_hh_t, b_hh, reverse: bool) -> np.ndarray:
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


def _gradients_numpy(to_hidden, z, d_out, d_h, w_hh, reverse: bool) -> np.ndarray:
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


def numpy_meaning(node: Node, srcs: list[np.ndarray]) -> np.ndarray:
    if node.op is Op.GRU_STATES:
        return _states_numpy(*srcs, node.arg)
    return _gradients_numpy(*srcs, node.arg)
