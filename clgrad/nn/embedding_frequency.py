"""Embedding rows whose gradient is scaled by how often they are picked: PyTorch's
scale_grad_by_freq, for embedding and embedding_bag."""
from __future__ import annotations

from ..frontend import creation
from ..frontend.function import Function


class _RowsScaledByFrequency(Function):
    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.save_for_backward(indices)
        ctx.table_shape, ctx.padding_idx = tuple(weight.shape), padding_idx
        return weight[indices]

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        flat = indices.reshape(-1)
        ones = creation.ones(flat.shape[0], dtype=grad.dtype, device=grad.device)
        counts = creation.zeros(ctx.table_shape[0], dtype=grad.dtype, device=grad.device)
        counts = counts.index_add(0, flat, ones)
        rows = grad.reshape(flat.shape[0], ctx.table_shape[1]) / counts[flat].unsqueeze(1)
        table = creation.zeros(*ctx.table_shape, dtype=grad.dtype, device=grad.device)
        table = table.index_add(0, flat, rows)
        if ctx.padding_idx is not None:
            table[ctx.padding_idx] = 0.0
        return table, None, None


def rows_scaled_by_frequency(weight, indices, padding_idx=None):
    """weight[indices], its gradient reaching each row of weight divided by the number of times
    indices names that row (the mean of the row's gradients, not their sum), and no gradient
    reaching row padding_idx."""
    return _RowsScaledByFrequency.apply(weight, indices, padding_idx)


__all__: list[str] = []
