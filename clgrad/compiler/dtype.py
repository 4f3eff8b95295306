"""Element types of the IR and PyTorch's type-promotion rules."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)     # the six dtypes are singletons: identity hashes fast
class DType:
    name: str          # the user-facing name: float32
    short: str         # the IR's name: f32
    ctype: str         # OpenCL C scalar type used in registers
    storage: str       # OpenCL C type in global memory (bool is stored as uchar)
    itemsize: int
    kind: str          # "b", "i" or "f": PyTorch's promotion categories
    np: type

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    def __repr__(self) -> str:
        return f"clgrad.{self.name}"

    def __reduce__(self):       # copies and pickles are the module's singleton itself
        return "bool_" if self.name == "bool" else self.name


bool_ = DType("bool", "b8", "int", "uchar", 1, "b", np.bool_)
int32 = DType("int32", "i32", "int", "int", 4, "i", np.int32)
int64 = DType("int64", "i64", "long", "long", 8, "i", np.int64)
float16 = DType("float16", "f16", "float", "half", 2, "f", np.float16)
float32 = DType("float32", "f32", "float", "float", 4, "f", np.float32)
float64 = DType("float64", "f64", "double", "double", 8, "f", np.float64)

ALL = (bool_, int32, int64, float16, float32, float64)
BY_SHORT = {d.short: d for d in ALL}
_BY_NUMPY = {np.dtype(d.np): d for d in ALL}
_KIND_RANK = {"b": 0, "i": 1, "f": 2}
DEFAULT_FLOAT = float32
DEFAULT_INT = int64


def from_numpy(np_dtype) -> DType:
    """The clgrad dtype for a NumPy dtype; other widths map to their nearest supported type."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _BY_NUMPY:
        return _BY_NUMPY[np_dtype]
    if np_dtype.kind in "iu":
        return int64 if np_dtype.itemsize > 4 or np_dtype == np.uint32 else int32
    raise TypeError(f"unsupported NumPy dtype {np_dtype}; clgrad supports "
                    f"{', '.join(d.name for d in ALL)}")


def promote(a: DType, b: DType) -> DType:
    """The common type of two tensors of equal standing (torch.promote_types)."""
    if a == b:
        return a
    if _KIND_RANK[a.kind] != _KIND_RANK[b.kind]:
        return a if _KIND_RANK[a.kind] > _KIND_RANK[b.kind] else b
    return a if a.itemsize >= b.itemsize else b


def result_type(dims: list[DType], zero_dims: list[DType], scalars: list[type]) -> DType:
    """PyTorch's rule: dimensioned tensors decide, then 0-d tensors, then Python scalars;
    a lower tier only counts when it raises the category (bool < int < float)."""
    result = None
    for tier in (dims, zero_dims):
        if not tier:
            continue
        tier_type = tier[0]
        for dt in tier[1:]:
            tier_type = promote(tier_type, dt)
        if result is None or _KIND_RANK[tier_type.kind] > _KIND_RANK[result.kind]:
            result = tier_type
    for value_type in scalars:
        dt = _scalar_dtype(value_type)
        if result is None or _KIND_RANK[dt.kind] > _KIND_RANK[result.kind]:
            result = dt
    assert result is not None, "result_type needs at least one operand"
    return result


def _scalar_dtype(value_type: type) -> DType:
    if value_type is bool:
        return bool_
    if value_type is int:
        return DEFAULT_INT
    return DEFAULT_FLOAT
