import os

import pytest

import clgrad as cg
import clgrad.frontend.inspect
from clgrad.compiler.target import Target
from clgrad.config import config as clgrad_config
from clgrad.engine import plan
from clgrad.engine.targets import NARROW_VECTOR_BITS, narrowed


def pytest_addoption(parser):
    parser.addoption("--device", default=None,
                     help="run every test on this clgrad device (cpu:intel, cpu:pocl, cl:P:D, ...)")
    parser.addoption("--fuzz-budget", type=int, default=150,
                     help="random op graphs test_fuzz.py compares with PyTorch")
    parser.addoption("--fuzz-edges", action="store_true",
                     help="test_fuzz.py also draws NaN, inf, empty dims and int32 extremes")


def pytest_configure(config):
    spec = config.getoption("--device")
    if spec:
        clgrad_config.DEVICE = spec
        os.environ["CLGRAD_DEVICE"] = spec      # for the tests' child processes
        cg.device(spec)                         # an unusable device fails here, once


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """`-n auto`: a worker a core, at most four. Each worker's kernels already run on every
    core, and what one worker compiles the others find in the disk cache: more workers would
    mostly add processes of about a gigabyte each."""
    return min(os.cpu_count() or 1, 4)


def pytest_report_header(config):
    return f"clgrad device: {cg.device()!r}"


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    cg.manual_seed(0)


@pytest.fixture
def codegen_for(monkeypatch):
    """codegen_for(target): kernels are written for target whatever the device, those run
    and those cg.compile shows alike (each module looks codegen_target up by its own name).
    A device whose builtins of 512-bit vectors are wrong (PoCL on AMD Zen 4: runtime/probe.py)
    keeps to 256-bit vectors (engine/targets.narrowed): a target of wider float vectors
    cannot run there."""
    def use(target: Target) -> None:
        device = cg.device()
        if not device.verdict.wide_vectors:
            if target.width * 32 > NARROW_VECTOR_BITS:
                pytest.skip(f"{device.runtime} on this CPU computes 512-bit vectors wrongly: "
                            f"code of {target.width} float lanes cannot run on it")
        target = narrowed(target, device)
        for module in (plan, clgrad.frontend.inspect):
            monkeypatch.setattr(module, "codegen_target", lambda _: target)
    return use


@pytest.fixture
def cpu_codegen(codegen_for):
    """Kernels written for a CPU (explicit vectors of 8 floats) whatever the default device,
    for tests of the CPU code's shape: register tiles, lanes, pairwise sums. A GPU runs that
    code too; a CPU device keeps its own target."""
    device = cg.device()
    if device.kind != "cpu":
        codegen_for(Target(width=8, cores=device.compute_units))


@pytest.fixture
def cpu_device():
    """A CPU device as the default device, for what clgrad does on a CPU alone: memory that
    NumPy shares (a GPU's is its own, so that from_numpy copies there: README, "NumPy shares memory"),
    a file mapped as a tensor's memory, a recurrent layer's loop as one kernel."""
    if cg.device().kind == "cpu":
        yield cg.device()
        return
    try:
        cpu = cg.device("cpu")
    except RuntimeError as error:
        pytest.skip(f"no OpenCL CPU device here: {error}")
    with clgrad_config.override(DEVICE=cpu.spec):
        yield cpu
