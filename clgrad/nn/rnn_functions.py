"""torch.rnn_tanh, rnn_relu, gru and lstm: the multi-layer recurrent loops of nn.RNN/GRU/LSTM
with the weights as arguments. Each has PyTorch's two overloads:
(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first) and,
for packed sequences, (data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
bidirectional). params are w_ih, w_hh, [b_ih, b_hh], [w_hr] per layer and direction, in
nn.RNN's order; hx is h_0 ((h_0, c_0) for lstm). They return (output, h_n), lstm
(output, h_n, c_n); output is the packed data in the second overload."""
from __future__ import annotations

from ..frontend.operands import is_tensor
from .module import Module
from .recurrent import RNNBase
from .utils.rnn import PackedSequence, pad_packed_sequence


class _GivenWeights(RNNBase):
    """The loops of RNNBase over weights it is given, not Parameters of its own (so RNNBase's
    __init__, which makes those, is not run)."""

    def __init__(self, op: str, mode: str, params, has_biases: bool, num_layers: int,
                 dropout: float, train: bool, bidirectional: bool) -> None:
        Module.__init__(self)
        self.mode, self.num_layers, self.bias = mode, num_layers, has_biases
        self.dropout, self.bidirectional, self.training = float(dropout), bidirectional, train
        params = list(params)
        groups = num_layers * self._directions
        per_group = 2 + 2 * has_biases
        if mode == "LSTM" and len(params) == groups * (per_group + 1):
            per_group += 1                  # each group ends with a projection w_hr
        if len(params) != groups * per_group or not all(is_tensor(p) for p in params):
            raise RuntimeError(f"{op}: got an incorrect number of RNN parameters: expected "
                               f"{groups * per_group} tensors ({num_layers} layers, "
                               f"{self._directions} directions, has_biases={has_biases}), got "
                               f"{len(params)}")
        self._groups = [params[k:k + per_group] for k in range(0, len(params), per_group)]
        projected = per_group % 2 == 1
        self.input_size = params[0].shape[-1]
        self.hidden_size = params[per_group - 1].shape[1] if projected else params[1].shape[-1]
        self.proj_size = params[per_group - 1].shape[0] if projected else 0

    def _weights(self, layer: int, direction: int):
        w_ih, w_hh, *rest = self._groups[layer * self._directions + direction]
        b_ih, b_hh = rest[:2] if self.bias else (None, None)
        w_hr = rest[-1] if self.proj_size else None
        return w_ih, b_ih, w_hh, b_hh, w_hr

    def check(self, op: str, x, states) -> None:
        """PyTorch's expectations of the (L, N, features) input and the initial states."""
        if x.ndim != 3:
            raise IndexError(f"{op}: expected a 3-D input, got shape {tuple(x.shape)}")
        if x.shape[-1] != self.input_size:
            raise RuntimeError(f"{op}: input.size(-1) must be equal to input_size of the first "
                               f"layer's w_ih. Expected {self.input_size}, got {x.shape[-1]}")
        sizes = [self.proj_size or self.hidden_size, self.hidden_size][:len(states)]
        for k, (state, size) in enumerate(zip(states, sizes)):
            expected = (self.num_layers * self._directions, x.shape[1], size)
            if tuple(state.shape) != expected:
                raise RuntimeError(f"{op}: Expected hidden state {k} of size {expected}, got "
                                   f"{tuple(state.shape)}")

    def results(self, output, h_n):
        return (output, *h_n) if self.mode == "LSTM" else (output, h_n)


def _states(op: str, mode: str, hx) -> list:
    if mode != "LSTM":
        if not is_tensor(hx):
            raise TypeError(f"{op}(): argument 'hx' must be Tensor, not {type(hx).__name__}")
        return [hx]
    if not isinstance(hx, (tuple, list)) or len(hx) != 2 or not all(is_tensor(h) for h in hx):
        raise TypeError(f"{op}(): argument 'hx' must be a tuple of two Tensors (h_0, c_0), "
                        f"not {type(hx).__name__}")
    return list(hx)


def _run_sequence(op, mode, input, hx, params, has_biases, num_layers, dropout, train,
                bidirectional, batch_first):
    states = _states(op, mode, hx)
    rnn = _GivenWeights(op, mode, params, has_biases, num_layers, dropout, train, bidirectional)
    x = input.transpose(0, 1) if batch_first and input.ndim == 3 else input
    rnn.check(op, x, states)
    x, finals = rnn._layers(x, states)
    h_n = rnn._stack_finals(finals, False)
    return rnn.results(x.transpose(0, 1) if batch_first else x, h_n)


def _run_packed(op, mode, data, batch_sizes, hx, params, has_biases, num_layers, dropout, train,
                bidirectional):
    states = _states(op, mode, hx)
    rnn = _GivenWeights(op, mode, params, has_biases, num_layers, dropout, train, bidirectional)
    if data.ndim != 2:
        raise RuntimeError(f"{op}: packed data must have 2 dimensions, got {data.ndim}")
    x, lengths = pad_packed_sequence(PackedSequence(data, batch_sizes))    # longest first
    rnn.check(op, x, states)
    return rnn.results(*rnn._run_padded(x, lengths, states))


def _with_overloads(op: str, mode: str):
    """torch.<op>: the packed overload when its fourth argument is params (a sequence) rather
    than has_biases."""
    def run(*args, **kwargs):
        packed = "batch_sizes" in kwargs or len(args) > 3 and isinstance(args[3], (list, tuple))
        return (_run_packed if packed else _run_sequence)(op, mode, *args, **kwargs)
    run.__name__ = run.__qualname__ = op
    run.__doc__ = f"torch.{op}: the multi-layer {mode} loop over given weights (module doc)."
    return run


rnn_tanh = _with_overloads("rnn_tanh", "RNN_TANH")
rnn_relu = _with_overloads("rnn_relu", "RNN_RELU")
gru = _with_overloads("gru", "GRU")
lstm = _with_overloads("lstm", "LSTM")

FUNCTIONS = {fn.__name__: fn for fn in (rnn_tanh, rnn_relu, gru, lstm)}
