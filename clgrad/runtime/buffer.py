"""Device memory: `Buffer` objects and the per-device `BufferPool` that recycles them.

Freed memory goes back to the pool rather than to the driver: writing into freshly
allocated memory pays first-touch page faults and is 3-5x slower than reusing a buffer.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from .host import host_room

if TYPE_CHECKING:
    from .device import Device

_MiB = 1 << 20

# Error codes that mean "the device ran out of something", so emptying the pool may help.
_OOM_CODES = {
    cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
    cl.status_code.OUT_OF_RESOURCES,
    cl.status_code.OUT_OF_HOST_MEMORY,
}


class OutOfMemoryError(RuntimeError):
    """A device allocation failed even after the buffer pool was emptied."""


@functools.lru_cache(maxsize=4096)     # a step allocates the same few sizes again and again
def bucket_size(nbytes: int) -> int:
    """Round a request up so that nearby sizes share a free list.

    Steps are 1/16 of the size's power of two (at least 64 bytes), wasting at most ~6%;
    zero-byte requests still get real memory so kernels can take them as arguments.
    """
    nbytes = max(int(nbytes), 1)
    step = max(64, 1 << max(nbytes.bit_length() - 5, 0))
    return -(-nbytes // step) * step


class BufferPool:
    """Free lists of cl memory for one device, keyed by bucket size."""

    def __init__(self, device: Device):
        self.device = device
        self._free: dict[int, list[cl.Buffer]] = {}
        self.cached_bytes = 0
        self.held_bytes = 0         # every allocation from the driver not yet returned to it

    def alloc(self, nbytes: int) -> Buffer:
        size = bucket_size(nbytes)
        free = self._free.get(size)
        if free:
            self.cached_bytes -= size
            return Buffer(self, nbytes, size, free.pop())
        return Buffer(self, nbytes, size, self._create(nbytes, size))

    def free_all(self) -> None:
        """Drop every cached allocation, returning the memory to the driver."""
        for free in self._free.values():
            for mem in free:
                mem.release()
        self._free.clear()
        self.held_bytes -= self.cached_bytes
        self.cached_bytes = 0

    def _put(self, size: int, mem: cl.Buffer) -> None:
        self._free.setdefault(size, []).append(mem)
        self.cached_bytes += size

    def _create(self, nbytes: int, size: int) -> cl.Buffer:
        if size > self.device.max_mem_alloc_size:
            raise self._oom(nbytes, f"above the device's largest single allocation "
                                    f"({self.device.max_mem_alloc_size / _MiB:.1f} MiB)")
        try:
            return self._try_create(size)
        except (cl.Error, _NoRoom) as first:
            if not _is_oom(first):
                raise
        self.free_all()
        try:
            return self._try_create(size)
        except (cl.Error, _NoRoom) as second:
            if not _is_oom(second):
                raise
            raise self._oom(nbytes, f"even after freeing the buffer pool: {second}") from second

    def _try_create(self, size: int) -> cl.Buffer:
        if self.device.kind == "cpu":
            # A CPU device's memory is the host's, and PoCL reserves it lazily: past the
            # host's limit it would crash at first touch instead of failing here.
            room, limit = host_room()
            if size > room:
                raise _NoRoom(f"{size / _MiB:.1f} MiB more would pass {limit}")
        mem = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, size)
        self.held_bytes += size
        return mem

    def _oom(self, nbytes: int, why: str) -> OutOfMemoryError:
        return OutOfMemoryError(
            f"out of memory allocating {nbytes} bytes ({nbytes / _MiB:.1f} MiB) "
            f"on {self.device!r}, which holds {self.held_bytes / _MiB:.1f} MiB for clgrad "
            f"({self.cached_bytes / _MiB:.1f} MiB of it free in its pool): {why}")


class _NoRoom(Exception):
    """The host has no room for an allocation (its memory or the address-space limit)."""


def _is_oom(error: Exception) -> bool:
    return isinstance(error, (cl.MemoryError, _NoRoom)) or \
        getattr(error, "code", None) in _OOM_CODES


class Buffer:
    """`nbytes` of memory on one device; its memory returns to the pool when released or
    garbage-collected."""

    __slots__ = ("pool", "nbytes", "_size", "mem", "_pending_write")
    transfers = 0       # copies to or from the host so far, all buffers together (for jit)

    def __init__(self, pool: BufferPool, nbytes: int, size: int, mem: cl.Buffer):
        self.pool = pool
        self.nbytes = int(nbytes)
        self._size = size
        self.mem = mem
        # The non-blocking upload's event keeps the host array alive until the copy is done.
        self._pending_write: cl.Event | None = None

    @property
    def device(self) -> Device:
        return self.pool.device

    def write(self, array: np.ndarray) -> Buffer:
        """Copy a host array in without waiting; later kernels on the in-order queue see it."""
        array = np.ascontiguousarray(array)
        self._check_size(array, "write")
        Buffer.transfers += 1
        if array.nbytes:
            self._pending_write = cl.enqueue_copy(
                self.device.queue, self._live_mem(), array, is_blocking=False)
        return self

    def read(self, out: np.ndarray) -> np.ndarray:
        """Copy into `out` (contiguous), waiting for every kernel queued before."""
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("Buffer.read needs a writeable C-contiguous array")
        self._check_size(out, "read")
        Buffer.transfers += 1
        if out.nbytes:
            cl.enqueue_copy(self.device.queue, out, self._live_mem(), is_blocking=True)
        self._pending_write = None
        return out

    def release(self) -> None:
        """Give the memory back to the pool now; the Buffer is unusable afterwards."""
        if self.mem is not None:
            self._pending_write = None  # waits for an upload still in flight
            self.pool._put(self._size, self.mem)
            self.mem = None

    def __del__(self) -> None:
        self.release()

    def _live_mem(self) -> cl.Buffer:
        if self.mem is None:
            raise RuntimeError("use of a released Buffer")
        return self.mem

    def _check_size(self, array: np.ndarray, what: str) -> None:
        if array.nbytes > self.nbytes:
            raise ValueError(f"Buffer.{what}: array of {array.nbytes} bytes does not fit "
                             f"a buffer of {self.nbytes} bytes")

    def __repr__(self) -> str:
        state = "released" if self.mem is None else f"{self.nbytes} bytes"
        return f"<Buffer {state} on {self.device.spec}>"
