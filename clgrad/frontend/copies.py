"""torch.*'s copying forms of the view ops (permute_copy, slice_copy, ...: the view, cloned),
slice_inverse, and the unsafe_ splits, which are the splits themselves: clgrad's views are
already copies-on-write for autograd, so nothing is unsafe to share."""
from __future__ import annotations

from .backward import record
from .shape_functions import split_with_sizes
from .slice_scatters import slice_scatter

VIEW_OPS = ("detach", "diagonal", "expand", "narrow", "permute", "select", "squeeze", "t",
            "transpose", "unsqueeze", "view", "unfold", "as_strided")
SPLITS = ("split", "unbind", "split_with_sizes")


def _copying(view: str):
    def function(input, *args, **kwargs):
        return getattr(input, view)(*args, **kwargs).clone()
    function.__name__ = function.__qualname__ = f"{view}_copy"
    function.__doc__ = f"input.{view}(...) as a new tensor."
    return function


def _copying_pieces(view: str):
    def function(input, *args, **kwargs):
        return tuple(piece.clone() for piece in getattr(input, view)(*args, **kwargs))
    function.__name__ = function.__qualname__ = f"{view}_copy"
    function.__doc__ = f"input.{view}(...), each piece a new tensor."
    return function


def alias_copy(input):
    return input.clone()


def _slice_dim(input, dim: int, step: int) -> int:
    if not input.ndim:
        raise IndexError("slice() cannot be applied to a 0-dim tensor.")
    if not -input.ndim <= dim < input.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got {dim})")
    if step <= 0:
        raise RuntimeError("slice step must be positive")
    return dim % input.ndim


def slice_copy(input, dim: int = 0, start: int | None = None, end: int | None = None,
               step: int = 1):
    """input[..., start:end:step, ...] along dim, as a new tensor (bounds clamped as Python's
    slices are)."""
    dim = _slice_dim(input, dim, step)
    return input[(slice(None),) * dim + (slice(start, end, step),)].clone()


def slice_inverse(input, src, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1):
    """The inverse of slicing: src (the tensor input was sliced from) with input in place of
    its slice start:end:step along dim. PyTorch returns a view of input's memory in src's
    layout, which is that tensor when input is src's slice (a view) and its slice unchanged;
    clgrad's tensors share no memory, so this is slice_scatter(src, input, ...), a new
    tensor. The gradient reaches input only (the slice of the incoming one), as PyTorch's."""
    _slice_dim(src, dim, step)
    scattered = slice_scatter(src, input, dim, start, end, step)
    return record("slice_inverse", scattered.node, input.device, [input])


FUNCTIONS = {f"{view}_copy": _copying(view) for view in VIEW_OPS}
FUNCTIONS.update({f"{view}_copy": _copying_pieces(view) for view in SPLITS})
FUNCTIONS.update(alias_copy=alias_copy, slice_copy=slice_copy, slice_inverse=slice_inverse)
FUNCTIONS.update({"unsafe_split": lambda input, split_size, dim=0: input.split(split_size, dim),
                  "unsafe_chunk": lambda input, chunks, dim=0: input.chunk(chunks, dim),
                  "unsafe_split_with_sizes": split_with_sizes})
for _name in ("unsafe_split", "unsafe_chunk"):
    FUNCTIONS[_name].__name__ = FUNCTIONS[_name].__qualname__ = _name

METHODS = [(name, FUNCTIONS[name]) for name in ("unsafe_split", "unsafe_chunk",
                                                "unsafe_split_with_sizes")] + \
    [("narrow_copy", FUNCTIONS["narrow_copy"]), ("slice_inverse", slice_inverse)]
