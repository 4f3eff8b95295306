"""Samplers: the order in which a DataLoader reads a dataset's indices, and their batching."""
from __future__ import annotations

import numpy as np

from ...frontend import creation
from ...frontend.generator import numpy_rng


def permutation(n: int, generator=None) -> np.ndarray:
    """A random order of range(n) from generator (a cg.Generator or a NumPy Generator), else
    from clgrad's global random state (cg.manual_seed)."""
    return numpy_rng(generator, creation.generator()).permutation(n)


class Sampler:
    """An iterable of indices (or of lists of indices, for a batch sampler)."""

    def __iter__(self):
        raise NotImplementedError(f"{type(self).__name__} must define __iter__")


class SequentialSampler(Sampler):
    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler):
    """A fresh random order of the dataset's indices each epoch (or num_samples indices drawn
    with replacement)."""

    def __init__(self, data_source, replacement: bool = False, num_samples: int | None = None,
                 generator=None):
        self.data_source, self.replacement, self.generator = data_source, replacement, generator
        self._num_samples = num_samples
        if num_samples is not None and (not isinstance(num_samples, int) or num_samples <= 0):
            raise ValueError(f"num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.replacement:
            rng = numpy_rng(self.generator, creation.generator())
            return iter(rng.integers(0, n, size=self.num_samples).tolist())
        rounds = -(-self.num_samples // n) if n else 0
        order = [i for _ in range(rounds) for i in permutation(n, self.generator).tolist()]
        return iter(order[:self.num_samples])

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler):
    def __init__(self, indices, generator=None):
        self.indices, self.generator = list(indices), generator

    def __iter__(self):
        return iter([self.indices[i] for i in permutation(len(self.indices), self.generator)])

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler):
    """Lists of batch_size indices from sampler; the last one shorter unless drop_last."""

    def __init__(self, sampler, batch_size: int, drop_last: bool):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        self.sampler, self.batch_size, self.drop_last = sampler, batch_size, drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
