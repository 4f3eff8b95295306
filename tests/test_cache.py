"""Disk program cache, exercised across fresh processes (a corrupt binary could crash PoCL, so
every build that reads the cache runs in a subprocess). PoCL keeps its own disk cache, so
clgrad stores binaries only for other drivers; the children here make the PoCL device store
them too (CLGRAD_TEST_STORE_BINARIES) to exercise clgrad's entries."""

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
import os
import numpy as np
from clgrad.runtime import cache, get_device

SOURCE = '''
__kernel void scale_add(__global float *out, __global const float *x, float a, int n) {
    int i = get_global_id(0);
    if (i < n) out[i] = a * x[i] + 1.0f;
}
'''
device = get_device()
device.stores_binaries = device.stores_binaries or os.environ.get("CLGRAD_TEST_STORE_BINARIES") == "1"
kernel = device.build("scale_add", SOURCE)["scale_add"]
x = np.arange(100, dtype=np.float32)
x_buf = device.alloc(x.nbytes).write(x)
out = device.alloc(x.nbytes)
kernel((100,), None, (out, x_buf, np.float32(3.0), np.int32(100)))
ok = bool(np.array_equal(out.read(np.empty_like(x)), 3 * x + 1))
print(json.dumps({"hits": cache.hits, "misses": cache.misses, "ok": ok}))
"""


@pytest.fixture(scope="module", autouse=True)
def shared_pocl_cache(tmp_path_factory):
    """One PoCL cache for every child keeps their source builds at ~0.05 s instead of ~0.7 s;
    the clgrad cache under test stays private to each test."""
    global POCL_CACHE_DIR
    POCL_CACHE_DIR = str(tmp_path_factory.mktemp("pocl"))


def child_env(cache_dir, **env_extra):
    env = {k: v for k, v in os.environ.items()
           if k == "CLGRAD_DEVICE" or not k.startswith(("CLGRAD_", "POCL_"))}
    env.update(CLGRAD_CACHE_DIR=str(cache_dir), POCL_CACHE_DIR=POCL_CACHE_DIR,
               PYTHONPATH=str(REPO), CLGRAD_TEST_STORE_BINARIES="1")
    env.update(env_extra)
    return env


def run_child(cache_dir, own_pocl_cache=False, **env_extra):
    env = child_env(cache_dir, **env_extra)
    if own_pocl_cache:  # let clgrad choose where PoCL caches
        del env["POCL_CACHE_DIR"]
    done = subprocess.run([sys.executable, "-c", BUILD_AND_RUN], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def entries(cache_dir):
    return sorted((Path(cache_dir) / "programs").glob("*" + cache.SUFFIX))


def test_second_process_hits_disk_cache(tmp_path):
    assert run_child(tmp_path, own_pocl_cache=True) == {"hits": 0, "misses": 1, "ok": True}
    assert len(entries(tmp_path)) == 1
    assert (tmp_path / "pocl").is_dir()  # PoCL's cache is put beside ours
    assert run_child(tmp_path, own_pocl_cache=True) == {"hits": 1, "misses": 0, "ok": True}


def pocl_is_usable():
    return any(d.runtime == "pocl" and d.usable for d in devices())


@pytest.mark.skipif(not pocl_is_usable(), reason="PoCL cannot build for this CPU")
def test_pocl_device_leaves_the_disk_level_to_pocl(tmp_path):
    first = run_child(tmp_path, own_pocl_cache=True, CLGRAD_TEST_STORE_BINARIES="0",
                      CLGRAD_DEVICE="cpu:pocl")
    assert first == {"hits": 0, "misses": 0, "ok": True}
    assert entries(tmp_path) == []
    assert any((tmp_path / "pocl").rglob("*"))  # PoCL cached the build beside ours
    with config.override(CACHE_DIR=str(tmp_path)):
        cache.clear()
    assert not (tmp_path / "pocl").exists()


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
def good_entry(tmp_path_factory):
    cache_dir = tmp_path_factory.mktemp("good")
    run_child(cache_dir)
    [entry] = entries(cache_dir)
    return entry


@pytest.mark.parametrize("corrupt", [truncate, flip_payload_byte, bad_magic, bad_header,
                                     lambda data: b""])
def test_corrupt_entry_is_rebuilt_and_replaced(tmp_path, good_entry, corrupt):
    entry = tmp_path / "programs" / good_entry.name
    entry.parent.mkdir()
    bad = corrupt(good_entry.read_bytes())
    entry.write_bytes(bad)
    assert run_child(tmp_path) == {"hits": 0, "misses": 1, "ok": True}
    [rewritten] = entries(tmp_path)
    assert rewritten.read_bytes() != bad and rewritten.read_bytes().startswith(cache.MAGIC)
    assert run_child(tmp_path) == {"hits": 1, "misses": 0, "ok": True}


def test_concurrent_writers_leave_one_valid_entry(tmp_path):
    children = [subprocess.Popen([sys.executable, "-c", BUILD_AND_RUN], env=child_env(tmp_path),
                                 stdout=subprocess.PIPE, text=True) for _ in range(3)]
    results = [json.loads(child.communicate(timeout=120)[0]) for child in children]
    assert all(result["ok"] for result in results)
    assert len(entries(tmp_path)) == 1
    assert not [p for p in (tmp_path / "programs").iterdir() if p.name.startswith(".tmp-")]
    assert run_child(tmp_path)["hits"] == 1


def test_cache_off_writes_nothing(tmp_path):
    result = run_child(tmp_path, own_pocl_cache=True, CLGRAD_CACHE="0")
    assert result == {"hits": 0, "misses": 0, "ok": True}
    assert not any(tmp_path.iterdir())


def test_clear_empties_the_cache_dir(tmp_path):
    run_child(tmp_path)
    with config.override(CACHE_DIR=str(tmp_path)):
        assert cache.cache_dir() == str(tmp_path / "programs")
        cache.clear()
        assert os.listdir(cache.cache_dir()) == []
        assert cache.memory == {}
