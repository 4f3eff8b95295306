"""nn.CrossMapLRN2d: Lua Torch's local response normalisation across channels, kept by PyTorch
with its legacy windows, which clgrad reproduces rather than corrects: a user porting a model
gets PyTorch's numbers.

output = x * scale^-beta, scale = k + alpha / size * (the sum of squares over channel c's
window). The forward window of channel c is [c - p + 1, c + p - 1], p = (size - 1) // 2 + 1,
and channel 0 always stays in it (PyTorch's sliding sum never removes it). The backward is
PyTorch's own formula, not the derivative of that forward: it takes window [c - q, c - q + size
- 1], q = size - (size - 1) / 2 truncated.
"""
from __future__ import annotations

import numpy as np

from ..frontend import creation
from ..frontend.function import Function
from .module import Module


def _forward_windows(channels: int, size: int) -> np.ndarray:
    """(C, C): row c marks the channels whose squares scale channel c."""
    reach = (size - 1) // 2
    c, j = np.indices((channels, channels))
    return ((abs(j - c) <= reach) | (j == 0)).astype(np.float32)


def _backward_windows(channels: int, size: int) -> np.ndarray:
    shift = int(size - (size - 1) / 2)
    c, j = np.indices((channels, channels))
    return ((j >= c - shift) & (j <= c - shift + size - 1)).astype(np.float32)


def _across_channels(x, windows: np.ndarray):
    """For each channel c of (N, C, H, W) x, the sum of x over the channels row c marks."""
    mix = creation.tensor(windows, dtype=x.dtype, device=x.device)
    return (x.permute(0, 2, 3, 1) @ mix.T).permute(0, 3, 1, 2)


class _CrossMapLRN2d(Function):
    @staticmethod
    def forward(ctx, input, size, alpha, beta, k):
        scale = _across_channels(input * input, _forward_windows(input.shape[1], size))
        scale = scale * (alpha / size) + k
        output = input * scale ** -beta
        ctx.save_for_backward(input, output, scale)
        ctx.size, ctx.alpha, ctx.beta = size, alpha, beta
        return output

    @staticmethod
    def backward(ctx, grad):
        input, output, scale = ctx.saved_tensors
        ratio = grad * output / scale
        summed = _across_channels(ratio, _backward_windows(input.shape[1], ctx.size))
        cache = 2 * ctx.alpha * ctx.beta / ctx.size
        return scale ** -ctx.beta * grad - cache * input * summed, None, None, None, None


class CrossMapLRN2d(Module):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1):
        super().__init__()
        self.size, self.alpha, self.beta, self.k = size, alpha, beta, k

    def forward(self, input):
        if input.ndim != 4:
            raise ValueError(f"CrossMapLRN2d: Expected input to be 4D, got {input.ndim}D instead.")
        return _CrossMapLRN2d.apply(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


__all__ = ["CrossMapLRN2d"]
