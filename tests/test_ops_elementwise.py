"""Elementwise ops, forward and backward, against the reference (see helpers.check)."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, make

A, B, C = (3, 5), (4, 1, 6), (2, 3, 4)
POSITIVE = dict(low=0.2, high=3.0)


BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "maximum": lambda a, b: a.maximum(b),
    "minimum": lambda a, b: a.minimum(b),
    "add_method": lambda a, b: a.add(b, alpha=2),
    "sub_method": lambda a, b: a.sub(b, alpha=3),
}


@pytest.mark.parametrize("name", BINARY)
@pytest.mark.parametrize("shapes", [(A, A), (A, (5,)), (B, (3, 1)), ((), A), (C, ())],
                         ids=["same", "row", "size1", "0d_left", "0d_right"])
def test_binary(name, shapes):
    check(BINARY[name], *shapes)


SCALAR = {
    "radd": lambda a: 2 + a, "rsub": lambda a: 2 - a, "rmul": lambda a: 3 * a,
    "rdiv": lambda a: 2 / a, "add": lambda a: a + 1.5, "sub": lambda a: a - 1,
    "mul": lambda a: a * -2, "div": lambda a: a / 4, "pow2": lambda a: a ** 2,
    "pow3": lambda a: a ** 3, "neg_pow": lambda a: a ** -1,
}


@pytest.mark.parametrize("name", SCALAR)
def test_scalar_operand(name):
    check(SCALAR[name], A, **POSITIVE)


def test_pow():
    check(lambda a: a ** 0.5, A, **POSITIVE)
    check(lambda a, b: a ** b, A, A, **POSITIVE)
    check(lambda a, b: a.pow(b), B, (3, 1), **POSITIVE)
    check(lambda a: 2 ** a, A)
    check(lambda a: a.pow(2.5), A, **POSITIVE)


UNARY = {
    "neg": (lambda a: -a, {}), "neg_method": (lambda a: a.neg(), {}),
    "abs": (lambda a: a.abs(), {}), "exp": (lambda a: a.exp(), {}),
    "log": (lambda a: a.log(), POSITIVE), "sqrt": (lambda a: a.sqrt(), POSITIVE),
    "rsqrt": (lambda a: a.rsqrt(), POSITIVE), "sin": (lambda a: a.sin(), {}),
    "cos": (lambda a: a.cos(), {}), "tanh": (lambda a: a.tanh(), {}),
    "sigmoid": (lambda a: a.sigmoid(), {}), "relu": (lambda a: a.relu(), {}),
    "sign": (lambda a: a.sign(), {}), "floor": (lambda a: a.floor(), {}),
    "ceil": (lambda a: a.ceil(), {}), "round": (lambda a: a.round(), {}),
    "reciprocal": (lambda a: a.reciprocal(), POSITIVE),
    "square": (lambda a: a.square(), {}),
}


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [A, (13,), ()], ids=["2d", "13", "0d"])
def test_unary(name, shape):
    fn, kw = UNARY[name]
    check(fn, shape, **kw)


def test_unary_non_contiguous():
    check(lambda a: a.t().exp() * 2, A)
    check(lambda a: a[:, ::2].tanh(), A)
    check(lambda a: a.permute(2, 0, 1).sigmoid(), C)
    check(lambda a, b: a.t() + b, (5, 3), A)
    check(lambda a, b: a[1:, ::2] * b, C, (2, 4))


def test_round_half_to_even():
    check(lambda a: a.round(), np.array([0.5, 1.5, 2.5, -0.5, -1.5, 0.49, 3.7], np.float32))


def test_comparisons():
    ints = make(A, np.int64, -2, 3).astype(np.float32)     # ties happen
    other = make((5,), np.int64, -2, 3).astype(np.float32)
    for fn in (lambda a, b: a < b, lambda a, b: a > b, lambda a, b: a <= b,
               lambda a, b: a >= b, lambda a, b: a == b, lambda a, b: a != b):
        check(fn, ints, other)
    for fn in (lambda a: a < 0, lambda a: a > 0.5, lambda a: a <= 1, lambda a: a >= 1,
               lambda a: a == 1, lambda a: a != 1, lambda a: 0 < a, lambda a: 1 == a):
        check(fn, ints)


def test_maximum_minimum_ties():
    a = np.array([[1.0, 2.0, 3.0], [0.0, -1.0, 5.0]], np.float32)
    b = np.array([[1.0, 1.0, 4.0], [0.0, -1.0, 2.0]], np.float32)
    check(lambda x, y: x.maximum(y), a, b)
    check(lambda x, y: x.minimum(y), a, b)


def test_clamp():
    check(lambda a: a.clamp(-0.5, 0.7), A)
    check(lambda a: a.clamp(min=0.1), A)
    check(lambda a: a.clamp(max=-0.1), C)
    check(lambda a: a.clip(-1, 1), (13,))


def test_where():
    cond = make(A, np.bool_)
    check(lambda c, a, b: a.where(c, b), cond, A, A)
    check(lambda c, a, b: a.where(c, b), cond, (5,), ())
    check(lambda c, a: a.where(c, 0.0), cond, A)
    check(lambda a: a.where(a > 0, a * 2), A)
    check(lambda a, b: a.where(a > b, b), A, A)


def test_floor_divide_and_remainder_float():
    a = make(A, low=-5, high=5)
    b = np.where(np.abs(make(A, seed=9)) < 0.3, 0.7, make(A, seed=9)).astype(np.float32)
    check(lambda x, y: x // y, a, b, grad=False)
    check(lambda x, y: x % y, a, b)
    check(lambda x: x % 1.5, a)
    check(lambda x: x % -1.5, a)
    check(lambda x: x // 2, a, grad=False)
    check(lambda x: 7 // x, b, grad=False)


@pytest.mark.parametrize("fn", [lambda a, b: a // b, lambda a, b: a % b,
                                lambda a, b: a // 3, lambda a, b: a % -3,
                                lambda a, b: -7 // b, lambda a, b: a * b - a + 2],
                         ids=["floordiv", "mod", "floordiv_scalar", "mod_neg_scalar",
                              "rfloordiv", "arith"])
def test_integer_arithmetic(fn):
    a = make(A, np.int64, -9, 10)
    b = make(A, np.int64, 1, 5) * np.where(make(A, np.bool_), 1, -1)
    check(fn, a, b)


def test_integer_math_goes_to_float():
    a = make(A, np.int64, -3, 4)
    for fn in (lambda x: x / 2, lambda x: x.exp(), lambda x: x.sigmoid(), lambda x: x.sin(),
               lambda x: x + 0.5, lambda x: x * 1.5, lambda x: x.tanh()):
        check(fn, a)


def test_integer_unary_stays_integer():
    a = make(A, np.int64, -3, 4)
    for fn in (lambda x: -x, lambda x: x.abs(), lambda x: x.sign(), lambda x: x.relu(),
               lambda x: x.floor(), lambda x: x.ceil(), lambda x: x.round(),
               lambda x: x.clamp(-1, 2), lambda x: x.maximum(x * 0), lambda x: x ** 2,
               lambda x: x ** 3):
        check(fn, a)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
@pytest.mark.parametrize("n", [1, 15, 32], ids=["scalar", "tail", "vector"])
def test_integer_arithmetic_wraps_at_the_extremes(dtype, n):
    # signed overflow is undefined in OpenCL C: compilers folded (x - 1 > x) to False and
    # abs(x) < 0 to False, and sign(-x) gave 1 at the most negative value (fuzz seed 1063)
    info = np.iinfo(dtype)
    a = np.resize(np.array([info.min, info.max, 3, -4, 0], dtype), n)
    for fn in (lambda x: -x, lambda x: x.abs(), lambda x: x.abs() < 0, lambda x: x - 1 > x,
               lambda x: x + 1 < x, lambda x: x * 2 // 2, lambda x: (x + 5) - 5 > x - 1,
               lambda x: x // -1):
        check(fn, a)
    # Intel's compiler folded 0 < -x and -x < 0 into comparisons of x, both false for the
    # most negative value in vector code, until the 0 was one it cannot see (fuzz seed 2700237)
    check(lambda x: (-x).sign(), a)
    # and x * -1 (which wraps, as PyTorch's), 0 - x and x // -1 into 0 - x, then folded the
    # same way
    for fn in (lambda x: (x * -1).sign(), lambda x: (-1 * x < 0) | (0 < x * -1),
               lambda x: (0 - x).sign(), lambda x: (x // -1).sign()):
        check(fn, a)


def test_integer_pow_tensor():
    check(lambda x, y: x ** y, make(A, np.int64, -3, 4), make(A, np.int64, 0, 4))
    check(lambda y: 2 ** y, make(A, np.int64, 0, 10))


@pytest.mark.parametrize("dtypes", [
    (np.int32, np.int64), (np.int64, np.float32), (np.float32, np.float64),
    (np.bool_, np.int32), (np.bool_, np.float32), (np.int32, np.int32), (np.bool_, np.bool_),
], ids=str)
def test_promotion(dtypes):
    a, b = make(A, dtypes[0], -3, 4), make((5,), dtypes[1], -3, 4)
    check(lambda x, y: x + y, a, b)
    check(lambda x, y: x * y, a, b)


def test_promotion_with_scalars_and_zero_dim():
    f32, f64 = make(A, np.float32), make(A, np.float64)
    i32 = make(A, np.int32, -3, 4)
    zero_f64 = np.array(1.5, np.float64)
    zero_i64 = np.array(2, np.int64)
    check(lambda x, s: x * s, f32, zero_f64)        # float32: 0-d does not raise the type
    check(lambda x, s: x * s, i32, zero_i64)        # int32
    check(lambda x, s: x * s, i32, zero_f64)        # 0-d float raises the category: float64?
    check(lambda x: x * 2.5, i32)
    check(lambda x: x + 1, f64)
    check(lambda x: x + True, i32)
    check(lambda x: x.double() * 2 + x, f32)
    check(lambda x: x.float() + x.int(), f64)


def test_float64_ops():
    check(lambda a, b: (a * b).exp() - a.sqrt() / b, A, A, dtype=np.float64, **POSITIVE)


def test_bool_logic():
    a, b = make(A, np.bool_), make(A, np.bool_, seed=77)
    check(lambda x, y: x & y, a, b)
    check(lambda x, y: x | y, a, b)
    check(lambda x: ~x, a)


def test_fused_chain_odd_size():
    check(lambda a, b: ((a * b).sin() + a.exp() * 0.5 - b.tanh()).relu() / 3, (37,), (37,))
    check(lambda a: (a - a.sigmoid()) * a.cos(), (2, 3, 17))


def test_value_used_twice():
    check(lambda a: a * a + a, A)
    check(lambda a, b: (a + b) * (a - b) * a, A, (5,))


def test_erf_a_primitive_forward_and_backward():
    """erf is a primitive (a C builtin): an Op with its NumPy meaning, its C spelling, its
    gradient rule and its Tensor method."""
    edges = np.array([-30.0, -3.0, -1e-8, 0.0, 0.5, 2.0, 10.0, np.inf, -np.inf],
                     dtype=np.float32)
    out = check(lambda x: x.erf(), edges, atol=1e-6)
    assert out[0].grad_fn.name() == "ErfBackward0"
    check(lambda x: x.erf(), (3, 5), atol=1e-6)
    nan_in = cg.tensor([np.nan], requires_grad=True)
    assert np.isnan(nan_in.erf().item())
