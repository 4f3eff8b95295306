"""Variable-length sequences, as torch.nn.utils.rnn: padding, packing and PackedSequence.

Lengths and batch sizes are host values (PyTorch keeps them on the CPU too), so where each
element goes is worked out in NumPy, and moving the data is one gather (index_select) of its
rows: packing, unpacking and padding are each one lazy op, differentiable like any other.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from ...compiler import dtype as dt
from ...frontend import creation
from ...frontend.joining import cat
from ...frontend.tensor import Tensor


class PackedSequence_(NamedTuple):
    data: Tensor
    batch_sizes: Tensor
    sorted_indices: Tensor | None
    unsorted_indices: Tensor | None


class PackedSequence(PackedSequence_):
    """The rows of a batch of sequences of different lengths, step by step: data holds step 0 of
    every sequence, then step 1 of those that are longer, ...; batch_sizes[t] is how many
    sequences are at step t. The sequences are ordered longest first (sorted_indices: the
    original batch index of each; unsorted_indices: its inverse)."""

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        if batch_sizes is None:     # PackedSequence((data, batch_sizes)), as PyTorch allows
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError("Expected data to be a list or tuple of length 2")
            data, batch_sizes = data
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs) -> PackedSequence:
        """The same sequences with data converted by Tensor.to (self when nothing changes)."""
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        move = lambda t: None if t is None else t.to(data.device)  # noqa: E731
        return type(self)(data, self.batch_sizes, move(self.sorted_indices),
                          move(self.unsorted_indices))

    def double(self) -> PackedSequence:
        return self.to(dtype=dt.float64)

    def float(self) -> PackedSequence:
        return self.to(dtype=dt.float32)

    def half(self) -> PackedSequence:
        return self.to(dtype=dt.float16)

    def long(self) -> PackedSequence:
        return self.to(dtype=dt.int64)

    def int(self) -> PackedSequence:
        return self.to(dtype=dt.int32)

    @property
    def is_cuda(self) -> bool:
        return self.data.is_cuda


def invert_permutation(permutation: Tensor | None) -> Tensor | None:
    """The inverse of a 1-D permutation of indices (None for None)."""
    if permutation is None:
        return None
    positions = creation.arange(permutation.numel(), device=permutation.device)
    return creation.empty_like(permutation).scatter_(0, permutation, positions)


def _indices(values, device) -> Tensor:
    return creation.tensor(np.asarray(values, np.int64), dtype=dt.int64, device=device)


def _take_rows(rows: Tensor, index: np.ndarray, padding_value=None) -> Tensor:
    """rows[index] of shape index.shape + rows' row shape, in one gather; where index is -1,
    a row of padding_value."""
    if padding_value is not None:
        pad = creation.full((1, *rows.shape[1:]), padding_value, dtype=rows.dtype,
                            device=rows.device)
        rows = cat([rows, pad])
        index = np.where(index < 0, rows.shape[0] - 1, index)
    taken = rows.index_select(0, _indices(index.reshape(-1), rows.device))
    return taken.reshape(*index.shape, *rows.shape[1:])


def _batch_sizes(lengths: list) -> np.ndarray:
    """How many of the sequences (sorted longest first) reach each time step."""
    steps = np.arange(lengths[0] if lengths else 0)
    return (np.asarray(lengths)[None, :] > steps[:, None]).sum(1)


def _length_list(lengths) -> list:
    if isinstance(lengths, Tensor):
        if lengths.ndim != 1:
            raise RuntimeError("'lengths' argument should be a 1D CPU int64 tensor, but got "
                               f"{lengths.ndim}D {lengths.dtype.name} tensor")
        lengths = lengths.tolist()
    return [int(n) for n in lengths]


def _check_packable(input: Tensor, lengths: list, steps: int, batch: int) -> None:
    if input.numel() == 0:
        raise RuntimeError("Cannot pack empty tensors.")
    if len(lengths) != batch:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lengths)} (batch_size={batch})")
    if lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if any(a < b for a, b in zip(lengths, lengths[1:])):
        raise RuntimeError(
            "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True. "
            "You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence "
            "to sidestep this requirement if you do not need ONNX exportability.")
    if lengths[0] > steps:
        raise RuntimeError(f"pack_padded_sequence: a sequence of length {lengths[0]} does not "
                           f"fit an input of {steps} time steps (shape {tuple(input.shape)})")


def pack_padded_sequence(input: Tensor, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Packs a padded batch (T, B, *) ((B, T, *) when batch_first) of sequences of the given
    lengths; with enforce_sorted=False they need not be sorted longest first."""
    lengths = _length_list(lengths)
    input.size(1)       # at least 2-D: PyTorch's IndexError otherwise
    steps, batch = (input.shape[1], input.shape[0]) if batch_first else input.shape[:2]
    order = list(range(len(lengths)))
    sorted_indices = None
    if not enforce_sorted:      # longest first; equal lengths keep their order
        order = sorted(order, key=lambda b: -lengths[b])
        lengths = [lengths[b] for b in order]
        sorted_indices = _indices(order, input.device)
    _check_packable(input, lengths, steps, batch)
    batch_sizes = _batch_sizes(lengths)
    index = [(order[j] * steps + t) if batch_first else (t * batch + order[j])
             for t, size in enumerate(batch_sizes) for j in range(size)]
    rows = input.reshape(steps * batch, *input.shape[2:])
    data = _take_rows(rows, np.asarray(index, np.int64))
    return PackedSequence(data, _indices(batch_sizes, input.device), sorted_indices, None)


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """The padded batch (T, B, *) ((B, T, *) when batch_first) of a PackedSequence, in the
    original batch order, and each sequence's length (int64)."""
    batch_sizes = _length_list(sequence.batch_sizes)
    steps = len(batch_sizes)
    if total_length is not None:
        if total_length < steps:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {steps}")
        steps = total_length
    batch = batch_sizes[0]
    offsets = np.concatenate([[0], np.cumsum(batch_sizes)])
    index = np.full((steps, batch), -1, np.int64)      # -1: padding
    for t, size in enumerate(batch_sizes):
        index[t, :size] = offsets[t] + np.arange(size)
    lengths = (index >= 0).sum(0)
    if sequence.unsorted_indices is not None:
        unsorted = sequence.unsorted_indices.tolist()
        index, lengths = index[:, unsorted], lengths[unsorted]
    padded = _take_rows(sequence.data, index.T if batch_first else index, padding_value)
    return padded, _indices(lengths, sequence.data.device)


def _check_sequences(sequences) -> None:
    if not sequences:
        raise RuntimeError("received an empty list of sequences")
    row_shape = sequences[0].shape[1:]
    for s in sequences:
        if s.ndim == 0 or s.shape[1:] != row_shape:
            raise RuntimeError(
                "pad_sequence: every sequence must be at least 1-D with the same trailing "
                f"dimensions, got shapes {[tuple(x.shape) for x in sequences]}")


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> Tensor:
    """Sequences of shapes (L_i, *) stacked into (max L, B, *) ((B, max L, *) when batch_first),
    padded with padding_value on padding_side, in the first sequence's dtype."""
    if not isinstance(sequences, Iterable):
        raise RuntimeError("pad_sequence: Expected iterable for input sequences, but got arg of "
                           f"type: {type(sequences)}")
    sequences = tuple(sequences)
    if padding_side not in ("left", "right"):
        raise RuntimeError("Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    _check_sequences(sequences)
    dtype = sequences[0].dtype
    lengths = [s.shape[0] for s in sequences]
    longest = max(lengths)
    index = np.full((len(sequences), longest), -1, np.int64)     # -1: padding
    for b, (start, n) in enumerate(zip(np.cumsum([0] + lengths), lengths)):
        first = 0 if padding_side == "right" else longest - n
        index[b, first:first + n] = start + np.arange(n)
    rows = cat([s.to(dtype) for s in sequences])
    return _take_rows(rows, index if batch_first else index.T, padding_value)


def unpad_sequence(padded_sequences: Tensor, lengths, batch_first: bool = False) -> list:
    """The inverse of pad_sequence: each sequence cut to its length. (PyTorch transposes a
    time-first input in place as it goes; the input is left as it is here.)"""
    padded = padded_sequences if batch_first else padded_sequences.transpose(0, 1)
    return [seq[:n] for seq, n in zip(padded, _length_list(lengths), strict=True)]


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """Packs a list of sequences of shapes (L_i, *)."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences: PackedSequence) -> list:
    """The list of sequences a PackedSequence holds, in their original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)


__all__ = ["PackedSequence", "invert_permutation", "pack_padded_sequence", "pad_packed_sequence",
           "pad_sequence", "unpad_sequence", "pack_sequence", "unpack_sequence"]
