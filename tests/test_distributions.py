"""clgrad.distributions against torch.distributions: for each family, values (log_prob, cdf,
icdf, entropy, moments, mode) and their gradients on the same float32 parameters, batched and
broadcast; edge values; sample shapes, dtypes and statistics; rsample's pathwise gradients
for the same base sample; argument and sample validation."""
import math

import numpy as np
import pytest

import clgrad as cg
import clgrad.distributions as D
from distribution_checks import assert_close, call, numpy_of

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(11)


def _uniform(low, high, shape):
    return RNG.uniform(low, high, shape).astype(np.float32)


def _integers(high, shape):
    return RNG.integers(0, high, shape).astype(np.float32)


def _simplex(shape):
    x = _uniform(0.05, 1.0, shape)
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)


def _one_hot(shape, k):
    return np.eye(k, dtype=np.float32)[RNG.integers(0, k, shape)]


# name: (constructor of (module, params), params, value for log_prob, integer params).
# Parameters of shapes (2, 1) and (3,) broadcast to the batch shape (2, 3); values of shape
# (4, 1, 3) or (4, 2, 3) broadcast with it.
FAMILIES = {
    "Normal": (lambda M, p: M.Normal(p["loc"], p["scale"]),
               {"loc": _uniform(-1, 1, (2, 1)), "scale": _uniform(0.5, 2, (3,))},
               _uniform(-3, 3, (4, 1, 3))),
    "Laplace": (lambda M, p: M.Laplace(p["loc"], p["scale"]),
                {"loc": _uniform(-1, 1, (2, 1)), "scale": _uniform(0.5, 2, (3,))},
                _uniform(-3, 3, (4, 1, 3))),
    "Uniform": (lambda M, p: M.Uniform(p["low"], p["high"]),
                {"low": _uniform(-2, -1, (2, 1)), "high": _uniform(1, 2, (3,))},
                _uniform(-0.9, 0.9, (4, 1, 3))),
    "Exponential": (lambda M, p: M.Exponential(p["rate"]),
                    {"rate": _uniform(0.5, 2, (2, 3))}, _uniform(0, 3, (4, 2, 3))),
    "Gamma": (lambda M, p: M.Gamma(p["concentration"], p["rate"]),
              {"concentration": _uniform(0.5, 3, (2, 1)), "rate": _uniform(0.5, 2, (3,))},
              _uniform(0.05, 4, (4, 1, 3))),
    "Beta": (lambda M, p: M.Beta(p["concentration1"], p["concentration0"]),
             {"concentration1": _uniform(0.5, 3, (2, 1)),
              "concentration0": _uniform(0.5, 3, (3,))}, _uniform(0.02, 0.98, (4, 1, 3))),
    "Dirichlet": (lambda M, p: M.Dirichlet(p["concentration"]),
                  {"concentration": _uniform(0.5, 3, (2, 3))}, _simplex((4, 2, 3))),
    "LogNormal": (lambda M, p: M.LogNormal(p["loc"], p["scale"]),
                  {"loc": _uniform(-1, 1, (2, 1)), "scale": _uniform(0.5, 1.5, (3,))},
                  _uniform(0.05, 4, (4, 1, 3))),
    "Bernoulli": (lambda M, p: M.Bernoulli(p["probs"]), {"probs": _uniform(0.1, 0.9, (2, 3))},
                  _integers(2, (4, 2, 3))),
    "BernoulliLogits": (lambda M, p: M.Bernoulli(logits=p["logits"]),
                        {"logits": _uniform(-3, 3, (2, 3))}, _integers(2, (4, 1, 3))),
    "Geometric": (lambda M, p: M.Geometric(p["probs"]), {"probs": _uniform(0.1, 0.9, (2, 3))},
                  _integers(6, (4, 2, 3))),
    "GeometricLogits": (lambda M, p: M.Geometric(logits=p["logits"]),
                        {"logits": _uniform(-2, 2, (2, 3))}, _integers(6, (4, 1, 3))),
    "Poisson": (lambda M, p: M.Poisson(p["rate"]), {"rate": _uniform(0.5, 5, (2, 3))},
                _integers(8, (4, 2, 3))),
    "Binomial": (lambda M, p: M.Binomial(p["total_count"], p["probs"]),
                 {"total_count": np.array([5.0, 8.0, 12.0], np.float32),
                  "probs": _uniform(0.1, 0.9, (2, 1))}, _integers(6, (4, 2, 3))),
    "BinomialLogits": (lambda M, p: M.Binomial(p["total_count"], logits=p["logits"]),
                       {"total_count": np.full((2, 3), 6.0, np.float32),
                        "logits": _uniform(-2, 2, (2, 3))}, _integers(7, (4, 2, 3))),
    "Categorical": (lambda M, p: M.Categorical(p["probs"]),
                    {"probs": _uniform(0.1, 1, (2, 4))}, _integers(4, (5, 2))),
    "CategoricalLogits": (lambda M, p: M.Categorical(logits=p["logits"]),
                          {"logits": _uniform(-2, 2, (2, 4))}, _integers(4, (5, 1))),
    "OneHotCategorical": (lambda M, p: M.OneHotCategorical(p["probs"]),
                          {"probs": _uniform(0.1, 1, (2, 4))}, _one_hot((5, 2), 4)),
    "Independent": (lambda M, p: M.Independent(M.Normal(p["loc"], p["scale"]), 1),
                    {"loc": _uniform(-1, 1, (2, 3)), "scale": _uniform(0.5, 2, (3,))},
                    _uniform(-3, 3, (4, 2, 3))),
}
NOT_DIFFERENTIABLE = {"total_count"}
DISCRETE = {"Bernoulli", "BernoulliLogits", "Geometric", "GeometricLogits", "Poisson",
            "Binomial", "BinomialLogits", "Categorical", "CategoricalLogits",
            "OneHotCategorical"}


def _params(name, library, requires_grad=False):
    """The family's parameters as tensors of library (torch or clgrad)."""
    _, params, _ = FAMILIES[name]
    out = {}
    for key, value in params.items():
        wants = requires_grad and key not in NOT_DIFFERENTIABLE
        out[key] = library.tensor(value, requires_grad=wants)
    return out


def _both(name, requires_grad=False):
    """(clgrad distribution, its parameters), (torch distribution, its parameters)."""
    make = FAMILIES[name][0]
    ours, theirs = _params(name, cg, requires_grad), _params(name, torch, requires_grad)
    return (make(D, ours), ours), (make(TD, theirs), theirs)


QUANTITIES = ("mean", "variance", "stddev", "mode", "entropy", "perplexity", "log_prob", "cdf",
              "icdf")


def _argument(name, what, library):
    value = FAMILIES[name][2]
    if what == "icdf":      # probabilities, the same on both sides
        value = np.random.default_rng(5).uniform(0.01, 0.99, value.shape).astype(np.float32)
    return library.tensor(value)


@pytest.mark.parametrize("name", FAMILIES)
def test_values_match_torch(name):
    """Every quantity PyTorch computes agrees; what PyTorch leaves unimplemented (a Gamma's
    icdf, a Poisson's entropy) raises NotImplementedError here too."""
    (ours, _), (theirs, _) = _both(name)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert ours.has_enumerate_support == theirs.has_enumerate_support
    for what in QUANTITIES:
        expected = call(theirs, what, _argument(name, what, torch))
        got = call(ours, what, _argument(name, what, cg))
        if isinstance(expected, type):
            assert got is expected, (what, got)
        else:
            assert_close(got, expected, what=what)


@pytest.mark.parametrize("name", FAMILIES)
def test_gradients_match_torch(name):
    """The gradients of a weighted sum of every differentiable quantity, with respect to the
    parameters and (for a continuous family) log_prob's value."""
    (ours, ours_params), (theirs, theirs_params) = _both(name, requires_grad=True)
    continuous = name not in DISCRETE
    values = {lib: _argument(name, "log_prob", lib).requires_grad_(continuous)
              for lib in (cg, torch)}
    losses = []
    for dist, lib in ((ours, cg), (theirs, torch)):
        total = 0
        for k, what in enumerate(("mean", "variance", "entropy", "log_prob", "cdf", "icdf")):
            if name == "Gamma" and what == "cdf":
                continue        # igamma has no gradient in its first argument (below)
            value = values[lib] if what != "icdf" else _argument(name, what, lib)
            result = call(dist, what, value)
            if not isinstance(result, type) and result.requires_grad:
                total = total + (result * math.cos(k + 1)).sum()
        losses.append(total)
    losses[0].backward()
    losses[1].backward()
    for key, tensor in theirs_params.items():
        if tensor.requires_grad:
            assert_close(ours_params[key].grad, tensor.grad, rtol=1e-3, atol=1e-4, what=key)
    if continuous:
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
    assert expanded.batch_shape == reference.batch_shape
    assert expanded.event_shape == reference.event_shape
    assert expanded.sample((2,)).shape == reference.sample((2,)).shape
    value = _argument(name, "log_prob", cg).unsqueeze(1)    # a dimension for the new batch
    assert_close(expanded.log_prob(value),
                 reference.log_prob(_argument(name, "log_prob", torch).unsqueeze(1)))


STATISTICS = ["Normal", "Laplace", "Uniform", "Exponential", "Gamma", "Beta", "Dirichlet",
              "LogNormal", "Bernoulli", "Geometric", "Poisson", "Binomial", "OneHotCategorical"]


@pytest.mark.parametrize("name", STATISTICS)
def test_sample_statistics(name):
    """The mean and variance of 20000 draws are within five standard errors of the
    distribution's (the fourth central moment estimated from the draws)."""
    n = 20000
    (ours, _), _ = _both(name)
    draws = ours.sample((n,)).numpy().astype(np.float64)
    mean, variance = ours.mean.numpy(), ours.variance.numpy()
    centered = draws - draws.mean(0)
    fourth = (centered ** 4).mean(0)
    assert (np.abs(draws.mean(0) - mean) < 5 * np.sqrt(variance / n) + 1e-6).all()
    spread = np.sqrt(np.maximum(fourth - variance ** 2, 0) / n)
    assert (np.abs(draws.var(0) - variance) < 5 * spread + 1e-6).all()


def test_categorical_frequencies():
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]], np.float32)
    draws = D.Categorical(cg.tensor(probs)).sample((20000,)).numpy()
    assert draws.dtype == np.int64 and draws.shape == (20000, 2)
    frequencies = np.stack([(draws == k).mean(0) for k in range(3)], -1)
    assert (np.abs(frequencies - probs) < 5 * np.sqrt(probs * (1 - probs) / 20000)).all()


def test_gamma_cdf_has_no_gradient_in_the_concentration():
    """As PyTorch's: igamma's derivative in its first argument is not implemented, the rate's
    and the value's are."""
    for lib, M in ((cg, D), (torch, TD)):
        concentration = lib.tensor([0.5, 2.0], requires_grad=True)
        rate = lib.tensor([1.5, 0.7], requires_grad=True)
        with pytest.raises(NotImplementedError, match="igamma: input"):
            M.Gamma(concentration, rate).cdf(lib.tensor([0.3, 2.0])).sum().backward()
    expected = []
    for lib, M in ((cg, D), (torch, TD)):
        rate = lib.tensor([1.5, 0.7], requires_grad=True)
        value = lib.tensor([0.3, 2.0], requires_grad=True)
        M.Gamma(lib.tensor([0.5, 2.0]), rate).cdf(value).sum().backward()
        expected.append((rate.grad, value.grad))
    for ours, theirs in zip(*expected):
        assert_close(ours, theirs)


# ---- rsample: pathwise gradients for the same base sample ----------------------------------

def _through_icdf(dist, x):
    """x as the reference distribution's reparameterized function of its parameters: the
    quantile function at the (fixed) probability of x."""
    return dist.icdf(dist.cdf(x).detach())


def _through_standard_gamma(dist, x):
    """A Gamma sample x = g / rate whose g has PyTorch's implicit gradient in alpha."""
    g = (x * dist.rate).detach()
    alpha = dist.concentration
    slope = torch._standard_gamma_grad(alpha.detach().expand_as(g), g)
    return (g + (alpha - alpha.detach()) * slope) / dist.rate


class _FixedDirichlet(torch.autograd.Function):
    """A given Dirichlet sample with PyTorch's Dirichlet backward."""

    @staticmethod
    def forward(ctx, concentration, x):
        ctx.save_for_backward(x, concentration)
        return x.clone()

    @staticmethod
    def backward(ctx, grad_output):
        x, concentration = ctx.saved_tensors
        from torch.distributions.dirichlet import _Dirichlet_backward
        return _Dirichlet_backward(x, concentration, grad_output), None


def _through_dirichlet(dist, x):
    concentration = dist.concentration
    return _FixedDirichlet.apply(concentration.expand(x.shape), x.detach())


def _through_beta(dist, x):
    concentration = torch.stack([dist.concentration1, dist.concentration0], -1)
    pair = torch.stack([x, 1 - x], -1).detach()
    return _FixedDirichlet.apply(concentration.expand(pair.shape), pair)[..., 0]


def _through_scale_tril(dist, x):
    eps = torch.linalg.solve_triangular(dist.scale_tril.detach(),
                                        (x - dist.loc).detach().unsqueeze(-1), upper=False)
    return dist.loc + (dist.scale_tril @ eps).squeeze(-1)


PATHS = {"Normal": _through_icdf, "Laplace": _through_icdf, "Uniform": _through_icdf,
         "Exponential": _through_icdf, "LogNormal": _through_icdf,
         "Gamma": _through_standard_gamma, "Beta": _through_beta,
         "Dirichlet": _through_dirichlet}


@pytest.mark.parametrize("name", PATHS)
def test_rsample_gradients_are_pytorchs_for_the_same_sample(name):
    """d loss(x) / d parameters for x = rsample: the reference recomputes x from the same base
    draw (its probability, its standard Gamma draw, its Dirichlet sample) in float64."""
    (ours, ours_params), _ = _both(name, requires_grad=True)
    x = ours.rsample((6,))
    assert x.requires_grad
    weights = np.random.default_rng(2).normal(size=tuple(x.shape)).astype(np.float32)
    (x * cg.tensor(weights) + 0.1 * x * x).sum().backward()
    theirs_params = {k: torch.tensor(v.astype(np.float64), requires_grad=True)
                     for k, v in FAMILIES[name][1].items()}
    theirs = FAMILIES[name][0](TD, theirs_params)
    x_ref = PATHS[name](theirs, torch.tensor(x.detach().numpy().astype(np.float64)))
    np.testing.assert_allclose(x_ref.detach().numpy(), x.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    (x_ref * torch.tensor(weights, dtype=torch.float64) + 0.1 * x_ref * x_ref).sum().backward()
    for key, tensor in theirs_params.items():
        np.testing.assert_allclose(ours_params[key].grad.numpy(), tensor.grad.numpy(),
                                   rtol=2e-3, atol=1e-4, err_msg=key)


def test_multivariate_normal_and_straight_through_rsample_gradients():
    loc = np.array([[0.5, -1.0, 2.0]], np.float32)
    tril = np.array([[1.0, 0, 0], [0.5, 2.0, 0], [-0.3, 0.2, 0.7]], np.float32)
    ours = [cg.tensor(loc, requires_grad=True), cg.tensor(tril, requires_grad=True)]
    x = D.MultivariateNormal(ours[0], scale_tril=ours[1]).rsample((5,))
    (x * x).sum().backward()
    theirs = [torch.tensor(loc, requires_grad=True), torch.tensor(tril, requires_grad=True)]
    x_ref = _through_scale_tril(TD.MultivariateNormal(theirs[0], scale_tril=theirs[1]),
                                torch.tensor(x.detach().numpy()))
    (x_ref * x_ref).sum().backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-3, atol=1e-3)
    probs = cg.tensor([[0.2, 0.3, 0.5]], requires_grad=True)
    straight = D.OneHotCategoricalStraightThrough(probs)
    sample = straight.rsample((4,))
    assert ((sample.detach() == 0) | (sample.detach() == 1)).all().item()
    (sample * cg.tensor([1.0, 2.0, 3.0])).sum().backward()
    probs_ref = torch.tensor([[0.2, 0.3, 0.5]], requires_grad=True)
    sample_ref = TD.OneHotCategoricalStraightThrough(probs_ref).rsample((4,))
    (sample_ref * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    np.testing.assert_allclose(probs.grad.numpy(), probs_ref.grad.numpy(), atol=1e-6)


@pytest.mark.parametrize("name", ["Gamma", "Beta", "Dirichlet"])
def test_implicit_gradients_are_unbiased(name):
    """The mean over 20000 rsamples of d (x + x²) / d parameters is that of E[x + x²]
    = mean + variance + mean², within 4%."""
    (ours, ours_params), (theirs, theirs_params) = _both(name, requires_grad=True)
    x = ours.rsample((20000,))
    (x + x * x).mean(0).sum().backward()
    (theirs.mean + theirs.variance + theirs.mean ** 2).sum().backward()
    for key, tensor in theirs_params.items():
        np.testing.assert_allclose(ours_params[key].grad.numpy(), tensor.grad.numpy(),
                                   rtol=0.04, atol=0.01, err_msg=key)


# ---- edge values ----------------------------------------------------------------------------

# (constructor of (module, library), value, quantities): probabilities 0 and 1, values on
# and beyond the support's boundary, scored without validation as PyTorch scores them
EDGES = [
    (lambda M, L: M.Bernoulli(L.tensor([0.0, 1.0, 0.0, 1.0, 0.5])),
     [0.0, 1.0, 1.0, 0.0, 1.0], ("log_prob", "entropy", "mean", "variance", "mode")),
    (lambda M, L: M.Bernoulli(logits=L.tensor([-100.0, 100.0, 0.0])), [0.0, 0.0, 1.0],
     ("log_prob", "entropy", "mode")),
    (lambda M, L: M.Categorical(L.tensor([[0.0, 0.3, 0.7], [1.0, 0.0, 0.0]])), [[0.0, 2.0]],
     ("log_prob", "entropy", "mode")),
    (lambda M, L: M.Binomial(L.tensor([4.0, 4.0, 4.0]), L.tensor([0.0, 1.0, 0.5])),
     [0.0, 4.0, 5.0], ("log_prob", "mean", "mode")),
    (lambda M, L: M.Geometric(L.tensor([1.0, 1.0, 0.3])), [0.0, 2.0, 0.0],
     ("log_prob", "mean", "variance")),
    (lambda M, L: M.Poisson(L.tensor([0.0, 0.0, 2.0])), [0.0, 1.0, 0.0],
     ("log_prob", "mode")),
    (lambda M, L: M.Uniform(L.tensor([0.0, 0.0, 0.0, 0.0]), L.tensor([1.0, 1.0, 1.0, 1.0])),
     [0.0, 1.0, -0.5, 1.5], ("log_prob", "cdf")),
    (lambda M, L: M.Exponential(L.tensor([2.0, 2.0, 2.0])), [0.0, -1.0, 1e4],
     ("log_prob", "cdf")),
    (lambda M, L: M.Gamma(L.tensor([0.5, 1.0, 2.0, 1.0]), L.tensor([1.0, 2.0, 1.0, 1.0])),
     [0.0, 0.0, 0.0, -1.0], ("log_prob", "cdf")),
    (lambda M, L: M.Beta(L.tensor([0.5, 1.0, 2.0, 1.0]), L.tensor([1.0, 1.0, 1.0, 3.0])),
     [0.0, 1.0, 1.0, 0.0], ("log_prob",)),
    (lambda M, L: M.Dirichlet(L.tensor([[1.0, 2.0, 3.0], [0.5, 1.0, 1.0]])),
     [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], ("log_prob",)),
    (lambda M, L: M.Normal(L.tensor([0.0, 0.0, 1.0]), L.tensor([1.0, 1.0, 2.0])),
     [0.0, 1.0, 0.5], ("icdf",)),
    (lambda M, L: M.Laplace(L.tensor([0.0, 0.0, 1.0]), L.tensor([1.0, 1.0, 2.0])),
     [0.0, 1.0, 0.5], ("icdf", "cdf")),
    (lambda M, L: M.Exponential(L.tensor([1.0, 3.0])), [0.0, 1.0], ("icdf",)),
    (lambda M, L: M.LogNormal(L.tensor([0.0, 0.0]), L.tensor([1.0, 1.0]),
                              validate_args=False), [0.0, -1.0], ("log_prob", "cdf")),
]


@pytest.mark.parametrize("case", range(len(EDGES)))
def test_edge_values_are_pytorchs(case):
    make, value, quantities = EDGES[case]
    ours, theirs = make(D, cg), make(TD, torch)
    ours._validate_args = theirs._validate_args = False
    for what in quantities:
        assert_close(call(ours, what, cg.tensor(value)),
                     call(theirs, what, torch.tensor(value)), what=what)


def test_edge_gradients_are_pytorchs():
    """At probabilities 0 and 1 and on support boundaries the gradients (infinite, NaN or
    finite) are PyTorch's."""
    builders = [
        (lambda M, p: M.Bernoulli(p), [0.0, 1.0, 0.3], [0.0, 1.0, 1.0]),
        (lambda M, p: M.Geometric(p), [1.0, 0.5], [0.0, 3.0]),
        (lambda M, p: M.Gamma(p, p), [0.5, 1.0, 3.0], [0.0, 0.0, 0.0]),
        (lambda M, p: M.Uniform(-p, p), [1.0, 1.0], [-1.0, 0.5]),
        (lambda M, p: M.Poisson(p), [0.0, 2.0], [0.0, 0.0]),
    ]
    for make, param, value in builders:
        grads = []
        for M, L in ((D, cg), (TD, torch)):
            p = L.tensor(param, requires_grad=True)
            dist = make(M, p)
            dist._validate_args = False
            dist.log_prob(L.tensor(value)).sum().backward()
            grads.append(p.grad)
        assert_close(*grads)


# ---- validation ---------------------------------------------------------------------------

INVALID = [
    lambda M, L: M.Normal(L.tensor([0.0, 1.0]), L.tensor([1.0, -1.0])),
    lambda M, L: M.Normal(0.0, -1.0),
    lambda M, L: M.Normal(L.tensor([0.0]), L.tensor([1.0])).log_prob([1.0]),
    lambda M, L: M.Normal(L.tensor([0.0, 1.0]), 1.0).log_prob(L.tensor([0.0, 1.0, 2.0])),
    lambda M, L: M.Exponential(L.tensor([1.0])).log_prob(L.tensor([-1.0])),
    lambda M, L: M.Uniform(L.tensor([0.0]), L.tensor([1.0])).log_prob(L.tensor([2.0])),
    lambda M, L: M.Uniform(L.tensor([1.0]), L.tensor([0.0])),
    lambda M, L: M.Bernoulli(L.tensor([0.5]), logits=L.tensor([0.0])),
    lambda M, L: M.Bernoulli(L.tensor([1.5])),
    lambda M, L: M.Bernoulli(L.tensor([0.5])).log_prob(L.tensor([0.5])),
    lambda M, L: M.Categorical(L.tensor([0.5, 0.2])).log_prob(L.tensor([3])),
    lambda M, L: M.Categorical(L.tensor(0.5)),
    lambda M, L: M.Categorical(L.tensor([[0.5, -0.2]])),
    lambda M, L: M.OneHotCategorical(L.tensor([0.5, 0.5])).log_prob(L.tensor([1.0, 1.0])),
    lambda M, L: M.Dirichlet(L.tensor([[1.0, -1.0]])),
    lambda M, L: M.Dirichlet(L.tensor(1.0)),
    lambda M, L: M.Dirichlet(L.tensor([1.0, 1.0])).log_prob(L.tensor([0.5, 0.6])),
    lambda M, L: M.Geometric(L.tensor([0.0, 0.5])),
    lambda M, L: M.Gamma(L.tensor([1.0]), L.tensor([0.0])),
    lambda M, L: M.Beta(L.tensor([1.0]), L.tensor([1.0])).log_prob(L.tensor([1.5])),
    lambda M, L: M.Poisson(L.tensor([-1.0])),
    lambda M, L: M.Poisson(L.tensor([1.0])).log_prob(L.tensor([1.5])),
    lambda M, L: M.Binomial(L.tensor([3.0]), L.tensor([0.5])).log_prob(L.tensor([4.0])),
    lambda M, L: M.Binomial(L.tensor([2.5]), L.tensor([0.5])),
    lambda M, L: M.Laplace(L.tensor([0.0]), L.tensor([0.0])),
    lambda M, L: M.LogNormal(L.tensor([0.0]), L.tensor([1.0])).log_prob(L.tensor([-1.0])),
    lambda M, L: M.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda M, L: M.MultivariateNormal(L.zeros(2), L.tensor([[1.0, 2.0], [0.0, 1.0]])),
    lambda M, L: M.MultivariateNormal(L.zeros(2), scale_tril=L.tensor([[1.0, 0.0],
                                                                      [2.0, -1.0]])),
    lambda M, L: M.MultivariateNormal(L.zeros(2)),
    lambda M, L: M.MultivariateNormal(L.tensor(0.0), L.eye(1)),
    lambda M, L: M.MultivariateNormal(L.zeros(2), precision_matrix=L.ones(2)),
    lambda M, L: M.Independent(M.Normal(L.zeros(2), 1.0), 2),
    lambda M, L: M.MixtureSameFamily(M.Categorical(L.ones(3)), M.Normal(L.zeros(2), 1.0)),
    lambda M, L: M.MixtureSameFamily(M.Normal(0.0, 1.0), M.Normal(L.zeros(2), 1.0)),
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


def test_validation_can_be_turned_off():
    D.Normal(0.0, -1.0, validate_args=False)
    D.Distribution.set_default_validate_args(False)
    try:
        assert D.Exponential(cg.tensor([-1.0])).rate.shape == (1,)
        assert D.Normal(0.0, 1.0).log_prob(cg.tensor([1.0])).shape == (1,)
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Exponential(cg.tensor([-1.0]))
    with pytest.raises(ValueError):
        D.Distribution.set_default_validate_args("yes")


# ---- kl_divergence --------------------------------------------------------------------------

# name: constructor of (module, parameters) and the parameters of p and of q; the second
# elements reach the infinite cases (q's support smaller than p's, a zero probability)
KL_PAIRS = {
    "Normal": (lambda M, a, b: M.Normal(a, b), ([0.1, 1.3], [1.0, 2.6]), ([0.5, -1.0], [2.0, 0.3])),
    "Bernoulli": (lambda M, a: M.Bernoulli(a), ([0.0, 0.3, 1.0, 0.5, 0.4],),
                  ([0.2, 0.6, 0.4, 0.0, 1.0],)),
    "Categorical": (lambda M, a: M.Categorical(a), ([[0.0, 0.3, 0.7], [0.2, 0.2, 0.6]],),
                    ([[0.5, 0.1, 0.4], [0.0, 0.5, 0.5]],)),
    "OneHotCategorical": (lambda M, a: M.OneHotCategorical(a), ([[0.1, 0.3, 0.6]],),
                          ([[0.4, 0.4, 0.2]],)),
    "Uniform": (lambda M, a, b: M.Uniform(a, b), ([0.0, -1.0], [1.0, 2.0]),
                ([-1.0, 0.0], [2.0, 2.0])),
    "Exponential": (lambda M, a: M.Exponential(a), ([1.0, 1.3],), ([2.0, 0.4],)),
    "Gamma": (lambda M, a, b: M.Gamma(a, b), ([1.0, 1.3], [2.0, 0.5]), ([2.0, 0.7], [1.0, 1.5])),
    "Beta": (lambda M, a, b: M.Beta(a, b), ([1.0, 1.3], [2.0, 0.5]), ([2.0, 0.7], [1.0, 1.5])),
    "Dirichlet": (lambda M, a: M.Dirichlet(a), ([[1.0, 1.3, 2.0]],), ([[2.0, 0.5, 1.0]],)),
    "Laplace": (lambda M, a, b: M.Laplace(a, b), ([0.1, 1.3], [1.0, 2.6]),
                ([0.5, -1.0], [2.0, 0.3])),
    "Poisson": (lambda M, a: M.Poisson(a), ([1.0, 1.3],), ([2.0, 0.4],)),
    "Binomial": (lambda M, a: M.Binomial(5, a), ([0.3, 0.26],), ([0.5, 0.9],)),
    "Geometric": (lambda M, a: M.Geometric(a), ([0.3, 0.26],), ([0.5, 0.9],)),
    "LogNormal": (lambda M, a, b: M.LogNormal(a, b), ([0.1, 1.3], [1.0, 2.6]),
                  ([0.5, -1.0], [2.0, 0.3])),
    "Independent": (lambda M, a, b: M.Independent(M.Normal(a, b), 1), ([[0.1, 1.3]], [[1.0, 2.6]]),
                    ([[0.5, -1.0]], [[2.0, 0.3]])),
    "MultivariateNormal": (lambda M, a, b: M.MultivariateNormal(a, scale_tril=b),
                           ([[0.1, 1.3], [0.0, 0.0]], [[1.0, 0.0], [0.4, 2.0]]),
                           ([[0.5, -1.0]], [[[2.0, 0.0], [-0.3, 0.5]], [[1.0, 0.0], [0.0, 1.0]]])),
}


@pytest.mark.parametrize("name", KL_PAIRS)
def test_kl_divergence_values_and_gradients_are_pytorchs(name):
    make, p_params, q_params = KL_PAIRS[name]
    _compare_kl(make, p_params, make, q_params)


def _compare_kl(make_p, p_params, make_q, q_params):
    """KL(p || q) and its gradients with respect to both distributions' parameters (where it
    is finite) are PyTorch's."""
    results = []
    for M, L in ((D, cg), (TD, torch)):
        leaves = [L.tensor(v, requires_grad=True) for v in p_params + q_params]
        p, q = make_p(M, *leaves[:len(p_params)]), make_q(M, *leaves[len(p_params):])
        kl = M.kl_divergence(p, q)
        if kl.requires_grad:        # (an infinite KL is a constant: no graph)
            finite = kl.detach().isfinite()
            kl.where(finite, 0.0 * kl).sum().backward()
        results.append((kl, [leaf.grad for leaf in leaves]))
    (ours, ours_grads), (theirs, theirs_grads) = results
    assert_close(ours, theirs, what="kl")
    assert ours.requires_grad == theirs.requires_grad
    for k, (a, b) in enumerate(zip(ours_grads, theirs_grads)):
        assert (a is None) == (b is None), k
        if a is not None:
            assert_close(a, b, rtol=1e-3, atol=1e-4, what=f"gradient {k}")


# two families: (constructor, parameters); the Uniform's second interval reaches below 0,
# where an Exponential, a Gamma or a Beta has no density
CROSS_FAMILIES = {
    "Normal": (lambda M, a, b: M.Normal(a, b), ([0.3, -0.5], [1.2, 0.7])),
    "Laplace": (lambda M, a, b: M.Laplace(a, b), ([0.3, -0.5], [1.2, 0.7])),
    "Uniform": (lambda M, a, b: M.Uniform(a, b), ([0.1, -0.2], [0.6, 0.9])),
    "Exponential": (lambda M, a: M.Exponential(a), ([1.3, 0.4],)),
    "Gamma": (lambda M, a, b: M.Gamma(a, b), ([1.5, 0.7], [2.0, 0.5])),
    "Beta": (lambda M, a, b: M.Beta(a, b), ([1.5, 0.7], [2.0, 0.5])),
    "Bernoulli": (lambda M, a: M.Bernoulli(a), ([0.3, 0.8],)),
    "Binomial": (lambda M, a: M.Binomial(5, a), ([0.3, 0.8],)),
    "Poisson": (lambda M, a: M.Poisson(a), ([1.3, 0.4],)),
}
CROSS_PAIRS = [("Bernoulli", "Poisson"), ("Beta", "Exponential"), ("Beta", "Gamma"),
               ("Beta", "Normal"), ("Beta", "Uniform"), ("Exponential", "Beta"),
               ("Exponential", "Uniform"), ("Exponential", "Gamma"), ("Exponential", "Normal"),
               ("Gamma", "Beta"), ("Gamma", "Uniform"), ("Gamma", "Exponential"),
               ("Gamma", "Normal"), ("Laplace", "Beta"), ("Laplace", "Exponential"),
               ("Laplace", "Gamma"), ("Laplace", "Uniform"), ("Laplace", "Normal"),
               ("Normal", "Beta"), ("Normal", "Exponential"), ("Normal", "Gamma"),
               ("Normal", "Uniform"), ("Normal", "Laplace"), ("Poisson", "Bernoulli"),
               ("Poisson", "Binomial"), ("Uniform", "Beta"), ("Uniform", "Exponential"),
               ("Uniform", "Gamma"), ("Uniform", "Normal")]


@pytest.mark.parametrize("pair", CROSS_PAIRS, ids="-".join)
def test_kl_divergence_between_families_is_pytorchs(pair):
    (make_p, p_params), (make_q, q_params) = (CROSS_FAMILIES[name] for name in pair)
    _compare_kl(make_p, p_params, make_q, q_params)


def test_kl_divergence_dispatch():
    """The most specific registered pair wins; a pair of no registered types raises; an
    exponential family's KL by Bregman divergence refuses two different families."""
    class Shifted(D.Normal):
        pass

    p, q = Shifted(0.0, 1.0), D.Normal(1.0, 2.0)
    assert math.isclose(D.kl_divergence(p, q).item(),
                        TD.kl_divergence(TD.Normal(0.0, 1.0), TD.Normal(1.0, 2.0)).item(),
                        rel_tol=1e-6)
    with pytest.raises(NotImplementedError, match="No KL"):
        D.kl_divergence(D.Normal(0.0, 1.0), D.Categorical(cg.ones(2)))

    @D.register_kl(Shifted, D.Normal)
    def _kl_shifted(p, q):
        return cg.tensor(42.0)

    assert D.kl_divergence(p, q).item() == 42.0
    with pytest.raises(NotImplementedError, match="Bregman"):
        D.kl.kl_divergence(D.Poisson(1.0), D.Exponential(1.0))


def test_exponential_family_entropy_and_kl_by_bregman_divergence():
    """The generic formulas (autograd of the log-normalizer) give the closed forms."""
    from clgrad.distributions.kl import _kl_expfamily_expfamily
    for make in (lambda M, L: M.Normal(L.tensor([0.3, -1.0]), L.tensor([1.5, 0.5])),
                 lambda M, L: M.Gamma(L.tensor([0.7, 3.0]), L.tensor([1.5, 0.5])),
                 lambda M, L: M.Bernoulli(L.tensor([0.2, 0.7])),
                 lambda M, L: M.Exponential(L.tensor([0.7, 3.0]))):
        ours = make(D, cg)
        assert_close(D.ExponentialFamily.entropy(ours), make(TD, torch).entropy())
        other = make(D, cg).expand((2,))
        np.testing.assert_allclose(numpy_of(_kl_expfamily_expfamily(ours, other)), 0, atol=1e-4)
    rate, other = cg.tensor([0.7, 3.0]), cg.tensor([1.0, 2.0])
    assert_close(_kl_expfamily_expfamily(D.Poisson(rate), D.Poisson(other)),
                 TD.kl_divergence(TD.Poisson(torch.tensor([0.7, 3.0])),
                                  TD.Poisson(torch.tensor([1.0, 2.0]))))


# ---- constraints and transforms ----------------------------------------------------------

def _constraints(M, L):
    C = M.constraints
    return [C.real, C.positive, C.nonnegative, C.unit_interval, C.boolean,
            C.nonnegative_integer, C.positive_integer, C.greater_than(L.tensor(-0.5)),
            C.greater_than_eq(-0.5), C.less_than(0.5), C.interval(-1.0, 0.5),
            C.half_open_interval(-1.0, 0.5), C.integer_interval(0, 2), C.simplex, C.one_hot,
            C.real_vector, C.independent(C.positive, 1), C.lower_triangular,
            C.lower_cholesky, C.square, C.symmetric, C.positive_definite,
            C.positive_semidefinite, C.multinomial(3), C.cat([C.positive, C.real], 0, [1, 1]),
            C.stack([C.positive, C.real], -1)]


CONSTRAINT_VALUES = [
    np.array([[-1.0, 0.0, 0.5], [1.0, 2.0, math.nan]], np.float32),
    np.array([[0.2, 0.3, 0.5], [1.0, 0.0, 0.0]], np.float32),
    np.array([[[1.0, 0.0], [0.5, 2.0]], [[1.0, 0.5], [0.5, 2.0]]], np.float32),
    np.array([[[2.0, -1.0], [-1.0, 2.0]], [[0.0, 0.0], [0.0, 0.0]]], np.float32),
]


@pytest.mark.parametrize("index", range(26))
def test_constraints_check_like_pytorchs(index):
    ours, theirs = _constraints(D, cg)[index], _constraints(TD, torch)[index]
    assert repr(ours) == repr(theirs)
    assert ours.event_dim == theirs.event_dim and ours.is_discrete == theirs.is_discrete
    for value in CONSTRAINT_VALUES:
        try:
            expected = theirs.check(torch.tensor(value))
        except RuntimeError:            # a value of the wrong shape: ours refuses it too
            with pytest.raises(RuntimeError):
                ours.check(cg.tensor(value)).numpy()
            continue
        np.testing.assert_array_equal(ours.check(cg.tensor(value)).numpy(), expected.numpy())


def test_dependent_constraints():
    C = D.constraints
    assert C.is_dependent(C.dependent) and C.is_dependent(D.Uniform.support)
    assert not C.is_dependent(C.real)
    with pytest.raises(ValueError, match="Cannot determine validity"):
        C.dependent.check(cg.zeros(1))
    with pytest.raises(NotImplementedError, match="cannot be determined statically"):
        C.dependent.event_dim
    assert C.dependent(is_discrete=True, event_dim=1).event_dim == 1
    support = D.Uniform(cg.tensor([0.0]), cg.tensor([2.0])).support
    assert repr(support).startswith("Interval(lower_bound=tensor([0.])")


def _transforms(M, L):
    T = M.transforms
    return [T.ExpTransform(), T.AffineTransform(1.5, -2.0),
            T.AffineTransform(L.tensor([1.0, -1.0]), L.tensor([0.5, 2.0]), event_dim=1),
            T.SigmoidTransform(), T.TanhTransform(), T.SoftplusTransform(),
            T.PowerTransform(L.tensor(2.0)), T.ExpTransform().inv,
            T.ComposeTransform([T.AffineTransform(0.5, 2.0), T.TanhTransform()]),
            T.IndependentTransform(T.SigmoidTransform(), 1), T.identity_transform]


@pytest.mark.parametrize("index", range(11))
def test_transforms_are_pytorchs(index):
    ours, theirs = _transforms(D, cg)[index], _transforms(TD, torch)[index]
    x = np.random.default_rng(index).uniform(0.1, 0.9, (3, 2)).astype(np.float32)
    results = []
    for t, L in ((ours, cg), (theirs, torch)):
        xt = L.tensor(x, requires_grad=True)
        y = t(xt)
        x_again = t.inv(y)
        ladj = t.log_abs_det_jacobian(xt, y)
        (y.sum() + ladj.sum()).backward()
        results.append((y, x_again, ladj, xt.grad))
    for k, (a, b) in enumerate(zip(*results)):
        assert_close(a, b, what=f"result {k}")
    assert repr(ours.domain) == repr(theirs.domain)
    assert repr(ours.codomain) == repr(theirs.codomain)
    assert ours.bijective == theirs.bijective
    assert ours.forward_shape((3, 2)) == theirs.forward_shape((3, 2))
    if index not in (2, 6):
        assert ours.sign == theirs.sign


def test_transform_equality_caching_and_shapes():
    T = D.transforms
    assert T.ExpTransform() == T.ExpTransform() and T.ExpTransform() != T.TanhTransform()
    assert T.AffineTransform(1.0, 2.0) == T.AffineTransform(1.0, 2.0)
    assert T.AffineTransform(cg.tensor([1.0]), 2.0) != T.AffineTransform(cg.tensor([3.0]), 2.0)
    assert T.ExpTransform().inv.inv == T.ExpTransform()
    compose = T.ComposeTransform([T.ExpTransform(), T.AffineTransform(0.0, -1.0)])
    assert compose.inv.inv is compose and compose.sign == -1
    cached = T.ExpTransform(cache_size=1)
    x = cg.tensor([0.5])
    y = cached(x)
    assert cached(x) is y and cached.inv(y) is x
    with pytest.raises(ValueError, match="cache_size must be 0 or 1"):
        T.ExpTransform(cache_size=2)
    assert T.AffineTransform(cg.zeros(3), 1.0).forward_shape((2, 1)) == (2, 3)


def test_transformed_distributions():
    """A decreasing transform flips cdf and icdf; a transform of event dimension 1 makes an
    Independent base; LogNormal's support and expand."""
    results = []
    for M, L in ((D, cg), (TD, torch)):
        T = M.transforms
        base = M.Normal(L.tensor([0.0, 1.0, -1.0]), L.tensor([1.0, 0.5, 2.0]))
        flipped = M.TransformedDistribution(base, [T.AffineTransform(1.0, -2.0),
                                                   T.ExpTransform()])
        y = L.tensor([0.5, 1.0, 3.0])
        vector = M.TransformedDistribution(base, T.AffineTransform(L.zeros(3), L.ones(3) * 2,
                                                                   event_dim=1))
        log_normal = M.LogNormal(L.tensor([0.0, 1.0]), L.tensor([1.0, 0.5])).expand((3, 2))
        probabilities = L.tensor([0.1, 0.5, 0.9])
        results.append([flipped.log_prob(y), flipped.cdf(y), flipped.icdf(probabilities),
                        vector.log_prob(y), log_normal.log_prob(L.tensor([0.5, 2.0])),
                        log_normal.cdf(L.tensor([0.5, 2.0]))])
        assert (vector.batch_shape, vector.event_shape) == ((), (3,))
        assert repr(log_normal.support) == "GreaterThan(lower_bound=0.0)"
        assert log_normal.batch_shape == (3, 2) and flipped.has_rsample
    for a, b in zip(*results):
        assert_close(a, b)


# ---- more of the API --------------------------------------------------------------------

def test_enumerate_support():
    for make in (lambda M, L: M.Bernoulli(L.tensor([[0.2, 0.3], [0.5, 0.5]])),
                 lambda M, L: M.Categorical(L.tensor([[0.2, 0.3, 0.5]])),
                 lambda M, L: M.OneHotCategorical(L.tensor([[0.2, 0.3, 0.5]])),
                 lambda M, L: M.Binomial(3, L.tensor([0.2, 0.5])),
                 lambda M, L: M.Independent(M.Bernoulli(L.tensor([0.2, 0.5])), 0)):
        for expand in (True, False):
            ours = make(D, cg).enumerate_support(expand)
            theirs = make(TD, torch).enumerate_support(expand)
            assert ours.shape == theirs.shape and ours.dtype.name == str(theirs.dtype)[6:]
            np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    with pytest.raises(NotImplementedError, match="Inhomogeneous"):
        D.Binomial(cg.tensor([2.0, 3.0]), cg.tensor([0.5, 0.5])).enumerate_support()
    with pytest.raises(NotImplementedError, match="cartesian product"):
        D.Independent(D.Bernoulli(cg.tensor([0.2, 0.5])), 1).enumerate_support()


def test_multivariate_normal():
    """The three parameterizations, broadcast batches, the derived matrices, expand."""
    a = RNG.normal(size=(2, 3, 3)).astype(np.float32)
    covariance = a @ a.transpose(0, 2, 1) + 3 * np.eye(3, dtype=np.float32)
    loc = RNG.normal(size=(5, 1, 3)).astype(np.float32)
    x = RNG.normal(size=(4, 5, 2, 3)).astype(np.float32)
    matrices = {"covariance_matrix": covariance, "precision_matrix": np.linalg.inv(covariance),
                "scale_tril": np.linalg.cholesky(covariance)}
    for key, matrix in matrices.items():
        results = []
        for M, L in ((D, cg), (TD, torch)):
            leaves = [L.tensor(loc, requires_grad=True), L.tensor(matrix, requires_grad=True)]
            m = M.MultivariateNormal(leaves[0], **{key: leaves[1]})
            log_prob = m.log_prob(L.tensor(x))
            (log_prob.sum() + m.entropy().sum()).backward()
            results.append([log_prob, m.entropy(), m.variance, m.covariance_matrix,
                            m.precision_matrix, m.scale_tril, m.mean, m.mode,
                            m.expand((3, 5, 2)).log_prob(L.tensor(x[:, None, :1])),
                            leaves[0].grad, leaves[1].grad])
        for k, (ours, theirs) in enumerate(zip(*results)):
            assert_close(ours, theirs, rtol=1e-3, atol=1e-4, what=f"{key} {k}")
    m = D.MultivariateNormal(cg.tensor(loc), cg.tensor(covariance))
    assert m.batch_shape == (5, 2) and m.event_shape == (3,)
    assert m.sample((4,)).shape == (4, 5, 2, 3) and m.rsample().shape == (5, 2, 3)


def test_multivariate_normal_sample_covariance():
    covariance = np.array([[2.0, 0.6], [0.6, 0.5]], np.float32)
    m = D.MultivariateNormal(cg.tensor([1.0, -1.0]), cg.tensor(covariance))
    draws = m.sample((20000,)).numpy().astype(np.float64)
    np.testing.assert_allclose(draws.mean(0), [1.0, -1.0], atol=0.05)
    np.testing.assert_allclose(np.cov(draws.T), covariance, atol=0.06)


def test_mixture_same_family():
    weights = RNG.uniform(0.1, 1, (2, 4)).astype(np.float32)
    means = RNG.normal(size=(2, 4)).astype(np.float32)
    stds = RNG.uniform(0.3, 1.3, (2, 4)).astype(np.float32)
    x = RNG.normal(size=(5, 2)).astype(np.float32)
    results = []
    for M, L in ((D, cg), (TD, torch)):
        leaves = [L.tensor(v, requires_grad=True) for v in (weights, means, stds)]
        mixture = M.MixtureSameFamily(M.Categorical(leaves[0]), M.Normal(leaves[1], leaves[2]))
        log_prob = mixture.log_prob(L.tensor(x))
        log_prob.sum().backward()
        vector = M.MixtureSameFamily(M.Categorical(L.ones(2)),
                                     M.Independent(M.Normal(leaves[1].detach(), 1.0), 1))
        results.append([log_prob, mixture.cdf(L.tensor(x)), mixture.mean, mixture.variance,
                        mixture.expand((3, 2)).log_prob(L.tensor(x[:, None])),
                        vector.log_prob(L.tensor(means[:, :4] * 0.5)), vector.mean,
                        vector.variance] + [leaf.grad for leaf in leaves])
        assert mixture.sample((7,)).shape == (7, 2) and vector.sample((3,)).shape == (3, 4)
        assert repr(mixture.support) == "MixtureSameFamilyConstraint(Real())"
    for k, (ours, theirs) in enumerate(zip(*results)):
        assert_close(ours, theirs, rtol=1e-3, atol=1e-4, what=f"result {k}")
    draws = D.MixtureSameFamily(D.Categorical(cg.tensor([0.3, 0.7])),
                                D.Normal(cg.tensor([-2.0, 3.0]), 0.5)).sample((20000,)).numpy()
    assert abs(draws.mean() - 1.5) < 0.05 and abs((draws < 0.5).mean() - 0.3) < 0.02


def test_sample_follows_the_seed_and_has_no_graph():
    loc = cg.tensor([0.0, 1.0], requires_grad=True)
    cg.manual_seed(3)
    first = D.Normal(loc, 1.0).sample((4,)).numpy()
    cg.manual_seed(3)
    again = D.Normal(loc, 1.0).rsample((4,))
    np.testing.assert_array_equal(first, again.detach().numpy())
    assert again.requires_grad and not D.Normal(loc, 1.0).sample().requires_grad
    assert D.Normal(loc, 1.0).perplexity().shape == (2,)
    assert repr(D.Normal(loc, 1.0)) == "Normal(loc: clgrad.Size([2]), scale: clgrad.Size([2]))"
    assert repr(D.Normal(0.0, 1.0)) == "Normal(loc: 0.0, scale: 1.0)"
    assert cg.distributions is D and "distributions" in cg.__all__
