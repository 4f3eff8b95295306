"""PyTorch's legacy tensor types, which tutorials still use: cg.FloatTensor([1, 2]) makes a
tensor, cg.LongTensor(2, 3) one of that shape, isinstance(t, cg.FloatTensor) asks t's dtype,
and t.type() names t's type while t.type(cg.DoubleTensor) converts t."""
from __future__ import annotations

import warnings

from ..compiler import dtype as dt
from . import creation, elementwise as ew
from .tensor import Tensor
from .type_functions import set_default_dtype


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


def _named_type(name: str) -> _LegacyTensorType:
    """A legacy type from its dotted name, "torch.DoubleTensor" or "clgrad.DoubleTensor"."""
    module, _, short = name.rpartition(".")
    if module.endswith(".cuda"):
        raise TypeError(f"type {name} not available: clgrad has no CUDA")
    if module not in ("torch", "clgrad"):
        raise ModuleNotFoundError(f"No module named '{module or name}'")
    if short not in LEGACY_TYPES:
        raise AttributeError(f"module '{module}' has no attribute '{short}'")
    return LEGACY_TYPES[short]


def set_default_tensor_type(t, /) -> None:
    """Deprecated in PyTorch for set_default_dtype: a float legacy type (or its name) sets the
    default float dtype."""
    warnings.warn("torch.set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
                  "torch.set_default_dtype() and torch.set_default_device() as alternatives.",
                  UserWarning, stacklevel=2)
    if isinstance(t, str):
        t = _named_type(t)
    if not isinstance(t, _LegacyTensorType):
        raise TypeError("invalid type object: only floating-point types are supported as the "
                        "default type")
    if not t.dtype.is_float:
        raise TypeError("only floating-point types are supported as the default type")
    set_default_dtype(t.dtype)


def typename(obj, /) -> str:
    """The fully qualified name of obj's type; for a tensor, its legacy type's (t.type())."""
    if isinstance(obj, Tensor):
        return obj.type()
    module = getattr(obj, "__module__", "") or ""
    if hasattr(obj, "__qualname__"):
        qualname = obj.__qualname__
    elif hasattr(obj, "__name__"):
        qualname = obj.__name__
    else:
        module, qualname = obj.__class__.__module__ or "", obj.__class__.__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


METHODS = [("type", type_)]
FUNCTIONS = {"set_default_tensor_type": set_default_tensor_type, "typename": typename}
