"""The torch.* function namespace: Tensor methods as functions, einsum, isclose/allclose/equal,
grad-mode context managers and the habits of PyTorch scripts (cg.cuda, Variable, synchronize)."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.frontend.functions import METHODS_AS_FUNCTIONS
from helpers import check, library, make, torch

# (name, extra arguments, input shapes beyond the first): each runs as cg.name(x, ...) and as
# torch.name(x, ...), forward and backward.
FUNCTION_ROWS = [
    ("abs", (), ()), ("add", (), ((3, 4),)), ("amax", (1,), ()), ("amin", (0,), ()),
    ("ceil", (), ()), ("clamp", (-0.5, 0.5), ()), ("clone", (), ()), ("cos", (), ()),
    ("div", (), ((3, 4),)), ("exp", (), ()), ("flatten", (), ()), ("flip", ((0, 1),), ()),
    ("floor", (), ()), ("log_softmax", (1,), ()), ("logsumexp", (1,), ()), ("max", (), ()),
    ("mean", (), ()), ("min", (), ()), ("mul", (), ((3, 4),)), ("neg", (), ()),
    ("permute", ((1, 0),), ()), ("pow", (2,), ()), ("prod", (), ()), ("relu", (), ()),
    ("reshape", ((4, 3),), ()), ("round", (), ()), ("sigmoid", (), ()), ("sign", (), ()),
    ("sin", (), ()), ("softmax", (0,), ()), ("square", (), ()), ("squeeze", (), ()),
    ("std", (), ()), ("sub", (), ((3, 4),)), ("sum", (), ()), ("t", (), ()), ("tanh", (), ()),
    ("transpose", (0, 1), ()), ("unsqueeze", (1,), ()), ("var", (), ()),
    ("mm", (), ((4, 2),)), ("argmax", (), ()), ("argmin", (1,), ()), ("all", (), ()),
    ("any", (), ()),
]
POSITIVE_ROWS = [("log", (), ()), ("sqrt", (), ()), ("rsqrt", (), ()), ("reciprocal", (), ())]


def _call(name, args):
    return lambda x, *others: getattr(library(x), name)(x, *others, *args)


@pytest.mark.parametrize("name,args,others", FUNCTION_ROWS, ids=[r[0] for r in FUNCTION_ROWS])
def test_function_matches_torch(name, args, others):
    check(_call(name, args), (3, 4), *others, grad=name not in ("argmax", "argmin"),
          atol=1e-5)


@pytest.mark.parametrize("name,args,others", POSITIVE_ROWS, ids=[r[0] for r in POSITIVE_ROWS])
def test_function_of_positive_input_matches_torch(name, args, others):
    check(_call(name, args), (3, 4), low=0.5, high=2.0)


def test_every_method_function_is_the_method():
    x = cg.tensor(make((2, 3)))
    for name in METHODS_AS_FUNCTIONS:
        assert getattr(cg, name).__doc__ == getattr(cg.Tensor, name).__doc__, name
    np.testing.assert_array_equal(cg.bmm(x[None], x.t()[None]).numpy(), (x @ x.t())[None].numpy())
    assert cg.numel(x) == 6 and cg.add(input=x, other=x).shape == (2, 3)


def test_function_of_a_non_tensor_raises_as_torch():
    with pytest.raises(TypeError, match=r"exp\(\): argument 'input' \(position 1\) must be "
                                        r"Tensor, not float"):
        cg.exp(2.0)
    if torch is not None:
        with pytest.raises(TypeError):
            torch.exp(2.0)


@pytest.mark.parametrize("equation,shapes", [
    ("ij,jk->ik", ((3, 4), (4, 5))), ("bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
    ("ij->ji", ((3, 4),)), ("ij->", ((3, 4),)), ("ii->i", ((4, 4),)), ("ii", ((4, 4),)),
    ("i,j->ij", ((3,), (4,))), ("i,i->", ((5,), (5,))), ("ij,kj", ((3, 4), (5, 4))),
    ("...ij,...jk->...ik", ((2, 3, 4), (4, 5))), ("b...,b->...", ((2, 3, 4), (2,))),
    ("ijk,ikl,lm->jm", ((2, 3, 4), (2, 4, 5), (5, 3))), ("bhqd,bhkd->bhqk", ((2, 2, 3, 4),
                                                                              (2, 2, 5, 4))),
    ("iij->j", ((3, 3, 2),)), ("i,i,i->i", ((4,), (4,), (4,))), ("ij,ij->ij", ((3, 1), (3, 4))),
])
def test_einsum_matches_torch(equation, shapes):
    check(lambda *xs: library(xs[0]).einsum(equation, *xs), *shapes, atol=1e-5)


def test_einsum_takes_a_list_of_operands_and_raises_as_torch():
    a, b = cg.ones(2, 3), cg.ones(3, 4)
    assert cg.einsum("ij,jk->ik", [a, b]).shape == (2, 4)
    with pytest.raises(RuntimeError, match="number of subscripts in the equation"):
        cg.einsum("ijk,jk->i", a, b)
    with pytest.raises(RuntimeError, match="operands do not broadcast"):
        cg.einsum("ij,ij->ij", a, cg.ones(2, 4))
    with pytest.raises(ValueError, match="output subscript z does not appear"):
        cg.einsum("ij,jk->iz", a, b)
    with pytest.raises(ValueError, match="2 subscript terms"):
        cg.einsum("ij,jk->ik", a)


def test_isclose_allclose_equal_match_torch():
    nan, inf = float("nan"), float("inf")
    a = [1.0, nan, inf, 2.0, -inf, 1.0, 0.0]
    b = [1.0, nan, inf, 2.00001, inf, 1.1, 1e-9]
    for kwargs in ({}, dict(equal_nan=True), dict(rtol=0.2), dict(atol=0.0, rtol=0.0)):
        got = cg.isclose(cg.tensor(a), cg.tensor(b), **kwargs).numpy()
        expected = np.isclose(a, b, **{"rtol": 1e-5, "atol": 1e-8, **kwargs})
        np.testing.assert_array_equal(got, expected)
        if torch is not None:
            ref = torch.isclose(torch.tensor(a), torch.tensor(b), **kwargs).numpy()
            np.testing.assert_array_equal(got, ref)
    assert cg.isclose(cg.tensor([3]), cg.tensor([4]), atol=1).numpy().tolist() == [True]
    assert cg.allclose(cg.ones(3), cg.ones(3) + 1e-7) and not cg.allclose(cg.ones(3), cg.zeros(3))
    assert cg.equal(cg.ones(2), cg.ones(2, dtype=cg.int32))
    assert not cg.equal(cg.ones(2), cg.ones(2, 1)) and not cg.equal(cg.tensor([nan]),
                                                                     cg.tensor([nan]))
    with pytest.raises(RuntimeError, match="isclose: input dtype int64 did not match"):
        cg.isclose(cg.tensor([1]), cg.tensor([1.0]))
    with pytest.raises(TypeError, match=r"isclose\(\): argument 'other' \(position 2\)"):
        cg.isclose(cg.ones(1), 1.0)


def test_grad_mode_context_managers_as_torch():
    x = cg.ones(2, requires_grad=True)
    with cg.inference_mode():
        assert not (x * 2).requires_grad
    with cg.inference_mode(False):
        assert (x * 2).requires_grad
    with cg.set_grad_enabled(False):
        assert not cg.is_grad_enabled()
    assert cg.is_grad_enabled()

    @cg.set_grad_enabled(False)
    def doubled(t):
        return t * 2

    assert cg.is_grad_enabled() and not doubled(x).requires_grad and cg.is_grad_enabled()

    @cg.inference_mode()
    def tripled(t):
        return t * 3

    assert not tripled(x).requires_grad and (x * 3).requires_grad


def test_habits_of_pytorch_scripts():
    assert cg.cuda.is_available() is False and cg.cuda.device_count() == 0
    x = cg.ones(2)
    v = cg.autograd.Variable(x, requires_grad=True)   # a leaf over x's value; x unchanged
    assert v.requires_grad and v.is_leaf and not x.requires_grad
    assert not cg.autograd.Variable(x).requires_grad
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        cg.autograd.Variable([1.0])
    y = x * 3
    y.numpy()
    cg.synchronize()
    cg.synchronize(cg.device())


def test_creation_functions_as_torch():
    np.testing.assert_allclose(cg.logspace(-1, 2, 4).numpy(), np.logspace(-1, 2, 4), rtol=1e-6)
    np.testing.assert_allclose(cg.logspace(0, 3, 4, base=2).numpy(), [1, 2, 4, 8])
    like = cg.empty_like(cg.ones(2, 3, dtype=cg.float64))
    assert like.shape == (2, 3) and like.dtype == cg.float64
    t = cg.ones(3)
    assert cg.as_tensor(t) is t and cg.as_tensor(t, dtype=cg.float64).dtype == cg.float64
    assert cg.as_tensor([1, 2]).dtype == cg.int64
    a = cg.normal(2.0, 3.0, (20000,), generator=cg.Generator().manual_seed(1)).numpy()
    assert abs(a.mean() - 2.0) < 0.1 and abs(a.std() - 3.0) < 0.1
    b = cg.normal(cg.zeros(2, 3), cg.ones(3))
    assert b.shape == (2, 3) and b.dtype == cg.float32
    with pytest.raises(TypeError, match="size is required"):
        cg.normal(0.0, 1.0)
