"""cg.utils.data against torch.utils.data: batches, shuffling, collation, splits and errors."""
import collections

import numpy as np
import pytest

import clgrad as cg
from clgrad.utils.data import (ConcatDataset, DataLoader, Dataset, IterableDataset, Subset,
                               TensorDataset, default_collate, random_split)
from helpers import torch


def _values(batch):
    """A batch as nested Python values, for comparing clgrad's with torch's."""
    if hasattr(batch, "numpy"):
        return batch.numpy().tolist(), str(batch.dtype).replace("torch.", "").replace("clgrad.", "")
    if isinstance(batch, dict):
        return {k: _values(v) for k, v in batch.items()}
    if isinstance(batch, (list, tuple)):
        return [_values(b) for b in batch]
    return batch


class Squares(Dataset):
    def __len__(self):
        return 7

    def __getitem__(self, i):
        return {"x": np.full(2, i, dtype=np.float32), "y": i * i, "w": i / 2, "name": f"s{i}"}


class Stream(IterableDataset):
    def __iter__(self):
        return iter(range(5))

    def __len__(self):
        return 5


@pytest.mark.parametrize("kwargs", [dict(batch_size=3), dict(batch_size=3, drop_last=True),
                                    dict(batch_size=None), dict(batch_size=7)])
def test_batches_match_torch(kwargs):
    ours = list(DataLoader(Squares(), **kwargs))
    assert len(ours) == len(DataLoader(Squares(), **kwargs))
    if torch is not None:
        import torch.utils.data as tud

        class TorchSquares(tud.Dataset):
            __len__, __getitem__ = Squares.__len__, Squares.__getitem__

        theirs = list(tud.DataLoader(TorchSquares(), **kwargs))
        assert [_values(b) for b in ours] == [_values(b) for b in theirs]


def test_tensor_dataset_batches_are_rows_in_sampler_order():
    x, y = cg.arange(20.).reshape(10, 2), cg.arange(10)
    batches = list(DataLoader(TensorDataset(x, y), batch_size=4))
    assert [b[1].numpy().tolist() for b in batches] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    np.testing.assert_array_equal(batches[1][0].numpy(), x.numpy()[4:8])
    loader = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True,
                        generator=cg.Generator().manual_seed(3))
    first, second = ([b[1].numpy() for b in loader] for _ in range(2))
    seen = np.concatenate(first)
    assert sorted(seen.tolist()) == list(range(10)) and seen.tolist() != list(range(10))
    assert np.concatenate(second).tolist() != seen.tolist()       # a new order each epoch
    for xb, yb in loader:
        np.testing.assert_array_equal(xb.numpy(), x.numpy()[yb.numpy()])
    again = DataLoader(TensorDataset(x, y), batch_size=4, shuffle=True,
                       generator=cg.Generator().manual_seed(3))
    assert np.concatenate([b[1].numpy() for b in again]).tolist() == seen.tolist()


def test_iterable_dataset_and_default_collate():
    assert [b.numpy().tolist() for b in DataLoader(Stream(), batch_size=2)] == [[0, 1], [2, 3],
                                                                                 [4]]
    assert len(DataLoader(Stream(), batch_size=2, drop_last=True)) == 2
    Point = collections.namedtuple("Point", "x y")
    batch = default_collate([Point(1, 2.0), Point(3, 4.0)])
    assert isinstance(batch, Point) and batch.x.dtype == cg.int64 and batch.y.dtype == cg.float64
    stacked = default_collate([cg.ones(2), cg.zeros(2)])
    assert stacked.numpy().tolist() == [[1, 1], [0, 0]]
    assert default_collate([True, False]).dtype == cg.bool
    with pytest.raises(RuntimeError, match="equal size"):
        default_collate([[1, 2], [3]])


def test_splits_subsets_and_concatenation():
    ds = TensorDataset(cg.arange(10))
    a, b = random_split(ds, [0.7, 0.3], generator=cg.Generator().manual_seed(0))
    assert (len(a), len(b)) == (7, 3)
    everything = sorted([int(s[i][0].item()) for s in (a, b) for i in range(len(s))])
    assert everything == list(range(10))
    c, d, e = random_split(range(10), [0.34, 0.33, 0.33])
    assert (len(c), len(d), len(e)) == (4, 3, 3)
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(ds, [3, 3])
    sub = Subset(ds, [9, 0, 4])
    assert [b[0].numpy().tolist() for b in DataLoader(sub, batch_size=2)] == [[9, 0], [4]]
    both = ConcatDataset([range(3), range(10, 12)])
    assert [both[i] for i in range(len(both))] == [0, 1, 2, 10, 11] and both[-1] == 11


def test_bad_arguments_raise_as_torch():
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        DataLoader(range(3), batch_size=0)
    with pytest.raises(ValueError, match="mutually exclusive with shuffle"):
        DataLoader(range(3), sampler=[0, 1], shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified shuffle"):
        DataLoader(Stream(), shuffle=True)
    with pytest.raises(ValueError, match="Size mismatch between tensors"):
        TensorDataset(cg.ones(3), cg.ones(4))


def test_generator_streams_are_reproducible_and_independent():
    g = cg.Generator().manual_seed(5)
    assert g.initial_seed() == 5
    state = g.get_state()
    first = list(DataLoader(range(6), batch_size=6, shuffle=True, generator=g))[0].numpy()
    g.set_state(state)
    again = list(DataLoader(range(6), batch_size=6, shuffle=True, generator=g))[0].numpy()
    assert first.tolist() == again.tolist() and sorted(first.tolist()) == list(range(6))
    cg.manual_seed(0)
    before = cg.rand(3).numpy()
    cg.manual_seed(0)
    list(DataLoader(range(6), shuffle=True, generator=cg.Generator().manual_seed(1)))
    np.testing.assert_array_equal(cg.rand(3).numpy(), before)   # the global stream untouched
