"""More torch.* creation functions: window functions, triangle indices, range, scalar_tensor,
randint_like. Their values depend on no tensor, so NumPy computes them in float64 and they are
uploaded in the requested dtype."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from . import creation


def _window(op: str, window_length: int, periodic: bool, dtype, device, requires_grad, values):
    if window_length < 0:
        raise RuntimeError(f"{op} requires non-negative window_length, got "
                           f"window_length={window_length}")
    dtype = creation._resolve_dtype(dtype) or dt.DEFAULT_FLOAT
    if not dtype.is_float:
        raise RuntimeError(f"{op} expects floating point dtypes, got: {dtype.name}")
    if window_length <= 1:
        array = np.ones(window_length)
    else:   # a periodic window is the symmetric one a sample longer, without its last sample
        n = window_length + 1 if periodic else window_length
        array = values(np.arange(n) / (n - 1))[:window_length]
    return creation.tensor(array, dtype=dtype, device=device, requires_grad=requires_grad)


def _cosine_sum(*coefficients):
    """sum_k (-1)^k a_k cos(2 pi k x), x from 0 to 1 across the window."""
    return lambda x: sum((-1) ** k * a * np.cos(2 * np.pi * k * x)
                         for k, a in enumerate(coefficients))


def hann_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                requires_grad: bool = False):
    return _window("hann_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.5, 0.5))


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype=None, device=None, requires_grad: bool = False):
    return _window("hamming_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(alpha, beta))


def blackman_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False):
    return _window("blackman_window", window_length, periodic, dtype, device, requires_grad,
                   _cosine_sum(0.42, 0.5, 0.08))


def bartlett_window(window_length: int, periodic: bool = True, *, dtype=None, device=None,
                    requires_grad: bool = False):
    return _window("bartlett_window", window_length, periodic, dtype, device, requires_grad,
                   lambda x: 1 - np.abs(2 * x - 1))


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *, dtype=None,
                  device=None, requires_grad: bool = False):
    return _window("kaiser_window", window_length, periodic, dtype, device, requires_grad,
                   lambda x: np.i0(beta * np.sqrt(np.clip(1 - (2 * x - 1) ** 2, 0, None)))
                   / np.i0(beta))


def _triangle_indices(op: str, lower: bool, row: int, col: int, offset: int, dtype, device):
    if row < 0 or col < 0:
        raise RuntimeError(f"{op}: row must be non-negative, got {row}" if row < 0 else
                           f"{op}: col must be non-negative, got {col}")
    rows, cols = np.tril_indices(row, offset, col) if lower else np.triu_indices(row, offset, col)
    dtype = creation._resolve_dtype(dtype) or dt.int64
    return creation.tensor(np.stack([rows, cols]).reshape(2, -1), dtype=dtype, device=device)


def tril_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    return _triangle_indices("tril_indices", True, row, col, offset, dtype, device)


def triu_indices(row: int, col: int, offset: int = 0, *, dtype=None, device=None):
    return _triangle_indices("triu_indices", False, row, col, offset, dtype, device)


def range(start, end, step=1, *, dtype=None, device=None,  # noqa: A001  (torch's)
          requires_grad: bool = False):
    """Deprecated in PyTorch but used: like arange with end included, default float dtype."""
    if step == 0:
        raise RuntimeError("range: step must be nonzero")
    n = int(np.floor((end - start) / step)) + 1
    if n <= 0:
        raise RuntimeError("upper bound and lower bound inconsistent with step sign")
    dtype = creation._resolve_dtype(dtype) or dt.DEFAULT_FLOAT
    return creation.tensor(start + step * np.arange(n, dtype=np.float64), dtype=dtype,
                           device=device, requires_grad=requires_grad)


def scalar_tensor(s, *, dtype=None, device=None, requires_grad: bool = False):
    return creation.full((), s, dtype=creation._resolve_dtype(dtype) or dt.DEFAULT_FLOAT,
                         device=device, requires_grad=requires_grad)


def randint_like(input, low=0, high=None, *, generator=None, dtype=None, device=None,
                 requires_grad: bool = False):
    if high is None:
        low, high = 0, low
    return creation.randint(low, high, input.shape, generator=generator,
                            dtype=dtype or input.dtype, device=device or input.device,
                            requires_grad=requires_grad)


FUNCTIONS = {fn.__name__: fn for fn in (
    hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window, tril_indices,
    triu_indices, range, scalar_tensor, randint_like)}
