"""Device memory: `Buffer` objects and the per-device `BufferPool` that recycles them.

Freed memory goes back to the pool rather than to the driver: writing into freshly
allocated memory pays first-touch page faults and is 3-5x slower than reusing a buffer. On a
CPU device a buffer of 4 MiB or more asks the host for huge pages before its first touch
(host.advise_huge_pages): kernels stream through it faster.

On a CPU device the host's memory is the device's, and NumPy can share it both ways: a
Buffer can be made over an array's own memory (`BufferPool.wrap`), and `Buffer.host_view`
shows a buffer's memory to NumPy without a copy. Such a buffer is `shared`: whatever writes
it changes what the other side reads, so it is never recycled or handed to another result
while NumPy can still see it.
"""

from __future__ import annotations

import functools
import sys
import weakref
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from .host import advise_huge_pages, host_room

if TYPE_CHECKING:
    from .device import Device

_MiB = 1 << 20

# Error codes that mean "the device ran out of something", so emptying the pool may help.
_OOM_CODES = {
    cl.status_code.MEM_OBJECT_ALLOCATION_FAILURE,
    cl.status_code.OUT_OF_RESOURCES,
    cl.status_code.OUT_OF_HOST_MEMORY,
}


# Whether sys.getrefcount counts every holder: CPython up to 3.13 (3.14 may borrow stack
# references, so a count could come out right with an outside holder). Where it does not,
# nothing that decides by counting references takes a chance.
REFCOUNTS_VERIFIED = sys.implementation.name == "cpython" and sys.version_info < (3, 14)


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

    def wrap(self, array: np.ndarray) -> Buffer | None:
        """A Buffer over array's own memory (kernels and NumPy see each other's writes; the
        memory stays the array's and never joins the pool), or None where this device cannot
        share it: not a CPU device, or an array that is empty, read-only, not C-contiguous or
        not aligned for its elements (clgrad's kernels load whole elements), or a runtime
        that would keep a copy of its own (its mapping would not be the array's memory)."""
        if not (self.device.shares_host_memory and array.size and array.flags.c_contiguous
                and array.flags.writeable and array.flags.aligned):
            return None
        flags = cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR
        buffer = Buffer(self, array.nbytes, 0, cl.Buffer(self.device.context, flags,
                                                         hostbuf=array))
        buffer._host, buffer._owner = array, _owner(array)
        if _address(buffer._map()) != _address(array):
            buffer.release()
            return None
        return buffer

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
            if not is_out_of_memory(first):
                raise
        self.free_all()
        try:
            return self._try_create(size)
        except (cl.Error, _NoRoom) as second:
            if not is_out_of_memory(second):
                raise
            raise self._oom(nbytes, f"even after freeing the buffer pool: {second}") from second

    def _try_create(self, size: int) -> cl.Buffer:
        if self.device.kind == "cpu":
            # A CPU device's memory is the host's, and PoCL reserves it lazily: past the
            # host's limit it would crash at first touch instead of failing here. The
            # runtime's compiler links kernels later, on its own threads, in the same room:
            # an allocation leaves it some (PoCL aborted a link the allocations had starved).
            room, limit = host_room()
            if size + _COMPILER_ROOM > room:
                raise _NoRoom(f"{size / _MiB:.1f} MiB more would pass {limit}")
        mem = cl.Buffer(self.device.context, cl.mem_flags.READ_WRITE, size)
        if size >= _HUGE_PAGED_FROM and self.device.shares_host_memory:
            self._advise_huge_pages(mem, size)
        self.held_bytes += size
        return mem

    def _advise_huge_pages(self, mem: cl.Buffer, size: int) -> None:
        """Has the host back mem, not touched yet, with huge pages (host.advise_huge_pages).
        Its address comes from mapping it on a queue of its own: the device's queue would
        wait for the kernels before."""
        memory, _ = cl.enqueue_map_buffer(self._side_queue, mem,
                                          cl.map_flags.WRITE_INVALIDATE_REGION, 0, (size,),
                                          np.uint8)
        advise_huge_pages(_address(memory), size)
        memory.base.release(self._side_queue)

    @functools.cached_property
    def _side_queue(self) -> cl.CommandQueue:
        return cl.CommandQueue(self.device.context, self.device.cl_device)

    def _oom(self, nbytes: int, why: str) -> OutOfMemoryError:
        return self.out_of_memory(f"out of memory allocating {nbytes} bytes "
                                  f"({nbytes / _MiB:.1f} MiB)", why)

    def out_of_memory(self, what: str, why: str) -> OutOfMemoryError:
        return OutOfMemoryError(
            f"{what} on {self.device!r}, which holds {self.held_bytes / _MiB:.1f} MiB for "
            f"clgrad ({self.cached_bytes / _MiB:.1f} MiB of it free in its pool): {why}")


_COMPILER_ROOM = 256 * _MiB
# Buffers this large live in huge pages on a CPU device (two of them at least: a smaller one
# gains little; NumPy's threshold too)
_HUGE_PAGED_FROM = 4 * _MiB


def _drain(queue: cl.CommandQueue) -> None:
    """Waits for every kernel queued so far, before a read that would wait for them itself.
    Intel's CPU runtime lends the waiting thread to the queued kernels inside clFinish, not
    inside a blocking read or map: a transformer's training step read by loss.item() took
    142 ms, and 74 ms with this wait first, as long as with synchronize() before the read
    (alternating in one process, 2-core AMD EPYC)."""
    queue.finish()


class _NoRoom(Exception):
    """The host has no room for an allocation (its memory or the address-space limit)."""


def is_out_of_memory(error: Exception) -> bool:
    """Whether error says the device (or the host, for a CPU device) ran out of memory."""
    return isinstance(error, (cl.MemoryError, _NoRoom)) or \
        getattr(error, "code", None) in _OOM_CODES


class Buffer:
    """`nbytes` of memory on one device; its memory returns to the pool when released or
    garbage-collected."""

    __slots__ = ("pool", "nbytes", "_size", "mem", "_pending_write", "_host", "_owner",
                 "_mapped", "_view")
    transfers = 0       # copies to or from the host so far, all buffers together (for jit)

    def __init__(self, pool: BufferPool, nbytes: int, size: int, mem: cl.Buffer):
        self.pool = pool
        self.nbytes = int(nbytes)
        self._size = size
        self.mem = mem
        # The non-blocking upload's event keeps the host array alive until the copy is done.
        self._pending_write: cl.Event | None = None
        self._host: np.ndarray | None = None      # the array this buffer was made over (wrap)
        self._owner: np.ndarray | None = None     # the array owning its memory, if one does
        self._mapped: np.ndarray | None = None    # its memory mapped for the host, once asked
        self._view: weakref.ref | None = None     # host_view's array, while one is alive

    @property
    def shared(self) -> bool:
        """Whether NumPy can see this buffer's memory now: an array of host_view's is alive,
        or it was made over an array that something besides this buffer still holds (any
        array over that memory holds the array owning it). Its contents are then no one
        else's to overwrite, and a change must reach the memory at once."""
        if self._view is not None and self._view() is not None:
            return True
        if self._host is None:
            return False
        # held by our array's base, our _owner and getrefcount's argument
        return self._owner is None or not REFCOUNTS_VERIFIED or sys.getrefcount(self._owner) > 3

    def host_view(self) -> np.ndarray:
        """This buffer's bytes as a NumPy array over its own memory, after the kernels queued
        before it finished. The array keeps the buffer alive, so its memory is never handed
        to another tensor while the array (or a view of it) lives. CPU devices only."""
        _drain(self.device.queue)
        view = None if self._view is None else self._view()
        if view is None:
            memory = self._host if self._host is not None else self._map()
            view = np.asarray(_HostMemory(memory, self))
            self._view = weakref.ref(view)
        return view

    def copy_from(self, other: Buffer, offset: int = 0) -> None:
        """Copies other's bytes from byte offset on in, on the queue after the kernels
        launched before. A buffer of another device (another OpenCL context) comes through
        the host."""
        nbytes = min(self.nbytes, other.nbytes - offset)
        if nbytes <= 0:
            return
        if other.device is not self.device:
            self.write(other.read(np.empty(other.nbytes, np.uint8))[offset:offset + nbytes])
        else:
            cl.enqueue_copy(self.device.queue, self._live_mem(), other._live_mem(),
                            byte_count=nbytes, src_offset=offset)

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
            _drain(self.device.queue)
            cl.enqueue_copy(self.device.queue, out, self._live_mem(), is_blocking=True)
        self._pending_write = None
        return out

    def release(self) -> None:
        """Give the memory back to the pool now; the Buffer is unusable afterwards."""
        if self.mem is None:
            return
        self._pending_write = None  # waits for an upload still in flight
        if self._mapped is not None:
            self._mapped.base.release(self.device.queue)
            self._mapped = None
        if self._host is not None:
            # the memory is the array's: no kernel may still write it once the array can die
            self.device.queue.finish()
            self.mem.release()
            self._host = self._owner = None
        else:
            self.pool._put(self._size, self.mem)
        self.mem = None

    def __del__(self) -> None:
        self.release()

    def _map(self) -> np.ndarray:
        """This buffer's memory as the host sees it (a CPU runtime maps it where it is)."""
        if self._mapped is None:
            flags = cl.map_flags.READ | cl.map_flags.WRITE
            self._mapped, _ = cl.enqueue_map_buffer(self.device.queue, self._live_mem(), flags,
                                                    0, (self.nbytes,), np.uint8)
        return self._mapped

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


class _HostMemory:
    """Shows memory (an array over it) to NumPy as bytes, keeping the Buffer that owns it
    alive for as long as any array made from it lives."""
    __slots__ = ("__array_interface__", "buffer")

    def __init__(self, memory: np.ndarray, buffer: Buffer):
        self.buffer = buffer
        self.__array_interface__ = {"shape": (buffer.nbytes,), "typestr": "|u1",
                                    "data": (_address(memory), False), "version": 3}


def _owner(array: np.ndarray) -> np.ndarray | None:
    """The array owning array's memory (NumPy makes every view's base that array), or None
    when another kind of object owns it (bytes, an mmap), which NumPy does not count."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array if array.base is None else None


def _address(array: np.ndarray) -> int:
    return array.__array_interface__["data"][0]
