"""OpenCL devices: discovery, specs ("cpu", "gpu", "cl:P:D") and the per-device context,
queue, buffer pool and program builds."""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence

import pyopencl as cl

from ..config import config
from .buffer import Buffer, BufferPool
from .program import Program, get_program

_SPEC_RE = re.compile(r"cl:(\d+):(\d+)")


class Device:
    """One OpenCL device; its context and queue are created on first use."""

    def __init__(self, cl_device: cl.Device, platform_index: int, device_index: int):
        self.cl_device = cl_device
        self.spec = f"cl:{platform_index}:{device_index}"
        self.name = cl_device.name.strip()
        self.kind = "gpu" if cl_device.type & cl.device_type.GPU else "cpu"
        self.driver_version = cl_device.driver_version.strip()
        self.platform_version = cl_device.platform.version.strip()
        extensions = cl_device.extensions.split()
        self.has_fp64 = "cl_khr_fp64" in extensions or cl_device.double_fp_config != 0
        self.has_fp16 = "cl_khr_fp16" in extensions
        self.max_work_group_size = cl_device.max_work_group_size
        self.max_mem_alloc_size = cl_device.max_mem_alloc_size
        # PoCL keeps its own disk cache and compiles everything again to hand out a binary
        self.stores_binaries = cl_device.platform.name.strip() != "Portable Computing Language"

    @functools.cached_property
    def context(self) -> cl.Context:
        return cl.Context([self.cl_device])

    @functools.cached_property
    def queue(self) -> cl.CommandQueue:
        # One in-order queue: kernels see each other's results without explicit events.
        return cl.CommandQueue(
            self.context, self.cl_device,
            properties=cl.command_queue_properties.PROFILING_ENABLE)

    @functools.cached_property
    def pool(self) -> BufferPool:
        return BufferPool(self)

    def alloc(self, nbytes: int) -> Buffer:
        return self.pool.alloc(nbytes)

    def build(self, name: str, source: str, options: Sequence[str] = ()) -> Program:
        return get_program(self, name, source, options)

    def synchronize(self) -> None:
        self.queue.finish()

    def __repr__(self) -> str:
        return f"device(type={self.spec!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)


@functools.cache
def _all_devices() -> tuple[Device, ...]:
    try:
        platforms = cl.get_platforms()
    except cl.Error:  # no ICD installed at all
        return ()
    found = []
    for p, platform in enumerate(platforms):
        try:
            cl_devices = platform.get_devices()
        except cl.Error:  # a platform with no devices raises DEVICE_NOT_FOUND
            continue
        found.extend(Device(d, p, i) for i, d in enumerate(cl_devices))
    return tuple(found)


def devices() -> list[Device]:
    """Every OpenCL device of every platform, each wrapped once."""
    return list(_all_devices())


def gpu_is_available() -> bool:
    return any(d.kind == "gpu" for d in _all_devices())


def get_device(spec: str | Device | None = None) -> Device:
    """Resolve "cpu", "gpu", "cl:P:D", a Device, or None (config.DEVICE, else GPU, else CPU)."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return _default_device()
    if not isinstance(spec, str):
        raise TypeError(f"device spec must be a str or Device, got {type(spec).__name__}")
    text = spec.strip().lower()
    if text in ("cpu", "gpu"):
        return _first_of_kind(text, spec)
    match = _SPEC_RE.fullmatch(text)
    if match:
        wanted = f"cl:{int(match[1])}:{int(match[2])}"
        for device in _all_devices():
            if device.spec == wanted:
                return device
        raise ValueError(f"no OpenCL device {spec!r}; {_listing()}")
    raise ValueError(f"bad device spec {spec!r}: expected 'cpu', 'gpu' or 'cl:P:D'; {_listing()}")


def _default_device() -> Device:
    if config.DEVICE:
        return get_device(config.DEVICE)
    if gpu_is_available():
        return _first_of_kind("gpu", "gpu")
    return _first_of_kind("cpu", "cpu")


def _first_of_kind(kind: str, spec: str) -> Device:
    for device in _all_devices():
        if device.kind == kind:
            return device
    raise RuntimeError(f"device {spec!r} requested but no OpenCL {kind.upper()} device was "
                       f"found; {_listing()}")


def _listing() -> str:
    found = _all_devices()
    if not found:
        return "no OpenCL devices are available (is pocl-binary-distribution installed?)"
    return "available: " + ", ".join(repr(d) for d in found)
