"""DataLoader: a dataset's samples in batches, in the order of a sampler, collated into tensors.

Samples load in the calling process (num_workers is accepted for PyTorch scripts and changes
nothing). A TensorDataset's batch is one gather per tensor (a slice when the indices are
consecutive), not a stack of per-sample views.
"""
from __future__ import annotations

import collections.abc
import numbers

import numpy as np

from ...compiler import dtype as dtypes
from ...frontend import creation, joining
from ...frontend.tensor import Tensor
from .dataset import IterableDataset, Subset, TensorDataset
from .sampler import BatchSampler, RandomSampler, SequentialSampler


def default_collate(batch):
    """A list of samples as one batch, as torch's default_collate: tensors and NumPy arrays
    stacked, Python numbers as a tensor (floats as float64, ints as int64), mappings and
    sequences collated field by field, strings kept as a list."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return joining.stack(list(batch))
    if isinstance(elem, (np.ndarray, np.generic)) and elem.dtype.kind not in "USO":
        return creation.tensor(np.stack([np.asarray(b) for b in batch]))
    if isinstance(elem, bool):
        return creation.tensor(list(batch), dtype=dtypes.bool_)
    if isinstance(elem, numbers.Integral):
        return creation.tensor(list(batch), dtype=dtypes.int64)
    if isinstance(elem, numbers.Real):
        return creation.tensor(list(batch), dtype=dtypes.float64)
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, collections.abc.Mapping):
        collated = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(collated)     # an OrderedDict or the like keeps its type
        except TypeError:
            return collated
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):       # a namedtuple
        return type(elem)(*(default_collate(list(field)) for field in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        if any(len(sample) != len(elem) for sample in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        return [default_collate(list(field)) for field in zip(*batch)]
    raise TypeError(f"default_collate: batch must contain tensors, NumPy arrays, numbers, "
                    f"dicts or lists; found {type(elem).__name__}")


def _tensor_rows(dataset) -> tuple[tuple[Tensor, ...], list[int] | None] | None:
    """The tensors of a TensorDataset (or a Subset of one) and the Subset's indices."""
    if isinstance(dataset, TensorDataset):
        return dataset.tensors, None
    if isinstance(dataset, Subset) and isinstance(dataset.dataset, TensorDataset):
        return dataset.dataset.tensors, dataset.indices
    return None


def _gather(tensors, indices: list[int]):
    first, last = indices[0], indices[-1]
    if indices == list(range(first, last + 1)):
        return [t[first:last + 1] for t in tensors]
    rows = creation.tensor(indices, dtype=dtypes.int64, device=tensors[0].device)
    return [t[rows] for t in tensors]


class DataLoader:
    def __init__(self, dataset, batch_size: int | None = 1, shuffle: bool | None = None,
                 sampler=None, batch_sampler=None, num_workers: int = 0, collate_fn=None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn=None, generator=None, *, prefetch_factor=None,
                 persistent_workers: bool = False, **_more_worker_options):
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 to "
                             "disable multiprocessing.")
        self.dataset, self.batch_size, self.drop_last = dataset, batch_size, drop_last
        self.num_workers, self.generator = num_workers, generator
        self._iterable = isinstance(dataset, IterableDataset)
        if self._iterable and (shuffle or sampler is not None or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, "
                             "sampler and batch_sampler options")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None and (batch_size != 1 or shuffle or sampler is not None
                                          or drop_last):
            raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                             "shuffle, sampler, and drop_last")
        if batch_sampler is not None:
            self.batch_size = None
        if sampler is None and not self._iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle \
                else SequentialSampler(dataset)
        self.sampler = sampler
        if batch_sampler is None and batch_size is not None and not self._iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        self.batch_sampler = batch_sampler
        self.collate_fn = collate_fn if collate_fn is not None else \
            (default_collate if self.batch_sampler is not None or self._iterable and batch_size
             else _as_given)

    def __iter__(self):
        if self._iterable:
            return self._stream()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return (self._batch(indices) for indices in self.batch_sampler)

    def _batch(self, indices: list[int]):
        rows = _tensor_rows(self.dataset) if self.collate_fn is default_collate else None
        if rows is not None:
            tensors, subset = rows
            return _gather(tensors, indices if subset is None else [subset[i] for i in indices])
        return self.collate_fn([self.dataset[i] for i in indices])

    def _stream(self):
        if self.batch_size is None:
            yield from (self.collate_fn(sample) for sample in self.dataset)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        return len(self.batch_sampler if self.batch_sampler is not None else self.sampler)


def _as_given(sample):
    """What a DataLoader without batching yields, as torch's default_convert: the sample with
    its NumPy arrays as tensors, looking inside mappings and sequences."""
    if isinstance(sample, np.ndarray) and sample.dtype.kind not in "USO":
        return creation.tensor(sample)
    if isinstance(sample, collections.abc.Mapping):
        return {key: _as_given(value) for key, value in sample.items()}
    if isinstance(sample, tuple) and hasattr(sample, "_fields"):
        return type(sample)(*(_as_given(field) for field in sample))
    if isinstance(sample, (list, tuple)):
        return [_as_given(field) for field in sample]
    return sample
