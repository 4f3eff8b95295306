"""Runtime tests on the default device: devices, buffers and pool, builds, launches, profiling."""

import os
import subprocess
import sys

import numpy as np
import pytest

from clgrad.config import config
from clgrad.runtime import (CompileError, OutOfMemoryError, cache, devices, dump_source,
                            get_device, gpu_is_available, profile)
from clgrad.runtime.buffer import bucket_size

ADD_SOURCE = """
__kernel void add(__global float *out, __global const float *a, __global const float *b,
                  int n) {
    int i = get_global_id(0);
    if (i < n) out[i] = a[i] + b[i];
}
"""


@pytest.fixture(scope="module", autouse=True)
def private_cache(tmp_path_factory):
    with config.override(CACHE_DIR=str(tmp_path_factory.mktemp("clgrad-cache"))):
        yield


@pytest.fixture(scope="module")
def cpu():
    return get_device()


@pytest.fixture(scope="module")
def add(cpu):
    return cpu.build("add", ADD_SOURCE)["add"]


def upload(device, array):
    return device.alloc(array.nbytes).write(array)


def run_add(device, add, a, b):
    out = device.alloc(a.nbytes)
    add((a.size,), None, (out, upload(device, a), upload(device, b), np.int32(a.size)))
    return out.read(np.empty_like(a))


def test_devices_lists_pocl_cpu():
    found = devices()
    assert any(d.kind == "cpu" for d in found)
    assert devices()[0] is found[0]  # wrapped once
    assert all(d.spec.startswith("cl:") for d in found)


def test_get_device_specs(cpu):
    assert get_device(cpu.spec) is cpu
    assert get_device(cpu) is cpu
    assert get_device(f" {cpu.kind.upper()}:{cpu.runtime} ") is cpu
    assert repr(cpu) == f"device(type={cpu.spec!r}, runtime={cpu.runtime!r}, name={cpu.name!r})"
    assert cpu == get_device(cpu.spec) and hash(cpu) == hash(cpu.spec)
    with config.override(DEVICE=cpu.spec):
        assert get_device() is cpu


@pytest.mark.parametrize("spec", ["tpu", "cl:9:9", "cl:0", ""])
def test_get_device_bad_spec_names_it_and_lists_devices(spec):
    with pytest.raises(ValueError) as info:
        get_device(spec)
    assert repr(spec) in str(info.value)
    assert "available" in str(info.value) and devices()[0].name in str(info.value)


def test_gpu_without_gpu_says_so():
    if gpu_is_available():
        pytest.skip("this machine has a GPU")
    with pytest.raises(RuntimeError, match="no usable OpenCL GPU") as info:
        get_device("gpu")
    assert "available" in str(info.value)


def test_add_kernel_matches_numpy(cpu, add):
    rng = np.random.default_rng(0)
    a, b = rng.random(1000, np.float32), rng.random(1000, np.float32)
    np.testing.assert_array_equal(run_add(cpu, add, a, b), a + b)


def test_repeated_build_returns_same_program(cpu, add):
    assert cpu.build("add", ADD_SOURCE) is add.program
    assert add.program["add"] is add


def test_pool_reuses_freed_memory(cpu):
    buffer = cpu.alloc(12345)
    mem = buffer.mem
    buffer.release()
    again = cpu.alloc(12345)
    assert again.mem is mem
    del again  # garbage collection also returns the memory
    assert cpu.alloc(12340).mem is mem  # near sizes share a bucket


def test_bucket_sizes():
    assert bucket_size(0) == bucket_size(1) == 64
    assert bucket_size(1000) == 1024
    for n in (1, 100, 4097, 10**6, 3 * 10**8):
        assert 0 <= bucket_size(n) - n < max(64, n / 16)


def test_large_cpu_buffers_ask_for_huge_pages(cpu, monkeypatch):
    # the whole 2 MiB pages inside a fresh buffer of 4 MiB or more, before anything touches
    # it; smaller buffers keep the runtime's own pages
    from clgrad.runtime import host
    advised = []
    monkeypatch.setattr(host, "_madvise", lambda: lambda *call: advised.append(call))
    cpu.pool.free_all()
    small, large = cpu.alloc(3 << 20), cpu.alloc(9 << 20)
    if not cpu.shares_host_memory:      # a GPU's memory is its own
        assert advised == []
        return
    (start, length, _), = advised
    address = large._map().__array_interface__["data"][0]
    assert start % host.HUGE_PAGE_BYTES == 0 and length % host.HUGE_PAGE_BYTES == 0
    assert address <= start and start + length <= address + large.nbytes
    assert length >= (9 << 20) - 2 * host.HUGE_PAGE_BYTES
    values = np.arange((9 << 20) // 4, dtype=np.float32)
    np.testing.assert_array_equal(large.write(values).read(np.empty_like(values)), values)
    del small


def test_zero_byte_buffer(cpu):
    empty = np.empty(0, np.float32)
    buffer = cpu.alloc(0).write(empty)
    assert buffer.read(empty).size == 0


def test_pool_free_all(cpu):
    cpu.alloc(1 << 16).release()
    assert cpu.pool.cached_bytes > 0
    cpu.pool.free_all()
    assert cpu.pool.cached_bytes == 0


def test_out_of_memory_names_size(cpu):
    with pytest.raises(OutOfMemoryError) as info:
        cpu.alloc(1 << 50)
    message = str(info.value)
    assert str(1 << 50) in message and "MiB" in message and cpu.spec in message
    assert isinstance(info.value, RuntimeError)


def test_compile_error_has_source_and_log(cpu):
    source = "__kernel void broken(__global float *x) {\n    x[0] = ;\n}\n"
    with pytest.raises(CompileError) as info:
        cpu.build("broken_prog", source)
    message = str(info.value)
    assert "broken_prog" in message
    assert "   2 |     x[0] = ;" in message
    assert "expected expression" in message  # from the build log


def test_launch_error_names_kernel(cpu, add):
    with pytest.raises(RuntimeError, match="'add'.*global=\\(4,\\)"):
        add((4,), None, (cpu.alloc(16),))


def test_launches_enqueued_together_run_in_order_and_a_failed_one_raises(cpu, add):
    """enqueue_all's launches run in order; one that fails to launch raises, naming its
    kernel, and the launches before it still run."""
    from clgrad.runtime.program import bind, enqueue_all
    a = np.arange(8, dtype=np.float32)
    buffers = [upload(cpu, a), cpu.alloc(a.nbytes), cpu.alloc(a.nbytes)]
    slots = [b.mem for b in buffers] + [np.int32(a.size), "not a buffer"]

    def run(*launches):     # each (output, operand, operand) as slot numbers
        bound, numbers = bind([(add, (8,), None, list(args)) for args in launches])
        enqueue_all(bound, numbers + slots)

    def value(i):
        return buffers[i].read(np.empty_like(a))

    run((1, 0, 0, 3), (2, 1, 0, 3), (1, 2, 2, 3))           # 2a, then 3a, then 6a
    np.testing.assert_array_equal(value(1), 6 * a)
    np.testing.assert_array_equal(value(2), 3 * a)
    # the third launch's last argument is no kernel argument: the two before it still run
    with pytest.raises(RuntimeError, match="'add'"):
        run((1, 2, 0, 3), (2, 1, 0, 3), (1, 2, 0, 4))       # 4a, then 5a, then fails
    np.testing.assert_array_equal(value(1), 4 * a)
    np.testing.assert_array_equal(value(2), 5 * a)


def test_profiler_table(cpu, add):
    a = np.ones(256, np.float32)
    with profile() as p:
        for _ in range(3):
            run_add(cpu, add, a, a)
    assert [row.name for row in p.rows] == ["add"]
    assert p.rows[0].calls == 3 and p.total_ms > 0
    assert "add" in p.table() and "100.0%" in str(p)


def test_debug_prints_each_launch(cpu, add, capsys):
    a = np.ones(8, np.float32)
    with config.override(DEBUG=1):
        run_add(cpu, add, a, a)
    line = capsys.readouterr().out.strip()
    assert line.startswith("*** add global=(8,)") and line.endswith(" ms")


def test_dump_source(tmp_path):
    with config.override(DUMP=str(tmp_path / "dump")):
        dump_source("my_kernel", ADD_SOURCE)
    assert (tmp_path / "dump" / "my_kernel.cl").read_text() == ADD_SOURCE


def test_config_override_restores():
    before = (config.DEBUG, config.CACHE)
    with config.override(DEBUG=4, CACHE=False):
        assert (config.DEBUG, config.CACHE) == (4, False)
    assert (config.DEBUG, config.CACHE) == before
    with pytest.raises(TypeError, match="NOPE"):
        with config.override(NOPE=1):
            pass


def test_config_from_env():
    env = {"CLGRAD_DEBUG": "2", "CLGRAD_CACHE": "0", "CLGRAD_DUMP": "/tmp/d",
           "XDG_CACHE_HOME": "/x"}
    parsed = type(config).from_env(env)
    assert (parsed.DEBUG, parsed.CACHE, parsed.DUMP, parsed.DEVICE) == (2, False, "/tmp/d", None)
    assert parsed.CACHE_DIR == os.path.join("/x", "clgrad")


def test_memory_cache_is_per_device_and_source(cpu):
    assert cache.memory_key(cpu, "a", ()) != cache.memory_key(cpu, "b", ())
    assert cache.memory_key(cpu, "a", ()) != cache.memory_key(cpu, "a", ("-DX",))


OUT_OF_ROOM = """
import resource
import clgrad as cg
from clgrad.runtime import OutOfMemoryError
from clgrad.runtime.host import _address_space_used
# the device, its runtime and the kernel are loaded: PoCL links a kernel at its first launch,
# on its own threads, and under load a link in the last of the room aborted the process
warm = (cg.ones(1 << 26) * 2).realize()
cg.device().synchronize()
del warm
cg.device().pool.free_all()              # (its pooled buffer would serve the first result)
limit = _address_space_used() + (1 << 30)
resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))
kept = []
try:
    for _ in range(8):
        kept.append((cg.ones(1 << 26) * 2).realize())      # 256 MiB each
    cg.device().synchronize()
except OutOfMemoryError as error:
    print(len(kept), error)
"""


def test_past_the_address_space_limit_is_an_error_not_a_crash():
    # PoCL reserves host memory lazily: past the limit it crashed at first touch. NVIDIA's
    # runtime allocates a buffer at its first use: the launch reports it
    done = subprocess.run([sys.executable, "-c", OUT_OF_ROOM], capture_output=True, text=True,
                          timeout=300, cwd=os.path.dirname(os.path.dirname(__file__)))
    assert done.returncode == 0, done.stderr
    made, message = done.stdout.split(" ", 1)
    assert 1 <= int(made) < 4 and "MiB for clgrad" in message
    if get_device().kind == "gpu":
        assert "out of memory at the launch of kernel" in message
    else:
        assert "268435456 bytes (256.0 MiB)" in message
        assert "address-space limit" in message and "ulimit -v" in message
