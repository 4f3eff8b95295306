"""Finding the OpenCL runtimes, probing their devices and choosing one."""

import dataclasses
import importlib.metadata
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyopencl as cl
import pytest

import clgrad as cg
from clgrad.config import config
from clgrad.runtime import device as device_module
from clgrad.runtime import core_share, icd, probe

REPO = Path(__file__).resolve().parents[1]


def intel_installed() -> bool:
    try:
        importlib.metadata.distribution(icd.INTEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def forget_choices():
    device_module._resolve.cache_clear()
    device_module._default_device.cache_clear()


@pytest.fixture
def broken():
    """broken(device, why) makes device fail its probe until the test ends."""
    changed = []

    def make(device, why="error: unknown target CPU 'generic'"):
        changed.append((device, device.__dict__.get("verdict")))
        device.__dict__["verdict"] = probe.Verdict(False, why)
        forget_choices()
    yield make
    for device, verdict in changed:
        if verdict is None:
            device.__dict__.pop("verdict", None)
        else:
            device.__dict__["verdict"] = verdict
    forget_choices()


def cpus():
    return [d for d in cg.devices() if d.kind == "cpu"]


def test_every_device_names_its_runtime_and_resolves_by_it():
    for device in cg.devices():
        assert device.runtime and device.runtime == device.runtime.lower()
        if device.usable:
            first = next(d for d in cg.devices()
                         if (d.kind, d.runtime) == (device.kind, device.runtime))
            assert cg.device(f"{device.kind}:{device.runtime}") is first


@pytest.mark.skipif(not intel_installed(), reason="intel-opencl-rt is not installed here")
def test_intel_runtime_installed_by_pip_is_found():
    assert any(d.runtime == "intel" for d in cg.devices())
    assert icd.intel_library().endswith(icd.INTEL_LIBRARY)


def test_a_fresh_process_finds_the_runtimes_and_leaves_the_environment_alone():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OCL_", "POCL_", "CLGRAD_DEVICE"))}
    script = ("import os, clgrad as cg; print(sorted({d.runtime for d in cg.devices()})); "
              "print([k for k in ('OCL_ICD_VENDORS', 'POCL_CACHE_DIR') if k in os.environ])")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    runtimes, vendors = done.stdout.splitlines()
    assert runtimes == repr(sorted({d.runtime for d in cg.devices()}))
    assert vendors == "[]"


def test_vendor_folder_holds_the_system_files_and_intel(tmp_path, monkeypatch):
    system = tmp_path / "system"
    system.mkdir()
    (system / "gpu.icd").write_text("libgpu.so\n")
    monkeypatch.setenv("OPENCL_VENDOR_PATH", str(system))
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    monkeypatch.setattr(icd, "intel_library", lambda: "/opt/intel/libintelocl.so")
    with icd.runtimes_visible():
        folder = Path(os.environ["OCL_ICD_VENDORS"])
        files = {p.name: p.read_text() for p in folder.iterdir()}
    assert files == {"gpu.icd": "libgpu.so\n",
                     "clgrad-intel-cpu.icd": "/opt/intel/libintelocl.so\n"}
    assert "OCL_ICD_VENDORS" not in os.environ and not folder.exists()


def test_a_users_vendor_folder_is_left_alone(tmp_path, monkeypatch):
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    monkeypatch.setattr(icd, "intel_library", lambda: "/opt/intel/libintelocl.so")
    with icd.runtimes_visible():
        assert os.environ["OCL_ICD_VENDORS"] == str(tmp_path)
    assert os.environ["OCL_ICD_VENDORS"] == str(tmp_path) and not any(tmp_path.iterdir())


def test_processes_of_an_mpi_job_share_the_cores_among_the_runtimes():
    assert core_share.worker_limits({}, 16) == {}
    assert core_share.worker_limits({"MPI_LOCALNRANKS": "1"}, 16) == {}
    assert core_share.worker_limits({"MPI_LOCALNRANKS": "2"}, 16) == {
        "CL_CONFIG_CPU_TBB_NUM_WORKERS": "8", "POCL_MAX_PTHREAD_COUNT": "8"}
    assert core_share.worker_limits({"OMPI_COMM_WORLD_LOCAL_SIZE": "3"}, 2) == {
        "CL_CONFIG_CPU_TBB_NUM_WORKERS": "1", "POCL_MAX_PTHREAD_COUNT": "1"}
    # a runtime whose limit the user set, by either of its names, keeps it
    assert core_share.worker_limits({"MPI_LOCALNRANKS": "4", "DPCPP_CPU_NUM_CUS": "2"},
                                    8) == {"POCL_MAX_PTHREAD_COUNT": "2"}


def test_a_process_started_by_an_mpi_launcher_limits_each_runtimes_workers():
    limits = ("CL_CONFIG_CPU_TBB_NUM_WORKERS", "DPCPP_CPU_NUM_CUS", "POCL_MAX_PTHREAD_COUNT")
    env = {k: v for k, v in os.environ.items() if k not in limits}
    env["MPI_LOCALNRANKS"] = "2"
    script = ("import os, clgrad as cg; print(cg.arange(10.0).sum().item()); "
              f"print([os.environ.get(k) for k in {limits!r}])")
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)
    total, values = done.stdout.splitlines()
    share = str(max(1, len(os.sched_getaffinity(0)) // 2))
    assert total == "45.0" and values == repr([share, None, share])


def test_a_device_that_cannot_build_is_skipped_and_said(broken, capsys):
    usable = [d for d in cpus() if d.usable]
    if len(usable) < 2:
        pytest.skip("needs two working CPU runtimes")
    preferred = cg.device("cpu")
    broken(preferred)
    with config.override(DEBUG=1):
        chosen = cg.device("cpu")
    assert chosen is not preferred and chosen.usable
    said = capsys.readouterr().err
    assert f"skipping {preferred.spec} ({preferred.runtime}" in said and "generic" in said


def test_asking_for_an_unusable_device_says_why(broken):
    device = cg.device()
    broken(device, "error: unknown target CPU 'generic'")
    for spec in (device.spec, f"{device.kind}:{device.runtime}"):
        with pytest.raises(RuntimeError, match="cannot run clgrad's kernels") as info:
            cg.device(spec)
        assert "unknown target CPU 'generic'" in str(info.value)


def test_no_usable_cpu_names_each_runtime_tried_and_what_to_install(broken):
    for device in cpus():
        broken(device, f"error: {device.runtime} is broken here")
    with pytest.raises(RuntimeError) as info:
        cg.device("cpu")
    message = str(info.value)
    assert "no usable OpenCL CPU device" in message and "pip install" in message
    for device in cpus():
        assert f"{device.runtime} ({device.spec}" in message
        assert f"error: {device.runtime} is broken here" in message


def test_probe_verdict_is_kept_on_disk(tmp_path, monkeypatch):
    runs = []
    real_run = probe._run
    monkeypatch.setattr(probe, "_run", lambda device: runs.append(device) or real_run(device))
    device = cg.device()
    with config.override(CACHE_DIR=str(tmp_path)):
        first = probe.verdict(device)
        again = probe.verdict(device)
    assert first == again and first.usable and len(runs) == 1
    assert len(list((tmp_path / "probes").iterdir())) == 1


def test_probe_catches_a_runtime_that_cannot_build(monkeypatch):
    device = cg.device()
    monkeypatch.setattr(probe, "PROBE_SOURCE", probe.PROBE_SOURCE.replace("float acc", "float acc acc"))
    found = probe._run(device)
    assert not found.usable and "error" in found.why.lower()


def test_probe_narrows_vectors_where_wide_builtins_are_wrong(monkeypatch):
    # as PoCL 3.0 on AMD Zen 4 computes them: max() of long8 returned zeros and garbage there
    device = cg.device()
    monkeypatch.setattr(probe, "PROBE_SOURCE", probe.PROBE_SOURCE.replace("(long8)(50)", "(long8)(49)"))
    found = probe._run(device)
    assert found.usable and not found.wide_vectors and "long8" in found.why


def test_narrow_vectors_keep_64_bit_kernels_to_256_bits(monkeypatch):
    from clgrad.engine import plan, targets
    from clgrad.frontend import inspect
    pocl = SimpleNamespace(kind="cpu", runtime="pocl", compute_units=2, native_float_width=16,
                           has_fp64=True, verdict=probe.Verdict(True, "", wide_vectors=False))
    narrow = targets.codegen_target(pocl)
    assert narrow.width == 8 and narrow.vector_bits == targets.NARROW_VECTOR_BITS
    for module in (plan, inspect):
        monkeypatch.setattr(module, "codegen_target", lambda device: narrow)
    x = np.random.default_rng(0).standard_normal((16, 10)).astype(np.float32)
    t = cg.tensor(x)
    (kernel,) = cg.compile(t.argmax(1))
    assert "long4" in kernel.source
    assert not re.search(r"\b(long|double)(8|16)\b", kernel.source)
    np.testing.assert_array_equal(t.argmax(1).numpy(), x.argmax(1))


def test_gpus_build_with_correctly_rounded_division_where_they_offer_it():
    # NVIDIA's float division is 2.5 ulp off unless asked (x / x was 0.99999994)
    exact = int(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
    options = {(kind, fp): device_module.build_options(SimpleNamespace(single_fp_config=fp), kind)
               for kind in ("cpu", "gpu") for fp in (0, exact)}
    assert options[("gpu", exact)] == ("-w", "-cl-fp32-correctly-rounded-divide-sqrt")
    assert options[("gpu", 0)] == options[("cpu", exact)] == options[("cpu", 0)] == ("-w",)
    for device in cg.devices():
        assert device.build_options == device_module.build_options(device.cl_device, device.kind)


def test_a_graph_of_constants_computed_on_one_device_is_read_on_another():
    """cg.ones(3) is one node whatever its device, holding the buffer of the device that
    computed it first: another device's tensors of it read a copy (on a GPU machine the
    NumPy-sharing tests' CPU device met the GPU's buffers: INVALID_MEM_OBJECT)."""
    usable = [d for d in cg.devices() if d.usable]
    if len(usable) < 2:
        pytest.skip("needs two working devices")
    first, second = usable[:2]
    assert cg.ones(3, device=first).tolist() == [1.0, 1.0, 1.0]
    on_second = cg.ones(3, device=second)
    shared = on_second.numpy() if second.shares_host_memory else on_second.tolist()
    np.testing.assert_array_equal(shared, [1.0, 1.0, 1.0])
    assert (cg.eye(2, device=first) * 3).tolist() == [[3.0, 0.0], [0.0, 3.0]]
    w = cg.eye(2, device=second).requires_grad_()
    (w * cg.ones(2, 2, device=second) * 3).sum().backward()
    assert w.device == second and w.grad.tolist() == [[3.0, 3.0], [3.0, 3.0]]
    # the node keeps the copy: the next run there reads the same buffer (a jit step's leaves
    # must not change from one step to the next: on PoCL, replays stopped after this test)
    y = cg.ones(4, device=first)
    assert y.tolist() == [1.0] * 4 and cg.ones(4).node.buffer.device is first
    assert (cg.ones(4, device=second) * 2).tolist() == [2.0] * 4
    assert cg.ones(4).node.buffer.device is second and y.node.buffer.device is first
