"""The OpenCL runtime: devices, device memory, cached program builds, launches, profiling.

It knows nothing about tensors: it moves bytes and runs kernels it is given.
"""

from . import pocl_store

pocl_store.prepare()     # before any pyopencl platform query: PoCL reads its cache folder then

from . import cache  # noqa: E402
from .buffer import Buffer, BufferPool, OutOfMemoryError  # noqa: E402
from .device import Device, devices, get_device, gpu_is_available  # noqa: E402
from .profiler import Profiler, profile  # noqa: E402
from .program import CompileError, Kernel, Program, dump_source  # noqa: E402

__all__ = [
    "Buffer", "BufferPool", "CompileError", "Device", "Kernel", "OutOfMemoryError", "Program",
    "Profiler", "cache", "devices", "dump_source", "get_device", "gpu_is_available", "profile",
]
