"""OpenCL devices: discovery, specs and the choice of default device, and the per-device
context, queue, buffer pool and program builds.

Specs: "cpu" and "gpu" (the preferred working device of that kind), "cpu:intel",
"cpu:pocl" or "gpu:<runtime>" (that runtime's device), "cl:P:D" (platform P, device D).
A device that cannot build and run the probe kernel right (runtime/probe.py) is listed by
devices() but never chosen: asking for it by name is an error that says why.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyopencl as cl

from ..config import config
from . import core_share, icd, pocl_store, probe
from .buffer import Buffer, BufferPool
from .program import Kernel, Program, get_kernels, get_program

if TYPE_CHECKING:
    import numpy as np

_SPEC_RE = re.compile(r"cl:(\d+):(\d+)")

# Short runtime names by OpenCL platform name; others are named by their first word.
_RUNTIMES = {"Portable Computing Language": "pocl", "Intel(R) OpenCL": "intel",
             "NVIDIA CUDA": "nvidia", "AMD Accelerated Parallel Processing": "amd"}

# Among working CPU runtimes, the faster first: Intel's ran every bench row faster than PoCL on
# an Intel Xeon (W1 jit 1.4x, W2 jit 1.1x, matmul 2x, W4 1.7x) and launches a kernel in ~8 us
# to PoCL's 30-60; on AMD Zen 5 PoCL 3.0 builds nothing (docs/runtimes.md; README, "Performance").
CPU_PREFERENCE = ("intel", "pocl")

_INSTALL_HINT = ("pip install intel-opencl-rt intel-cmplr-lib-rt (x86-64) or "
                 "pocl-binary-distribution, or a GPU vendor's OpenCL driver")


def runtime_of(platform_name: str) -> str:
    name = platform_name.strip()
    return _RUNTIMES.get(name) or name.split()[0].lower()


def build_options(cl_device: cl.Device, kind: str) -> tuple[str, ...]:
    """OpenCL lets float division and sqrt be 2.5 and 3 ulp off unless the build asks for
    them rounded correctly; NVIDIA's are (x / x was 0.99999994 and its floor 0 on an H100:
    fuzz edge seed 7300583). The CPU runtimes round them correctly whatever the options."""
    exact = cl_device.single_fp_config & cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT
    return ("-w", "-cl-fp32-correctly-rounded-divide-sqrt") if kind == "gpu" and exact \
        else ("-w",)


class Device:
    """One OpenCL device; its context and queue are created on first use."""

    def __init__(self, cl_device: cl.Device, platform_index: int, device_index: int):
        self.cl_device = cl_device
        self.spec = f"cl:{platform_index}:{device_index}"
        self.name = cl_device.name.strip()
        self.kind = "gpu" if cl_device.type & cl.device_type.GPU else "cpu"
        self.platform_name = cl_device.platform.name.strip()
        self.runtime = runtime_of(self.platform_name)
        self.driver_version = cl_device.driver_version.strip()
        self.platform_version = cl_device.platform.version.strip()
        extensions = cl_device.extensions.split()
        self.has_fp64 = "cl_khr_fp64" in extensions or cl_device.double_fp_config != 0
        self.has_fp16 = "cl_khr_fp16" in extensions
        self.max_work_group_size = cl_device.max_work_group_size
        self.native_float_width = cl_device.native_vector_width_float
        self.compute_units = cl_device.max_compute_units
        self.max_mem_alloc_size = cl_device.max_mem_alloc_size
        # PoCL keeps its own disk cache and compiles everything again to hand out a binary
        self.stores_binaries = self.runtime != "pocl"
        self.build_options = build_options(cl_device, self.kind)
        # Whether a large backward() launches its work before the step ends
        # (frontend/early_backward.py): a forward that fits in cache_bytes as it begins, so that
        # the device works while Python derives the gradients; a larger one's loss and
        # gradients as it ends, while Python records the optimizer's step. On Intel's runtime
        # the seed MLP's step is 8% faster, then 5% and 5-10% more; PoCL's threads take the
        # cores Python needs, and the second schedule made the step 10% slower.
        self.starts_backward_early = self.runtime == "intel"
        self.cache_bytes = cl_device.global_mem_cache_size     # Intel's runtime: a core's L2

    @property
    def type(self) -> str:
        """"cpu" or "gpu", as PyTorch code asks it (device.type == "cpu")."""
        return self.kind

    @functools.cached_property
    def verdict(self) -> probe.Verdict:
        """Whether this device builds and runs clgrad's code (asked once per runtime and CPU)."""
        found = probe.verdict(self)
        if found.usable and found.why and config.DEBUG >= 1:
            print(f"clgrad: {self.spec} ({self.runtime}, {self.name}): {found.why}",
                  file=sys.stderr)
        return found

    @property
    def usable(self) -> bool:
        return self.verdict.usable

    @functools.cached_property
    def context(self) -> cl.Context:
        return cl.Context([self.cl_device])

    @functools.cached_property
    def queue(self) -> cl.CommandQueue:
        # One in-order queue: kernels see each other's results without explicit events.
        queue = cl.CommandQueue(self.context, self.cl_device,
                                properties=cl.command_queue_properties.PROFILING_ENABLE)
        atexit.register(_drain_at_exit, queue)
        return queue

    @functools.cached_property
    def pool(self) -> BufferPool:
        return BufferPool(self)

    def alloc(self, nbytes: int) -> Buffer:
        return self.pool.alloc(nbytes)

    def wrap(self, array: np.ndarray) -> Buffer | None:
        """A buffer over array's own memory, or None where it cannot be (BufferPool.wrap)."""
        return self.pool.wrap(array)

    @functools.cached_property
    def shares_host_memory(self) -> bool:
        """Whether NumPy arrays and this device's buffers can be the same memory: a CPU
        device (a GPU's memory, even a unified one, is the GPU's to cache)."""
        return self.kind == "cpu" and bool(self.cl_device.host_unified_memory)

    def build(self, name: str, source: str, options: Sequence[str] | None = None) -> Program:
        return get_program(self, name, source,
                           self.build_options if options is None else options)

    def kernels(self, sources: dict[str, str]) -> dict[str, Kernel]:
        """Kernels by name, from {name: source}; those this device has not built yet are
        built together, as one program (one build is cheaper than several)."""
        return get_kernels(self, sources)

    def synchronize(self) -> None:
        self.queue.finish()

    def __repr__(self) -> str:
        return f"device(type={self.spec!r}, runtime={self.runtime!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Device) and other.spec == self.spec

    def __hash__(self) -> int:
        return hash(self.spec)


def _drain_at_exit(queue: cl.CommandQueue) -> None:
    """Waits for the kernels still queued as Python exits (a step launched, nothing read):
    the runtime's threads would run them while the process tears the runtime down (Intel's
    runtime is known to abort with "pure virtual function called" on work left at exit, and
    a test that exited after an out-of-memory error with three kernels queued did once)."""
    try:
        queue.finish()
    except cl.Error:
        pass


@functools.cache
def _all_devices() -> tuple[Device, ...]:
    core_share.share_cores()
    with icd.runtimes_visible(), pocl_store.private_cache():
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
    """Every OpenCL device of every platform, each wrapped once, usable or not."""
    return list(_all_devices())


def gpu_is_available() -> bool:
    return any(d.kind == "gpu" and d.usable for d in _all_devices())


def get_device(spec: str | Device | None = None) -> Device:
    """Resolve a spec (see the module docstring), a Device, or None: CLGRAD_DEVICE if set,
    else a working GPU, else the preferred working CPU runtime."""
    if isinstance(spec, Device):
        return spec
    if spec is None:
        return _default_device(config.DEVICE)
    if not isinstance(spec, str):
        raise TypeError(f"device spec must be a str or Device, got {type(spec).__name__}")
    return _resolve(spec.strip().lower(), spec)


def synchronize(device: str | Device | None = None) -> None:
    """Waits until every kernel queued on device (default: the default device) has finished,
    as torch.cuda.synchronize. Lazy tensors not yet read have queued nothing."""
    get_device(device).synchronize()


@functools.cache
def _default_device(configured: str | None) -> Device:
    if configured:
        return get_device(configured)
    working_gpu = [d for d in _all_devices() if d.kind == "gpu" and d.usable]
    return working_gpu[0] if working_gpu else _resolve("cpu", "cpu")


@functools.cache
def _resolve(text: str, spec: str) -> Device:
    match = _SPEC_RE.fullmatch(text)
    if match:
        wanted = f"cl:{int(match[1])}:{int(match[2])}"
        for device in _all_devices():
            if device.spec == wanted:
                return _checked(device, spec)
        raise ValueError(f"no OpenCL device {spec!r}; {_listing()}")
    kind, _, runtime = text.partition(":")
    if kind not in ("cpu", "gpu"):
        raise ValueError(f"bad device spec {spec!r}: expected 'cpu', 'gpu', 'cpu:intel', "
                         f"'cpu:pocl' or 'cl:P:D'; {_listing()}")
    candidates = [d for d in _all_devices() if d.kind == kind
                  and (d.runtime == runtime if runtime else True)]
    if runtime:
        if not candidates:
            raise RuntimeError(f"device {spec!r} requested but no {runtime} OpenCL "
                               f"{kind.upper()} device was found; {_listing()}")
        return _checked(candidates[0], spec)
    candidates.sort(key=_preference)
    for device in candidates:
        if device.usable:
            return device
        _say_skipped(device)
    raise RuntimeError(f"device {spec!r} requested but no usable OpenCL {kind.upper()} device "
                       f"was found; tried: {_tried(kind, candidates)}; to get one: {_INSTALL_HINT}; "
                       f"{_listing()}")


def _preference(device: Device) -> int:
    order = CPU_PREFERENCE if device.kind == "cpu" else ()
    return order.index(device.runtime) if device.runtime in order else len(order)


def _checked(device: Device, spec: str) -> Device:
    if not device.usable:
        raise RuntimeError(f"device {spec!r} ({device.runtime}, {device.name}) cannot run "
                           f"clgrad's kernels on this machine:\n{device.verdict.why}")
    return device


def _say_skipped(device: Device) -> None:
    if config.DEBUG >= 1:
        print(f"clgrad: skipping {device.spec} ({device.runtime}, {device.name}): "
              f"{device.verdict.why.splitlines()[0]}", file=sys.stderr)


def _tried(kind: str, candidates: list[Device]) -> str:
    tried = [f"{d.runtime} ({d.spec}, {d.name}): {d.verdict.why}" for d in candidates]
    intel = icd.intel_library()
    if kind == "cpu" and intel is None:
        tried.append("intel: not installed")
    elif kind == "cpu" and not any(d.runtime == "intel" for d in candidates):
        tried.append(f"intel: {intel} did not load: {_load_error(intel)}")
    return "; ".join(tried) or "nothing"


def _load_error(path: str) -> str:
    try:
        ctypes.CDLL(path)
    except OSError as error:
        return str(error)
    return "the ICD loader did not list it (is OCL_ICD_VENDORS set to a folder without it?)"


def _listing() -> str:
    found = _all_devices()
    if not found:
        return "no OpenCL devices are available"
    return "available: " + ", ".join(repr(d) for d in found)
