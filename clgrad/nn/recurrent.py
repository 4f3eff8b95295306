"""Recurrent layers: RNN, LSTM, GRU and their single-step cells, with PyTorch's parameters.

A layer projects its whole input sequence through weight_ih in one matmul, then steps through
time with only the hidden-state matmul and the gate arithmetic per step. On a CPU device an
unpacked GRU's or LSTM's (without projections) loop is one Function with a kernel each way
and a hand-written backward (fused_loops.py); the others record their steps for autograd
(rnn_steps.py), each step the same graph structure over different buffers, so the engine's
plan cache compiles a step once and replays it for the rest of the sequence.

A PackedSequence input runs padded, longest sequence first: at each step a mask keeps the state
of the sequences that have ended (or, backwards, not yet begun), so each final state is taken at
its sequence's own length and every step still has the same structure.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from ..frontend import creation
from ..frontend.joining import cat, stack
from ..frontend.step_slices import step_slices
from . import functional as F
from . import init
from .fused_loops import fuses, gru_sequence, lstm_sequence
from .module import Module
from .parameter import Parameter
from .rnn_steps import gru_step, lstm_step, recorded_loop, rnn_step
from .utils.rnn import PackedSequence, pack_padded_sequence, pad_packed_sequence

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _check_features(op: str, input, size: int, batched_ndim: int) -> bool:
    """Whether input lacks its batch dimension; raises unless its last dim is size."""
    if input.ndim not in (batched_ndim - 1, batched_ndim):
        raise ValueError(f"{op}: Expected input to be {batched_ndim - 1}D or {batched_ndim}D, "
                         f"got {input.ndim}D instead")
    if input.shape[-1] != size:
        raise RuntimeError(f"{op}: input.size(-1) must be equal to input_size. Expected {size}, "
                           f"got {input.shape[-1]}")
    return input.ndim == batched_ndim - 1


def _check_state(op: str, name: str, state, expected: tuple[int, ...]) -> None:
    if tuple(state.shape) != expected:
        raise RuntimeError(f"{op}: Expected {name} size {expected}, got {tuple(state.shape)}")


def _uniform_init(module: Module, hidden_size: int) -> None:
    bound = 1.0 / math.sqrt(hidden_size) if hidden_size > 0 else 0
    for weight in module.parameters():
        init.uniform_(weight, -bound, bound)


def _module_to(module: Module, device, dtype) -> None:
    if device is not None or dtype is not None:
        module.to(*(a for a in (device, dtype) if a is not None))


class RNNCellBase(Module):
    def __init__(self, input_size: int, hidden_size: int, bias: bool, num_chunks: int,
                 device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(creation.empty(num_chunks * hidden_size, input_size))
        self.weight_hh = Parameter(creation.empty(num_chunks * hidden_size, hidden_size))
        for name in ("bias_ih", "bias_hh"):
            self.register_parameter(
                name, Parameter(creation.empty(num_chunks * hidden_size)) if bias else None)
        self.reset_parameters()
        _module_to(self, device, dtype)

    def reset_parameters(self) -> None:
        _uniform_init(self, self.hidden_size)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def _begin(self, input, hx, states: int):
        """input and hidden states batched, whether to drop the batch dim again, zero states."""
        op = type(self).__name__
        unbatched = _check_features(op, input, self.input_size, 2)
        if unbatched:
            input = input.unsqueeze(0)
        if hx is None:
            zeros = creation.zeros(input.shape[0], self.hidden_size, dtype=input.dtype,
                                   device=input.device)
            return input, [zeros] * states, unbatched
        hx = list(hx) if isinstance(hx, (tuple, list)) else [hx]
        hx = [h.unsqueeze(0) for h in hx] if unbatched else hx
        for h in hx:
            _check_state(op, "hidden", h, (input.shape[0], self.hidden_size))
        return input, hx, unbatched

    def _input_gates(self, input):
        return F.linear(input, self.weight_ih, self.bias_ih)


class RNNCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True,
                 nonlinearity: str = "tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)

    def forward(self, input, hx=None):
        input, (h,), unbatched = self._begin(input, hx, 1)
        h = rnn_step(self._input_gates(input), h, self.weight_hh, self.bias_hh,
                      self.nonlinearity == "relu")
        return h.squeeze(0) if unbatched else h


class LSTMCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        input, state, unbatched = self._begin(input, hx, 2)
        h, c = lstm_step(self._input_gates(input), state, self.weight_hh, self.bias_hh)
        return (h.squeeze(0), c.squeeze(0)) if unbatched else (h, c)


class GRUCell(RNNCellBase):
    def __init__(self, input_size: int, hidden_size: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        input, (h,), unbatched = self._begin(input, hx, 1)
        h = gru_step(self._input_gates(input), h, self.weight_hh, self.bias_hh)
        return h.squeeze(0) if unbatched else h


class RNNBase(Module):
    def __init__(self, mode: str, input_size: int, hidden_size: int, num_layers: int = 1,
                 bias: bool = True, batch_first: bool = False, dropout: float = 0.0,
                 bidirectional: bool = False, proj_size: int = 0, device=None, dtype=None):
        super().__init__()
        if not isinstance(dropout, numbers.Number) or not 0 <= dropout <= 1 or \
                isinstance(dropout, bool):
            raise ValueError("dropout should be a number in range [0, 1] representing the "
                             "probability of an element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be an integer greater than zero")
        if not isinstance(num_layers, int) or num_layers <= 0:
            raise ValueError("num_layers must be an integer greater than zero")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable "
                             "projections")
        if proj_size >= hidden_size:
            raise ValueError("proj_size has to be smaller than hidden_size")
        self.mode, self.input_size, self.hidden_size = mode, input_size, hidden_size
        self.num_layers, self.bias, self.batch_first = num_layers, bias, batch_first
        self.dropout, self.bidirectional, self.proj_size = float(dropout), bidirectional, proj_size
        out_size = proj_size or hidden_size
        gate_size = _GATES[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for suffix in ("", "_reverse")[:self._directions]:
                width = input_size if layer == 0 else out_size * self._directions
                shapes = {"weight_ih": (gate_size, width), "weight_hh": (gate_size, out_size)}
                if bias:
                    shapes.update(bias_ih=(gate_size,), bias_hh=(gate_size,))
                if proj_size:
                    shapes["weight_hr"] = (proj_size, hidden_size)
                for kind, shape in shapes.items():
                    name = f"{kind}_l{layer}{suffix}"
                    self.register_parameter(name, Parameter(creation.empty(*shape)))
                    self._flat_weights_names.append(name)
        self.reset_parameters()
        _module_to(self, device, dtype)

    @property
    def _directions(self) -> int:
        return 2 if self.bidirectional else 1

    @property
    def all_weights(self) -> list[list[Parameter]]:
        per_layer = len(self._flat_weights_names) // (self.num_layers * self._directions)
        names = self._flat_weights_names
        return [[getattr(self, n) for n in names[k:k + per_layer]]
                for k in range(0, len(names), per_layer)]

    def reset_parameters(self) -> None:
        _uniform_init(self, self.hidden_size)

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        for name, default in (("proj_size", 0), ("num_layers", 1), ("bias", True),
                              ("batch_first", False), ("dropout", 0), ("bidirectional", False)):
            if getattr(self, name) != default:
                s += f", {name}={getattr(self, name)}"
        return s

    def _weights(self, layer: int, direction: int):
        suffix = "_reverse" if direction else ""
        get = lambda kind: getattr(self, f"{kind}_l{layer}{suffix}", None)  # noqa: E731
        return get("weight_ih"), get("bias_ih"), get("weight_hh"), get("bias_hh"), get("weight_hr")

    def _step(self, gx, state, w_hh, b_hh, w_hr):
        if self.mode == "LSTM":
            return lstm_step(gx, state, w_hh, b_hh, w_hr)
        if self.mode == "GRU":
            return gru_step(gx, state, w_hh, b_hh)
        return rnn_step(gx, state, w_hh, b_hh, self.mode == "RNN_RELU")

    def _run_direction(self, x, state, layer: int, direction: int, masks=None):
        """One layer in one direction over the (L, N, features) sequence x; masks[t] (N, 1),
        when given, says which rows step t changes (the others keep their state)."""
        w_ih, b_ih, w_hh, b_hh, w_hr = self._weights(layer, direction)
        gates = F.linear(x, w_ih, b_ih)            # every time step's input projection at once
        if masks is None and fuses(gates):
            if self.mode == "GRU":
                return gru_sequence(gates, state, w_hh, b_hh, bool(direction))
            if self.mode == "LSTM" and w_hr is None:
                return lstm_sequence(gates, state, w_hh, b_hh, bool(direction))
        step = lambda gx, s: self._step(gx, s, w_hh, b_hh, w_hr)  # noqa: E731
        return recorded_loop(step, gates, state, bool(direction), masks)

    def _initial_states(self, x, hx, unbatched: bool):
        op = type(self).__name__
        out_size = self.proj_size or self.hidden_size
        count, batch = self.num_layers * self._directions, x.shape[1]
        sizes = [out_size, self.hidden_size] if self.mode == "LSTM" else [out_size]
        if hx is None:
            return [creation.zeros(count, batch, s, dtype=x.dtype, device=x.device)
                    for s in sizes]
        hx = list(hx) if self.mode == "LSTM" else [hx]
        names = ["hx", "cx"] if self.mode == "LSTM" else ["hidden"]
        for k, (h, s, name) in enumerate(zip(hx, sizes, names)):
            if h.ndim != (2 if unbatched else 3):
                raise RuntimeError(f"{op}: For {'un' if unbatched else ''}batched "
                                   f"{x.ndim - unbatched}-D input, {name} should also be "
                                   f"{2 if unbatched else 3}-D but got {h.ndim}-D tensor")
            hx[k] = h.unsqueeze(1) if unbatched else h
            _check_state(op, name, hx[k], (count, batch, s))
        return hx

    def forward(self, input, hx=None):
        if isinstance(input, PackedSequence):
            return self._forward_packed(input, hx)
        op = type(self).__name__
        unbatched = _check_features(op, input, self.input_size, 3)
        x = input.unsqueeze(1) if unbatched else \
            input.transpose(0, 1) if self.batch_first else input
        if x.shape[0] == 0:
            raise RuntimeError(f"{op}: Expected sequence length to be larger than 0 in RNN, "
                               f"got input of shape {tuple(input.shape)}")
        states = self._initial_states(x, hx, unbatched)
        x, finals = self._layers(x, states)
        output = x.squeeze(1) if unbatched else x.transpose(0, 1) if self.batch_first else x
        h_n = self._stack_finals(finals, unbatched)
        return output, h_n

    def _forward_packed(self, packed: PackedSequence, hx):
        """PackedSequence in, PackedSequence out; hx and h_n in the caller's batch order."""
        op = type(self).__name__
        data, batch_sizes, sorted_indices, unsorted_indices = packed
        if data.ndim != 2:
            raise RuntimeError(f"{op}: input must have 2 dimensions, got {data.ndim}")
        _check_features(op, data, self.input_size, 2)
        x, lengths = pad_packed_sequence(PackedSequence(data, batch_sizes))   # longest first
        states = self._initial_states(x, hx, False)
        if hx is not None and sorted_indices is not None:
            states = [s.index_select(1, sorted_indices) for s in states]
        output, h_n = self._run_padded(x, lengths, states)
        if unsorted_indices is not None:
            h_n = tuple(h.index_select(1, unsorted_indices) for h in h_n) \
                if self.mode == "LSTM" else h_n.index_select(1, unsorted_indices)
        return PackedSequence(output, batch_sizes, sorted_indices, unsorted_indices), h_n

    def _run_padded(self, x, lengths, states):
        """Every layer over the padded x (L, N, features) of sequences of the given lengths,
        longest first: the packed output data and the final states."""
        steps = np.arange(x.shape[0])[:, None, None]
        active = creation.tensor(steps < np.asarray(lengths.tolist())[None, :, None],
                                 device=x.device)
        x, finals = self._layers(x, states, step_slices(active))
        return pack_padded_sequence(x, lengths).data, self._stack_finals(finals, False)

    def _layers(self, x, states, masks=None):
        """Every layer over the (L, N, features) sequence x: the last layer's output and each
        layer and direction's final state."""
        finals = []
        for layer in range(self.num_layers):
            if layer and self.dropout and self.training:
                x = F.dropout(x, self.dropout, True)
            outs = []
            for direction in range(self._directions):
                k = layer * self._directions + direction
                out, final = self._run_direction(x, self._state_at(states, k), layer, direction,
                                                 masks)
                outs.append(out)
                finals.append(final)
            x = outs[0] if len(outs) == 1 else cat(outs, -1)
        return x, finals

    def _state_at(self, states, k: int):
        return (states[0][k], states[1][k]) if self.mode == "LSTM" else states[0][k]

    def _stack_finals(self, finals, unbatched: bool):
        parts = zip(*finals) if self.mode == "LSTM" else [finals]
        stacked = [stack(list(p)) for p in parts]
        stacked = [s.squeeze(1) if unbatched else s for s in stacked]
        return tuple(stacked) if self.mode == "LSTM" else stacked[0]


class RNN(RNNBase):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1,
                 nonlinearity: str = "tanh", bias: bool = True, batch_first: bool = False,
                 dropout: float = 0.0, bidirectional: bool = False, device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or "
                             "'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__(f"RNN_{nonlinearity.upper()}", input_size, hidden_size, num_layers,
                         bias, batch_first, dropout, bidirectional, 0, device, dtype)


class LSTM(RNNBase):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 proj_size: int = 0, device=None, dtype=None):
        super().__init__("LSTM", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, proj_size, device, dtype)


class GRU(RNNBase):
    def __init__(self, input_size: int, hidden_size: int, num_layers: int = 1, bias: bool = True,
                 batch_first: bool = False, dropout: float = 0.0, bidirectional: bool = False,
                 device=None, dtype=None):
        super().__init__("GRU", input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, 0, device, dtype)


__all__ = ["RNNCellBase", "RNNCell", "LSTMCell", "GRUCell", "RNNBase", "RNN", "LSTM", "GRU"]
