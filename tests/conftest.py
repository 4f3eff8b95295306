import os

import pytest

import clgrad as cg
from clgrad.config import config as clgrad_config


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


def pytest_report_header(config):
    return f"clgrad device: {cg.device()!r}"


@pytest.fixture(autouse=True)
def _seeded():
    """Every test starts from the same random state."""
    cg.manual_seed(0)
