"""cg.Size, the type of a tensor's shape: a tuple of ints, as torch.Size."""
from __future__ import annotations

import math


class Size(tuple):
    """A tuple of ints that prints as clgrad.Size([2, 3]); slices, sums and repeats of it are
    Sizes too, and it equals the plain tuple of its ints."""
    __slots__ = ()

    def __new__(cls, sizes=()):
        sizes = tuple(sizes)
        for i, s in enumerate(sizes):
            if not hasattr(s, "__index__"):
                raise TypeError(f"clgrad.Size() takes an iterable of 'int' (item {i} is "
                                f"'{type(s).__name__}')")
        return super().__new__(cls, (s.__index__() for s in sizes))

    def __repr__(self) -> str:
        return f"clgrad.Size({list(self)})"

    def __getitem__(self, index):
        item = super().__getitem__(index)
        return of(item) if isinstance(index, slice) else item

    def __add__(self, other):
        return of(tuple.__add__(self, other))

    def __radd__(self, other):
        return of(tuple.__add__(other, self))

    def __mul__(self, count):
        return of(tuple.__mul__(self, count))

    __rmul__ = __mul__

    def __reduce__(self):
        return Size, (tuple(self),)

    def numel(self) -> int:
        """The number of elements of a tensor of this shape."""
        return math.prod(self)


def of(shape: tuple[int, ...]) -> Size:
    """A tuple already known to hold ints, as a Size (without Size()'s checks)."""
    return tuple.__new__(Size, shape)
