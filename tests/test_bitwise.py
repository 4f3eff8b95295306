"""Bitwise and logical ops (frontend/bitwise.py) against the reference: integer extremes,
shift counts beyond the bit width, bools, promotion, reflected and in-place forms, errors."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, library

INTS = [np.int32, np.int64]
EXTREMES = {np.int32: [0, 1, -1, -8, 5, 2**31 - 1, -2**31, 7, 12],
            np.int64: [0, 1, -1, -8, 5, 2**63 - 1, -2**63, 7, 12]}
COUNTS = [0, 1, 2, 31, 32, 63, 64, -1, 70]
OPS = {
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
    "lshift": lambda a, b: a << b, "rshift": lambda a, b: a >> b,
    "bitwise_and": lambda a, b: a.bitwise_and(b), "bitwise_or": lambda a, b: a.bitwise_or(b),
    "bitwise_xor": lambda a, b: library(a).bitwise_xor(a, b),
    "bitwise_left_shift": lambda a, b: a.bitwise_left_shift(b),
    "bitwise_right_shift": lambda a, b: library(a).bitwise_right_shift(a, b),
}


@pytest.mark.parametrize("name", OPS)
@pytest.mark.parametrize("dtype", INTS, ids=lambda d: d.__name__)
def test_integer_extremes_and_shift_counts(name, dtype):
    """Shifts by negative counts or counts past the bit width shift everything out."""
    a = np.array(EXTREMES[dtype], dtype=dtype)
    b = np.array(COUNTS, dtype=dtype)
    check(OPS[name], a, b, grad=False)
    check(OPS[name], a.reshape(3, 3), b[:3], grad=False)


@pytest.mark.parametrize("name", ["and", "or", "xor", "lshift", "rshift"])
def test_python_numbers_reflected_and_promotion(name):
    fn = OPS[name]
    check(lambda a: fn(a, 3), (3, 4), dtype=np.int32, low=-50, high=50, grad=False)
    check(lambda a: fn(5, a), (3, 4), dtype=np.int64, low=0, high=8, grad=False)
    check(fn, (3, 4), (4,), dtype=np.int64, low=-9, high=9, grad=False)
    i32 = np.arange(-6, 6, dtype=np.int32).reshape(3, 4)
    check(fn, i32, np.arange(4, dtype=np.int64), grad=False)     # int32 with int64: int64


@pytest.mark.parametrize("name", ["and", "or", "xor"])
def test_bools(name):
    check(OPS[name], (4, 5), (5,), dtype=np.bool_, grad=False)
    check(lambda a: OPS[name](a, True), (4, 5), dtype=np.bool_, grad=False)
    check(lambda a: a.bitwise_not(), (4, 5), dtype=np.bool_, grad=False)


@pytest.mark.parametrize("name", ["and", "lshift", "bitwise_xor", "bitwise_right_shift"])
def test_floats_are_refused(name):
    with pytest.raises(NotImplementedError, match="not implemented for float32"):
        OPS[name](cg.tensor([1.0, 2.0]), cg.tensor([1, 2]))
    with pytest.raises(TypeError, match="integer and Boolean"):
        ~cg.tensor([1.0])


@pytest.mark.parametrize("name", ["lshift", "bitwise_left_shift"])
def test_bool_shifts_are_refused(name):
    with pytest.raises(NotImplementedError, match="not implemented for bool"):
        OPS[name](cg.tensor([True]), cg.tensor([True]))


@pytest.mark.parametrize("name", ["logical_and", "logical_or", "logical_xor"])
def test_logical_on_any_dtype(name):
    """Nonzero is true, NaN included; the result is a bool tensor."""
    fn = lambda a, b: getattr(a, name)(b)    # noqa: E731
    x = np.array([0.0, -0.0, 1.5, np.nan, np.inf, 0.0], dtype=np.float32)
    y = np.array([0, 3, 0, 0, -2, 0], dtype=np.int64)
    check(fn, x, y, grad=False)
    check(fn, (3, 4), (4,), dtype=np.bool_, grad=False)
    check(lambda a: getattr(library(a), name)(a, a > 0), (3, 4), grad=False)
    check(fn, (3, 4), (3, 1), dtype=np.int32, low=-1, high=2, grad=False)


def test_in_place_forms():
    a = np.array([1, -8, 12, 2**31 - 1], dtype=np.int32)
    b = np.array([3, 2, 40, 1], dtype=np.int32)
    for name, op in [("bitwise_and_", "&"), ("bitwise_or_", "|"), ("bitwise_xor_", "^"),
                     ("bitwise_left_shift_", "<<"), ("bitwise_right_shift_", ">>")]:
        t = cg.tensor(a)
        assert getattr(t, name)(cg.tensor(b)) is t
        expected = OPS[{"&": "and", "|": "or", "^": "xor", "<<": "lshift", ">>": "rshift"}[op]]
        assert np.array_equal(t.numpy(), expected(cg.tensor(a), cg.tensor(b)).numpy()), name
    t = cg.tensor(a)
    alias = t
    t <<= 2
    t ^= 5
    t &= cg.tensor(b)
    assert t is alias
    assert np.array_equal(t.numpy(), ((a.astype(np.int64) << 2) ^ 5).astype(np.int32) & b)
    f = cg.tensor([0.0, 2.0, np.nan])
    f.logical_and_(cg.tensor([1, 1, 1]))
    assert f.dtype == cg.float32 and np.array_equal(f.numpy(), [0.0, 1.0, 1.0])
    n = cg.tensor([5, 0])
    n.bitwise_not_()
    assert np.array_equal(n.numpy(), [-6, -1])


def test_functions_in_the_cg_namespace():
    a, b = cg.tensor([6, 3]), cg.tensor([3, 1])
    assert np.array_equal(cg.bitwise_and(a, b).numpy(), [2, 1])
    assert np.array_equal(cg.bitwise_left_shift(a, b).numpy(), [48, 6])
    assert np.array_equal(cg.logical_xor(a, b - 1).numpy(), [False, True])
    assert np.array_equal(cg.bitwise_not(a).numpy(), [-7, -4])


def test_results_are_outside_autograd():
    x = cg.tensor([0.0, 1.0], requires_grad=True)
    out = x.logical_or(x)
    assert not out.requires_grad and out.grad_fn is None
