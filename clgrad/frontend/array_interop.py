"""Tensors over other objects' memory: asarray (a tensor, a NumPy array, a sequence),
frombuffer (anything with the buffer protocol) and from_file (a file's bytes). On a CPU device
they share that memory, as from_numpy does, wherever from_numpy can (creation.from_numpy says
where it copies)."""
from __future__ import annotations

import os

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
    if dtype == dt.bool_ and np.any(array.view(np.uint8) > 1):
        # clgrad's bools are bytes of 0 or 1: a copy, any nonzero byte True as PyTorch reads it
        array = array.view(np.uint8) != 0
    return creation.from_numpy(array, requires_grad=requires_grad)


def _file_error(filename: str, mode: str, error: OSError) -> RuntimeError:
    return RuntimeError(f"unable to open file <{filename}> in {mode} mode: {error.strerror} "
                        f"({error.errno})")


def _mapped(filename: str, nbytes: int) -> np.ndarray:
    """The file's first nbytes, mapped into memory that writes back to it (the file made, or
    grown with zeros, to hold them)."""
    try:
        with open(filename, "ab"):      # made if missing; never truncated
            pass
        if os.path.getsize(filename) < nbytes:
            os.truncate(filename, nbytes)
        return np.memmap(filename, np.uint8, "r+", shape=(nbytes,))
    except OSError as error:
        raise _file_error(filename, "read-write", error) from None


def _read(filename: str, nbytes: int) -> np.ndarray:
    """A copy of the file's first nbytes."""
    try:
        with open(filename, "rb") as file:
            data = file.read(nbytes)
    except OSError as error:
        raise _file_error(filename, "read-only", error) from None
    if len(data) < nbytes:
        raise RuntimeError(f"file <{filename}> size <{os.path.getsize(filename)}> is smaller "
                           f"than the required mapping size <{nbytes}>")
    return np.frombuffer(bytearray(data), np.uint8)


def from_file(filename, shared: bool | None = None, size: int = 0, *, dtype=None,
              layout=None, device=None, pin_memory: bool = False,
              requires_grad: bool = False):
    """A 1-D tensor of size elements of dtype (the default float dtype) read from the file's
    first bytes. With shared=True the tensor is the file's memory, mapped: its in-place
    changes are written to the file (made, or grown, to hold size elements), which a CPU
    device alone can share; otherwise it is a copy of the file's bytes."""
    if not isinstance(filename, (str, bytes)):
        raise TypeError(f"from_file(): argument 'filename' (position 1) must be str, not "
                        f"{type(filename).__name__}")
    name = os.fsdecode(filename)
    dtype = creation._resolve_dtype(dtype) or dt.DEFAULT_FLOAT
    device = get_device(device)
    nbytes = size * dtype.itemsize
    if size < 0:
        raise RuntimeError(f"unable to mmap {nbytes} bytes from file <{name}>: Cannot allocate "
                           f"memory (12)")
    if size == 0:
        return creation.empty(0, dtype=dtype, device=device, requires_grad=requires_grad)
    storage = dt.storage_numpy(dtype)
    if shared:
        if not device.shares_host_memory or dtype == dt.bfloat16:
            why = "NumPy has no bfloat16 to map it as" if device.shares_host_memory else \
                f"{device.spec} cannot use host memory as its own"
            raise NotImplementedError(f"from_file: shared=True maps the file's memory into the "
                                      f"tensor, which clgrad cannot do here: {why} "
                                      f"(shared=False reads a copy)")
        values = _mapped(name, nbytes).view(storage)
        if dtype == dt.bool_ and np.any(values > 1):
            raise NotImplementedError(f"from_file: shared=True maps the file's bytes as bools, "
                                      f"which clgrad stores as 0 or 1, and <{name}> holds "
                                      f"others (shared=False reads them, any nonzero byte as "
                                      f"True)")
    else:
        values = _read(name, nbytes).view(storage)
        if dtype == dt.bool_:       # (any nonzero byte is True, as PyTorch reads it)
            values = (values != 0).view(storage)
    if dtype == dt.bfloat16:        # (NumPy has no bfloat16: its values are uploaded)
        return creation.tensor(dt.decode(values, dtype), dtype=dtype, device=device,
                               requires_grad=requires_grad)
    return creation.from_numpy(dt.decode(values, dtype), device=device,
                               requires_grad=requires_grad)


FUNCTIONS = {"asarray": asarray, "frombuffer": frombuffer, "from_file": from_file}
