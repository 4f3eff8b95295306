"""torch.* products beyond matmul (kron, tensordot, cross, linalg.vecdot; the add-and-multiply
forms are in add_products.py), composed of matmul, broadcasting and sums."""
from __future__ import annotations

import functools
import math

from .add_products import METHODS as _ADD_PRODUCTS
from .joining import stack
from .matrices import torch_name
from .operands import broadcast_shape, is_tensor, normalize_dim


def inner(input, other):
    """The sum over the last dims of both: input's leading dims, then other's."""
    if input.ndim == 0 or other.ndim == 0:
        return input * other
    if input.shape[-1] != other.shape[-1]:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but "
                           f"got shapes {list(input.shape)} and {list(other.shape)}")
    return tensordot(input, other, ([-1], [-1]))


def vdot(input, other):
    return input.dot(other)        # (real tensors: no conjugate)


def kron(input, other):
    """Each element of input times all of other, laid out blockwise: the dims interleaved as
    (a0, b0, a1, b1, ...) and merged pairwise."""
    ndim = max(input.ndim, other.ndim)
    a = input.reshape((1,) * (ndim - input.ndim) + tuple(input.shape))
    b = other.reshape((1,) * (ndim - other.ndim) + tuple(other.shape))
    a = a.reshape(tuple(d for s in a.shape for d in (s, 1)))
    b = b.reshape(tuple(d for s in b.shape for d in (1, s)))
    return (a * b).reshape(tuple(x * y for x, y in zip(a.shape[::2], b.shape[1::2])))


def tensordot(a, b, dims=2):
    """Contracts dims of a with dims of b: the free dims of each are flattened and the product is
    one matmul."""
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        dims_a, dims_b = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    dims_a = [normalize_dim("tensordot", d, a.ndim) for d in dims_a]
    dims_b = [normalize_dim("tensordot", d, b.ndim) for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size "
                               f"{a.shape[da]} in dim {da} and second has size {b.shape[db]} "
                               f"in dim {db}")
    free_a = [d for d in range(a.ndim) if d not in dims_a]
    free_b = [d for d in range(b.ndim) if d not in dims_b]
    size = math.prod(a.shape[d] for d in dims_a)
    rows, cols = (tuple(t.shape[d] for d in free) for t, free in ((a, free_a), (b, free_b)))
    left = a.permute(*free_a, *dims_a).reshape(math.prod(rows), size)
    right = b.permute(*dims_b, *free_b).reshape(size, math.prod(cols))
    return (left @ right).reshape(rows + cols)


def chain_matmul(*matrices):
    if not matrices:
        raise RuntimeError("chain_matmul(): Expected one or more matrices")
    for m in matrices:
        if m.ndim != 2:
            raise RuntimeError(f"Tensor dimension is {m.ndim}, expected 2 instead.")
    return functools.reduce(lambda x, y: x.mm(y), matrices) if len(matrices) > 1 \
        else matrices[0].clone()


def cross(input, other, dim=None):
    """The cross product of 3-vectors along dim (torch.cross's default: the first dim of size
    3), broadcasting the other dims."""
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shape("cross", input.shape, other.shape)
    if dim is None:
        dim = next((d for d, s in enumerate(shape) if s == 3), None)
        if dim is None:
            raise RuntimeError("no dimension of size 3 in input")
    return _cross(input.expand(shape), other.expand(shape), dim)


def linalg_cross(input, other, *, dim=-1):
    if input.ndim != other.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    shape = broadcast_shape("linalg.cross", input.shape, other.shape)
    return _cross(input.expand(shape), other.expand(shape), dim)


def _cross(a, b, dim: int):
    axis = normalize_dim("linalg.cross", dim, a.ndim)
    if a.shape[axis] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got "
                           f"{a.shape[axis]} and {b.shape[axis]}")
    a0, a1, a2 = a.unbind(axis)
    b0, b1, b2 = b.unbind(axis)
    return stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis)


def vecdot(x, y, *, dim: int = -1):
    """linalg.vecdot: the sum of x * y over dim, x and y broadcast (real tensors: no
    conjugate); two 1-d tensors are vdot's, whose dim is not read, as PyTorch's."""
    for name, position, t in (("x", 1, x), ("y", 2, y)):
        if not is_tensor(t):
            raise TypeError(f"linalg_vecdot(): argument '{name}' (position {position}) must be "
                            f"Tensor, not {type(t).__name__}")
    if not x.dtype.is_float:
        raise RuntimeError(f"linalg.vecdot: Expected a floating point or complex tensor as "
                           f"input. Got {torch_name(x.dtype)}")
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found "
                           f"x of type {torch_name(x.dtype)} and y of type {torch_name(y.dtype)} "
                           f"instead")
    if x.ndim == 1 and y.ndim == 1:
        return vdot(x, y)
    return (x * y).sum(dim)


def dist(input, other, p=2):
    return (input - other).norm(p)


def ger(input, vec2):
    return input.outer(vec2)


METHODS = [
    *_ADD_PRODUCTS, ("inner", inner), ("vdot", vdot), ("kron", kron), ("cross", cross),
    ("dist", dist), ("ger", ger),
]

FUNCTIONS = {"tensordot": tensordot, "chain_matmul": chain_matmul,
             **{name: fn for name, fn in METHODS}}
