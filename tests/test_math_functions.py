"""The trigonometric and hyperbolic family, its inverses, and the other float functions of
frontend/math_functions.py, forward and backward against the reference (helpers.check),
across wide ranges and at the edges of their domains."""
import math

import numpy as np
import pytest

import clgrad as cg
from helpers import check, library, make

INF, NAN = np.inf, np.nan
# domain edges (±1 for asin/atanh, 1 for acosh, 0, ±0.0), large and tiny values, inf and NaN
EDGES = np.array([-3e4, -100.0, -10.0, -1.5, -1.0, -0.5, -1e-7, -0.0, 0.0, 1e-30, 1e-7, 0.5,
                  1.0, 1.5, 10.0, 88.0, 100.0, 3e4, INF, -INF, NAN], dtype=np.float32)
WIDE = dict(low=-30.0, high=30.0)

UNARY = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erfc",
         "deg2rad", "rad2deg", "sinc", "logit", "lgamma", "erfinv"]
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh",
           "arccosh": "acosh", "arctanh": "atanh"}


@pytest.mark.parametrize("name", UNARY)
def test_unary_at_edges(name):
    """Values (NaN outside the domain, inf at its edges) and gradients as PyTorch's, float32."""
    edges = EDGES[~_is_negative_zero(EDGES)] if name == "logit" else EDGES
    out = check(lambda x: getattr(x, name)(), edges, atol=1e-6, rtol=1e-5)
    assert out[0].grad_fn.name() == f"{name.title()}Backward0"


def _is_negative_zero(values: np.ndarray) -> np.ndarray:
    return (values == 0) & np.signbit(values)


def test_logit_gradient_at_negative_zero_is_infinite():
    # PyTorch's CPU logit backward gives +inf at -0.0 in its scalar loop (x == 0: dy * inf)
    # and -inf in its vector loop (dy / (x * (1 - x))); which loop an element takes depends
    # on the CPU's vector width and the tensor's length (21 elements: the vector loop with
    # AVX2, the scalar one with AVX-512). clgrad's is the vector loop's.
    x = cg.tensor([-0.0] * 40 + [0.0], requires_grad=True)
    x.logit().sum().backward()
    assert x.grad.numpy().tolist() == [-np.inf] * 40 + [np.inf]


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("bounds", [dict(low=-2.0, high=2.0), WIDE, dict(low=1.0, high=60.0)],
                         ids=["narrow", "wide", "positive"])
def test_unary_ranges(name, bounds):
    # sinc's gradient cancels (cos(pi x)/x - sin(pi x)/(pi x²)): float32 rounding differs
    grad_atol = 1e-4 if name == "sinc" else None
    check(lambda x: getattr(x, name)(), (4, 33), atol=1e-6, rtol=1e-5, grad_atol=grad_atol,
          **bounds)


@pytest.mark.parametrize("name", ["tan", "asinh", "atan", "sinc", "deg2rad"])
def test_integer_inputs_compute_in_float32(name):
    check(lambda x: getattr(x, name)(), (3, 4), dtype=np.int64, low=-5, high=5)
    check(lambda x: getattr(x, name)(), (3, 4), dtype=np.float64)


@pytest.mark.parametrize("name", UNARY + ["digamma"])
def test_float16_stays_float16(name):
    """Half values are computed in float registers and stored as half."""
    check(lambda x: getattr(x, name)(), (3, 7), dtype=np.float16, low=0.05, high=0.95,
          grad=False, atol=2e-3, rtol=2e-3)


@pytest.mark.parametrize("alias", ALIASES)
def test_numpy_style_aliases(alias):
    x = make((3, 5), low=-0.9, high=0.9) + (2.0 if alias == "arccosh" else 0.0)
    check(lambda t: getattr(t, alias)(), x.astype(np.float32))
    assert np.array_equal(getattr(cg, alias)(cg.tensor(x)).numpy(),
                          getattr(cg.tensor(x), ALIASES[alias])().numpy(), equal_nan=True)


@pytest.mark.parametrize("name", ["atan2", "arctan2", "hypot", "copysign", "logaddexp",
                                  "logaddexp2", "xlogy", "fmax", "fmin", "ldexp"])
@pytest.mark.parametrize("shapes", [((3, 5), (3, 5)), ((4, 1, 6), (3, 1)), ((), (2, 3))],
                         ids=["same", "broadcast", "0d"])
def test_binary(name, shapes):
    if name == "xlogy":
        check(lambda a, b: a.xlogy(b), *shapes, low=0.1, high=20.0)
    elif name == "ldexp":   # PyTorch's gradient for integer exponents is 2 ** n in integers
        check(lambda a, b: a.ldexp(b), shapes[0], make(shapes[1], np.int64, -8, 8), grad=False)
        check(lambda a, b: a.ldexp(b), shapes[0], make(shapes[1], np.float32, -8, 8).round())
    else:
        check(lambda a, b: getattr(a, name)(b), *shapes, **WIDE)


EDGE_PAIRS = np.array([(y, x) for y in (-INF, -2.0, -0.0, 0.0, 3.0, INF, NAN)
                       for x in (-INF, -1.0, -0.0, 0.0, 0.5, INF, NAN)], dtype=np.float32).T


@pytest.mark.parametrize("name", ["atan2", "copysign", "hypot", "fmax", "fmin", "logaddexp",
                                  "logaddexp2"])
def test_binary_edges_forward(name):
    """Signed zeros, infinities and NaNs on either side."""
    check(lambda a, b: getattr(a, name)(b), *EDGE_PAIRS, grad=False)


@pytest.mark.parametrize("name", ["atan2", "copysign", "hypot", "fmax", "fmin"])
def test_binary_edges_gradient(name):
    """Finite pairs with zeros and ties: atan2 and hypot have NaN gradients at (0, 0), fmax
    gives a tie's gradient to self, copysign's is 0 at 0 and none for the sign."""
    y = np.array([0.0, 0.0, -0.0, 2.0, 2.0, -3.0, NAN, 1.0], dtype=np.float32)
    x = np.array([0.0, -1.0, 5.0, 2.0, -0.0, 4.0, 1.0, NAN], dtype=np.float32)
    check(lambda a, b: getattr(a, name)(b), y, x)


def test_fmax_ignores_nan_where_maximum_propagates_it():
    a = cg.tensor([NAN, 1.0, NAN])
    b = cg.tensor([2.0, NAN, NAN])
    assert np.array_equal(cg.fmax(a, b).numpy(), [2.0, 1.0, NAN], equal_nan=True)
    assert np.isnan(a.maximum(b).numpy()).all()
    check(lambda p, q: p.fmin(q), (3, 4), (4,), dtype=np.int64, low=-5, high=5)


def test_xlogy_zero_times_log():
    """0 * log(y) is 0 for every y but NaN, whose product stays NaN; gradients as PyTorch
    where both are defined."""
    x = np.array([0.0, 0.0, 0.0, 0.0, -2.0, 3.0], dtype=np.float32)
    y = np.array([-1.0, 0.0, 3.0, NAN, 3.0, 0.5], dtype=np.float32)
    check(lambda a, b: a.xlogy(b), x, y, grad=False)
    check(lambda a, b: a.xlogy(b), x[[0, 2, 4, 5]], y[[0, 2, 4, 5]])
    check(lambda a: a.xlogy(2), (3, 4))
    check(lambda a, b: a.xlogy(b), (3, 4), (3, 4), dtype=np.int64, low=1, high=5)


def test_logit_with_and_without_eps():
    p = np.array([-1.0, 0.0, 0.05, 0.3, 0.5, 0.95, 1.0, 1.5, NAN], dtype=np.float32)
    check(lambda t: t.logit(), p)
    check(lambda t: t.logit(0.1), p)
    check(lambda t: t.logit(eps=1e-6), (5, 7), low=0.0, high=1.0)


def test_digamma():
    """Values everywhere, ∓inf at ±0 and NaN at the negative integers included; gradients
    (trigamma, from the composition) away from the poles, where PyTorch's are inf or noise
    (1.3e15 at -1) and clgrad's 0."""
    out = check(lambda x: x.digamma(), EDGES, grad=False, atol=1e-6, rtol=1e-5)
    assert out[0].numpy()[7] == INF and out[0].numpy()[8] == -INF
    poles = np.isin(EDGES, [-3e4, -100.0, -10.0, -1.0, 0.0, -INF])
    check(lambda x: x.digamma(), EDGES[~poles], atol=1e-6, rtol=1e-5)
    for bounds in (WIDE, dict(low=0.01, high=3.0)):
        check(lambda x: library(x).digamma(x), (4, 33), atol=1e-5, rtol=1e-5, **bounds)
    check(lambda x: x.digamma(), (3, 4), dtype=np.int64, low=1, high=9)


def test_erfinv_precision_across_its_domain():
    x = np.concatenate([np.linspace(-1, 1, 401), 1 - np.geomspace(1e-7, 1e-1, 50)])
    check(lambda t: t.erfinv(), x.astype(np.float32), atol=1e-6, rtol=1e-5)


def test_nextafter():
    """One float step toward other, at zeros, the largest float, infinities and NaN; float64
    too."""
    big = np.finfo(np.float32).max
    x = np.array([0.0, -0.0, 1.0, 1.0, big, -big, INF, 1.0, NAN, 2.0], dtype=np.float32)
    y = np.array([1.0, -1.0, 2.0, 0.0, INF, -INF, 0.0, NAN, 1.0, 2.0], dtype=np.float32)
    check(lambda a, b: a.nextafter(b), x, y, grad=False, atol=0, rtol=0)
    check(lambda a, b: library(a).nextafter(a, b), x.astype(np.float64), y.astype(np.float64),
          grad=False, atol=0, rtol=0)
    with pytest.raises(NotImplementedError, match="nextafter"):
        cg.tensor([1]).nextafter(cg.tensor([2]))


def test_domain_edges_as_pytorch():
    assert math.isnan(cg.tensor(1.5).asin().item())
    assert cg.tensor(1.0).atanh().item() == math.inf
    assert cg.tensor(-1.0).atanh().item() == -math.inf
    assert math.isnan(cg.tensor(0.5).acosh().item())
    x = cg.tensor([1.0, -1.0], requires_grad=True)
    x.asin().sum().backward()
    assert np.array_equal(x.grad.numpy(), [INF, INF])


def test_signbit_sgn_positive_heaviside():
    x = np.array([-2.0, -0.0, 0.0, 3.0, -INF, INF], dtype=np.float32)
    check(lambda t: t.signbit(), x, grad=False)
    check(lambda t: t.signbit(), (3, 4), dtype=np.int64, low=-3, high=3)
    check(lambda t: t.sgn(), x, grad=False)     # PyTorch's gradient is a ZeroTensor
    check(lambda t: t.sgn() * t, x)
    check(lambda t: t.positive() * 2, x)
    with pytest.raises(RuntimeError, match="bool"):
        cg.tensor([True]).positive()
    values = np.array(0.7, dtype=np.float32)
    check(lambda t, v: t.heaviside(v), np.append(x, NAN).astype(np.float32), values, grad=False)
    check(lambda t, v: t.heaviside(v), (3, 4), (3, 4), dtype=np.int64, low=-2, high=2,
          grad=False)
    with pytest.raises(RuntimeError, match="different dtypes"):
        cg.tensor([0.0]).heaviside(cg.tensor([1]))


def test_float_power_computes_in_float64():
    out = check(lambda a, b: a.float_power(b), (3, 4), (4,), low=0.5, high=3.0)
    assert out[0].dtype == cg.float64
    check(lambda a: a.float_power(2), (3, 4), dtype=np.int64, low=-4, high=4)
    check(lambda a: library(a).float_power(a, 0.5), (3, 4), low=0.5, high=3.0)
    t = cg.tensor([2.0, 3.0], dtype=cg.float64)
    assert t.float_power_(cg.tensor([3, 2])) is t and np.array_equal(t.numpy(), [8.0, 9.0])
    with pytest.raises(RuntimeError, match="float64"):
        cg.tensor([2.0]).float_power_(2)


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2"])
def test_float_only_functions_reject_integers(name):
    with pytest.raises(NotImplementedError, match=name):
        getattr(cg.tensor([1, 2]), name)(cg.tensor([3, 4]))


@pytest.mark.parametrize("name", ["tan", "asin", "atanh", "erfc", "sinc", "arcsinh",
                                  "deg2rad", "logit", "lgamma", "digamma", "erfinv"])
def test_in_place(name):
    x = make((3, 4), low=-0.9, high=0.9)
    t = cg.tensor(x)
    assert getattr(t, f"{name}_")() is t
    assert np.allclose(t.numpy(), getattr(cg.tensor(x), name)().numpy(), equal_nan=True)
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(cg.tensor([1, 2]), f"{name}_")()


@pytest.mark.parametrize("name", ["atan2", "hypot", "copysign", "xlogy", "ldexp"])
def test_binary_in_place(name):
    a, b = make((3, 4), low=0.5, high=2.0), make((4,), low=0.5, high=2.0)
    t = cg.tensor(a)
    getattr(t, f"{name}_")(cg.tensor(b))
    assert np.allclose(t.numpy(), getattr(cg, name)(cg.tensor(a), cg.tensor(b)).numpy())


def test_functions_in_the_cg_namespace():
    for name in UNARY + list(ALIASES) + ["sgn", "signbit", "positive"]:
        assert callable(getattr(cg, name)), name
    check(lambda a, b: library(a).atan2(a, b) + library(a).hypot(a, b) * library(a).tan(a),
          (3, 4), (3, 4))
