"""Integer // and % by zero raise as PyTorch's CPU ops do (RuntimeError, here also a
ZeroDivisionError) instead of returning garbage; kernels never trap (by 0 or the most negative
value by -1); ~ of an integer is its bitwise complement (issue 13, item 8)."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, make

INT_MIN = np.iinfo(np.int32).min


@pytest.mark.parametrize("op", ["floordiv", "mod"])
@pytest.mark.parametrize("dtype", [cg.int32, cg.int64])
def test_by_a_zero_number_raises(op, dtype):
    x = cg.tensor([7, -7, 3], dtype=dtype)
    fn = (lambda a, b: a // b) if op == "floordiv" else (lambda a, b: a % b)
    with pytest.raises(RuntimeError, match=r"ZeroDivisionError.*Size\(\[3\]\)"):
        fn(x, 0)
    with pytest.raises(ZeroDivisionError):
        fn(x, 0)
    with pytest.raises(ZeroDivisionError):
        5 // cg.tensor([1, 0, 2], dtype=dtype)


@pytest.mark.parametrize("op", ["floordiv", "mod"])
def test_by_a_tensor_holding_zero_raises(op):
    fn = (lambda a, b: a // b) if op == "floordiv" else (lambda a, b: a % b)
    x = cg.tensor([7, -7, 3, 4], dtype=cg.int32)
    realized = cg.tensor([2, 0, 1, 5], dtype=cg.int32)
    lazy = cg.tensor([3, 1, 2, 4], dtype=cg.int32) - 1            # (2, 0, 1, 3), not computed
    for divisor in (realized, lazy, cg.zeros(4, dtype=cg.int32)):
        with pytest.raises(ZeroDivisionError, match=r"int32 tensor of shape clgrad.Size\(\[4\]\)"):
            fn(x, divisor)
    assert (lazy.numpy() == [2, 0, 1, 3]).all()     # computed for the check, still right


def test_divisor_read_once():
    x = cg.tensor(np.arange(-20, 20, dtype=np.int64))
    d = cg.tensor(np.arange(1, 41, dtype=np.int64))
    first = (x // d).numpy()
    np.testing.assert_array_equal((x // d).numpy(), first)
    np.testing.assert_array_equal(first, np.arange(-20, 20) // np.arange(1, 41))


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_division_values_as_pytorch(dtype):
    a = make((4, 37), dtype, -50, 50, seed=1)
    b = make((4, 37), dtype, -6, 7, seed=2)
    b[b == 0] = -1                        # -1 divides by 1 in the kernel: still right
    check(lambda x, y: x // y, a, b)
    check(lambda x, y: x % y, a, b)
    check(lambda x: x // -3, a)
    check(lambda x: x % -1, a)
    check(lambda x: 100 // x, b)


def test_most_negative_by_minus_one_wraps():
    x = np.array([INT_MIN, INT_MIN, 5] * 7, np.int32)
    check(lambda t: t // -1, x)
    check(lambda t: t % -1, x)
    check(lambda t, d: t // d, x, np.full(21, -1, np.int32))


def test_float_division_by_zero_is_inf_or_nan():
    x = np.array([7.0, -7.0, 0.0, 1.5], np.float32)
    check(lambda t: t // 0, x, grad=False)
    check(lambda t: t % 0, x, grad=False)
    check(lambda t: t / 0, x)
    check(lambda t: t / 0, np.array([1, 0, -2], np.int64), grad=False)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_invert_is_bitwise_on_integers(dtype):
    check(lambda t: ~t, make((3, 37), dtype, -100, 100), grad=False)
    check(lambda t: ~t, make((5,), dtype, -100, 100), grad=False)


def test_invert_of_a_float_raises():
    import torch
    with pytest.raises(TypeError):
        ~torch.ones(2)
    with pytest.raises(TypeError, match="float32"):
        ~cg.ones(2)
