"""Element types of the IR and PyTorch's type-promotion rules."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True, eq=False)     # the dtypes are singletons: identity hashes fast
class DType:
    name: str          # the user-facing name: float32
    short: str         # the IR's name: f32
    ctype: str         # OpenCL C scalar type used in registers
    storage: str       # OpenCL C type in global memory (bool is stored as uchar)
    itemsize: int
    kind: str          # "b", "i" or "f": PyTorch's promotion categories
    np: type           # the NumPy type of its values (float32 for bfloat16, which NumPy lacks)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_narrow_int(self) -> bool:
        """An integer narrower than its int registers: results wrap to its width."""
        return self.kind == "i" and self.itemsize < _REGISTER_SIZE[self.ctype]

    @property
    def is_16_bit_float(self) -> bool:
        """float16 or bfloat16: held in float registers, rounded to the dtype after each op."""
        return self.kind == "f" and self.itemsize == 2

    @property
    def register_size(self) -> int:
        return _REGISTER_SIZE[self.ctype]

    @property
    def is_signed(self) -> bool:
        return self is not uint8 and self is not bool_

    def __repr__(self) -> str:
        return f"clgrad.{self.name}"

    def __reduce__(self):       # copies and pickles are the module's singleton itself
        return "bool_" if self.name == "bool" else self.name


_REGISTER_SIZE = {"int": 4, "long": 8, "float": 4, "double": 8}

# Narrow integers and bool are computed in int registers (wrapped back to their width after
# each op that can leave it); float16 and bfloat16 in float registers.
bool_ = DType("bool", "b8", "int", "uchar", 1, "b", np.bool_)
uint8 = DType("uint8", "u8", "int", "uchar", 1, "i", np.uint8)
int8 = DType("int8", "i8", "int", "char", 1, "i", np.int8)
int16 = DType("int16", "i16", "int", "short", 2, "i", np.int16)
int32 = DType("int32", "i32", "int", "int", 4, "i", np.int32)
int64 = DType("int64", "i64", "long", "long", 8, "i", np.int64)
float16 = DType("float16", "f16", "float", "half", 2, "f", np.float16)
bfloat16 = DType("bfloat16", "bf16", "float", "ushort", 2, "f", np.float32)
float32 = DType("float32", "f32", "float", "float", 4, "f", np.float32)
float64 = DType("float64", "f64", "double", "double", 8, "f", np.float64)

ALL = (bool_, uint8, int8, int16, int32, int64, float16, bfloat16, float32, float64)
BY_SHORT = {d.short: d for d in ALL}
_BY_NUMPY = {np.dtype(d.np): d for d in ALL if d is not bfloat16}
_KIND_RANK = {"b": 0, "i": 1, "f": 2}
DEFAULT_FLOAT = float32
DEFAULT_INT = int64
# (mantissa bits, exponent of the largest finite value, of the smallest normal) per float dtype
FLOAT_FORMATS = {float16: (10, 15, -14), bfloat16: (7, 127, -126),
                 float32: (23, 127, -126), float64: (52, 1023, -1022)}


def largest_finite(dtype: DType) -> float:
    """The largest finite value of a float dtype (NumPy's finfo has no bfloat16)."""
    mantissa, top, _ = FLOAT_FORMATS[dtype]
    return (2 - 2.0 ** -mantissa) * 2.0 ** top


def from_numpy(np_dtype) -> DType:
    """The clgrad dtype for a NumPy dtype; other widths map to their nearest supported type."""
    np_dtype = np.dtype(np_dtype)
    if np_dtype in _BY_NUMPY:
        return _BY_NUMPY[np_dtype]
    if np_dtype.kind in "iu":
        return int64 if np_dtype.itemsize > 4 or np_dtype == np.uint32 else int32
    raise TypeError(f"unsupported NumPy dtype {np_dtype}; clgrad supports "
                    f"{', '.join(d.name for d in ALL if d is not bfloat16)}")


def storage_numpy(dtype: DType) -> type:
    """The NumPy type of a buffer's elements: bool as uint8, bfloat16 as its 16 bits."""
    return {bool_: np.uint8, bfloat16: np.uint16}.get(dtype, dtype.np)


def round_bfloat16(x: np.ndarray) -> np.ndarray:
    """float32 values rounded to the nearest bfloat16 (ties to even), as bits; NaN stays NaN."""
    x = np.asarray(x, dtype=np.float32)
    # (ascontiguousarray makes a 0-d array 1-d: a bfloat16 tensor of a number had shape (1,))
    bits = np.ascontiguousarray(x).view(np.uint32).reshape(x.shape)
    rounded = (bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), rounded.astype(np.uint16))


def encode(values: np.ndarray, dtype: DType) -> np.ndarray:
    """Host values as a buffer stores them."""
    if dtype is bfloat16:
        return round_bfloat16(np.asarray(values, dtype=np.float32))
    return np.asarray(values, dtype=dtype.np).astype(storage_numpy(dtype), copy=False)


def decode(stored: np.ndarray, dtype: DType) -> np.ndarray:
    """A buffer's elements as values of dtype.np."""
    if dtype is bfloat16:
        return (stored.astype(np.uint32) << np.uint32(16)).view(np.float32)
    return stored.view(np.bool_) if dtype is bool_ else stored


def scalar(value, dtype: DType):
    """A Python number as a value of dtype: integers wrap to its width, floats round to a
    16-bit float's, as a cast of the number in PyTorch (x + 0.1, x < 0.1, a fill of 0.1)."""
    if dtype is bool_:
        return bool(value)
    if dtype.is_float:
        return rounded(float(value), dtype) if dtype.is_16_bit_float else float(value)
    value = int(value)
    if dtype.itemsize < 8:
        bits = 8 * dtype.itemsize
        value &= (1 << bits) - 1
        if dtype.is_signed and value >= 1 << (bits - 1):
            value -= 1 << bits
    return value


def rounded(value: float, dtype: DType) -> float:
    """A float rounded to dtype's nearest value, as PyTorch casts a number to a tensor's dtype
    (past a 16-bit float's range: an infinity)."""
    if dtype is bfloat16:
        return float(decode(round_bfloat16(np.float32(value).reshape(1)), dtype)[0])
    with np.errstate(over="ignore"):
        return float(np.asarray(value, dtype=dtype.np))


def register_bitcast(a: DType, b: DType) -> bool:
    """Whether a kernel can read a's bits as b's in registers: equal sizes, float16 aside
    (its registers are float, and OpenCL C without cl_khr_fp16 has no half bits)."""
    return a.itemsize == b.itemsize and float16 not in (a, b)


def promote(a: DType, b: DType) -> DType:
    """The common type of two tensors of equal standing (torch.promote_types)."""
    if a == b:
        return a
    if _KIND_RANK[a.kind] != _KIND_RANK[b.kind]:
        return a if _KIND_RANK[a.kind] > _KIND_RANK[b.kind] else b
    if a.itemsize == b.itemsize:    # uint8 and int8, float16 and bfloat16: neither holds both
        return int16 if a.kind == "i" else float32
    return a if a.itemsize > b.itemsize else b


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
