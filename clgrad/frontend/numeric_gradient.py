"""torch.gradient: the derivative of sampled values along each dim, by central differences
inside and one-sided differences of first or second order at the two ends, the samples spaced
evenly (a number per dim) or at given coordinates (a 1-D tensor per dim). Written with slices
and arithmetic, so it is differentiable and fuses."""
from __future__ import annotations

from ..compiler import dtype as dt
from .joining import cat
from .operands import is_tensor, normalize_dim


def _dims(input, dim) -> list[int]:
    if dim is None:
        return list(range(input.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    axes = [normalize_dim("gradient", d, input.ndim) for d in dims]
    for a in axes:
        if axes.count(a) > 1:
            raise RuntimeError(f"dim {a} appears multiple times in the list of dims")
    return axes


def _spacings(input, spacing, dim, axes) -> list:
    """One spacing per axis: a number, or a 1-D tensor of coordinates."""
    if is_tensor(spacing) and spacing.ndim == 0:
        spacing = spacing.item()
    if not isinstance(spacing, (list, tuple)):
        return [spacing] * len(axes)
    if len(spacing) != len(axes):
        if dim is None:
            raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar, or "
                               f"a list of length equal to 'self.dim() = {input.ndim}', since dim "
                               f"argument was not given, but got a list of length "
                               f"{len(spacing)}")
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or it's "
                           f"spacing and dim arguments to have the same length, but got a "
                           f"spacing argument of length {len(spacing)} and a dim argument of "
                           f"length {len(axes)}.")
    return list(spacing)


def _along(coefficient, ndim: int, axis: int):
    """A 1-D tensor of coefficients, one per position along axis, broadcast over the rest."""
    return coefficient.reshape((-1,) + (1,) * (ndim - 1 - axis))


def _uniform(f, axis: int, h, edge_order: int):
    n = f.shape[axis]
    at = lambda start, length=1: f.narrow(axis, start, length)   # noqa: E731
    inner = (at(2, n - 2) - at(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / h, (at(n - 1) - at(n - 2)) / h
    else:
        first = (-1.5 * at(0) + 2 * at(1) - 0.5 * at(2)) / h
        last = (0.5 * at(n - 3) - 2 * at(n - 2) + 1.5 * at(n - 1)) / h
    return cat([first, inner, last], axis)


def _at_coordinates(f, axis: int, x, edge_order: int):
    n, ndim = f.shape[axis], f.ndim
    at = lambda start, length=1: f.narrow(axis, start, length)   # noqa: E731
    dx = x[1:] - x[:-1]
    a, b = _along(dx[:-1], ndim, axis), _along(dx[1:], ndim, axis)
    inner = -b / (a * (a + b)) * at(0, n - 2) + (b - a) / (a * b) * at(1, n - 2) \
        + a / (b * (a + b)) * at(2, n - 2)
    if edge_order == 1:
        first, last = (at(1) - at(0)) / dx[0], (at(n - 1) - at(n - 2)) / dx[-1]
    else:
        h1, h2 = dx[0], dx[1]
        first = -(2 * h1 + h2) / (h1 * (h1 + h2)) * at(0) + (h1 + h2) / (h1 * h2) * at(1) \
            - h1 / (h2 * (h1 + h2)) * at(2)
        h1, h2 = dx[-2], dx[-1]
        last = h2 / (h1 * (h1 + h2)) * at(n - 3) - (h1 + h2) / (h1 * h2) * at(n - 2) \
            + (2 * h2 + h1) / (h2 * (h1 + h2)) * at(n - 1)
    return cat([first, inner, last], axis)


def gradient(input, *, spacing=1, dim=None, edge_order: int = 1):
    """The estimated derivative of input along each dim in dim (all by default), as a tuple."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    axes = _dims(input, dim)
    spacings = _spacings(input, spacing, dim, axes)
    if any(input.shape[a] < edge_order + 1 for a in axes):
        raise RuntimeError("torch.gradient expected each dimension size to be at least "
                           "edge_order+1")
    f = input if input.dtype.is_float else input.to(dt.DEFAULT_FLOAT)
    out = []
    for axis, h in zip(axes, spacings):
        if not is_tensor(h):
            out.append(_uniform(f, axis, h, edge_order))
            continue
        if h.ndim != 1 or h.shape[0] != input.shape[axis]:
            raise RuntimeError(f"torch.gradient expected each tensor to be a 1-D tensor of the "
                               f"size of its dim, {input.shape[axis]}, but got a tensor of "
                               f"shape {list(h.shape)} for dim {axis}")
        x = h if h.dtype.is_float else h.to(f.dtype)
        out.append(_at_coordinates(f, axis, x, edge_order))
    return tuple(out)


FUNCTIONS = {"gradient": gradient}
