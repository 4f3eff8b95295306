"""A pytest plugin for tools/kernel_dump.py: the garbage collector runs between tests only,
so which values a test finds already computed does not depend on when it last ran."""
import gc

import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()
