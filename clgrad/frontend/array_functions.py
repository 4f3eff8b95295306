"""torch.* array functions composed of other ops: vander (and linalg.vander), linalg.diagonal,
trapezoid, combinations, repeat_interleave, sum_to_size, unfold (sliding windows), cov,
corrcoef, renorm, block_diag, unravel_index, nonzero_static."""
from __future__ import annotations

import itertools

import numpy as np

from ..compiler import dtype as dt
from . import creation
from .composite_methods import _in_place
from .elementwise import where
from .joining import cat, stack
from .matrices import torch_name
from .movement import pad
from .operands import is_tensor, normalize_dim


def vander(x, N: int | None = None, increasing: bool = False):
    if x.ndim != 1:
        raise RuntimeError("x must be a one-dimensional tensor.")
    n = x.shape[0] if N is None else N
    if n < 0:
        raise RuntimeError("N must be non-negative.")
    columns = [creation.ones(x.shape[0], 1, dtype=x.dtype, device=x.device)][:n]
    if n > 1:       # x^1 .. x^(n-1) as running products, as PyTorch (no pow: exact for ints)
        columns.append(x.unsqueeze(1).expand(x.shape[0], n - 1).cumprod(1))
    out = cat(columns, 1) if columns else creation.zeros(x.shape[0], 0, dtype=x.dtype,
                                                        device=x.device)
    return out if increasing else out.flip(1)


def linalg_vander(x, *, N: int | None = None):
    """linalg.vander: the powers x^0 .. x^(N-1) of each element along a new last dim (N: the
    last dim's size by default; a 0-d x is one element), as PyTorch's running products
    (cumprod: an integer x gives int64)."""
    if not (x.dtype in (dt.float32, dt.float64) or x.dtype.kind == "i"):
        raise RuntimeError(f"linalg.vander supports floating point, complex, and integer "
                           f"tensors, but got {torch_name(x.dtype)}")
    if N is not None and (isinstance(N, bool) or not isinstance(N, int)):
        raise TypeError(f"linalg_vander(): argument 'N' must be int, not {type(N).__name__}")
    rows = x.unsqueeze(-1) if x.ndim == 0 else x
    n = rows.shape[-1] if N is None else N
    if n <= 1:
        raise RuntimeError(f"N must be greater than 1. (linalg.vander of x of shape "
                           f"{tuple(x.shape)}: N = {n})")
    powers = rows.unsqueeze(-1).expand(*rows.shape, n - 1).cumprod(-1)
    ones = creation.ones(*rows.shape, 1, dtype=powers.dtype, device=x.device)
    return cat([ones, powers], -1)


def linalg_diagonal(A, *, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """linalg.diagonal: Tensor.diagonal of the last two dims by default, its options
    keywords."""
    first, second = (normalize_dim("linalg.diagonal", d, A.ndim) for d in (dim1, dim2))
    if first == second:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2} "
                           f"(linalg.diagonal of shape {tuple(A.shape)})")
    return A.diagonal(offset, dim1, dim2)


def trapezoid(y, x=None, *, dx=None, dim: int = -1):
    """The trapezoid rule along dim: the mean of neighbouring samples times their spacing."""
    axis = normalize_dim("trapezoid", dim, y.ndim)
    n = y.shape[axis]
    if n == 0:
        return y.sum(axis)
    mids = (y.narrow(axis, 1, n - 1) + y.narrow(axis, 0, n - 1)) / 2
    if x is None:
        return mids.sum(axis) * (1 if dx is None else dx)
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError("trapezoid: There must be one `x` value for each sample point")
        spacing = (x[1:] - x[:-1]).reshape((-1,) + (1,) * (y.ndim - 1 - axis))
    else:
        xaxis = normalize_dim("trapezoid", dim, x.ndim)
        spacing = x.narrow(xaxis, 1, n - 1) - x.narrow(xaxis, 0, n - 1)
    return (mids * spacing).sum(axis)


def trapz(y, x=None, *, dx=None, dim: int = -1):
    return trapezoid(y, x, dx=dx, dim=dim)


def combinations(input, r: int = 2, with_replacement: bool = False):
    """The r-element combinations of a vector's elements, one row each, in itertools' order."""
    if input.ndim != 1:
        raise RuntimeError(f"Expect a 1D vector, but got shape {list(input.shape)}")
    if r < 0:
        raise RuntimeError(f"Expect a non-negative number, but got {r}")
    if r == 0:
        return input.new_empty(0)
    choose = itertools.combinations_with_replacement if with_replacement else \
        itertools.combinations
    rows = list(choose(range(input.shape[0]), r))
    index = creation.tensor(np.array(rows, np.int64).reshape(len(rows), r), device=input.device)
    return input[index]


def repeat_interleave(input, repeats=None, dim: int | None = None, *,
                      output_size: int | None = None):
    """Each element (or slice along dim) repeated; tensor repeats are read on the host, which
    decides the output size."""
    if repeats is None:         # repeat_interleave(repeats): indices repeated by their counts
        counts = input.detach().numpy()
        return creation.tensor(np.repeat(np.arange(len(counts)), counts), device=input.device)
    if dim is None:
        input, dim = input.reshape(-1), 0
    axis = normalize_dim("repeat_interleave", dim, input.ndim)
    size = input.shape[axis]
    counts = repeats.detach().numpy().reshape(-1) if is_tensor(repeats) else np.array([repeats])
    if len(counts) not in (1, size):
        raise RuntimeError(f"repeats must have the same size as input along dim, but got "
                           f"repeats.size(0) = {len(counts)} and input.size({dim}) = {size}")
    if (counts < 0).any():
        raise RuntimeError("repeats can not be negative")
    index = np.repeat(np.arange(size), np.broadcast_to(counts, (size,)))
    return input.index_select(axis, creation.tensor(index.astype(np.int64), device=input.device))


def sum_to_size(input, *size):
    """input summed over the dims where size is 1 (or absent) so that it has size."""
    size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
    lead = input.ndim - len(size)
    if lead < 0 or any(s != 1 and s != input.shape[lead + i] for i, s in enumerate(size)):
        raise RuntimeError(f"size {list(size)} is not expandable to size "
                           f"{list(input.shape)}.")
    axes = tuple(range(lead)) + tuple(lead + i for i, s in enumerate(size)
                                      if s == 1 and input.shape[lead + i] != 1)
    return input.sum(axes, keepdim=True).reshape(size) if axes else input.reshape(size)


def unfold(input, dimension: int, size: int, step: int):
    """The windows of size elements every step along dimension, as a new last dim (Tensor.unfold,
    a copy here rather than a view)."""
    axis = normalize_dim("unfold", dimension, max(input.ndim, 1))
    length = input.shape[axis] if input.ndim else 1
    if size > length:
        raise RuntimeError(f"maximum size for tensor at dimension {axis} is {length} but size "
                           f"is {size}")
    if step <= 0:
        raise RuntimeError(f"step is {step} but must be > 0")
    starts = creation.arange(0, length - size + 1, step, device=input.device)
    index = starts.unsqueeze(1) + creation.arange(size, device=input.device)
    if input.ndim == 0:
        return input.reshape(1)[index.reshape(-1)]
    windows = input.movedim(axis, -1)[..., index]      # (..., windows, size)
    return windows.movedim(-2, axis)


def cov(input, *, correction: int = 1, fweights=None, aweights=None):
    """The covariance of the variables in input's rows, observed in its columns, with
    observations weighted by fweights (counts) and aweights (importances)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an "
                           f"input with {input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    x = x if x.dtype.is_float else x.to(dt.DEFAULT_FLOAT)
    weights = None
    for name, w in (("fweights", fweights), ("aweights", aweights)):
        if w is not None:
            if w.ndim > 1 or w.numel() != x.shape[1]:
                raise RuntimeError(f"cov(): expected {name} to have one dimension and the same "
                                   f"number of elements as the observations")
            weights = w if weights is None else weights * w
    if weights is None:
        total = x.shape[1]
        mean = x.mean(1, keepdim=True)
        norm = total - correction
        centered = x - mean
        weighted = centered
    else:
        weights = weights.to(x.dtype)
        total = weights.sum()
        mean = (x * weights).sum(1, keepdim=True) / total
        norm = total - (correction * (weights * aweights).sum() / total if aweights is not None
                        else correction)
        centered = x - mean
        weighted = centered * weights
    if not is_tensor(norm):
        norm = max(norm, 0)
    else:
        norm = norm.clamp(min=0)
    c = weighted @ centered.transpose(0, 1) / norm
    return c.squeeze()         # one variable: a scalar, as PyTorch


def corrcoef(input):
    c = cov(input)
    if c.ndim == 0:
        return c / c
    d = c.diagonal().sqrt()
    return (c / d.unsqueeze(1) / d.unsqueeze(0)).clamp(-1, 1)


def renorm(input, p: float, dim: int, maxnorm: float):
    """Each slice along dim whose p-norm exceeds maxnorm scaled down to that norm."""
    if p <= 0:
        raise RuntimeError("renorm: non-positive-norm not supported")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    axis = normalize_dim("renorm", dim, input.ndim)
    others = tuple(d for d in range(input.ndim) if d != axis)
    norms = input.norm(p, others, keepdim=True) if others else input.abs()
    factor = where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
    return input * factor


def block_diag(*tensors):
    """The matrices (scalars and vectors as 1-row matrices) along the diagonal of one matrix,
    zeros elsewhere: each padded to the full width, then stacked by rows."""
    mats = [t.reshape(1, -1) if t.ndim < 2 else t for t in tensors]
    for k, m in enumerate(mats):
        if m.ndim != 2:
            raise RuntimeError(f"torch.block_diag: Input tensors must have 2 or fewer "
                               f"dimensions. Input {k} has {m.ndim} dimensions")
    if not mats:
        return creation.zeros(1, 0)
    width, left = sum(m.shape[1] for m in mats), 0
    rows = []
    for m in mats:
        rows.append(pad(m, (left, width - left - m.shape[1])))
        left += m.shape[1]
    return cat(rows, 0)


def unravel_index(indices, shape):
    """The coordinates in shape of each flat index, one tensor per dim."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    if not is_tensor(indices):
        indices = creation.tensor(indices)
    if indices.dtype.is_float or indices.dtype == dt.bool_:
        raise TypeError(f"expected 'indices' to be integer dtype, but got {indices.dtype.name}")
    if any(s < 0 for s in shape):
        raise ValueError("'shape' cannot have negative values, but got "
                         f"{tuple(shape)}")
    coords, rest = [], indices
    for size in reversed(shape):
        coords.append(rest % size if size else rest)
        rest = rest // size if size else rest
    return tuple(reversed(coords))


def nonzero_static(input, *, size: int, fill_value: int = -1):
    """nonzero(input)'s first `size` rows, then rows of fill_value: a shape known before the
    values, so it is computed on the device, never read back. Each nonzero element's flat
    index is added into the row of its rank among them; those past `size` go to one more
    row, which is dropped."""
    if type(size) is not int:
        raise TypeError(f"nonzero_static(): argument 'size' must be int, not "
                        f"{type(size).__name__}")
    if size < 0:
        raise RuntimeError("nonzero_static: 'size' must be an non-negative integer")
    device = input.device
    if input.ndim == 0:     # rows of no coordinates
        return creation.zeros(size, 0, dtype=dt.int64, device=device)
    nonzero = input.detach().reshape(-1).ne(0)
    rank = nonzero.cumsum(0) - 1
    row = where(nonzero & (rank < size), rank, size)
    flat = creation.zeros(size + 1, dtype=dt.int64, device=device).scatter_add(
        0, row, creation.arange(nonzero.numel(), dtype=dt.int64, device=device))[:size]
    found = creation.arange(size, device=device) < nonzero.sum()
    return where(found.unsqueeze(1), stack(unravel_index(flat, input.shape), 1), fill_value)


METHODS = [
    ("repeat_interleave", repeat_interleave), ("sum_to_size", sum_to_size),
    ("unfold", unfold), ("cov", cov), ("corrcoef", corrcoef), ("renorm", renorm),
    ("renorm_", _in_place("renorm")), ("nonzero_static", nonzero_static),
]

FUNCTIONS = {
    "vander": vander, "trapezoid": trapezoid, "trapz": trapz, "combinations": combinations,
    "repeat_interleave": repeat_interleave, "cov": cov, "corrcoef": corrcoef, "renorm": renorm,
    "block_diag": block_diag, "unravel_index": unravel_index, "nonzero_static": nonzero_static,
}
