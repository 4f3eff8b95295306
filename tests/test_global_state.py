"""Seeds, random state and the default device (frontend/global_state.py)."""
import numpy as np
import pytest

import clgrad as cg


def test_manual_seed_is_the_initial_seed():
    cg.manual_seed(1234)
    assert cg.initial_seed() == 1234


def test_seed_reseeds_and_reproduces():
    first = cg.seed()
    assert cg.initial_seed() == first and 0 <= first < 2**63
    a = cg.randn(5).numpy()
    cg.manual_seed(first)
    np.testing.assert_array_equal(cg.randn(5).numpy(), a)
    assert cg.seed() != first


def test_rng_state_round_trip():
    cg.manual_seed(7)
    state = cg.get_rng_state()
    a = cg.rand(4).numpy()
    cg.rand(3)
    cg.set_rng_state(state)
    np.testing.assert_array_equal(cg.rand(4).numpy(), a)
    with pytest.raises(TypeError, match="get_rng_state"):
        cg.set_rng_state(3)


def test_default_device():
    device = cg.get_default_device()
    assert cg.zeros(2).device == device
    try:
        cg.set_default_device(device.spec)
        assert cg.get_default_device() == device
        assert cg.ones(3).device == device
        with pytest.raises(ValueError, match="bad device spec"):
            cg.set_default_device("no-such-device")
    finally:
        cg.set_default_device(None)
    assert cg.get_default_device() == device


@pytest.fixture
def print_defaults():
    import torch
    yield torch
    torch.set_printoptions(profile="default")
    cg.set_printoptions(profile="default")


@pytest.mark.parametrize("options", [
    dict(precision=2), dict(precision=6, sci_mode=True), dict(sci_mode=False),
    dict(threshold=5, edgeitems=2), dict(linewidth=30), dict(profile="short"),
    dict(profile="full", precision=1),
])
def test_set_printoptions_prints_as_pytorch(print_defaults, options):
    torch = print_defaults
    values = [np.linspace(-3, 40, 12, dtype=np.float32).reshape(3, 4),
              np.array([1e-6, 2.5, 3e5], np.float32), np.arange(2000).reshape(40, 50),
              np.array([1.0, 20.0, 300.0], np.float32)]
    torch.set_printoptions(**options)
    cg.set_printoptions(**options)
    for v in values:
        assert repr(cg.tensor(v)) == repr(torch.tensor(v))


def test_flags_round_trip_with_pytorch_errors():
    import torch
    assert cg.get_num_threads() >= 1 and cg.get_num_interop_threads() >= 1
    threads = cg.get_num_threads()
    cg.set_num_threads(3)
    assert cg.get_num_threads() == 3
    cg.set_num_threads(threads)
    for bad, error in ((0, "positive integer"), (2.5, "expects an int")):
        with pytest.raises(RuntimeError, match=error):
            cg.set_num_threads(bad)
        with pytest.raises(RuntimeError, match=error):
            torch.set_num_threads(bad)
    with pytest.raises(TypeError, match="must be bool"):
        cg.use_deterministic_algorithms(1)
    try:
        cg.use_deterministic_algorithms(True, warn_only=True)
        assert cg.are_deterministic_algorithms_enabled()
        assert cg.is_deterministic_algorithms_warn_only_enabled()
        assert cg.get_deterministic_debug_mode() == 1
        cg.set_deterministic_debug_mode("error")
        assert cg.get_deterministic_debug_mode() == 2
        with pytest.raises(RuntimeError, match="expected 0, 1, or 2"):
            cg.set_deterministic_debug_mode(5)
    finally:
        cg.set_deterministic_debug_mode(0)
    assert not cg.are_deterministic_algorithms_enabled()
    assert cg.get_float32_matmul_precision() == "highest"
    with pytest.warns(UserWarning, match="no effect"):
        cg.set_float32_matmul_precision("low")
    cg.set_float32_matmul_precision("high")
    assert cg.get_float32_matmul_precision() == "high"
    cg.set_float32_matmul_precision("highest")
    cg.set_anomaly_enabled(True, check_nan=False)
    assert cg.is_anomaly_enabled() and not cg.is_anomaly_check_nan_enabled()
    cg.set_anomaly_enabled(False)
    with pytest.raises(TypeError, match="must be bool"):
        cg.set_anomaly_enabled(1)
    cg.set_warn_always(True)
    assert cg.is_warn_always_enabled()
    cg.set_warn_always(False)
    with pytest.raises(RuntimeError, match="expects a bool"):
        cg.set_warn_always(1)
