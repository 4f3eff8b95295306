"""The OpenCL runtime: devices, device memory, cached program builds, launches, profiling.

It knows nothing about tensors: it moves bytes and runs kernels it is given.
"""

from . import cache
from .buffer import Buffer, BufferPool, OutOfMemoryError
from .device import Device, devices, get_device, gpu_is_available, synchronize
from .profiler import Profiler, profile
from .program import CompileError, Kernel, Program, dump_source

__all__ = [
    "Buffer", "BufferPool", "CompileError", "Device", "Kernel", "OutOfMemoryError", "Program",
    "Profiler", "cache", "devices", "dump_source", "get_device", "gpu_is_available", "profile",
    "synchronize",
]
