"""torch.* functions about dtypes and whole-tensor facts: the default float dtype that creation
ops and int-to-float promotion use, PyTorch's promotion rules as functions, a tensor's bits
read as another dtype (view(dtype)), is_nonzero."""
from __future__ import annotations

from ..compiler import dtype as dt
from . import creation
from .backward import record
from .operands import check_scalar, is_tensor, result_dtype
from .tensor import host_values
from .type_info import finfo, iinfo

# PyTorch's names of the dtypes in its messages (c10::ScalarType)
_SCALAR_TYPE = {dt.bool_: "Bool", dt.uint8: "Byte", dt.int8: "Char", dt.int16: "Short",
                dt.int32: "Int", dt.int64: "Long", dt.float16: "Half", dt.bfloat16: "BFloat16",
                dt.float32: "Float", dt.float64: "Double"}


def get_default_dtype() -> dt.DType:
    return dt.DEFAULT_FLOAT


def set_default_dtype(d) -> None:
    """The dtype of float tensors made without one (creation ops, Python floats, ints promoted
    to float): float32 unless set, as in PyTorch."""
    if not isinstance(d, dt.DType) or not d.is_float:
        raise TypeError(f"only floating-point types are supported as the default type, got {d}")
    dt.DEFAULT_FLOAT = d


def promote_types(type1, type2) -> dt.DType:
    return dt.promote(type1, type2)


def result_type(tensor1, tensor2) -> dt.DType:
    """The dtype of an arithmetic op on both operands (Tensors or Python numbers)."""
    return result_dtype("result_type", (tensor1, tensor2))


def can_cast(from_, to) -> bool:
    """Whether PyTorch's same-kind rule allows it: never to a lower kind (float to int, int to
    bool); any width within a kind."""
    return dt.promote(from_, to).kind == to.kind


def view_as_dtype(input, dtype: dt.DType):
    """input's bits read as dtype. Of equal element sizes, the same shape, computed lazily in
    the kernel that reads it; of other sizes, the last dim holds as many bytes as before, and
    the bits are copied at the call. No gradient flows through, as in PyTorch."""
    if input.dtype.itemsize == dtype.itemsize:
        if dt.register_bitcast(input.dtype, dtype):
            return record("view", input.detach().node.bitcast(dtype), input.device, [])
    else:
        _check_resized_view(input, dtype)
    bits = dt.encode(host_values(input.detach()), input.dtype)
    bits = bits.reshape(bits.shape or (1,)).view(dt.storage_numpy(dtype))
    return creation.tensor(dt.decode(bits, dtype), dtype=dtype, device=input.device)


def _check_resized_view(input, dtype: dt.DType) -> None:
    what = f"to view {_SCALAR_TYPE[input.dtype]} as {_SCALAR_TYPE[dtype]} (different element sizes)"
    if input.ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}")
    if dtype.itemsize > input.dtype.itemsize:
        ratio = dtype.itemsize // input.dtype.itemsize
        if input.shape[-1] % ratio:
            raise RuntimeError(f"self.size(-1) must be divisible by {ratio} {what}, but got "
                               f"{input.shape[-1]}")


def is_nonzero(input) -> bool:
    if not is_tensor(input):
        raise TypeError(f"is_nonzero(): argument 'input' (position 1) must be Tensor, not "
                        f"{type(input).__name__}")
    if input.numel() == 0:
        raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
    if input.numel() > 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(input.item())


def is_same_size(input, other) -> bool:
    return tuple(input.shape) == tuple(other.shape)


def rsub(input, other, *, alpha=1):
    """other - alpha * input."""
    if not is_tensor(other):
        check_scalar("rsub", other)
    return other - (input if alpha == 1 else input * alpha)


METHODS = [("is_nonzero", is_nonzero), ("is_same_size", is_same_size)]

FUNCTIONS = {
    "get_default_dtype": get_default_dtype, "set_default_dtype": set_default_dtype,
    "promote_types": promote_types, "result_type": result_type, "can_cast": can_cast,
    "rsub": rsub, "iinfo": iinfo, "finfo": finfo, **{name: fn for name, fn in METHODS},
}
