"""Facts about the host machine that decide what a CPU runtime compiles, and advice to its
memory."""
from __future__ import annotations

import ctypes
import functools
import mmap
import os
import platform
import resource


@functools.cache
def _cpuinfo() -> dict[str, str]:
    """The fields of the first processor in /proc/cpuinfo (empty where there is none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if not line.strip():
                    break       # the first processor is enough
                key, _, value = line.partition(":")
                fields[key.strip()] = value.strip()
    except OSError:
        pass
    return fields


@functools.cache
def cpu_identity() -> str:
    """The host CPU as compilers see it: architecture, vendor, family, model and feature flags.
    A CPU runtime compiles for the instruction set it finds, so its binaries and verdicts hold
    for this identity only."""
    wanted = ("vendor_id", "cpu family", "model", "model name", "flags")
    return " | ".join([platform.machine()] + [_cpuinfo().get(k, "") for k in wanted])


def cpu_name() -> str:
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


def compiler_settings() -> str:
    """Environment settings that change what a CPU runtime compiles (Intel's CL_CONFIG_*, such
    as CL_CONFIG_CPU_TARGET_ARCH), so that binaries built under others are not reused."""
    return " ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                    if k.startswith("CL_CONFIG_"))


def host_room() -> tuple[int, str]:
    """How many more bytes this process can take (the smaller of the memory the system has
    available and the room left under its address-space limit), and that limit in words."""
    room, limit = _meminfo_available(), "the memory the system has available"
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft != resource.RLIM_INFINITY:
        left = soft - _address_space_used()
        if left < room:
            room, limit = left, f"the address-space limit of {soft / 2**20:.0f} MiB (ulimit -v)"
    return room, limit


def _meminfo_available() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 1 << 62      # not known: no limit of ours


def _address_space_used() -> int:
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError):
        return 0


HUGE_PAGE_BYTES = 2 << 20


def advise_huge_pages(address: int, nbytes: int) -> None:
    """Asks Linux to back the whole 2 MiB pages inside nbytes of memory at address with huge
    pages when they are first touched (transparent huge pages, as NumPy asks for its large
    arrays). A kernel streaming 64 MB so backed ran 17-22% faster than over 4 KiB pages: a TLB
    miss every 4 KiB, and the hardware prefetcher stops at each page's end. The first touch
    costs less, except where Linux must first gather free 2 MiB pages (256 MiB written fresh:
    107 ms the first time in a process, 21-24 ms after, 55-59 ms over 4 KiB pages). Does
    nothing where the system takes no such advice."""
    advice = getattr(mmap, "MADV_HUGEPAGE", None)
    madvise = _madvise()
    start = -(-address // HUGE_PAGE_BYTES) * HUGE_PAGE_BYTES
    end = (address + nbytes) // HUGE_PAGE_BYTES * HUGE_PAGE_BYTES
    if advice is not None and madvise is not None and end > start:
        madvise(start, end - start, advice)     # (advice only: a refusal changes nothing)


@functools.cache
def _madvise():
    try:
        madvise = ctypes.CDLL(None).madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    return madvise
