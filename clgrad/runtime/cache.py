"""The program cache: built programs in memory; program binaries (and other small verdicts,
such as a device probe's) on disk.

Devices whose drivers hand binaries out cheaply (`Device.stores_binaries`) get an entry per
program binary. PoCL would compile every kernel once more to hand out a binary (1-2 s for a
training step's program, measured), so its entries hold PoCL's own cache folder for the
program instead (runtime/pocl_store.py).

Program entries are keyed by sha256 of everything that changes the binary (clgrad version,
source, options, device name, driver and platform versions, and for CPUs the host CPU: a CPU
runtime compiles for the instruction set it finds). Each file is a magic line, a
header line "<payload length> <payload sha256>", then the payload. Entries are written to a
unique temp file and renamed into place, so concurrent writers never expose a partial file;
readers check length and checksum because PoCL crashes (rather than failing) on a corrupt
binary.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import os
import tempfile
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pyopencl as cl

from ..config import config
from . import pocl_store
from .host import compiler_settings, cpu_identity

if TYPE_CHECKING:
    from .device import Device

MAGIC = b"CLGRAD-CACHE-ENTRY 1\n"
SUFFIX = ".entry"

ENTRY_KINDS = ("programs", "pocl", "probes")   # folders of CACHE_DIR holding entries
memory: dict[str, object] = {}  # memory_key -> Program, filled by program.get_program
kernels: dict[tuple[str, str], object] = {}    # (device spec, kernel name) -> Kernel in memory
_unwritable: list[str] = []    # why the disk cache could not be written, once it could not
hits = 0  # disk entries loaded successfully, in this process
misses = 0  # builds from source while the disk cache was on


@functools.cache
def clgrad_version() -> str:
    try:
        return importlib.metadata.version("clgrad")
    except importlib.metadata.PackageNotFoundError:  # running from a source checkout
        return "0+source"


def _sha256(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode())
        digest.update(b"\0")  # so ("ab", "c") and ("a", "bc") differ
    return digest.hexdigest()


def memory_key(device: Device, source: str, options: Sequence[str]) -> str:
    return _sha256(source, " ".join(options), device.spec)


def disk_key(device: Device, source: str, options: Sequence[str]) -> str:
    host = f"{cpu_identity()} {compiler_settings()}" if device.kind == "cpu" else ""
    return _sha256(clgrad_version(), source, " ".join(options), device.platform_name,
                   device.name, device.driver_version, device.platform_version, host)


def cache_dir(kind: str = "programs") -> str:
    return os.path.join(config.CACHE_DIR, kind)


def load(kind: str, key: str) -> bytes | None:
    """The payload stored under (kind, key), if the disk cache is on and holds a valid one."""
    if not config.CACHE:
        return None
    return _read_entry(os.path.join(cache_dir(kind), key + SUFFIX))


def store(kind: str, key: str, payload: bytes) -> None:
    if config.CACHE and not _unwritable:
        _write_entry(os.path.join(cache_dir(kind), key + SUFFIX), payload)


def fetch(device: Device, source: str, options: Sequence[str],
          build_source: Callable[[], cl.Program],
          build_binary: Callable[[bytes], cl.Program]) -> cl.Program:
    """Build through the disk cache: load the stored binary if valid, else build from source
    and store the result."""
    global hits, misses
    if not config.CACHE:
        return build_source()
    key = disk_key(device, source, options)
    if not device.stores_binaries:
        program, restored = pocl_store.fetch(key, build_source)
        hits, misses = hits + restored, misses + (not restored)
        return program
    binary = load("programs", key)
    if binary is not None:
        try:
            program = build_binary(binary)
            hits += 1
            return program
        except Exception:  # a binary the driver rejects is as good as a corrupt one
            _remove(os.path.join(cache_dir(), key + SUFFIX))
    misses += 1
    program = build_source()
    binary = program.get_info(cl.program_info.BINARIES)[0]
    store("programs", key, binary)
    try:
        # the program again, from its binary: one built from source keeps the compiler's
        # state with it (Intel's: test_special's kernels take 2.5 GiB built from source, 0.9
        # from binaries), which a process that compiles thousands of kernels runs out of
        return build_binary(binary)
    except Exception:  # noqa: BLE001 (a runtime that cannot load its own binary keeps this one)
        return program


def clear() -> None:
    """Delete every disk entry (and stray temp files) and forget the in-memory programs."""
    memory.clear()
    kernels.clear()
    for kind in ENTRY_KINDS:
        directory = cache_dir(kind)
        if not os.path.isdir(directory):
            continue
        for name in os.listdir(directory):
            if name.endswith(SUFFIX) or name.startswith(".tmp-"):
                _remove(os.path.join(directory, name))


def _read_entry(path: str) -> bytes | None:
    """The payload of a valid entry; None if absent. Invalid entries are deleted."""
    try:
        with open(path, "rb") as f:
            magic = f.readline()
            header = f.readline()
            payload = f.read()
    except FileNotFoundError:
        return None
    except OSError:
        _remove(path)
        return None
    if magic == MAGIC and header.endswith(b"\n"):
        try:
            length_text, checksum = header.split()
            if int(length_text) == len(payload) and \
                    hashlib.sha256(payload).hexdigest().encode() == checksum:
                return payload
        except ValueError:
            pass
    _remove(path)
    return None


def _write_entry(path: str, payload: bytes) -> None:
    directory = os.path.dirname(path)
    header = b"%d %s\n" % (len(payload), hashlib.sha256(payload).hexdigest().encode())
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(MAGIC + header + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            _remove(tmp)
            raise
    except OSError as error:  # a read-only or full disk must not break the build
        _unwritable.append(str(error))
        warnings.warn(f"clgrad: cannot write the kernel cache under {config.CACHE_DIR} "
                      f"({error}); compiled kernels are kept in memory only in this process",
                      RuntimeWarning, stacklevel=3)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except OSError:  # already gone, or not ours to delete: either way it is not used
        pass
