"""Memory layout as PyTorch reports it. Every clgrad tensor is dense and reads as row-major
(Tensor.stride), so there is one layout, cg.strided, one dim order, 0..ndim-1, and the
creation functions that take strides or a physical order (empty_strided, empty_permuted)
make an ordinary tensor of the logical size: its values are unspecified either way."""
from __future__ import annotations

from . import creation
from .backward import output_nr


class layout:  # noqa: N801  (torch.layout's name)
    """How a tensor's elements are stored: clgrad has one, cg.strided (dense)."""

    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return f"clgrad.{self._name}"

    def __reduce__(self):       # pickles as the one instance
        return self._name


strided = layout("strided")


def _layout(self) -> layout:
    return strided


def dim_order(self, *, ambiguity_check=False) -> tuple[int, ...]:
    """(0, 1, ..., ndim-1), the outermost dim first. With ambiguity_check, a tensor whose order
    is not unique raises: one with a dim of size 1 (it can sit anywhere) or a later dim of
    size 0 (PyTorch gives its neighbour an equal stride). clgrad has no memory formats, so a
    list of them, PyTorch's other form of ambiguity_check, can only be empty."""
    if not isinstance(ambiguity_check, (bool, list)) or \
            (isinstance(ambiguity_check, list) and ambiguity_check):
        raise TypeError("The ambiguity_check argument must be a bool or a list of memory "
                        "formats.")
    shape = self.shape
    ambiguous = any(n == 1 for n in shape) or any(n == 0 for n in shape[1:])
    if (ambiguity_check is True and ambiguous) or isinstance(ambiguity_check, list):
        raise RuntimeError("The tensor does not have unique dim order, or cannot map to exact "
                           "one of the given memory formats.")
    return tuple(range(self.ndim))


def _check_strides(size, stride) -> None:
    if len(size) != len(stride):
        raise RuntimeError(f"dimensionality of sizes ({len(size)}) must match dimensionality of "
                           f"strides ({len(stride)})")


def empty_strided(size, stride, *, dtype=None, layout=None, device=None,
                  requires_grad: bool = False, pin_memory: bool = False):
    """An uninitialised tensor of size (row-major here, whatever stride asks)."""
    _check_strides(tuple(size), tuple(stride))
    return creation.empty(tuple(size), dtype=dtype, device=device, requires_grad=requires_grad)


def new_empty_strided(self, size, stride, dtype=None, device=None, requires_grad: bool = False,
                      layout=None, pin_memory: bool = False):
    return empty_strided(size, stride, dtype=dtype or self.dtype, device=device or self.device,
                         requires_grad=requires_grad)


def empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None,
                   requires_grad: bool = False, pin_memory: bool = False):
    """An uninitialised tensor of size, which PyTorch would store with its dims in the order
    physical_layout (row-major here)."""
    size, order = tuple(size), tuple(physical_layout)
    if len(size) != len(order):
        raise RuntimeError(f"Number of dimensions in size does not match the length of the "
                           f"physical_layout; i.e. len(size) = {len(size)} is not equal to "
                           f"len(physical_layout) = {len(order)}")
    for k, d in enumerate(order):
        if not 0 <= d < len(size):
            raise RuntimeError(f"Dimension out of range (expected to be between 0 and "
                               f"{len(size) - 1}, but got {d} at index {k}).  NB: negative dims "
                               f"not currently supported; file an issue if you want it.")
    if len(set(order)) != len(order):
        raise RuntimeError("Duplicate dim not allowed")
    return creation.empty(size, dtype=dtype, device=device, requires_grad=requires_grad)


METHODS = [("layout", property(_layout)), ("output_nr", property(output_nr)),
           ("dim_order", dim_order), ("new_empty_strided", new_empty_strided)]

FUNCTIONS = {"strided": strided, "layout": layout, "empty_strided": empty_strided,
             "empty_permuted": empty_permuted}
