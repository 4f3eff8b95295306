"""Default dtype, dtype promotion functions and whole-tensor facts against PyTorch."""
import numpy as np
import pytest
import torch

from helpers import check, library

import clgrad as cg

DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
          "float64")
PAIRS = [(a, b) for a in DTYPES for b in DTYPES]


@pytest.fixture
def float64_default():
    cg.set_default_dtype(cg.float64)
    yield
    cg.set_default_dtype(cg.float32)


def test_default_dtype(float64_default):
    assert cg.get_default_dtype() == cg.float64
    assert cg.zeros(2).dtype == cg.float64
    assert cg.ones(2, 3).dtype == cg.float64
    assert cg.randn(2).dtype == cg.float64
    assert cg.rand(2).dtype == cg.float64
    assert cg.arange(0.0, 1.0, 0.5).dtype == cg.float64
    assert cg.full((2,), 1.5).dtype == cg.float64
    assert cg.tensor([1.5]).dtype == cg.float64
    assert cg.linspace(0, 1, 3).dtype == cg.float64
    assert (cg.arange(3) / 2).dtype == cg.float64
    assert (cg.arange(3) * 0.5).dtype == cg.float64
    np.testing.assert_array_equal(cg.tensor([0.1]).numpy(), np.array([0.1]))


def test_default_dtype_restored_and_checked():
    assert cg.get_default_dtype() == cg.float32
    with pytest.raises(TypeError, match="floating-point"):
        cg.set_default_dtype(cg.int64)


@pytest.mark.parametrize("a,b", PAIRS)
def test_promote_types_and_can_cast(a, b):
    assert cg.promote_types(getattr(cg, a), getattr(cg, b)).name == \
        str(torch.promote_types(getattr(torch, a), getattr(torch, b))).split(".")[1]
    assert cg.can_cast(getattr(cg, a), getattr(cg, b)) == \
        torch.can_cast(getattr(torch, a), getattr(torch, b))


@pytest.mark.parametrize("operands", [
    (("t", "int32", (2,)), ("t", "float16", ())), (("t", "int64", (2,)), 2.5),
    (("t", "bool", ()), 3), (("t", "float16", (2,)), ("t", "float64", (3,))),
    (("t", "int32", (2,)), ("t", "int64", ())), (("t", "uint8", (2,)), ("t", "int8", (2,))),
    (("t", "uint8", (2,)), -1), (("t", "int8", (2,)), 2.5), (("t", "bfloat16", (2,)), 1.5),
    (("t", "int16", ()), ("t", "uint8", (2,))), (("t", "bfloat16", ()), ("t", "float16", ()))])
def test_result_type(operands):
    def make(lib, spec):
        return lib.zeros(spec[2], dtype=getattr(lib, spec[1])) if isinstance(spec, tuple) else spec
    got = cg.result_type(*(make(cg, s) for s in operands))
    want = torch.result_type(*(make(torch, s) for s in operands))
    assert got.name == str(want).split(".")[1]


@pytest.mark.parametrize("value", [[0.0], [1.5], [[0]], [True], 7])
def test_is_nonzero(value):
    assert cg.tensor(value).is_nonzero() == torch.tensor(value).is_nonzero()
    assert cg.is_nonzero(cg.tensor(value)) == torch.is_nonzero(torch.tensor(value))


@pytest.mark.parametrize("shape", [(0,), (2,)])
def test_is_nonzero_errors(shape):
    with pytest.raises(RuntimeError, match="ambiguous"):
        cg.zeros(*shape).is_nonzero()


def test_is_same_size():
    assert cg.zeros(2, 3).is_same_size(cg.ones(2, 3))
    assert not cg.is_same_size(cg.zeros(2, 3), cg.zeros(3, 2))


@pytest.mark.parametrize("alpha", [1, 2.5])
def test_rsub(alpha):
    check(lambda a, b: library(a).rsub(a, b, alpha=alpha), (2, 3), (3,))
    check(lambda a: library(a).rsub(a, 2.0, alpha=alpha), (0, 3))


@pytest.mark.parametrize("operation", [
    lambda t, i: t + np.ones(2),                    # an array is a tensor: float64
    lambda t, i: t + np.ones((3, 2), np.float32),   # broadcast
    lambda t, i: np.float32(2) * t,                 # a NumPy scalar is a number
    lambda t, i: t * np.float64(2),
    lambda t, i: i * np.float64(2),                 # a float number makes an int tensor float
    lambda t, i: i + np.ones(2, np.int64),
    lambda t, i: i * np.int64(3),
    lambda t, i: t + np.array(2.0),                 # a 0-d array promotes as a tensor would
    lambda t, i: i - np.array(2),
    lambda t, i: t[0] * np.array(2.0),              # both 0-d
])
def test_numpy_operands_as_pytorch_reads_them(operation):
    ours = operation(cg.ones(2), cg.ones(2, dtype=cg.int32))
    theirs = operation(torch.ones(2), torch.ones(2, dtype=torch.int32))
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
