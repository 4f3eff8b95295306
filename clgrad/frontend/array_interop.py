"""Tensors over other objects' memory: asarray (a tensor, a NumPy array, a sequence) and
frombuffer (anything with the buffer protocol). On a CPU device they share that memory, as
from_numpy does, wherever from_numpy can (creation.from_numpy says where it copies)."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from ..runtime import get_device
from . import creation
from .tensor import Tensor


def _alias_error(kind: str, have: dt.DType, want: dt.DType) -> ValueError:
    return ValueError(f"can't alias {kind} with dtype '{have.name}' into dtype '{want.name}'.")


def _from_tensor(obj: Tensor, dtype, device, copy):
    changes = (dtype is not None and dtype != obj.dtype) or \
        (device is not None and get_device(device) != obj.device)
    if copy is False and changes:
        raise _alias_error("tensor", obj.dtype, dtype or obj.dtype)
    if changes:
        return obj.to(*(a for a in (device, dtype) if a is not None))
    return obj.clone() if copy else obj


def _from_array(obj: np.ndarray, dtype, device, copy):
    have = dt.from_numpy(obj.dtype)
    if copy is False and dtype not in (None, have):
        raise _alias_error("tensor", have, dtype)
    if copy:
        return creation.tensor(obj.copy(), dtype=dtype, device=device)
    return creation.as_tensor(obj, dtype=dtype, device=device)


def asarray(obj, *, dtype=None, device=None, copy: bool | None = None,
            requires_grad: bool | None = None):
    """obj as a tensor, sharing its memory where it can (a tensor itself, a NumPy array's
    memory), copying it where copy=True or where it must (another dtype or device; copy=False
    then raises). requires_grad=None keeps a tensor's own (PyTorch 2.13's default)."""
    dtype = creation._resolve_dtype(dtype)
    if isinstance(obj, Tensor):
        out = _from_tensor(obj, dtype, device, copy)
    elif isinstance(obj, np.ndarray):
        out = _from_array(obj, dtype, device, copy)
    elif copy is False:
        raise ValueError("can't alias arbitrary sequence into a tensor.")
    else:
        out = creation.tensor(obj, dtype=dtype, device=device)
    if requires_grad is None or requires_grad == out.requires_grad:
        return out
    if out.is_leaf:     # (PyTorch too sets the flag of the tensor it was given)
        return out.requires_grad_(requires_grad)
    return out.detach().requires_grad_(requires_grad)


def _element_count(length: int, dtype: dt.DType, count: int, offset: int) -> int:
    """How many elements frombuffer reads, once PyTorch's checks of the arguments passed."""
    item = dtype.itemsize
    if length == 0 or count == 0:
        raise ValueError(f"both buffer length ({length}) and count ({count}) must not be 0")
    if not 0 <= offset < length:
        raise ValueError(f"offset ({offset} bytes) must be non-negative and no greater than "
                         f"buffer length ({length} bytes) minus 1")
    if count < 0:
        if (length - offset) % item:
            raise ValueError(f"buffer length ({length - offset} bytes) after offset ({offset} "
                             f"bytes) must be a multiple of element size ({item})")
        return (length - offset) // item
    if count * item > length - offset:
        raise ValueError(f"requested buffer length ({count} * {item} bytes) after offset "
                         f"({offset} bytes) must not be greater than actual buffer length "
                         f"({length} bytes)")
    return count


def frombuffer(buffer, *, dtype, count: int = -1, offset: int = 0,
               requires_grad: bool = False):
    """A 1-D tensor of count elements of dtype read from buffer's bytes from offset on (all
    that follow when count is -1). A writable buffer's memory is shared on a CPU device; a
    read-only one (bytes) is copied, where PyTorch shares it with a warning."""
    try:
        length = memoryview(buffer).nbytes
    except TypeError:
        raise ValueError("object does not implement Python buffer protocol.") from None
    dtype = creation._resolve_dtype(dtype)
    n = _element_count(length, dtype, count, offset)
    if dtype == dt.bfloat16:        # NumPy has no bfloat16: its bits decoded, then uploaded
        bits = np.frombuffer(buffer, dt.storage_numpy(dtype), n, offset)
        return creation.tensor(dt.decode(bits, dtype), dtype=dtype,
                               requires_grad=requires_grad)
    array = np.frombuffer(buffer, dtype.np, n, offset)
    return creation.from_numpy(array, requires_grad=requires_grad)


FUNCTIONS = {"asarray": asarray, "frombuffer": frombuffer}
