"""cg.iinfo and cg.finfo: the limits of the integer and floating-point dtypes, as torch's."""
from __future__ import annotations

import math

from ..compiler import dtype as dt


class iinfo:  # noqa: N801  (torch's name)
    def __init__(self, type: dt.DType):  # noqa: A002  (torch's argument name)
        if type.kind != "i":
            raise TypeError(f"iinfo: expected an integer dtype, got {type!r}"
                            + ("; use finfo for floating point types" if type.is_float else ""))
        self.bits = 8 * type.itemsize
        self.min = -(1 << (self.bits - 1)) if type.is_signed else 0
        self.max = (1 << (self.bits - 1)) - 1 if type.is_signed else (1 << self.bits) - 1
        self.dtype = type.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min:g}, max={self.max:g}, dtype={self.dtype})"


class finfo:  # noqa: N801  (torch's name)
    def __init__(self, type: dt.DType | None = None):  # noqa: A002  (torch's argument name)
        type = type or dt.DEFAULT_FLOAT
        if not type.is_float:
            raise TypeError(f"finfo: expected a floating point dtype, got {type!r}; use iinfo "
                            f"for integer types")
        mantissa, _, bottom = dt.FLOAT_FORMATS[type]
        self.bits = 8 * type.itemsize
        self.eps = 2.0 ** -mantissa
        self.max = dt.largest_finite(type)
        self.min = -self.max
        self.smallest_normal = self.tiny = 2.0 ** bottom
        self.resolution = 10.0 ** -math.floor(mantissa * math.log10(2))
        self.dtype = type.name

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, "
                f"eps={self.eps:g}, smallest_normal={self.smallest_normal:g}, "
                f"tiny={self.tiny:g}, dtype={self.dtype})")
