"""cg.Generator: a random stream of its own, as torch.Generator, for the samplers and
random_split (`generator=cg.Generator().manual_seed(42)` makes a split reproducible without
touching the global seed)."""
from __future__ import annotations

import numpy as np


class Generator:
    def __init__(self, device=None):
        self.device = device
        self.seed()

    def manual_seed(self, seed: int) -> "Generator":
        self._initial_seed = int(seed)
        self.rng = np.random.default_rng(self._initial_seed)
        return self

    def seed(self) -> int:
        """Reseeds from the operating system's entropy; returns the new seed."""
        self.manual_seed(int(np.random.SeedSequence().entropy) % 2**63)
        return self._initial_seed

    def initial_seed(self) -> int:
        return self._initial_seed

    def get_state(self) -> dict:
        return self.rng.bit_generator.state

    def set_state(self, state: dict) -> "Generator":
        self.rng.bit_generator.state = state
        return self


def numpy_rng(generator, default: np.random.Generator) -> np.random.Generator:
    """The NumPy stream behind generator (a cg.Generator or a NumPy Generator), else default."""
    if generator is None:
        return default
    return generator.rng if isinstance(generator, Generator) else generator
