"""The OpenCL runtime: devices, device memory, cached program builds, launches, profiling.

It knows nothing about tensors: it moves bytes and runs kernels it is given.
"""

import atexit
import os
import shutil
import tempfile

from ..config import config


def _point_pocl_cache() -> None:
    """PoCL reads its cache location when the platform is first queried, so this runs before
    any pyopencl platform call. Its compiled work-group code lives beside our cache; with
    CLGRAD_CACHE=0 it goes to a private temp dir removed at exit (PoCL writes temp files even
    with its cache off), so "no cache" means cold builds and nothing left on disk."""
    if "POCL_CACHE_DIR" in os.environ:
        return
    if config.CACHE:
        os.environ["POCL_CACHE_DIR"] = os.path.join(config.CACHE_DIR, "pocl")
        return
    scratch = tempfile.mkdtemp(prefix="clgrad-pocl-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    os.environ["POCL_CACHE_DIR"] = scratch


_point_pocl_cache()

from . import cache  # noqa: E402
from .buffer import Buffer, BufferPool, OutOfMemoryError  # noqa: E402
from .device import Device, devices, get_device, gpu_is_available  # noqa: E402
from .profiler import Profiler, profile  # noqa: E402
from .program import CompileError, Kernel, Program, dump_source  # noqa: E402

__all__ = [
    "Buffer", "BufferPool", "CompileError", "Device", "Kernel", "OutOfMemoryError", "Program",
    "Profiler", "cache", "devices", "dump_source", "get_device", "gpu_is_available", "profile",
]
