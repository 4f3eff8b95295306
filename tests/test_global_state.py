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
