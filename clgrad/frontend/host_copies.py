"""Copies between a buffer and host memory, by the buffer's ref: what a tensor's values read
back and what host work between a jitted step's kernels writes (jit_protocol.on_host)."""
from __future__ import annotations

import numpy as np

from .. import engine
from ..compiler import dtype as dt
from ..compiler import ir
from . import jit_protocol


def read_host(ref: ir.BufferRef, dtype: dt.DType, shape) -> np.ndarray:
    """The value ref's buffer holds, as a NumPy array of its own, of dtype.np."""
    out = np.empty(shape, dtype=dt.storage_numpy(dtype))
    if out.size:
        engine.storage(ref).read(out)
        jit_protocol.downloaded()
    return dt.decode(out, dtype)


def write_host(ref: ir.BufferRef, values: np.ndarray, dtype: dt.DType) -> None:
    """values into ref's buffer (one no node names yet), after the kernels launched before."""
    stored = np.asarray(dt.encode(np.asarray(values), dtype), order="C")
    if np.may_share_memory(stored, values):
        stored = stored.copy()  # the copy reads it later; the caller may change it before
    if stored.size:
        engine.storage(ref).write(stored)
