"""from_numpy and numpy() share memory with NumPy on a CPU device, as PyTorch's do: each
scenario runs on torch and on clgrad and must see the same values; then the cases where
clgrad copies instead, and the buffer pool and donation never handing shared memory to
another result."""
import gc
import warnings

import numpy as np
import pytest

import clgrad as cg
from helpers import torch

needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch's behaviour is the reference")
pytestmark = pytest.mark.usefixtures("cpu_device")      # (a GPU's memory is its own)


def _both(scenario):
    """scenario(lib) run with torch and with clgrad: what each returned."""
    return scenario(torch), scenario(cg)


def _same(scenario):
    ref, got = _both(scenario)
    for r, g in zip(ref, got):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(r))


@needs_torch
def test_from_numpy_sees_numpy_writes_and_writes_in_place_into_the_array():
    def scenario(lib):
        a = np.zeros(3, np.float32)
        t = lib.from_numpy(a)
        a[0] = 5
        seen = t.tolist()
        t.add_(1)
        return seen, a.copy()
    _same(scenario)


@needs_torch
@pytest.mark.parametrize("change", [
    lambda t: t.mul_(3),
    lambda t: t.copy_(t * 2 + 1),        # a value computed from the old one
    lambda t: t.zero_(),
    lambda t: t.__setitem__(1, 9.0),
    lambda t: t[1:].add_(1),             # through a view
    lambda t: t.detach().clamp_(0, 1.5),
], ids=["mul_", "copy_", "zero_", "setitem", "view", "detach"])
def test_in_place_changes_land_in_the_array(change):
    def scenario(lib):
        a = np.array([1.0, 2.0, -3.0], np.float32)
        t = lib.from_numpy(a)
        change(t)
        return a.copy(), t.tolist()
    _same(scenario)


@needs_torch
def test_numpy_is_the_tensors_memory():
    def scenario(lib):
        t = lib.ones(3)
        n = t.numpy()
        n[0] = 7
        seen = (t + 0).tolist()
        t.mul_(2)
        again = t.numpy()
        return seen, n.copy(), np.shares_memory(again, n), np.shares_memory(
            t.detach().numpy(), n)
    _same(scenario)


@needs_torch
def test_values_computed_before_an_in_place_change_keep_the_old_value():
    def scenario(lib):
        a = np.arange(4, dtype=np.float32)
        t = lib.from_numpy(a)
        u = t * 2            # lazy in clgrad: it must still read the value before add_
        t.add_(10)
        return u.tolist(), a.copy()
    _same(scenario)


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int64, np.int32, np.int8,
                                   np.uint8, np.int16, np.bool_])
def test_each_dtype_shares_both_ways(dtype):
    a = np.zeros((2, 3), dtype)
    t = cg.from_numpy(a)
    assert t.dtype.name == np.dtype(dtype).name
    n = t.numpy()
    assert n.dtype == a.dtype and np.shares_memory(n, a)
    n[1, 2] = 1
    assert a[1, 2] == 1


def test_zero_dim_and_empty_arrays():
    a = np.array(2.5, np.float32)
    t = cg.from_numpy(a)
    assert t.shape == () and np.shares_memory(t.numpy(), a)
    empty = cg.from_numpy(np.zeros((0, 3), np.float32))
    assert empty.shape == (0, 3) and empty.numpy().shape == (0, 3)


def _raised(lib, make):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            make(lib)
        except Exception as e:   # noqa: BLE001 (the type is what is compared)
            return type(e)
    return None


@needs_torch
@pytest.mark.parametrize("make", [
    lambda lib: lib.from_numpy(np.zeros((3, 4), np.float32)[::-1]),
    lambda lib: lib.from_numpy(np.zeros(3, ">f4")),
    lambda lib: lib.from_numpy([1.0, 2.0]),
    lambda lib: lib.from_numpy(np.float32(1)),
    lambda lib: lib.from_numpy(np.array(["a"])),
], ids=["negative-strides", "byte-order", "list", "scalar", "str"])
def test_bad_arrays_raise_as_in_pytorch(make):
    ref, got = _both(lambda lib: _raised(lib, make))
    assert ref is not None and got is ref, (ref, got)


def test_arrays_clgrad_cannot_share_are_copied():
    """PyTorch shares these too; clgrad copies (documented in from_numpy): its tensors are
    contiguous, and it does not write into memory NumPy marked read-only."""
    strided = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = cg.from_numpy(strided)
    np.testing.assert_array_equal(t.numpy(), strided)
    assert not np.shares_memory(t.numpy(), strided)
    frozen = np.ones(3, np.float32)
    frozen.flags.writeable = False
    t = cg.from_numpy(frozen)
    t.add_(1)
    np.testing.assert_array_equal(frozen, np.ones(3))
    np.testing.assert_array_equal(t.numpy(), np.full(3, 2.0))


def test_numpy_of_a_view_is_a_copy_and_the_view_keeps_its_base_s_value():
    """PyTorch's slice shares its base's memory; clgrad's has none of its own to share."""
    t = cg.from_numpy(np.arange(4, dtype=np.float32))
    v = t[1:]
    v.numpy()[0] = 9
    assert v.tolist() == t.tolist()[1:] == [1.0, 2.0, 3.0]
    d = t.detach()
    d.numpy()[0] = 5          # a detached tensor is its base's memory, as in PyTorch
    assert t.tolist()[0] == 5 and v.tolist()[0] == 1


@needs_torch
def test_numpy_of_a_tensor_requiring_grad_raises_as_in_pytorch():
    reads = [lambda t: t.numpy(), np.asarray, lambda t: t.__array__(),
             lambda t: np.array(t, np.float64)]

    def scenario(lib):
        w = lib.ones(2, requires_grad=True)
        raised = []
        for t in (w, w * 2):       # a leaf and a result
            for read in reads:
                with warnings.catch_warnings(), pytest.raises(RuntimeError) as info:
                    warnings.simplefilter("ignore")     # torch's __array__ takes no copy=
                    read(t)
                raised.append(str(info.value))
        return raised
    ref, got = _both(scenario)
    assert got == ref
    assert got[0] == ("Can't call numpy() on Tensor that requires grad. "
                      "Use tensor.detach().numpy() instead.")


@needs_torch
def test_a_tensor_requiring_grad_reads_detached_or_forced():
    def scenario(lib):
        w = lib.tensor([1.0, 1.0], requires_grad=True)
        w.detach().numpy()[0] = 5          # a leaf's detach is its memory
        y = w * 3
        return (w.detach().numpy().copy(), w.numpy(force=True).copy(),
                y.detach().numpy().copy(), y.numpy(force=True).copy(), w.tolist(), y[1].item())
    _same(scenario)


def _array_changed_in_place():
    a = np.ones(4, np.float32)
    t = cg.from_numpy(a)
    t.mul_(3)
    return a, t


def _numpy_of_a_result():
    t = (cg.ones(4) * 3).realize()
    return t.numpy(), t


@pytest.mark.parametrize("share", [_array_changed_in_place, _numpy_of_a_result])
def test_a_result_never_takes_memory_numpy_holds(share):
    array, t = share()
    u = t * 2
    del t                    # the graph holds the only reference to t's buffer: donation's case
    u.realize()
    np.testing.assert_array_equal(array, np.full(4, 3.0))
    np.testing.assert_array_equal(u.numpy(), np.full(4, 6.0))


@pytest.mark.parametrize("share", [_array_changed_in_place, _numpy_of_a_result])
def test_memory_numpy_holds_outlives_its_tensor(share):
    array, t = share()
    del t
    gc.collect()
    others = [(cg.ones(4) * k).realize() for k in range(4)]   # the pool's buffers of that size
    np.testing.assert_array_equal(array, np.full(4, 3.0))
    np.testing.assert_array_equal(others[2].numpy(), np.full(4, 2.0))


@needs_torch
def test_as_tensor_shares_as_pytorch_does():
    def scenario(lib):
        a = np.zeros(3, np.float32)
        same, converted = lib.as_tensor(a), lib.as_tensor(a, dtype=lib.float64)
        a[1] = 4
        return same.tolist(), converted.tolist()
    _same(scenario)


@needs_torch
def test_tensor_copies_the_array_at_once():
    def scenario(lib):
        a = np.zeros(100_000, np.float32)
        t = lib.tensor(a)
        a[:] = 5             # clgrad's upload is queued: it must not read the array later
        return t[:3].tolist(), a[:3]
    _same(scenario)


def test_writing_a_numpy_view_changes_no_other_value():
    t = cg.ones(3)
    t.numpy()[0] = 7         # equal graphs are one node: another ones(3) must not see it
    assert cg.ones(3).tolist() == [1.0, 1.0, 1.0]
    assert t.tolist() == [7.0, 1.0, 1.0]
