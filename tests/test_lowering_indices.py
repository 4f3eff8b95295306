"""Kernels whose indices may pass 2**31 - 1 declare them 64-bit (KernelWriter.index_type);
every other kernel keeps int indices."""
import re

import numpy as np
import pytest

import clgrad as cg

BIG = 2 ** 31 + 16


def _source(t) -> str:
    return "".join(k.source for k in cg.compile(t).kernels)


def _available_bytes() -> int:
    with open("/proc/meminfo") as info:
        for line in info:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


def test_only_kernels_past_int_range_get_long_indices():
    big = _source(cg.ones(1).expand(BIG).sum())
    # (a GPU's row is a work-group's: lower_reduce_group.py)
    assert re.search(r"long row = get_(global|group)_id\(0\);", big)
    assert "for (long ib = 0;" in big
    assert "long gid = get_global_id(0);" in _source(cg.arange(BIG) % 7 == 0)
    small = _source((cg.randn(1000, 100) * 2).sum(1)) + _source(cg.randn(64, 32) @ cg.randn(32, 16))
    assert "long " not in small


def test_matmul_past_int_range_declares_long_ids():
    # compiled only: 2**31 products of 4 would need 34 GB
    a, b = cg.randn(1, 4).expand(2 ** 29, 4), cg.randn(4, 16)
    # (a CPU's register tile names its row blocks mb, a GPU's one-lane kernel its rows mi)
    assert re.search(r"long j = get_global_id\(0\); long m[bi] = get_global_id\(1\);",
                     _source(a @ b))


@pytest.mark.skipif(_available_bytes() < 8 * 2 ** 30, reason="needs ~3 GB of free memory")
def test_a_buffer_past_two_to_the_31_elements():
    # 2 GB of bools: stored and read back at 64-bit indices (int ones wrapped and crashed)
    x = cg.arange(BIG) % 7 == 0
    try:
        x.realize()
    except RuntimeError as error:      # a runtime's allocation limit (OutOfMemoryError too)
        pytest.skip(f"no 2 GB buffer on this device: {error}")
    assert x.sum().item() == (BIG + 6) // 7
    np.testing.assert_array_equal(x[-16:].numpy(), np.arange(BIG - 16, BIG) % 7 == 0)
