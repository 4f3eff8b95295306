"""The further continuous families of clgrad.distributions (HalfNormal, HalfCauchy, Cauchy,
Gumbel, Weibull, Pareto, Chi2, InverseGamma, StudentT, Kumaraswamy) against
torch.distributions: values and gradients on the same float32 parameters, batched and
broadcast; PyTorch's NaN and infinity conventions; sample shapes, supports and statistics;
rsample's pathwise gradients for the same base sample; argument and sample validation."""
import math

import numpy as np
import pytest

import clgrad as cg
import clgrad.distributions as D
from distribution_checks import assert_close, call, numpy_of

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(23)


def _uniform(low, high, shape):
    return RNG.uniform(low, high, shape).astype(np.float32)


def _simplex(shape):
    x = _uniform(0.05, 1.0, shape)
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)


# name: (constructor of (module, params), params, value for log_prob). Parameters of shapes
# (2, 1) and (3,) broadcast to the batch shape (2, 3); values of shape (4, 1, 3) or (4, 2, 3).
FAMILIES = {
    "Cauchy": (lambda M, p: M.Cauchy(p["loc"], p["scale"]),
               {"loc": _uniform(-1, 1, (2, 1)), "scale": _uniform(0.5, 2, (3,))},
               _uniform(-4, 4, (4, 1, 3))),
    "HalfCauchy": (lambda M, p: M.HalfCauchy(p["scale"]), {"scale": _uniform(0.5, 2, (2, 3))},
                   _uniform(0.01, 4, (4, 2, 3))),
    "HalfNormal": (lambda M, p: M.HalfNormal(p["scale"]), {"scale": _uniform(0.5, 2, (2, 3))},
                   _uniform(0.01, 4, (4, 1, 3))),
    "Gumbel": (lambda M, p: M.Gumbel(p["loc"], p["scale"]),
               {"loc": _uniform(-1, 1, (2, 1)), "scale": _uniform(0.5, 2, (3,))},
               _uniform(-2, 4, (4, 1, 3))),
    "Weibull": (lambda M, p: M.Weibull(p["scale"], p["concentration"]),
                {"scale": _uniform(0.5, 2, (2, 1)), "concentration": _uniform(1.2, 3, (3,))},
                _uniform(0.05, 3, (4, 1, 3))),
    "Pareto": (lambda M, p: M.Pareto(p["scale"], p["alpha"]),
               {"scale": _uniform(0.5, 1, (2, 1)), "alpha": _uniform(5, 8, (3,))},
               _uniform(1.05, 4, (4, 1, 3))),
    "Chi2": (lambda M, p: M.Chi2(p["df"]), {"df": _uniform(1, 6, (2, 3))},
             _uniform(0.05, 6, (4, 2, 3))),
    "InverseGamma": (lambda M, p: M.InverseGamma(p["concentration"], p["rate"]),
                     {"concentration": _uniform(5, 8, (2, 1)), "rate": _uniform(0.5, 2, (3,))},
                     _uniform(0.05, 2, (4, 1, 3))),
    "StudentT": (lambda M, p: M.StudentT(p["df"], p["loc"], p["scale"]),
                 {"df": _uniform(5, 9, (2, 1)), "loc": _uniform(-1, 1, (3,)),
                  "scale": _uniform(0.5, 2, (2, 3))}, _uniform(-4, 4, (4, 1, 3))),
    "StudentTDf": (lambda M, p: M.StudentT(p["df"]), {"df": _uniform(0.5, 4, (2, 3))},
                   _uniform(-4, 4, (4, 2, 3))),
    "Kumaraswamy": (lambda M, p: M.Kumaraswamy(p["concentration1"], p["concentration0"]),
                    {"concentration1": _uniform(0.5, 3, (2, 1)),
                     "concentration0": _uniform(0.5, 3, (3,))},
                    _uniform(0.02, 0.98, (4, 1, 3))),
    "NegativeBinomial": (lambda M, p: M.NegativeBinomial(p["total_count"], p["probs"]),
                         {"total_count": _uniform(0.5, 6, (2, 1)),
                          "probs": _uniform(0.1, 0.7, (3,))},
                         RNG.integers(0, 8, (4, 1, 3)).astype(np.float32)),
    "NegativeBinomialLogits": (lambda M, p: M.NegativeBinomial(p["total_count"],
                                                               logits=p["logits"]),
                               {"total_count": _uniform(0.5, 6, (2, 3)),
                                "logits": _uniform(-2, 1, (2, 3))},
                               RNG.integers(0, 8, (4, 2, 3)).astype(np.float32)),
    "RelaxedBernoulli": (lambda M, p: M.RelaxedBernoulli(p["temperature"], p["probs"]),
                         {"temperature": np.array(0.7, np.float32),
                          "probs": _uniform(0.1, 0.9, (2, 3))},
                         _uniform(0.02, 0.98, (4, 1, 3))),
    "RelaxedBernoulliLogits": (lambda M, p: M.RelaxedBernoulli(p["temperature"],
                                                               logits=p["logits"]),
                               {"temperature": _uniform(0.5, 2, (3,)),
                                "logits": _uniform(-2, 2, (2, 3))},
                               _uniform(0.02, 0.98, (4, 2, 3))),
    "RelaxedOneHotCategorical": (lambda M, p: M.RelaxedOneHotCategorical(p["temperature"],
                                                                         p["probs"]),
                                 {"temperature": np.array(0.8, np.float32),
                                  "probs": _uniform(0.1, 1, (2, 4))}, _simplex((5, 2, 4))),
    "RelaxedOneHotCategoricalLogits": (
        lambda M, p: M.RelaxedOneHotCategorical(p["temperature"], logits=p["logits"]),
        {"temperature": np.array(1.5, np.float32), "logits": _uniform(-2, 2, (2, 4))},
        _simplex((5, 1, 4))),
    "ExpRelaxedCategorical": (
        lambda M, p: (M if M is D else TD.relaxed_categorical).ExpRelaxedCategorical(
            p["temperature"], logits=p["logits"]),
        {"temperature": np.array(0.6, np.float32), "logits": _uniform(-2, 2, (2, 4))},
        np.log(_simplex((5, 2, 4)))),
    "Multinomial": (lambda M, p: M.Multinomial(5, p["probs"]),
                    {"probs": _uniform(0.1, 1, (2, 4))},
                    RNG.multinomial(5, [0.1, 0.2, 0.3, 0.4], (4, 2)).astype(np.float32)),
    "MultinomialLogits": (lambda M, p: M.Multinomial(3, logits=p["logits"]),
                          {"logits": _uniform(-2, 2, (2, 3))},
                          RNG.multinomial(3, [0.5, 0.2, 0.3], (4, 1)).astype(np.float32)),
    # probabilities on both sides of the Taylor region (0.499, 0.501] and inside it
    "ContinuousBernoulli": (lambda M, p: M.ContinuousBernoulli(p["probs"]),
                            {"probs": np.array([[0.2, 0.4995, 0.7], [0.5005, 0.9, 0.35]],
                                               np.float32)},
                            _uniform(0.02, 0.98, (4, 1, 3))),
    "ContinuousBernoulliLogits": (lambda M, p: M.ContinuousBernoulli(logits=p["logits"]),
                                  {"logits": _uniform(-3, 3, (2, 3))},
                                  _uniform(0.02, 0.98, (4, 2, 3))),
}


def _params(name, library, requires_grad=False, dtype=None):
    out = {}
    for key, value in FAMILIES[name][1].items():
        options = {} if dtype is None else {"dtype": dtype}
        out[key] = library.tensor(value, requires_grad=requires_grad, **options)
    return out


def _both(name, requires_grad=False):
    make = FAMILIES[name][0]
    ours, theirs = _params(name, cg, requires_grad), _params(name, torch, requires_grad)
    return (make(D, ours), ours), (make(TD, theirs), theirs)


QUANTITIES = ("mean", "variance", "stddev", "mode", "entropy", "perplexity", "log_prob", "cdf",
              "icdf")


def _argument(name, what, library):
    value = FAMILIES[name][2]
    if what == "icdf":
        value = np.random.default_rng(5).uniform(0.01, 0.99, value.shape).astype(np.float32)
    return library.tensor(value)


@pytest.mark.parametrize("name", FAMILIES)
def test_values_match_torch(name):
    """Every quantity PyTorch computes agrees; what PyTorch leaves unimplemented raises
    NotImplementedError here too."""
    (ours, _), (theirs, _) = _both(name)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    assert set(ours.arg_constraints) == set(theirs.arg_constraints)
    assert type(ours.support).__name__ == type(theirs.support).__name__
    for what in QUANTITIES:
        expected = call(theirs, what, _argument(name, what, torch))
        got = call(ours, what, _argument(name, what, cg))
        if isinstance(expected, type):
            assert got is expected, (what, got)
        else:
            assert_close(got, expected, rtol=2e-4, what=what)


@pytest.mark.parametrize("name", FAMILIES)
def test_gradients_match_torch(name):
    """The gradients of a weighted sum of every differentiable quantity, with respect to the
    parameters and log_prob's value."""
    (ours, ours_params), (theirs, theirs_params) = _both(name, requires_grad=True)
    values = {lib: _argument(name, "log_prob", lib).requires_grad_(True) for lib in (cg, torch)}
    losses = []
    for dist, lib in ((ours, cg), (theirs, torch)):
        total = 0
        for k, what in enumerate(("mean", "variance", "entropy", "log_prob", "cdf", "icdf")):
            if name in ("Chi2", "InverseGamma") and what == "cdf":
                continue        # igamma has no gradient in its first argument
            value = values[lib] if what != "icdf" else _argument(name, what, lib)
            result = call(dist, what, value)
            if not isinstance(result, type) and result.requires_grad:
                finite = result.isfinite() if lib is cg else torch.isfinite(result)
                result = result * finite.to(result.dtype).detach()
                total = total + (result * math.cos(k + 1)).nan_to_num().sum()
        losses.append(total)
    losses[0].backward()
    losses[1].backward()
    for key, tensor in theirs_params.items():
        if tensor.grad is not None:
            assert_close(ours_params[key].grad, tensor.grad, rtol=1e-3, atol=1e-4, what=key)
    assert_close(values[cg].grad, values[torch].grad, rtol=1e-3, atol=1e-4, what="value")


@pytest.mark.parametrize("name", FAMILIES)
def test_samples_have_the_shape_dtype_and_support(name):
    (ours, _), (theirs, _) = _both(name)
    for sample_shape in ((), (5,), (2, 1)):
        sample = ours.sample(sample_shape)
        expected = theirs.sample(sample_shape)
        assert sample.shape == expected.shape and sample.dtype.name == str(expected.dtype)[6:]
        assert not sample.requires_grad
        assert ours.support.check(sample).all().item()
    expanded = ours.expand((3,) + tuple(ours.batch_shape))
    reference = theirs.expand(expanded.batch_shape)
    assert type(expanded) is type(ours)
    assert expanded.batch_shape == reference.batch_shape
    assert expanded.event_shape == reference.event_shape
    assert expanded.sample((2,)).shape == reference.sample((2,)).shape
    value = _argument(name, "log_prob", cg).unsqueeze(1)
    assert_close(expanded.log_prob(value),
                 reference.log_prob(_argument(name, "log_prob", torch).unsqueeze(1)),
                 rtol=2e-4)
    expected = call(theirs, "entropy", None)     # an expanded Multinomial has none there
    if isinstance(expected, type):
        assert call(expanded, "entropy", None) is expected
    else:
        assert_close(expanded.entropy(), expected.expand(expanded.batch_shape), rtol=2e-4)


STATISTICS = ["HalfNormal", "Gumbel", "Weibull", "Pareto", "Chi2", "InverseGamma", "StudentT",
              "Kumaraswamy", "NegativeBinomial", "NegativeBinomialLogits", "Multinomial",
              "MultinomialLogits", "ContinuousBernoulli", "ContinuousBernoulliLogits"]


@pytest.mark.parametrize("name", STATISTICS)
def test_sample_statistics(name):
    """The mean and variance of 20000 draws are within five standard errors of the
    distribution's (the fourth central moment estimated from the draws)."""
    n = 20000
    cg.manual_seed(7)
    (ours, _), _ = _both(name)
    draws = ours.sample((n,)).numpy().astype(np.float64)
    mean, variance = ours.mean.numpy(), ours.variance.numpy()
    centered = draws - draws.mean(0)
    fourth = (centered ** 4).mean(0)
    assert (np.abs(draws.mean(0) - mean) < 5 * np.sqrt(variance / n) + 1e-6).all()
    spread = np.sqrt(np.maximum(fourth - variance ** 2, 0) / n)
    assert (np.abs(draws.var(0) - variance) < 5 * spread + 1e-6).all()


@pytest.mark.parametrize("name", ["Cauchy", "HalfCauchy", "StudentTDf"])
def test_heavy_tailed_samples_follow_the_cdf(name):
    """Of 20000 draws, the fraction below each quartile is within five standard errors of
    the quartile's probability."""
    n = 20000
    cg.manual_seed(9)
    (ours, _), (theirs, _) = _both(name)
    draws = ours.sample((n,)).numpy()
    for q in (0.25, 0.5, 0.75):
        if name == "StudentTDf":    # PyTorch has no icdf for StudentT: the Normal-free check
            below = (draws < theirs.loc.numpy()).mean(0)
            assert (np.abs(below - 0.5) < 5 * math.sqrt(0.25 / n)).all()
            break
        quartile = ours.icdf(cg.full(tuple(ours.batch_shape), q)).numpy()
        below = (draws < quartile).mean(0)
        assert (np.abs(below - q) < 5 * math.sqrt(q * (1 - q) / n)).all()


def test_conventions_for_undefined_moments_are_pytorchs():
    """NaN and infinite means, variances and modes where PyTorch has them."""
    cases = [
        lambda M, L: M.Cauchy(L.tensor([0.0, 1.0]), 2.0).mean,
        lambda M, L: M.Cauchy(L.tensor([0.0, 1.0]), 2.0).variance,
        lambda M, L: M.HalfCauchy(L.tensor([1.0, 2.0])).mean,
        lambda M, L: M.HalfCauchy(L.tensor([1.0, 2.0])).variance,
        lambda M, L: M.StudentT(L.tensor([0.5, 1.0, 1.5, 2.0, 3.0])).mean,
        lambda M, L: M.StudentT(L.tensor([0.5, 1.0, 1.5, 2.0, 3.0]), 1.0, 2.0).variance,
        lambda M, L: M.InverseGamma(L.tensor([0.5, 1.0, 1.5, 2.0, 3.0]), 2.0).mean,
        lambda M, L: M.InverseGamma(L.tensor([0.5, 1.0, 1.5, 2.0, 3.0]), 2.0).variance,
        lambda M, L: M.Pareto(1.5, L.tensor([0.5, 1.0, 1.5, 2.0, 3.0])).mean,
        lambda M, L: M.Pareto(1.5, L.tensor([0.5, 1.0, 1.5, 2.0, 3.0])).variance,
        lambda M, L: M.Kumaraswamy(L.tensor([0.5, 2.0, 2.0]), L.tensor([2.0, 0.5, 0.9])).mode,
        lambda M, L: M.Weibull(1.5, L.tensor([0.5, 1.0, 2.0])).mode,
        lambda M, L: M.HalfNormal(L.tensor([1.0, 2.0]), validate_args=False).log_prob(
            L.tensor([-1.0, 0.0])),
        lambda M, L: M.Chi2(L.tensor([1.0, 3.0])).df,
        lambda M, L: M.Chi2(2.0).rate.expand(2),
        lambda M, L: M.Gumbel(0.5, 2.0).log_prob(L.tensor([0.0, 3.0])),
        lambda M, L: M.Gumbel(0.5, 2.0).cdf(L.tensor([0.0, 3.0])),
    ]
    for index, case in enumerate(cases):
        with np.errstate(all="ignore"):
            expected = case(TD, torch)
        got = case(D, cg)
        assert_close(got, expected, what=str(index))


def test_half_cauchy_log_prob_outside_the_support_without_validation():
    for M, L in ((D, cg), (TD, torch)):
        dist = M.HalfCauchy(L.tensor([1.0, 2.0]), validate_args=False)
        assert np.isneginf(numpy_of(dist.log_prob(L.tensor([-1.0, -2.0])))).all()


# ---- rsample's pathwise gradients ---------------------------------------------------------

def _through_icdf(dist, x):
    return dist.icdf(dist.cdf(x).detach())


def _through_standard_gamma(dist, x):
    g = (x * dist.rate).detach()
    alpha = dist.concentration
    slope = torch._standard_gamma_grad(alpha.detach().expand_as(g), g)
    return (g + (alpha - alpha.detach()) * slope) / dist.rate


def _through_inverse_gamma(dist, x):
    return 1 / _through_standard_gamma(dist.base_dist, 1 / x)


def _through_relaxed_bernoulli(dist, x):
    """x = sigmoid((logit(u) + logits) / temperature) for the fixed noise logit(u)."""
    noise = (torch.logit(x) * dist.temperature - dist.logits).detach()
    return torch.sigmoid((noise + dist.logits) / dist.temperature)


def _through_relaxed_one_hot(dist, x):
    """x = softmax((logits + g) / temperature) for the fixed Gumbel noise g (up to a
    constant, which softmax ignores)."""
    noise = (x.log() * dist.temperature - dist.logits).detach()
    return torch.softmax((noise + dist.logits) / dist.temperature, -1)


PATHS = {"ContinuousBernoulli": _through_icdf, "ContinuousBernoulliLogits": _through_icdf,
         "RelaxedOneHotCategorical": _through_relaxed_one_hot,
         "RelaxedOneHotCategoricalLogits": _through_relaxed_one_hot,
         "RelaxedBernoulli": _through_relaxed_bernoulli,
         "RelaxedBernoulliLogits": _through_relaxed_bernoulli,
         "Cauchy": _through_icdf, "HalfCauchy": _through_icdf, "HalfNormal": _through_icdf,
         "Gumbel": _through_icdf, "Weibull": _through_icdf, "Pareto": _through_icdf,
         "Kumaraswamy": _through_icdf, "Chi2": _through_standard_gamma,
         "InverseGamma": _through_inverse_gamma}


@pytest.mark.parametrize("name", PATHS)
def test_rsample_gradients_are_pytorchs_for_the_same_sample(name):
    """d loss(x) / d parameters for x = rsample: the reference recomputes x from the same base
    draw (its probability or its standard Gamma draw) in float64."""
    (ours, ours_params), _ = _both(name, requires_grad=True)
    x = ours.rsample((6,))
    assert x.requires_grad
    weights = np.random.default_rng(2).normal(size=tuple(x.shape)).astype(np.float32)
    (x * cg.tensor(weights) + 0.01 * x * x).sum().backward()
    theirs_params = _params(name, torch, True, torch.float64)
    theirs = FAMILIES[name][0](TD, theirs_params)
    x_ref = PATHS[name](theirs, torch.tensor(x.detach().numpy().astype(np.float64)))
    np.testing.assert_allclose(x_ref.detach().numpy(), x.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    (x_ref * torch.tensor(weights, dtype=torch.float64) + 0.01 * x_ref * x_ref).sum().backward()
    for key, tensor in theirs_params.items():
        np.testing.assert_allclose(ours_params[key].grad.numpy(), tensor.grad.numpy(),
                                   rtol=3e-3, atol=1e-4, err_msg=key)


def test_student_t_rsample_gradients_are_pytorchs_for_the_same_draws():
    """x = loc + scale * N * rsqrt(Z / df) for the same normal draw N and Chi2 draw Z, the
    Chi2 draw with PyTorch's implicit gradient in df."""
    (ours, ours_params), _ = _both("StudentT", requires_grad=True)
    cg.manual_seed(4)
    x = ours.rsample((6,))
    cg.manual_seed(4)
    normal = cg.randn(*x.shape).numpy().astype(np.float64)
    weights = np.random.default_rng(3).normal(size=tuple(x.shape)).astype(np.float32)
    (x * cg.tensor(weights)).sum().backward()
    p = _params("StudentT", torch, True, torch.float64)
    loc, scale, df = (t.detach().numpy().astype(np.float64) for t in (p["loc"], p["scale"],
                                                                     p["df"]))
    # the Chi2 draw the sample implies
    z = df * (normal * scale / (x.detach().numpy() - loc)) ** 2
    chi2 = TD.Chi2(p["df"].expand(2, 3))
    z_ref = _through_standard_gamma(chi2, torch.tensor(z))
    x_ref = p["loc"] + p["scale"] * torch.tensor(normal) * torch.rsqrt(z_ref / p["df"])
    np.testing.assert_allclose(x_ref.detach().numpy(), x.detach().numpy(), rtol=1e-3,
                               atol=1e-4)
    (x_ref * torch.tensor(weights, dtype=torch.float64)).sum().backward()
    for key, tensor in p.items():
        np.testing.assert_allclose(ours_params[key].grad.numpy(), tensor.grad.numpy(),
                                   rtol=5e-3, atol=1e-3, err_msg=key)


# ---- validation ---------------------------------------------------------------------------

INVALID = [
    lambda M, L: M.Cauchy(L.tensor([0.0]), L.tensor([-1.0])),
    lambda M, L: M.Cauchy(L.tensor([0.0]), L.tensor([1.0])).log_prob([1.0]),
    lambda M, L: M.HalfNormal(L.tensor([0.0])),
    lambda M, L: M.HalfNormal(L.tensor([1.0])).log_prob(L.tensor([-1.0])),
    lambda M, L: M.HalfCauchy(L.tensor([-1.0])),
    lambda M, L: M.HalfCauchy(L.tensor([1.0])).log_prob(L.tensor([-1.0])),
    lambda M, L: M.Gumbel(L.tensor([0.0]), L.tensor([0.0])),
    lambda M, L: M.Weibull(L.tensor([1.0]), L.tensor([-1.0])),
    lambda M, L: M.Weibull(L.tensor([1.0]), L.tensor([1.0])).log_prob(L.tensor([-1.0])),
    lambda M, L: M.Pareto(L.tensor([-1.0]), L.tensor([1.0])),
    lambda M, L: M.Pareto(L.tensor([2.0]), L.tensor([1.0])).log_prob(L.tensor([1.0])),
    lambda M, L: M.Chi2(L.tensor([0.0])),
    lambda M, L: M.Chi2(L.tensor([1.0])).log_prob(L.tensor([-1.0])),
    lambda M, L: M.InverseGamma(L.tensor([1.0]), L.tensor([-1.0])),
    lambda M, L: M.InverseGamma(L.tensor([1.0]), L.tensor([1.0])).log_prob(L.tensor([0.0])),
    lambda M, L: M.StudentT(L.tensor([-1.0])),
    lambda M, L: M.StudentT(L.tensor([1.0]), 0.0, L.tensor([0.0])),
    lambda M, L: M.StudentT(L.tensor([1.0, 2.0])).log_prob(L.tensor([0.0, 1.0, 2.0])),
    lambda M, L: M.Kumaraswamy(L.tensor([1.0]), L.tensor([0.0])),
    lambda M, L: M.Kumaraswamy(L.tensor([1.0]), L.tensor([1.0])).log_prob(L.tensor([1.5])),
    lambda M, L: M.NegativeBinomial(L.tensor([1.0]), L.tensor([1.0])),
    lambda M, L: M.NegativeBinomial(L.tensor([-1.0]), L.tensor([0.5])),
    lambda M, L: M.NegativeBinomial(L.tensor([1.0]), L.tensor([0.5]), L.tensor([0.0])),
    lambda M, L: M.NegativeBinomial(L.tensor([2.0]), L.tensor([0.5])).log_prob(
        L.tensor([1.5])),
    lambda M, L: M.RelaxedBernoulli(L.tensor(1.0), L.tensor([1.5])),
    lambda M, L: M.RelaxedBernoulli(L.tensor(1.0)),
    lambda M, L: M.RelaxedBernoulli(L.tensor(1.0), L.tensor([0.5])).log_prob(L.tensor([1.5])),
    lambda M, L: M.RelaxedOneHotCategorical(L.tensor(1.0), L.tensor([[0.5, -0.5]])),
    lambda M, L: M.RelaxedOneHotCategorical(L.tensor(1.0), L.tensor([0.5, 0.5])).log_prob(
        L.tensor([0.5, 0.6])),
    lambda M, L: M.RelaxedOneHotCategorical(L.tensor(1.0), L.tensor([0.5, 0.5])).log_prob(
        L.tensor([0.5, 0.3, 0.2])),
    lambda M, L: M.ContinuousBernoulli(L.tensor([1.5]), validate_args=True),
    lambda M, L: M.ContinuousBernoulli(L.tensor([0.5]), L.tensor([0.0])),
    lambda M, L: M.ContinuousBernoulli(L.tensor([0.3])).log_prob(L.tensor([1.5])),
    lambda M, L: M.Multinomial(L.tensor(3), L.tensor([0.5, 0.5])),
    lambda M, L: M.Multinomial(3, L.tensor([0.5, 0.5]), L.tensor([0.0, 0.0])),
    lambda M, L: M.Multinomial(3, L.tensor([[0.5, -0.5]])),
    lambda M, L: M.Multinomial(3, L.tensor([0.5, 0.5])).log_prob(L.tensor([2.0, 2.0])),
    lambda M, L: M.Multinomial(3, L.tensor([0.5, 0.5])).log_prob(L.tensor([1.0, 1.0, 1.0])),
]


def _error(fn, M, L) -> str:
    try:
        fn(M, L)
    except (ValueError, NotImplementedError) as error:
        return f"{type(error).__name__}: {error}".replace("torch.", "clgrad.")
    return "no error"


@pytest.mark.parametrize("case", range(len(INVALID)))
def test_validation_errors_are_pytorchs(case):
    expected = _error(INVALID[case], TD, torch)
    assert expected != "no error"
    assert _error(INVALID[case], D, cg) == expected


def test_continuous_bernoulli_clamps_probs_before_default_validation():
    """As PyTorch's: probs outside [0, 1] pass the default check once clamped, and only an
    explicit validate_args checks them first."""
    for M, L in ((D, cg), (TD, torch)):
        dist = M.ContinuousBernoulli(L.tensor([1.5, -0.5]))
        assert numpy_of(dist.probs).tolist() == pytest.approx([1 - 1.1920929e-07, 1.1920929e-07])


def test_numbers_give_scalar_distributions():
    for make in (lambda M: M.Cauchy(0.0, 1.0), lambda M: M.HalfNormal(1.0),
                 lambda M: M.HalfCauchy(1.0), lambda M: M.Gumbel(0.0, 1.0),
                 lambda M: M.Weibull(1.0, 2.0), lambda M: M.Pareto(1.0, 2.0),
                 lambda M: M.Chi2(2.0), lambda M: M.InverseGamma(2.0, 1.0),
                 lambda M: M.StudentT(3.0), lambda M: M.Kumaraswamy(2.0, 3.0),
                 lambda M: M.ContinuousBernoulli(0.3)):
        ours, theirs = make(D), make(TD)
        assert ours.batch_shape == theirs.batch_shape
        assert ours.sample((3,)).shape == theirs.sample((3,)).shape
        assert_close(ours.entropy(), theirs.entropy(), rtol=2e-4)


# ---- KL divergence ------------------------------------------------------------------------

KL_PAIRS = {
    "Cauchy": (lambda M, a, b: M.Cauchy(a, b), (-1, 1), (0.5, 2)),
    "Gumbel": (lambda M, a, b: M.Gumbel(a, b), (-1, 1), (0.5, 2)),
    "HalfNormal": (lambda M, a, b: M.HalfNormal(b), (0, 1), (0.5, 2)),
    "Pareto": (lambda M, a, b: M.Pareto(a, b), (0.5, 2), (0.5, 3)),
    "ContinuousBernoulli": (lambda M, a, b: M.ContinuousBernoulli(a), (0.05, 0.95), (0, 1)),
}


@pytest.mark.parametrize("name", KL_PAIRS)
def test_kl_divergence_values_and_gradients_are_pytorchs(name):
    make, (a_low, a_high), (b_low, b_high) = KL_PAIRS[name]
    rng = np.random.default_rng(17)
    arrays = [rng.uniform(a_low, a_high, (2, 3)).astype(np.float32),
              rng.uniform(b_low, b_high, (2, 3)).astype(np.float32),
              rng.uniform(a_low, a_high, (3,)).astype(np.float32),
              rng.uniform(b_low, b_high, (3,)).astype(np.float32)]
    results = []
    for M, L in ((D, cg), (TD, torch)):
        tensors = [L.tensor(x, requires_grad=True) for x in arrays]
        kl = M.kl_divergence(make(M, *tensors[:2]), make(M, *tensors[2:]))
        (kl * L.tensor(np.cos(np.arange(6.0)).reshape(2, 3).astype(np.float32))).sum(
            ).backward()
        results.append((kl, [t.grad for t in tensors]))
    assert_close(results[0][0], results[1][0], rtol=2e-4, what="kl")
    for ours, theirs in zip(results[0][1], results[1][1]):
        if theirs is not None:
            assert_close(ours, theirs, rtol=1e-3, atol=1e-4)


KL_BETWEEN = [
    lambda M, L: (M.Gumbel(L.tensor([0.0, 1.0]), 2.0), M.Normal(L.tensor([0.5, -1.0]), 1.5)),
    lambda M, L: (M.Gumbel(L.tensor([0.0, 1.0]), 2.0), M.Exponential(L.tensor([1.0, 2.0]))),
    lambda M, L: (M.Gumbel(L.tensor([0.0]), 2.0), M.Pareto(L.tensor([1.0]), 2.0)),
    lambda M, L: (M.Pareto(L.tensor([1.0, 2.0]), 2.0), M.Uniform(0.0, L.tensor([3.0, 4.0]))),
    lambda M, L: (M.Pareto(L.tensor([1.0]), 2.0), M.ContinuousBernoulli(L.tensor([0.3]))),
    lambda M, L: (M.Laplace(L.tensor([0.0]), 1.0), M.Pareto(L.tensor([1.0]), 2.0)),
    lambda M, L: (M.Normal(L.tensor([0.0]), 1.0), M.ContinuousBernoulli(L.tensor([0.3]))),
    lambda M, L: (M.Exponential(L.tensor([1.0])), M.Pareto(L.tensor([1.0]), 2.0)),
    lambda M, L: (M.Pareto(L.tensor([1.0, 2.0]), 2.0), M.Pareto(L.tensor([1.5, 1.5]), 3.0)),
]


@pytest.mark.parametrize("pair", range(len(KL_BETWEEN)))
def test_kl_divergence_between_families_is_pytorchs(pair):
    ours = D.kl_divergence(*KL_BETWEEN[pair](D, cg))
    theirs = TD.kl_divergence(*KL_BETWEEN[pair](TD, torch))
    assert_close(ours, theirs, rtol=2e-4)


# ---- transforms ---------------------------------------------------------------------------

def _more_transforms(M):
    T = M.transforms
    return [T.SoftmaxTransform(), T.StickBreakingTransform(), T.LowerCholeskyTransform(),
            T.StickBreakingTransform().inv]


@pytest.mark.parametrize("index", range(4))
def test_transforms_are_pytorchs(index):
    ours, theirs = _more_transforms(D)[index], _more_transforms(TD)[index]
    rng = np.random.default_rng(index)
    x = rng.uniform(-1.5, 1.5, (2, 3, 3)).astype(np.float32)
    if index == 3:      # a point of the simplex
        x = _simplex((2, 3, 4))
    results = []
    for t, L in ((ours, cg), (theirs, torch)):
        xt = L.tensor(x, requires_grad=True)
        y = t(xt)
        x_again = t.inv(y)
        weights = L.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))
                           .astype(np.float32))
        loss = (y * weights).sum()
        if index != 0 and index != 2:
            ladj = t.log_abs_det_jacobian(xt, y)
            loss = loss + ladj.sum()
        else:
            ladj = y.sum(-1)
        loss.backward()
        results.append((y, x_again, ladj, xt.grad))
    for k, (a, b) in enumerate(zip(*results)):
        assert_close(a, b, rtol=2e-4, atol=2e-5, what=f"result {k}")
    assert repr(ours.domain) == repr(theirs.domain)
    assert repr(ours.codomain) == repr(theirs.codomain)
    assert ours.bijective == theirs.bijective
    assert ours.forward_shape((3, 2)) == theirs.forward_shape((3, 2))
    assert ours.inverse_shape((3, 4)) == theirs.inverse_shape((3, 4))
    assert ours == _more_transforms(D)[index] and ours != D.transforms.ExpTransform()
    assert codomain_holds(ours, x)


def codomain_holds(transform, x):
    return bool(transform.codomain.check(transform(cg.tensor(x))).all().item())


def test_stick_breaking_transformed_normal_is_pytorchs():
    """A logistic-normal-like distribution on the simplex: log_prob through the stick-breaking
    transform and its Jacobian, batched, with gradients."""
    loc = np.array([[0.2, -0.5, 1.0], [0.0, 0.3, -0.2]], np.float32)
    value = _simplex((5, 2, 4))
    results = []
    for M, L in ((D, cg), (TD, torch)):
        loc_t = L.tensor(loc, requires_grad=True)
        base = M.Independent(M.Normal(loc_t, 0.7), 1)
        dist = M.TransformedDistribution(base, M.transforms.StickBreakingTransform())
        assert tuple(dist.event_shape) == (4,) and tuple(dist.batch_shape) == (2,)
        log_prob = dist.log_prob(L.tensor(value))
        log_prob.sum().backward()
        assert tuple(dist.sample((3,)).shape) == (3, 2, 4)
        results.append((log_prob, loc_t.grad))
    assert_close(*[r[0] for r in results], rtol=2e-4, atol=2e-5)
    assert_close(*[r[1] for r in results], rtol=1e-3, atol=1e-4)


def test_reshape_and_cumulative_distribution_transforms_are_pytorchs():
    x = np.random.default_rng(4).uniform(-1, 1, (5, 2, 6)).astype(np.float32)
    results = []
    for M, L in ((D, cg), (TD, torch)):
        T = M.transforms
        reshape = T.ReshapeTransform((2, 6), (3, 4))
        y = reshape(L.tensor(x))
        assert tuple(reshape.forward_shape((7, 2, 6))) == (7, 3, 4)
        assert tuple(reshape.inverse_shape((7, 3, 4))) == (7, 2, 6)
        assert reshape.domain.event_dim == 2 and reshape.bijective
        cdf = T.CumulativeDistributionTransform(
            M.Normal(L.tensor(np.linspace(-1, 1, 6).astype(np.float32)), 2.0))
        xt = L.tensor(x[0], requires_grad=True)
        u = cdf(xt)
        ladj = cdf.log_abs_det_jacobian(xt, u)
        (u.sum() + ladj.sum()).backward()
        results.append((y, reshape.inv(y), reshape.log_abs_det_jacobian(L.tensor(x), y), u,
                        cdf.inv(u), ladj, xt.grad))
        with pytest.raises(ValueError, match="different numbers of elements"):
            T.ReshapeTransform((2, 3), (4,))
        with pytest.raises(ValueError, match="Shape mismatch"):
            reshape.forward_shape((5, 3))
        assert cdf.sign == 1 and repr(cdf.codomain) == repr(M.constraints.unit_interval)
    for k, (a, b) in enumerate(zip(*results)):
        assert_close(a, b, rtol=2e-4, atol=2e-5, what=f"result {k}")
    # a Uniform as the inverse cdf of a Normal: the Normal's values come back
    base = D.Uniform(cg.zeros(3), cg.ones(3))
    normal = D.Normal(cg.tensor([0.0, 1.0, -1.0]), 1.5)
    dist = D.TransformedDistribution(base, D.transforms.CumulativeDistributionTransform(
        normal).inv)
    value = cg.tensor([[0.3, 1.2, -2.0]])
    np.testing.assert_allclose(dist.log_prob(value).numpy(), normal.log_prob(value).numpy(),
                               rtol=1e-4, atol=1e-5)
