"""torch.*'s copying forms of the view ops (permute_copy, ...: the view, cloned) and the
unsafe_ splits, which are the splits themselves: clgrad's views are already copies-on-write
for autograd, so nothing is unsafe to share."""
from __future__ import annotations

from .shape_functions import split_with_sizes

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


FUNCTIONS = {f"{view}_copy": _copying(view) for view in VIEW_OPS}
FUNCTIONS.update({f"{view}_copy": _copying_pieces(view) for view in SPLITS})
FUNCTIONS["alias_copy"] = alias_copy
FUNCTIONS.update({"unsafe_split": lambda input, split_size, dim=0: input.split(split_size, dim),
                  "unsafe_chunk": lambda input, chunks, dim=0: input.chunk(chunks, dim),
                  "unsafe_split_with_sizes": split_with_sizes})
for _name in ("unsafe_split", "unsafe_chunk"):
    FUNCTIONS[_name].__name__ = FUNCTIONS[_name].__qualname__ = _name

METHODS = [(name, FUNCTIONS[name]) for name in ("unsafe_split", "unsafe_chunk",
                                                "unsafe_split_with_sizes")] + \
    [("narrow_copy", FUNCTIONS["narrow_copy"])]
