"""Disk program cache, exercised across fresh processes on each working CPU runtime: Intel's
program binaries and PoCL's cache folders are both clgrad entries (a damaged one could crash
the runtime that reads it, so every build that reads the cache runs in a child process)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from clgrad.config import config
from clgrad.runtime import cache, devices

REPO = Path(__file__).resolve().parents[1]

BUILD_AND_RUN = """
import json
import numpy as np
from clgrad.runtime import cache, get_device

SOURCE = '''
__kernel void scale_add(__global float *out, __global const float *x, float a, int n) {
    int i = get_global_id(0);
    if (i < n) out[i] = a * x[i] + 1.0f;
}
'''
device = get_device()
kernel = device.build("scale_add", SOURCE)["scale_add"]
x = np.arange(100, dtype=np.float32)
x_buf = device.alloc(x.nbytes).write(x)
out = device.alloc(x.nbytes)
kernel((100,), None, (out, x_buf, np.float32(3.0), np.int32(100)))
ok = bool(np.array_equal(out.read(np.empty_like(x)), 3 * x + 1))
print(json.dumps({"hits": cache.hits, "misses": cache.misses, "ok": ok}))
"""

RUNTIMES = sorted({f"cpu:{d.runtime}" for d in devices() if d.kind == "cpu" and d.usable})
KIND = {"cpu:pocl": "pocl"}         # where each runtime's entries go; others store binaries


@pytest.fixture(params=RUNTIMES)
def runtime(request):
    return request.param


def child_env(cache_dir, runtime, **env_extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLGRAD_", "POCL_"))}
    # (the caller's PYTHONPATH, which may hold clgrad's dependencies, stays after the repo)
    path = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.update(CLGRAD_CACHE_DIR=str(cache_dir), CLGRAD_DEVICE=runtime, PYTHONPATH=path)
    env.update(env_extra)
    return env


def run_child(cache_dir, runtime, **env_extra):
    done = subprocess.run([sys.executable, "-c", BUILD_AND_RUN],
                          env=child_env(cache_dir, runtime, **env_extra), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def entries(cache_dir, runtime):
    folder = Path(cache_dir) / KIND.get(runtime, "programs")
    return sorted(folder.glob("*" + cache.SUFFIX))


def test_second_process_hits_disk_cache(tmp_path, runtime):
    assert run_child(tmp_path, runtime) == {"hits": 0, "misses": 1, "ok": True}
    assert len(entries(tmp_path, runtime)) == 1
    assert run_child(tmp_path, runtime) == {"hits": 1, "misses": 0, "ok": True}


@pytest.mark.skipif("cpu:pocl" not in RUNTIMES, reason="PoCL cannot build for this CPU")
def test_pocl_reads_only_what_clgrad_verified(tmp_path):
    """PoCL's own cache folder is private to each process; what it keeps comes back from a
    checksummed entry, work-group code included."""
    run_child(tmp_path, "cpu:pocl")
    [entry] = entries(tmp_path, "cpu:pocl")
    assert b"program.bc" in entry.read_bytes() and b"scale_add.so" in entry.read_bytes()
    assert not (tmp_path / "pocl" / "kcache").exists()


def truncate(data):
    return data[: len(data) // 2]


def flip_payload_byte(data):
    middle = len(data) // 2
    return data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1:]


def bad_magic(data):
    return b"X" + data[1:]


def bad_header(data):
    magic, _, payload = data.split(b"\n", 2)
    return magic + b"\nnot a header\n" + payload


@pytest.fixture(scope="module")
def good_entries(tmp_path_factory):
    """runtime -> a valid entry, built once per runtime for the corruption tests."""
    built = {}
    for runtime in RUNTIMES:
        cache_dir = tmp_path_factory.mktemp("good")
        run_child(cache_dir, runtime)
        [built[runtime]] = entries(cache_dir, runtime)
    return built


@pytest.fixture
def good_entry(good_entries, runtime):
    return good_entries[runtime]


@pytest.mark.parametrize("corrupt", [truncate, flip_payload_byte, bad_magic, bad_header,
                                     lambda data: b""])
def test_corrupt_entry_is_rebuilt_and_replaced(tmp_path, runtime, good_entry, corrupt):
    entry = tmp_path / good_entry.parent.name / good_entry.name
    entry.parent.mkdir()
    bad = corrupt(good_entry.read_bytes())
    entry.write_bytes(bad)
    assert run_child(tmp_path, runtime) == {"hits": 0, "misses": 1, "ok": True}
    [rewritten] = entries(tmp_path, runtime)
    assert rewritten.read_bytes() != bad and rewritten.read_bytes().startswith(cache.MAGIC)
    assert run_child(tmp_path, runtime) == {"hits": 1, "misses": 0, "ok": True}


def test_concurrent_writers_leave_one_valid_entry(tmp_path, runtime):
    children = [subprocess.Popen([sys.executable, "-c", BUILD_AND_RUN],
                                 env=child_env(tmp_path, runtime), stdout=subprocess.PIPE,
                                 text=True) for _ in range(3)]
    results = [json.loads(child.communicate(timeout=120)[0]) for child in children]
    assert all(result["ok"] for result in results)
    assert len(entries(tmp_path, runtime)) == 1
    assert not [p for p in tmp_path.rglob(".tmp-*")]
    assert run_child(tmp_path, runtime)["hits"] == 1


def test_cache_off_writes_nothing(tmp_path, runtime):
    result = run_child(tmp_path, runtime, CLGRAD_CACHE="0")
    assert result == {"hits": 0, "misses": 0, "ok": True}
    assert not any(tmp_path.iterdir())


def test_unwritable_cache_dir_warns_once_and_still_builds(tmp_path, runtime):
    blocked = tmp_path / "file-not-dir"
    blocked.write_text("")
    env = child_env(blocked / "cache", runtime, PYTHONWARNINGS="always")
    done = subprocess.run([sys.executable, "-c", BUILD_AND_RUN],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["ok"]
    assert done.stderr.count("cannot write the kernel cache") == 1


def test_clear_empties_the_cache_dir(tmp_path, runtime):
    run_child(tmp_path, runtime)
    with config.override(CACHE_DIR=str(tmp_path)):
        assert cache.cache_dir() == str(tmp_path / "programs")
        cache.clear()
        assert not any(entries(tmp_path, runtime))
        assert cache.memory == {}


def test_cache_dir_deleted_during_a_run_is_made_again(tmp_path, runtime):
    script = BUILD_AND_RUN + f"""
import shutil
shutil.rmtree({str(tmp_path)!r})
device.build("again", SOURCE.replace("scale_add", "scale_add_again"))
"""
    done = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-c", script],
                          env=child_env(tmp_path, runtime), capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(entries(tmp_path, runtime)) == 1 + (runtime == "cpu:pocl")


def test_a_stored_pocl_folder_with_a_path_outside_it_is_not_unpacked(tmp_path, monkeypatch):
    """Stored PoCL folders are unpacked only when every member is a file or folder inside
    the archive (the check tarfile's filter="data" makes, which Python 3.11.2 lacks)."""
    import io
    import tarfile
    from clgrad.runtime import pocl_store
    monkeypatch.setattr(pocl_store, "_folder", str(tmp_path / "pocl"))

    def payload(member_name: str) -> bytes:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            info = tarfile.TarInfo(member_name)
            info.size = 2
            tar.addfile(info, io.BytesIO(b"ok"))
        return b"folder\n" + buffer.getvalue()

    assert pocl_store._unpack(payload("../escaped")) is None
    assert not (tmp_path / "escaped").exists()
    assert pocl_store._unpack(payload("program.bc")) == ("folder", frozenset({"program.bc"}))
    assert (tmp_path / "pocl" / "folder" / "program.bc").read_bytes() == b"ok"
    # a folder PoCL has already (built in this process, its code maybe mapped) is left as
    # it is: rewriting a loaded kernel's file crashed PoCL's next launch of it
    (tmp_path / "pocl" / "folder" / "program.bc").write_bytes(b"in use")
    assert pocl_store._unpack(payload("program.bc")) is None
    assert (tmp_path / "pocl" / "folder" / "program.bc").read_bytes() == b"in use"


def test_a_killed_process_pocl_folder_is_removed_by_the_next_process(tmp_path):
    """A process killed by a signal runs no atexit and leaves its private PoCL folder in the
    temporary folder; the next process removes it, and leaves a living process's alone."""
    env = child_env(tmp_path / "cache", "cpu", TMPDIR=str(tmp_path))
    waits = """
import sys, time
from clgrad.runtime import devices, pocl_store
devices()
print(pocl_store._folder, flush=True)
time.sleep(float(sys.argv[1]))
"""

    def start(seconds):
        child = subprocess.Popen([sys.executable, "-c", waits, str(seconds)], env=env,
                                 stdout=subprocess.PIPE, text=True)
        return child, Path(child.stdout.readline().strip())

    living, living_folder = start(120)
    killed, killed_folder = start(120)
    killed.kill()
    killed.wait()
    an_hour_ago = killed_folder.stat().st_mtime - 3600
    for folder in (living_folder, killed_folder):
        os.utime(folder, (an_hour_ago, an_hour_ago))
    try:
        after, after_folder = start(0)
        assert after.wait(timeout=120) == 0
        assert set(tmp_path.glob("clgrad-pocl-*")) == {living_folder}
        assert killed_folder.parent == tmp_path and after_folder.parent == tmp_path
    finally:
        living.kill()
        living.wait()
