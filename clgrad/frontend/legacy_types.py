"""PyTorch's legacy tensor types, which tutorials still use: cg.FloatTensor([1, 2]) makes a
tensor, cg.LongTensor(2, 3) one of that shape, isinstance(t, cg.FloatTensor) asks t's dtype,
and t.type() names t's type while t.type(cg.DoubleTensor) converts t."""
from __future__ import annotations

from ..compiler import dtype as dt
from . import creation, elementwise as ew
from .tensor import Tensor


class _LegacyTensorType(type):
    """A type per dtype: calling it makes a tensor of that dtype; isinstance checks dtype."""

    def __new__(mcs, name, bases, namespace, dtype: str = ""):
        cls = super().__new__(mcs, name, bases, namespace)
        cls._dtype_name = dtype
        return cls

    @property
    def dtype(cls) -> dt.DType:
        dtype = getattr(dt, cls._dtype_name, None)
        if not isinstance(dtype, dt.DType):
            raise TypeError(f"{cls.__name__}: clgrad has no dtype {cls._dtype_name}")
        return dtype

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype

    def __call__(cls, *args, device=None):
        """From data (a sequence, array or tensor of this dtype) or from sizes (zeros: PyTorch
        leaves them uninitialised)."""
        if len(args) == 1 and isinstance(args[0], Tensor):
            if args[0].dtype != cls.dtype:
                raise TypeError(f"expected {cls.dtype.name} (got {args[0].dtype.name})")
            return args[0]
        if len(args) == 1 and not isinstance(args[0], int) and not _is_size(args[0]):
            return creation.tensor(args[0], dtype=cls.dtype, device=device)
        return creation.zeros(*args if args else (0,), dtype=cls.dtype, device=device)


def _is_size(arg) -> bool:
    """A shape (cg.Size, a tuple subclass) rather than data, as PyTorch tells them apart."""
    return isinstance(arg, tuple) and type(arg) is not tuple


class FloatTensor(metaclass=_LegacyTensorType, dtype="float32"):
    """float32 tensors."""


class DoubleTensor(metaclass=_LegacyTensorType, dtype="float64"):
    """float64 tensors."""


class HalfTensor(metaclass=_LegacyTensorType, dtype="float16"):
    """float16 tensors."""


class BFloat16Tensor(metaclass=_LegacyTensorType, dtype="bfloat16"):
    """bfloat16 tensors."""


class ByteTensor(metaclass=_LegacyTensorType, dtype="uint8"):
    """uint8 tensors."""


class CharTensor(metaclass=_LegacyTensorType, dtype="int8"):
    """int8 tensors."""


class ShortTensor(metaclass=_LegacyTensorType, dtype="int16"):
    """int16 tensors."""


class IntTensor(metaclass=_LegacyTensorType, dtype="int32"):
    """int32 tensors."""


class LongTensor(metaclass=_LegacyTensorType, dtype="int64"):
    """int64 tensors."""


class BoolTensor(metaclass=_LegacyTensorType, dtype="bool_"):
    """bool tensors."""


LEGACY_TYPES = {cls.__name__: cls for cls in (
    FloatTensor, DoubleTensor, HalfTensor, BFloat16Tensor, ByteTensor, CharTensor, ShortTensor,
    IntTensor, LongTensor, BoolTensor)}


def type_(self, dtype=None, non_blocking: bool = False):
    """With no dtype, the name of self's legacy type ("clgrad.FloatTensor"); else self as that
    dtype, given as a dtype, a legacy type or its name ("torch.DoubleTensor" ports as is)."""
    if dtype is None:
        names = [name for name, cls in LEGACY_TYPES.items()
                 if getattr(dt, cls._dtype_name, None) == self.dtype]
        return f"clgrad.{names[0] if names else self.dtype.name}"
    if isinstance(dtype, str):
        name = dtype.rsplit(".", 1)[-1]
        if name not in LEGACY_TYPES:
            raise ValueError(f"type: invalid type: '{dtype}'")
        dtype = LEGACY_TYPES[name]
    if isinstance(dtype, _LegacyTensorType):
        dtype = dtype.dtype
    return ew.cast(self, dtype)


METHODS = [("type", type_)]
