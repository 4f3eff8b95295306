"""Whether a device builds and runs clgrad's kind of code right, asked once per runtime and CPU.

A runtime can list a device it cannot compile for, or compiles for wrongly: PoCL 3.0 (LLVM 14)
names CPUs newer than LLVM 14 "generic" and rejects every build (AMD Zen 5), and on AMD Zen 4
its builtins on 512-bit vectors return garbage (there it gets no wider vectors than 256 bits).
A tiny probe kernel, built and run with the options clgrad builds with, tells. Its verdict is
kept on disk, keyed by the runtime's version and the CPU, so later processes pay nothing.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyopencl as cl

from ..config import config
from . import cache
from .program import CompileError
from .host import compiler_settings, cpu_identity

if TYPE_CHECKING:
    from .device import Device

# Vector loads, a loop, a select and a transcendental: what every clgrad kernel has. And a
# builtin on a 512-bit vector (max of long8, as in an argmax): PoCL 3.0 on a CPU its LLVM 14
# knows only by an older name (AMD Zen 4 as znver3) compiles for that CPU, without AVX-512,
# yet links its AVX-512 builtins, whose 512-bit arguments then arrive as garbage; its
# builtins of 256-bit vectors are right there, and such a device gets no wider vectors.
PROBE_SOURCE = """
__kernel void clgrad_probe(__global float* restrict out, __global long* restrict wide,
                           __global const float* restrict x, __global const int* restrict n) {
  int i = get_global_id(0);
  float8 v = vload8(i, x);
  float acc = 0.0f;
  for (int k = 0; k < 8; k++) acc += x[8 * i + k] > 0.5f ? x[8 * i + k] : -1.0f;
  vstore8(exp(v) + (float8)(acc), i, out);
  long8 m = convert_long8(*(__global const int8*)(n + 8 * i));
  *(__global long8*)(wide + 8 * i) = max(m, (long8)(50));
}
"""


@dataclass(frozen=True)
class Verdict:
    usable: bool
    why: str = ""          # the first lines of the error when not usable; else what is odd
    wide_vectors: bool = True   # whether its builtins of 512-bit vectors are right


def _expected(x: np.ndarray) -> np.ndarray:
    rows = x.reshape(-1, 8)
    acc = np.where(rows > 0.5, rows, -1.0).sum(axis=1, keepdims=True)
    return (np.exp(rows) + acc).reshape(-1)


def _key(device: Device) -> str:
    parts = [device.platform_name, device.platform_version, device.name, device.driver_version,
             " ".join(device.build_options), PROBE_SOURCE, cpu_identity(), compiler_settings()]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _run(device: Device) -> Verdict:
    x = np.linspace(0.0, 1.0, 64, dtype=np.float32)
    n = np.arange(x.size, dtype=np.int32)
    try:
        with config.override(CACHE=False):     # the verdict is what is kept, not the binary
            kernel = device.build("clgrad_probe", PROBE_SOURCE)["clgrad_probe"]
        result, maxima = np.empty_like(x), np.empty(n.size, np.int64)
        out, wide = device.alloc(result.nbytes), device.alloc(maxima.nbytes)
        kernel((x.size // 8,), None,
               (out, wide, device.alloc(x.nbytes).write(x), device.alloc(n.nbytes).write(n)))
        out.read(result)
        wide.read(maxima)
    except CompileError as error:
        return Verdict(False, _first_lines(str(error).partition("--- build log ---")[2]))
    except (cl.Error, RuntimeError, KeyError) as error:    # a kernel lost, a failed launch
        return Verdict(False, _first_lines(str(error)))
    if not np.allclose(result, _expected(x), rtol=1e-5, atol=1e-5):
        return Verdict(False, "the probe kernel computed wrong values")
    if not np.array_equal(maxima, np.maximum(n, 50)):
        return Verdict(True, "max() of long8 vectors computed wrong values: its builtins of "
                             "512-bit vectors do not fit the code it makes for this CPU, so "
                             "its kernels keep to 256-bit vectors", wide_vectors=False)
    return Verdict(True)


def _first_lines(text: str, count: int = 6) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return "\n".join(lines[:count])


def verdict(device: Device) -> Verdict:
    """Whether device builds and runs the probe; from the disk cache when asked before."""
    key = _key(device)
    stored = cache.load("probes", key)
    if stored is not None:
        return Verdict(**json.loads(stored))
    found = _run(device)
    cache.store("probes", key, json.dumps(found.__dict__).encode())
    return found
