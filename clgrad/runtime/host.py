"""Facts about the host machine that decide what a CPU runtime compiles."""
from __future__ import annotations

import functools
import os
import platform


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
