"""torch.* functions that reshape, split, join and broadcast tensors, composed of the Tensor's
movement methods, cat and stack (no kernels of their own)."""
from __future__ import annotations

import itertools

from ..compiler import dtype as dt
from . import creation
from .elementwise import where
from .joining import cat, stack
from .movement import pad
from .operands import broadcast_shape, is_tensor, normalize_dim


def _tensors(op: str, tensors) -> list:
    if is_tensor(tensors):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, "
                        f"not Tensor")
    return list(tensors)


def _atleast(ndim: int, op: str):
    def grown(t):
        if t.ndim >= ndim:
            return t
        if t.ndim == 0:
            return t.reshape((1,) * ndim)
        if t.ndim == 1:       # a vector is a row; its 3-d form is (1, n, 1)
            return t.reshape(1, -1) if ndim == 2 else t.reshape(1, -1, 1)
        return t.unsqueeze(-1)  # a matrix gains a trailing dim

    def function(*tensors):
        if len(tensors) == 1 and is_tensor(tensors[0]):
            return grown(tensors[0])
        if len(tensors) == 1:
            tensors = tensors[0]
        return tuple(grown(t) for t in tensors)
    function.__name__ = function.__qualname__ = op
    return function


atleast_1d = _atleast(1, "atleast_1d")
atleast_2d = _atleast(2, "atleast_2d")
atleast_3d = _atleast(3, "atleast_3d")


def hstack(tensors):
    tensors = atleast_1d(_tensors("hstack", tensors))
    return cat(tensors, 0 if tensors[0].ndim == 1 else 1)


def vstack(tensors):
    return cat(atleast_2d(_tensors("vstack", tensors)), 0)


def dstack(tensors):
    return cat(atleast_3d(_tensors("dstack", tensors)), 2)


def column_stack(tensors):
    tensors = _tensors("column_stack", tensors)
    return hstack([t.reshape(-1, 1) if t.ndim <= 1 else t for t in tensors])


def concat(tensors, dim: int = 0, *, axis: int | None = None):
    return cat(tensors, dim if axis is None else axis)


def tensor_split(input, indices_or_sections, dim: int = 0):
    """Pieces of input along dim: n sections of near-equal size (the first size % n one longer),
    or the pieces between the given indices."""
    axis = normalize_dim("tensor_split", dim, input.ndim)
    size = input.shape[axis]
    if is_tensor(indices_or_sections):
        indices_or_sections = indices_or_sections.tolist()
    if isinstance(indices_or_sections, int):
        sections = indices_or_sections
        if sections <= 0:
            raise RuntimeError(f"tensor_split: number of sections must be larger than 0, got "
                               f"{sections}")
        small, extra = divmod(size, sections)
        lengths = [small + 1] * extra + [small] * (sections - extra)
        bounds = list(itertools.accumulate([0] + lengths))
    else:
        bounds = [0] + [min(max(i + size if i < 0 else i, 0), size)
                        for i in indices_or_sections] + [size]
    return tuple(input.narrow(axis, start, max(end - start, 0))
                 for start, end in zip(bounds, bounds[1:]))


def split_with_sizes(input, split_sizes, dim: int = 0):
    axis = normalize_dim("split_with_sizes", dim, input.ndim)
    if sum(split_sizes) != input.shape[axis] or any(s < 0 for s in split_sizes):
        raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to "
                           f"{input.shape[axis]} (input tensor's size at dimension {dim}), but "
                           f"got split_sizes={list(split_sizes)}")
    return input.split(list(split_sizes), axis)


def _split_at(op: str, min_ndim: int, dim: int):
    def function(input, indices_or_sections):
        if input.ndim < min_ndim:
            raise RuntimeError(f"torch.{op} requires a tensor with at least {min_ndim} "
                               f"dimension, but got a tensor with {input.ndim} dimensions!")
        axis = 0 if op == "hsplit" and input.ndim == 1 else dim
        if isinstance(indices_or_sections, int) and input.shape[axis] % indices_or_sections:
            raise RuntimeError(f"torch.{op} attempted to split along dimension {axis}, but the "
                               f"size of the dimension {input.shape[axis]} is not divisible by "
                               f"the split_size {indices_or_sections}!")
        return tensor_split(input, indices_or_sections, axis)
    function.__name__ = function.__qualname__ = op
    return function


hsplit = _split_at("hsplit", 1, 1)
vsplit = _split_at("vsplit", 2, 0)
dsplit = _split_at("dsplit", 3, 2)


def unflatten(input, dim: int, sizes):
    axis = normalize_dim("unflatten", dim, input.ndim)
    sizes = tuple(sizes)
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    known = 1
    for s in sizes:
        known *= s if s != -1 else 1
    if -1 not in sizes and known != input.shape[axis]:
        raise RuntimeError(f"unflatten: Provided sizes {list(sizes)} don't multiply up to the "
                           f"size of dim {dim} ({input.shape[axis]}) in the input tensor")
    return input.reshape(input.shape[:axis] + sizes + input.shape[axis + 1:])


def broadcast_shapes(*shapes):
    shapes = [(s,) if isinstance(s, int) else tuple(s) for s in shapes]
    return broadcast_shape("broadcast_shapes", *shapes) if shapes else ()


def broadcast_tensors(*tensors):
    tensors = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else tensors
    shape = broadcast_shape("broadcast_tensors", *(t.shape for t in tensors))
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing: str = "ij"):
    tensors = tensors[0] if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)) \
        else tensors
    if indexing not in ("ij", "xy"):
        raise RuntimeError(f"torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but "
                           f"received: {indexing}")
    if any(t.ndim > 1 for t in tensors):
        raise RuntimeError("torch.meshgrid: Expected 0D or 1D tensor in the tensor list")
    vectors = [t.reshape(-1) for t in tensors]
    swap = indexing == "xy" and len(vectors) >= 2
    if swap:                # xy: the first two outputs' dims are swapped (Cartesian indexing)
        vectors[0], vectors[1] = vectors[1], vectors[0]
    shape = tuple(v.shape[0] for v in vectors)
    grids = []
    for axis, v in enumerate(vectors):
        view = [1] * len(vectors)
        view[axis] = -1
        grids.append(v.reshape(view).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def cartesian_prod(*tensors):
    if len(tensors) == 1:
        return tensors[0]
    return stack([g.reshape(-1) for g in meshgrid(*tensors, indexing="ij")], 1)


def fliplr(input):
    if input.ndim < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return input.flip(1)


def flipud(input):
    if input.ndim < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return input.flip(0)


def rot90(input, k: int = 1, dims=(0, 1)):
    if len(dims) != 2:
        raise RuntimeError(f"expected total rotation dims == 2, but got dims = {len(dims)}")
    if input.ndim < 2:
        raise RuntimeError(f"expected total dims >= 2, but got total dims = {input.ndim}")
    d0, d1 = (normalize_dim("rot90", d, input.ndim) for d in dims)
    if d0 == d1:
        raise RuntimeError(f"expected rotation dims to be different, but got dim0 = {d0} and "
                           f"dim1 = {d1}")
    k %= 4
    if k == 1:
        return input.flip(d1).transpose(d0, d1)
    if k == 2:
        return input.flip((d0, d1))
    if k == 3:
        return input.flip(d0).transpose(d0, d1)
    return input.clone()


def diag_embed(input, offset: int = 0, dim1: int = -2, dim2: int = -1):
    """Each last-dim vector of input as the offset diagonal of a square matrix whose rows and
    columns are dims dim1 and dim2 of the result."""
    ndim = input.ndim + 1
    d1, d2 = normalize_dim("diag_embed", dim1, ndim), normalize_dim("diag_embed", dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    m, k = input.shape[-1], abs(offset)
    eye = creation.eye(m, dtype=dt.bool_, device=input.device)
    square = where(eye, input.unsqueeze(-1), 0)      # where, not a product: inf stays inf
    # shift the diagonal k columns right (offset > 0) or k rows down (offset < 0)
    square = pad(square, (k, 0, 0, k) if offset >= 0 else (0, k, k, 0))
    return square.movedim((-2, -1), (d1, d2))


def diagflat(input, offset: int = 0):
    return diag_embed(input.reshape(-1), offset, 0, 1)


METHODS = [
    ("tensor_split", tensor_split), ("hsplit", hsplit), ("vsplit", vsplit),
    ("dsplit", dsplit), ("split_with_sizes", split_with_sizes), ("unflatten", unflatten),
    ("fliplr", fliplr), ("flipud", flipud), ("rot90", rot90), ("diag_embed", diag_embed),
    ("diagflat", diagflat),
]

FUNCTIONS = {
    "atleast_1d": atleast_1d, "atleast_2d": atleast_2d, "atleast_3d": atleast_3d,
    "hstack": hstack, "vstack": vstack, "row_stack": vstack, "dstack": dstack,
    "column_stack": column_stack, "concat": concat, "concatenate": concat,
    "broadcast_shapes": broadcast_shapes, "broadcast_tensors": broadcast_tensors,
    "meshgrid": meshgrid, "cartesian_prod": cartesian_prod,
    **{name: fn for name, fn in METHODS},
}
