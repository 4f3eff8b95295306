"""PoCL's kernel cache, kept in clgrad's checksummed store.

PoCL caches what it compiles in a folder per program under POCL_CACHE_DIR (the program's
bitcode, then each kernel's work-group code as it is first launched), and a damaged file there
crashes the process that reads it (LLVM aborts on bad bitcode). Asking PoCL for a binary
instead would compile every kernel a second time. So PoCL gets a private, empty cache folder
per process, and clgrad keeps each program's folder as one checksummed entry of its own store:
unpacked into PoCL's folder before the program is built (PoCL then finds its own files and
builds in ~0.05 s instead of ~0.5 s), packed again at exit with the work-group code the
process added. PoCL reads nothing clgrad has not verified.

A process killed by a signal (SIGTERM's default, SIGKILL, a crash) runs no atexit, so its
folder stays behind: each holds a lock for its process's life, and the next process removes
the folders whose lock is free.
"""
from __future__ import annotations

import atexit
import contextlib
import fcntl
import glob
import io
import os
import shutil
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterator

from . import cache

PROGRAM_FILE = "program.bc"
_SKIPPED = {"last_accessed"}        # PoCL touches it on every use: not part of a program
_PREFIX = "clgrad-pocl-"
_LOCK = "owner.lock"
_SETTLED_S = 60     # a folder this old has its lock: mkdtemp and the lock are one step apart

_folder: str | None = None          # this process's PoCL cache, once made
_kept: dict[str, tuple[str, frozenset]] = {}   # entry key -> (program folder, files unpacked)


@contextlib.contextmanager
def private_cache() -> Iterator[None]:
    """Around the first platform query, when PoCL reads POCL_CACHE_DIR: gives PoCL a private
    cache folder for this process, unless the user chose one. The variable is put back at
    once, so child processes make their own."""
    global _folder
    if "POCL_CACHE_DIR" in os.environ:
        yield
        return
    _remove_abandoned()
    _folder = tempfile.mkdtemp(prefix=_PREFIX)
    _hold(_folder)
    atexit.register(shutil.rmtree, _folder, ignore_errors=True)
    atexit.register(_pack_all)      # runs first: atexit calls run last-registered first
    os.environ["POCL_CACHE_DIR"] = _folder
    try:
        yield
    finally:
        del os.environ["POCL_CACHE_DIR"]


def _hold(folder: str) -> None:
    """Locks the folder's lock file until this process ends, however it ends (the kernel
    drops a dead process's flock; exec'd children do not inherit it)."""
    lock = os.open(os.path.join(folder, _LOCK), os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)    # the descriptor stays open for the process's life


def _remove_abandoned() -> None:
    """Removes the PoCL folders of processes that ended without their atexit. One whose
    lock cannot be opened (another user's, or made before its lock) is left alone."""
    for folder in glob.glob(os.path.join(tempfile.gettempdir(), _PREFIX + "*")):
        try:
            if time.time() - os.stat(folder).st_mtime < _SETTLED_S:
                continue
            lock = os.open(os.path.join(folder, _LOCK), os.O_RDWR)
        except OSError:
            continue
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue        # its process is alive
        else:
            shutil.rmtree(folder, ignore_errors=True)
        finally:
            os.close(lock)


def fetch(key: str, build: Callable[[], object]) -> tuple[object, bool]:
    """build()'s program, with PoCL's folder for it restored from the store first; and
    whether it was (a hit)."""
    if _folder is None:
        return build(), False
    unpacked = _unpack(cache.load("pocl", key))
    before = _program_folders()
    program = build()
    folder = unpacked[0] if unpacked else _single(_program_folders() - before)
    if folder is not None:
        _kept[key] = (folder, unpacked[1] if unpacked else frozenset())
    return program, unpacked is not None


def _program_folders() -> set[str]:
    """PoCL's program folders (two levels of hashed names), relative to its cache folder."""
    found = set()
    for top in os.scandir(_folder):
        if top.is_dir():
            for program in os.scandir(top.path):
                if os.path.exists(os.path.join(program.path, PROGRAM_FILE)):
                    found.add(os.path.join(top.name, program.name))
    return found


def _single(folders: set[str]) -> str | None:
    return next(iter(folders)) if len(folders) == 1 else None


def _files(folder: str) -> dict[str, str]:
    """Relative path -> full path of every file PoCL keeps for one program."""
    root = os.path.join(_folder, folder)
    files = {}
    for dirpath, _, names in os.walk(root):
        for name in names:
            if name not in _SKIPPED:
                path = os.path.join(dirpath, name)
                files[os.path.relpath(path, root)] = path
    return files


def _unpack(payload: bytes | None) -> tuple[str, frozenset] | None:
    """Writes a stored program folder into PoCL's cache; (folder, its files) or None."""
    if payload is None:
        return None
    name, _, archive = payload.partition(b"\n")
    try:
        folder = name.decode()
        if os.path.exists(os.path.join(_folder, folder)):
            # PoCL built this program in this process already, and its work-group code may
            # be mapped: rewritten under it, a launch jumped into garbage (SIGSEGV in PoCL's
            # scheduler, the entry packed meanwhile by a child process that built it too)
            return None
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            members = tar.getmembers()
            if not all(_plain(m) for m in members):
                return None
            tar.extractall(os.path.join(_folder, folder), members)
    except (tarfile.TarError, OSError, UnicodeDecodeError):    # unusable: build afresh
        return None
    return folder, frozenset(m.name for m in members)


def _plain(member: tarfile.TarInfo) -> bool:
    """Whether an archive member is what _pack writes: a file or folder inside the archive's
    own folder (tarfile's filter="data" does this check, but only from Python 3.11.4 on)."""
    parts = member.name.split("/")
    return (member.isfile() or member.isdir()) and not os.path.isabs(member.name) \
        and ".." not in parts


def _pack_all() -> None:
    for key, (folder, unpacked) in _kept.items():
        files = _files(folder)
        if files.keys() <= unpacked or PROGRAM_FILE not in files:
            continue        # nothing new since it was unpacked
        archive = io.BytesIO()
        with tarfile.open(fileobj=archive, mode="w") as tar:
            for relative, path in sorted(files.items()):
                tar.add(path, arcname=relative)
        cache.store("pocl", key, folder.encode() + b"\n" + archive.getvalue())
