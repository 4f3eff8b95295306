"""clgrad.nn.init: in-place initialisers with PyTorch's formulas, drawn from cg.manual_seed's
generator. Each replaces the tensor's value (a fresh upload) and returns the tensor."""
from __future__ import annotations

import math

import numpy as np

from ..frontend import creation
from ..frontend.generator import numpy_rng
from ..frontend.inplace import assign


def _fill(tensor, values: np.ndarray):
    return assign(tensor, creation.tensor(values.astype(tensor.dtype.np), dtype=tensor.dtype,
                                          device=tensor.device))


def calculate_gain(nonlinearity: str, param=None) -> float:
    linear = ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
              "conv_transpose3d", "sigmoid")
    if nonlinearity in linear:
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    if tensor.ndim < 2:
        raise ValueError("Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (got shape {tuple(tensor.shape)})")
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _fan(tensor, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(tensor, a: float = 0.0, b: float = 1.0):
    return _fill(tensor, creation.generator().uniform(a, b, tensor.shape))


def normal_(tensor, mean: float = 0.0, std: float = 1.0):
    return _fill(tensor, creation.generator().normal(mean, std, tensor.shape))


def constant_(tensor, val: float):
    return _fill(tensor, np.full(tensor.shape, val))


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def xavier_uniform_(tensor, gain: float = 1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain: float = 1.0):
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def kaiming_uniform_(tensor, a: float = 0, mode: str = "fan_in",
                     nonlinearity: str = "leaky_relu"):
    std = calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu"):
    return normal_(tensor, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode)))


def trunc_normal_(tensor, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0,
                  generator=None):
    """Normal(mean, std) values redrawn until they fall in [a, b] (by inverting the normal's
    CDF over [a, b], as PyTorch does)."""
    rng = numpy_rng(generator, creation.generator())
    cdf_a, cdf_b = (0.5 * (1 + math.erf((bound - mean) / (std * math.sqrt(2))))
                    for bound in (a, b))
    u = rng.uniform(2 * cdf_a - 1, 2 * cdf_b - 1, tensor.shape)
    values = mean + std * math.sqrt(2) * _erfinv(u)
    return _fill(tensor, np.clip(values, a, b))


def _erfinv(y: np.ndarray) -> np.ndarray:
    """The inverse error function by Giles' approximation (NumPy has none), good to float32
    precision, which is all an initialiser needs."""
    w = -np.log1p(-y * y)
    small = w < 5.0
    ws, wl = w - 2.5, np.sqrt(np.maximum(w, 5.0)) - 3.0
    ps = np.polyval([2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                     0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941], ws)
    pl = np.polyval([-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844,
                     0.00573950773, -0.0076224613, 0.00943887047, 1.00167406, 2.83297682], wl)
    return np.where(small, ps, pl) * y


def eye_(tensor):
    """The identity matrix, for a 2-D tensor."""
    if tensor.ndim != 2:
        raise ValueError(f"Only tensors with 2 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    return _fill(tensor, np.eye(*tensor.shape))


def dirac_(tensor, groups: int = 1):
    """The convolution weight (3-, 4- or 5-D) that passes its input's channels through."""
    if tensor.ndim not in (3, 4, 5):
        raise ValueError(f"Only tensors with 3, 4, or 5 dimensions are supported, got shape "
                         f"{tuple(tensor.shape)}")
    out_per_group = tensor.shape[0] // groups
    if tensor.shape[0] % groups:
        raise ValueError("dim 0 must be divisible by groups")
    values = np.zeros(tensor.shape)
    centre = tuple(k // 2 for k in tensor.shape[2:])
    for g in range(groups):
        for d in range(min(out_per_group, tensor.shape[1])):
            values[(g * out_per_group + d, d) + centre] = 1
    return _fill(tensor, values)


def orthogonal_(tensor, gain: float = 1.0, generator=None):
    """A (semi-)orthogonal matrix from the QR decomposition of a normal one, the signs of R's
    diagonal folded into Q so that the result is uniformly distributed, as PyTorch's."""
    if tensor.ndim < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows, cols = tensor.shape[0], tensor.numel() // tensor.shape[0]
    flat = numpy_rng(generator, creation.generator()).normal(0.0, 1.0, (rows, cols))
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q *= np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill(tensor, gain * q.reshape(tensor.shape))


def sparse_(tensor, sparsity: float, std: float = 0.01, generator=None):
    """A 2-D tensor with normal(0, std) values and ceil(sparsity * rows) zeros per column."""
    if tensor.ndim != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rng = numpy_rng(generator, creation.generator())
    rows, cols = tensor.shape
    values = rng.normal(0.0, std, (rows, cols))
    zeros = int(math.ceil(sparsity * rows))
    for c in range(cols):
        values[rng.permutation(rows)[:zeros], c] = 0
    return _fill(tensor, values)
