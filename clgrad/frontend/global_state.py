"""torch.*'s process-wide settings: the random ops' seed and state, the default device."""
from __future__ import annotations

import copy
import os

import numpy as np

from ..config import config
from ..runtime import get_device
from . import creation


def seed() -> int:
    """Reseeds the random ops from the operating system's entropy; returns the new seed."""
    new_seed = int(np.random.SeedSequence().entropy) % 2**63
    creation.manual_seed(new_seed)
    return new_seed


def get_rng_state() -> dict:
    """A copy of the random ops' state (NumPy's bit generator state: a dict, where PyTorch
    has a byte tensor) that set_rng_state restores."""
    return copy.deepcopy(creation.generator().bit_generator.state)


def set_rng_state(new_state: dict) -> None:
    if not isinstance(new_state, dict) or "bit_generator" not in new_state:
        raise TypeError(f"set_rng_state(): expected a state from get_rng_state(), got "
                        f"{type(new_state).__name__}")
    creation.generator().bit_generator.state = copy.deepcopy(new_state)


def set_default_device(device) -> None:
    """The device of tensors made without one (None: back to CLGRAD_DEVICE's, else the
    preferred one)."""
    if device is not None:
        get_device(device)          # fails here, on an unknown spec, not at the next tensor
    config.DEVICE = (os.environ.get("CLGRAD_DEVICE") or None) if device is None else \
        getattr(device, "spec", device)


def get_default_device():
    return get_device()


FUNCTIONS = {fn.__name__: fn for fn in (seed, get_rng_state, set_rng_state, set_default_device,
                                         get_default_device)}
FUNCTIONS["initial_seed"] = creation.initial_seed
