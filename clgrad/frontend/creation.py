"""Creating tensors: from data, constants, ranges and random numbers; moving them."""
from __future__ import annotations

import numpy as np

from .. import engine
from ..compiler import dtype as dt
from ..compiler import ir
from ..runtime import get_device
from . import jit_protocol
from .tensor import Tensor, host_values

_initial_seed = int(np.random.SeedSequence().entropy) % 2**63
_rng = np.random.default_rng(_initial_seed)


def manual_seed(seed: int) -> None:
    """Seeds every random op (randn, rand, dropout, init)."""
    global _rng, _initial_seed
    _initial_seed = int(seed)
    _rng = np.random.default_rng(_initial_seed)


def initial_seed() -> int:
    """The seed of the random ops' stream: manual_seed's, or the one drawn at import."""
    return _initial_seed


def generator() -> np.random.Generator:
    return _rng


def _resolve_dtype(dtype) -> dt.DType | None:
    if dtype is None or isinstance(dtype, dt.DType):
        return dtype
    return dt.from_numpy(dtype)


def _shape(args) -> tuple[int, ...]:
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = tuple(args[0])
    shape = tuple(int(s) for s in args)
    if any(s < 0 for s in shape):
        raise RuntimeError(f"negative dimension in shape {shape}")
    return shape


def from_numpy(array: np.ndarray, device=None, requires_grad: bool = False) -> Tensor:
    """A tensor over array's memory, as torch.from_numpy's: on a CPU device NumPy and clgrad
    see each other's writes, and an in-place op on the tensor lands in the array at once
    (inplace.py). clgrad copies the array instead where it cannot share it: on a GPU, and
    for arrays that are empty, read-only (PyTorch shares those with a warning), not
    C-contiguous (PyTorch keeps their strides) or of a dtype clgrad lacks (uint16, uint32
    and uint64 become int32 or int64). A value still lazy reads the memory when computed."""
    if not isinstance(array, np.ndarray):
        raise TypeError(f"from_numpy: expected np.ndarray (got {_type_name(array)})")
    if any(s < 0 for s in array.strides):
        raise ValueError("from_numpy: At least one stride in the given numpy array is "
                         "negative, and tensors with negative strides are not currently "
                         "supported. (You can probably work around this by making a copy of "
                         "your array with array.copy().)")
    if array.dtype.byteorder not in "=|":
        raise ValueError("from_numpy: given numpy array has byte order different from the "
                         "native byte order. Conversion between byte orders is currently not "
                         "supported.")
    dtype = dt.from_numpy(array.dtype)
    device = _checked_device(device, dtype)
    buffer = device.wrap(array.view(dt.storage_numpy(dtype))) if array.dtype == dtype.np \
        else None
    if buffer is None:
        return _upload(array, dtype, device, requires_grad)
    ref = ir.BufferRef(device, array.nbytes, buffer)
    jit_protocol.uploaded(ref)
    return _leaf(ref, dtype, array.shape, device, requires_grad)


def _type_name(value) -> str:
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def overwrite(t: Tensor, array: np.ndarray) -> None:
    """Writes host values into t's buffer in place, on the device's queue after the kernels
    launched before (an optimizer's per-step scalars). t must hold a buffer of its own."""
    engine.storage(t.node.arg).write(dt.encode(array, t.dtype))
    jit_protocol.uploaded(t.node.arg)


def alias(t: Tensor) -> Tensor:
    """A tensor reading t's buffer through a node of its own: autograd sees another leaf, and
    nothing is copied (an embedding's padding row, which no gradient reaches)."""
    t.realize()
    ref = t.node.arg
    shared = ir.BufferRef(ref.device, ref.nbytes, engine.storage(ref))
    return Tensor(ir.buffer(shared, t.dtype, t.shape), t.device)


def _upload(array: np.ndarray, dtype: dt.DType, device, requires_grad: bool) -> Tensor:
    device = _checked_device(device, dtype)
    stored = np.asarray(dt.encode(array, dtype), order="C")  # ascontiguousarray makes 0-d 1-d
    if np.may_share_memory(stored, array):
        stored = stored.copy()  # the upload reads it later; the caller may change it before
    ref = ir.BufferRef(device, max(stored.nbytes, dtype.itemsize))
    if stored.size:
        engine.storage(ref).write(stored)
    jit_protocol.uploaded(ref)
    return _leaf(ref, dtype, stored.shape, device, requires_grad)


def _checked_device(device, dtype: dt.DType):
    device = get_device(device)
    if dtype == dt.float64 and not device.has_fp64:
        raise TypeError(f"float64 is not supported by {device.name} ({device.spec})")
    return device


def _leaf(ref: ir.BufferRef, dtype: dt.DType, shape, device, requires_grad: bool) -> Tensor:
    t = Tensor(ir.buffer(ref, dtype, shape), device)
    if requires_grad:
        t.requires_grad_()
    return t


def tensor(data, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if isinstance(data, Tensor):
        data = host_values(data.detach())
    array = np.asarray(data)
    dtype = _resolve_dtype(dtype) or _infer_dtype(data, array)
    return _upload(array, dtype, device, requires_grad)


def _infer_dtype(data, array: np.ndarray) -> dt.DType:
    """NumPy arrays keep their dtype; Python numbers follow PyTorch's defaults."""
    if isinstance(data, np.ndarray) or isinstance(data, np.generic):
        return dt.from_numpy(array.dtype)
    if array.dtype.kind == "b":
        return dt.bool_
    if array.dtype.kind in "iu":
        return dt.int64
    if array.dtype.kind == "f":
        return dt.DEFAULT_FLOAT
    raise TypeError(f"tensor: cannot make a tensor from {type(data).__name__} "
                    f"(NumPy sees dtype {array.dtype})")


def full(size, fill_value, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    shape = _shape((size,) if isinstance(size, int) else tuple(size))
    if dtype is None:
        dtype = dt.bool_ if isinstance(fill_value, bool) else \
            dt.int64 if isinstance(fill_value, int) else dt.DEFAULT_FLOAT
    dtype, device = _resolve_dtype(dtype), get_device(device)
    t = Tensor(_filled(fill_value, dtype, shape, device), device)
    return t.requires_grad_() if requires_grad else t


def _filled(value, dtype: dt.DType, shape: tuple[int, ...], device) -> ir.Node:
    """value over shape: read from a buffer (scalar_inputs), so that a loop filling with a
    changing number (a sampler's `full((n,), t)`) keeps its kernels; zeros and ones, which
    never change, and a 0-d fill (whose node would be the kept buffer itself) are constants
    in the source."""
    if value in (0, 1) or not shape or isinstance(value, bool):
        return ir.const(value, dtype, shape)
    from .scalar_inputs import number_node      # (it imports what imports this module)
    return number_node(value, dtype, shape, device)


def zeros(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(_shape(size), 0, dtype or dt.DEFAULT_FLOAT, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return full(_shape(size), 1, dtype or dt.DEFAULT_FLOAT, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(*size, dtype=dtype, device=device, requires_grad=requires_grad)


def _like(t: Tensor, dtype, device):
    return dict(dtype=dtype or t.dtype, device=device or t.device)


def zeros_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return zeros(input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


def ones_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return ones(input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


def full_like(input: Tensor, fill_value, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    t = full(input.shape, fill_value, **_like(input, dtype, device))
    return t.requires_grad_() if requires_grad else t


def empty_like(input: Tensor, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    return empty(input.shape, requires_grad=requires_grad, **_like(input, dtype, device))


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """data as a tensor: a tensor of that dtype and device itself, a NumPy array of that
    dtype over its memory (from_numpy), else a new one."""
    dtype = _resolve_dtype(dtype)
    if isinstance(data, Tensor):
        return data.to(*(a for a in (device, dtype) if a is not None)) if dtype or device \
            else data
    if isinstance(data, np.ndarray):
        shared = from_numpy(data, device)       # (and PyTorch's checks of the array)
        return shared if dtype in (None, shared.dtype) else tensor(data, dtype, device)
    return tensor(data, dtype=dtype, device=device)


def _generator_rng(generator) -> np.random.Generator:
    from .generator import numpy_rng
    return numpy_rng(generator, _rng)


def randn(*size, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    dtype = _resolve_dtype(dtype) or dt.DEFAULT_FLOAT
    values = _generator_rng(generator).standard_normal(_shape(size))
    return _upload(values, dtype, device, requires_grad)


def rand(*size, generator=None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    dtype = _resolve_dtype(dtype) or dt.DEFAULT_FLOAT
    return _upload(_generator_rng(generator).random(_shape(size)), dtype, device, requires_grad)


def randint(low, high=None, size=(), *, generator=None, dtype=None, device=None,
            requires_grad: bool = False) -> Tensor:
    if high is None:
        low, high = 0, low
    values = _generator_rng(generator).integers(low, high, size=_shape(size))
    return _upload(values, _resolve_dtype(dtype) or dt.int64, device, requires_grad)


def randperm(n: int, *, generator=None, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    values = _generator_rng(generator).permutation(n)
    return _upload(values, _resolve_dtype(dtype) or dt.int64, device, requires_grad)


def randn_like(input: Tensor, *, generator=None, dtype=None, device=None,
               requires_grad: bool = False) -> Tensor:
    return randn(input.shape, generator=generator, requires_grad=requires_grad,
                 **_like(input, dtype, device))


def rand_like(input: Tensor, *, generator=None, dtype=None, device=None,
              requires_grad: bool = False) -> Tensor:
    return rand(input.shape, generator=generator, requires_grad=requires_grad,
                **_like(input, dtype, device))


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("arange: step must be nonzero")
    floats = any(isinstance(v, float) for v in (start, end, step))
    dtype = _resolve_dtype(dtype) or (dt.DEFAULT_FLOAT if floats else dt.int64)
    n = max(int(np.ceil((end - start) / step)), 0)
    node = ir.iota(n, dtype if not dtype.is_float else dt.float64)
    if step != 1:
        node = node * step
    if start != 0:
        node = node + start
    t = Tensor(node.cast(dtype), get_device(device))
    return t.requires_grad_() if requires_grad else t


def linspace(start, end, steps: int, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    values = np.linspace(start, end, steps)
    return _upload(values, _resolve_dtype(dtype) or dt.DEFAULT_FLOAT, device, requires_grad)


def logspace(start, end, steps: int, base: float = 10.0, dtype=None, device=None,
             requires_grad: bool = False) -> Tensor:
    values = np.power(float(base), np.linspace(start, end, steps))
    return _upload(values, _resolve_dtype(dtype) or dt.DEFAULT_FLOAT, device, requires_grad)


def normal(mean, std, size=None, *, generator=None, dtype=None, device=None) -> Tensor:
    """Samples of Normal(mean, std): numbers with size, or tensors (broadcast) elementwise."""
    rng = _generator_rng(generator)
    if isinstance(mean, Tensor) or isinstance(std, Tensor):
        like = mean if isinstance(mean, Tensor) else std
        shape = np.broadcast_shapes(*(t.shape for t in (mean, std) if isinstance(t, Tensor)))
        noise = _upload(rng.standard_normal(shape), like.dtype, like.device, False)
        return noise * std + mean
    if size is None:
        raise TypeError("normal(): with a number mean and std, size is required")
    values = rng.normal(mean, std, _shape((size,) if isinstance(size, int) else tuple(size)))
    return _upload(values, _resolve_dtype(dtype) or dt.DEFAULT_FLOAT, device, False)


def eye(n: int, m: int | None = None, dtype=None, device=None, requires_grad: bool = False) -> Tensor:
    m = n if m is None else m
    rows = ir.iota(n, dt.int64).reshape((n, 1)).expand((n, m))
    cols = ir.iota(m, dt.int64).reshape((1, m)).expand((n, m))
    dtype = _resolve_dtype(dtype) or dt.DEFAULT_FLOAT
    t = Tensor(rows.eq(cols).cast(dtype), get_device(device))
    return t.requires_grad_() if requires_grad else t


def to(t: Tensor, *args, **kwargs) -> Tensor:
    """t.to(device), t.to(dtype), t.to(device, dtype) or t.to(other)."""
    from . import elementwise as ew
    device, dtype = kwargs.get("device"), kwargs.get("dtype")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, dt.DType):
            dtype = a
        else:
            device = a
    out = t
    if device is not None and get_device(device) != t.device:
        from .backward import record
        moved = _upload(host_values(t.detach()), t.dtype, get_device(device), False)
        out = record("to", moved.node, moved.device, [t])
    if dtype is not None:
        out = ew.cast(out, _resolve_dtype(dtype))
    return out
