"""torch.random: the random ops' global stream (its seed and state), default_generator (that
stream as a Generator, for `generator=` arguments) and fork_rng."""
from __future__ import annotations

import contextlib

from .frontend import creation, global_state
from .frontend.creation import initial_seed, manual_seed
from .frontend.generator import Generator
from .frontend.global_state import get_rng_state, seed, set_rng_state


class _GlobalGenerator(Generator):
    """The stream random ops draw from when given no generator: seeding either seeds both."""

    def __init__(self):     # (the stream exists already: nothing to seed)
        self.device = None

    @property
    def rng(self):
        return creation.generator()

    def manual_seed(self, seed: int) -> "_GlobalGenerator":
        creation.manual_seed(seed)
        return self

    def seed(self) -> int:
        return global_state.seed()

    def initial_seed(self) -> int:
        return creation.initial_seed()


default_generator = _GlobalGenerator()


@contextlib.contextmanager
def fork_rng(devices=None, enabled: bool = True, _caller: str = "fork_rng",
             _devices_kw: str = "devices", device_type=None):
    """Inside, random ops draw as usual; after, the global stream is back where it was, as if
    they had not drawn. (Every device draws from the one host stream: devices is accepted
    for PyTorch's signature and changes nothing.)"""
    if not enabled:
        yield
        return
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)


__all__ = ["default_generator", "fork_rng", "get_rng_state", "set_rng_state", "manual_seed",
           "seed", "initial_seed", "Generator"]
