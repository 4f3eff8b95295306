"""Random fills and samplers (uniform_, normal_, bernoulli, multinomial, ...): their
distributions, their generators, their errors; and the small Tensor methods PyTorch has for
real tensors (in-place comparisons, is_cpu, adjoint, ...)."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, library, make, torch

N = 20000


def _stats(t):
    values = t.numpy().astype(np.float64)
    return values.mean(), values.std()


@pytest.mark.parametrize("fill, mean, std", [
    (lambda t, g: t.uniform_(2, 4, generator=g), 3.0, 2 / 12 ** 0.5),
    (lambda t, g: t.normal_(1, 0.5, generator=g), 1.0, 0.5),
    (lambda t, g: t.exponential_(2.0, generator=g), 0.5, 0.5),
    (lambda t, g: t.log_normal_(0.0, 0.25, generator=g), np.exp(0.25 ** 2 / 2),
     np.sqrt((np.exp(0.25 ** 2) - 1) * np.exp(0.25 ** 2))),
    (lambda t, g: t.geometric_(0.25, generator=g), 4.0, np.sqrt(0.75) / 0.25),
    (lambda t, g: t.bernoulli_(0.3, generator=g), 0.3, np.sqrt(0.21)),
    (lambda t, g: t.random_(10, generator=g), 4.5, np.sqrt(99 / 12)),
])
def test_fills_have_their_distributions_and_follow_the_generator(fill, mean, std):
    t = fill(cg.zeros(N), cg.Generator().manual_seed(5))
    got_mean, got_std = _stats(t)
    assert abs(got_mean - mean) < 4 * std / N ** 0.5 and abs(got_std - std) < 0.05 * std
    again = fill(cg.zeros(N), cg.Generator().manual_seed(5))
    np.testing.assert_array_equal(again.numpy(), t.numpy())


def test_cauchy_median_and_integer_random():
    t = cg.zeros(N).cauchy_(1.0, 0.5, generator=cg.Generator().manual_seed(1))
    assert abs(np.median(t.numpy()) - 1.0) < 0.05
    ints = cg.zeros(1000, dtype=cg.int64).random_(-3, 3)
    assert set(ints.tolist()) == {-3, -2, -1, 0, 1, 2}


def test_samplers():
    g = cg.Generator().manual_seed(2)
    p = cg.tensor([0.0, 1.0, 0.25] * 4000)
    draws = p.bernoulli(generator=g).numpy().reshape(-1, 3)
    assert draws[:, 0].sum() == 0 and draws[:, 1].all() and abs(draws[:, 2].mean() - 0.25) < 0.03
    assert cg.bernoulli(p, 1.0).numpy().all()
    rates = cg.poisson(cg.full((N,), 3.0), generator=g).numpy()
    assert abs(rates.mean() - 3) < 0.05 and abs(rates.var() - 3) < 0.15
    weights = cg.tensor([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0]])
    picked = weights.multinomial(2, generator=g)
    assert picked.dtype == cg.int64 and picked.shape == (2, 2)
    assert sorted(picked[0].tolist()) == [1, 2] and sorted(picked[1].tolist()) == [0, 2]
    with pytest.raises(RuntimeError, match="invalid multinomial distribution"):
        cg.tensor([1.0, 0.0, 0.0]).multinomial(2)
    many = cg.multinomial(cg.tensor([1.0, 3.0]), N, replacement=True, generator=g).numpy()
    assert abs(many.mean() - 0.75) < 0.02


def test_samplers_read_probabilities_that_require_grad():
    p = cg.full((4,), 0.5, requires_grad=True)      # PyTorch samples from these too
    assert cg.bernoulli(p).shape == cg.poisson(p).shape == (4,)
    assert p.multinomial(2).shape == (2,) and cg.zeros(4).bernoulli_(p).shape == (4,)


def test_sampler_errors():
    with pytest.raises(RuntimeError, match="without replacement"):
        cg.tensor([1.0, 1.0]).multinomial(3)
    with pytest.raises(RuntimeError, match="element < 0"):
        cg.tensor([1.0, -1.0]).multinomial(1)
    with pytest.raises(RuntimeError, match="p_in >= 0"):
        cg.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="expects std >= 0.0"):
        cg.zeros(2).normal_(0, -1)
    with pytest.raises(RuntimeError, match="floating point"):
        cg.zeros(2, dtype=cg.int64).uniform_()
    leaf = cg.zeros(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        leaf.uniform_()


def test_fill_overwrites_what_autograd_sees():
    x = cg.ones(3, requires_grad=True)
    y = x * 2
    y.uniform_()
    (y * x).sum().backward()                # y no longer depends on x
    np.testing.assert_allclose(x.grad.numpy(), y.detach().numpy())


def test_in_place_comparisons_and_products():
    a, b = make((3, 4)), make((3, 4), seed=9)
    for op in ("eq_", "ne_", "lt_", "le_", "gt_", "ge_"):
        check(lambda x, y: getattr(x.clone(), op)(y), a, b)     # gradient 0, not x's
    check(lambda x, y: x.clone().floor_divide_(y), a, b, grad=False)
    check(lambda x, m, v: x.clone().addmv_(m, v), (3,), (3, 4), (4,))
    check(lambda x, m1, m2: x.clone().addbmm_(m1, m2), (3, 4), (2, 3, 5), (2, 5, 4))
    # a result the tensor's dtype cannot hold is refused, as PyTorch's (not truncated)
    for write in (lambda: cg.tensor([1, 2]).true_divide_(2), lambda: cg.tensor([1, 2]).div_(2),
                  lambda: cg.tensor([1, 2]).mul_(1.5), lambda: cg.tensor([1, 2]).clamp_(0.5),
                  lambda: cg.tensor([True]).add_(1)):
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            write()
    assert cg.tensor([1, 2]).div_(2, rounding_mode="floor").tolist() == [0, 1]
    assert cg.tensor([True]).mul_(True).tolist() == [True]


def test_real_tensor_queries():
    x = cg.tensor(make((2, 3)))
    assert x.is_cpu == (x.device.type == "cpu") and not x.is_cuda
    assert x.get_device() == (-1 if x.is_cpu else x.get_device())
    assert not x.is_neg() and x.resolve_neg() is x and not x.is_conj() and x.resolve_conj() is x
    check(lambda t: [library(t).isreal(t), t.adjoint(), t.isclose(t + 1e-9)], make((2, 3)),
          grad=False)
    assert x.allclose(x) and x.equal(x) and not x.equal(x + 1)
