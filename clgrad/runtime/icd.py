"""Finding the installed OpenCL runtimes before the ICD loader first looks for them.

pyopencl's bundled ICD loader reads the vendor files of /etc/OpenCL/vendors (GPU drivers,
system runtimes) and of its own folder (PoCL, from its wheel). Intel's CPU runtime installs
from pip into the environment's lib/ folder, but its wheel's vendor file names a placeholder
path, so the loader never finds it. The loader reads the OCL_ICD_VENDORS folder instead of
/etc/OpenCL/vendors when that variable is set, once, at the first platform query: so for that
one query clgrad points it at a folder holding the system's vendor files and one naming
Intel's library by its real path, then puts the environment back as it was.

A user's own OCL_ICD_VENDORS is left alone: then the loader finds what the user listed.
"""
from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import os
import shutil
import tempfile
from collections.abc import Iterator

INTEL_DISTRIBUTION = "intel-opencl-rt"
INTEL_LIBRARY = "libintelocl.so"


@functools.cache
def intel_library() -> str | None:
    """The full path of Intel's CPU runtime installed by pip, or None."""
    try:
        files = importlib.metadata.files(INTEL_DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for file in files:
        if file.name == INTEL_LIBRARY:
            path = os.path.realpath(file.locate())
            if os.path.isfile(path):
                return path
    return None


def _system_vendor_dir() -> str:
    return os.environ.get("OPENCL_VENDOR_PATH") or "/etc/OpenCL/vendors"


def _write_vendor_files(folder: str, intel: str) -> None:
    system = _system_vendor_dir()
    with contextlib.suppress(OSError):      # no system folder: no system runtimes
        for name in sorted(os.listdir(system)):
            if name.endswith(".icd"):
                shutil.copy(os.path.join(system, name), os.path.join(folder, name))
    with open(os.path.join(folder, "clgrad-intel-cpu.icd"), "w") as f:
        f.write(intel + "\n")


@contextlib.contextmanager
def runtimes_visible() -> Iterator[None]:
    """Around the first platform query: lets the ICD loader see every installed runtime."""
    intel = intel_library()
    if "OCL_ICD_VENDORS" in os.environ or intel is None:
        yield
        return
    folder = tempfile.mkdtemp(prefix="clgrad-icd-")
    try:
        _write_vendor_files(folder, intel)
        os.environ["OCL_ICD_VENDORS"] = folder
        yield
    finally:
        os.environ.pop("OCL_ICD_VENDORS", None)     # child processes discover for themselves
        shutil.rmtree(folder, ignore_errors=True)
