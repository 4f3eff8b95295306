"""The last families of clgrad.distributions (FisherSnedecor, GeneralizedPareto, VonMises,
LKJCholesky, LogisticNormal, LowRankMultivariateNormal, Wishart), the transforms CatTransform,
StackTransform, CorrCholeskyTransform and PositiveDefiniteTransform, and the constraint
registries biject_to and transform_to, against torch.distributions: values and gradients on
the same float32 inputs; sample shapes, supports and statistics; rsample's pathwise gradients
for the same base draws; KL divergences; argument and sample validation."""
import functools
import math
import warnings

import numpy as np
import pytest

import clgrad as cg
import clgrad.distributions as D
import distribution_checks
from distribution_checks import call

torch = pytest.importorskip("torch")
TD = torch.distributions

RNG = np.random.default_rng(31)


def _uniform(low, high, shape):
    return RNG.uniform(low, high, shape).astype(np.float32)


def _spd(shape):
    """Symmetric positive-definite matrices of shape (..., n, n)."""
    a = RNG.normal(size=shape).astype(np.float32)
    return (a @ np.swapaxes(a, -1, -2) / shape[-1] + np.eye(shape[-1])).astype(np.float32)


def _simplex(shape):
    x = _uniform(0.05, 1.0, shape)
    return (x / x.sum(-1, keepdims=True)).astype(np.float32)


def _corr_cholesky(shape):
    """Cholesky factors of correlation matrices: PyTorch's transform of random vectors."""
    d = shape[-1]
    x = torch.tensor(_uniform(-1.5, 1.5, shape[:-2] + (d * (d - 1) // 2,)))
    return TD.transforms.CorrCholeskyTransform()(x).numpy()


def _generalized_pareto_value(loc, scale):
    """Values within the support of every GeneralizedPareto of FAMILIES."""
    return (loc + scale * _uniform(0.05, 1.5, (4, 2, 3))).astype(np.float32)


_GP_LOC, _GP_SCALE = _uniform(-1, 1, (2, 1)), _uniform(0.5, 2, (3,))

# name: (constructor of (module, params), params, value for log_prob). Parameters broadcast
# to the batch shape (2, 3) or (2,); values have a sample dimension of 4 or 5 in front.
FAMILIES = {
    # df2 <= 2 and <= 4, df1 <= 2: PyTorch's NaN mean, variance and mode
    "FisherSnedecor": (lambda M, p: M.FisherSnedecor(p["df1"], p["df2"]),
                       {"df1": np.array([[1.5], [5.0]], np.float32),
                        "df2": np.array([1.5, 3.0, 9.0], np.float32)},
                       _uniform(0.05, 4, (4, 1, 3))),
    # a concentration of 0 (the Exponential's formulas), negative ones (a bounded support),
    # and ones where the mean (>= 1) and variance (>= 1/2) are NaN
    "GeneralizedPareto": (lambda M, p: M.GeneralizedPareto(p["loc"], p["scale"],
                                                           p["concentration"]),
                          {"loc": _GP_LOC, "scale": _GP_SCALE,
                           "concentration": np.array([[0.3, -0.2, 0.0], [1.2, -0.4, 0.6]],
                                                     np.float32)},
                          _generalized_pareto_value(_GP_LOC, _GP_SCALE)),
    # concentrations on both sides of the Bessel approximations' switch at 3.75
    "VonMises": (lambda M, p: M.VonMises(p["loc"], p["concentration"]),
                 {"loc": _uniform(-3, 3, (2, 1)),
                  "concentration": np.array([0.5, 3.0, 8.0], np.float32)},
                 _uniform(-4, 4, (4, 1, 3))),
    "LKJCholesky": (lambda M, p: M.LKJCholesky(3, p["concentration"]),
                    {"concentration": np.array([0.5, 2.5], np.float32)},
                    _corr_cholesky((4, 2, 3, 3))),
    "LogisticNormal": (lambda M, p: M.LogisticNormal(p["loc"], p["scale"]),
                       {"loc": _uniform(-1, 1, (2, 3)), "scale": _uniform(0.5, 1.5, (3,))},
                       _simplex((5, 2, 4))),
    "LowRankMultivariateNormal": (
        lambda M, p: M.LowRankMultivariateNormal(p["loc"], p["cov_factor"], p["cov_diag"]),
        {"loc": _uniform(-1, 1, (2, 3)), "cov_factor": _uniform(-1, 1, (3, 2)),
         "cov_diag": _uniform(0.5, 1.5, (2, 3))}, _uniform(-2, 2, (4, 2, 3))),
    "Wishart": (lambda M, p: M.Wishart(p["df"], p["covariance_matrix"]),
                {"df": np.array([3.5, 5.0], np.float32), "covariance_matrix": _spd((3, 3))},
                _spd((4, 2, 3, 3))),
    "WishartPrecision": (lambda M, p: M.Wishart(4.5, precision_matrix=p["precision_matrix"]),
                         {"precision_matrix": _spd((2, 3, 3))}, _spd((4, 1, 3, 3))),
    "WishartScaleTril": (lambda M, p: M.Wishart(p["df"], scale_tril=p["scale_tril"]),
                         {"df": np.array(3.0, np.float32),
                          "scale_tril": np.linalg.cholesky(_spd((2, 3, 3)))},
                         _spd((4, 2, 3, 3))),
}

QUANTITIES = ("mean", "variance", "stddev", "mode", "entropy", "perplexity", "log_prob", "cdf",
              "icdf", "covariance_matrix", "precision_matrix", "scale_tril", "loc", "scale")
# Wishart's other parameterizations differ only in the matrices they keep
PARAMETERIZATION_QUANTITIES = ("entropy", "log_prob", "covariance_matrix", "precision_matrix",
                               "scale_tril")


def _params(name, library, requires_grad=False, dtype=None):
    options = {} if dtype is None else {"dtype": dtype}
    return {key: library.tensor(value, requires_grad=requires_grad, **options)
            for key, value in FAMILIES[name][1].items()}


def _both(name, requires_grad=False):
    make = FAMILIES[name][0]
    ours, theirs = _params(name, cg, requires_grad), _params(name, torch, requires_grad)
    return (make(D, ours), ours), (make(TD, theirs), theirs)


def _validate_by_default(value: bool) -> None:
    for M in (D, TD):
        M.Distribution.set_default_validate_args(value)


@pytest.fixture(autouse=True)
def _unvalidated():
    """Neither library validates arguments and samples unless a test asks for `validated`
    (validation has tests of its own): each check is a schedule of its own, compiled cold."""
    _validate_by_default(False)
    yield
    _validate_by_default(True)


@pytest.fixture
def validated():
    _validate_by_default(True)


assert_close = functools.partial(distribution_checks.assert_close, rtol=2e-4, atol=2e-5)


def _argument(name, what, library):
    value = FAMILIES[name][2]
    if what == "icdf":      # probabilities, the same on both sides
        value = np.random.default_rng(5).uniform(0.01, 0.99, value.shape).astype(np.float32)
    return library.tensor(value)


def _finite_sum(result, k, lib):
    """A weighted sum of result's finite elements (NaN and infinity left out)."""
    finite = result.isfinite() if lib is cg else torch.isfinite(result)
    result = result * finite.to(result.dtype).detach()
    return (result * math.cos(k + 1)).nan_to_num().sum()


@pytest.mark.parametrize("name", FAMILIES)
def test_values_and_gradients_match_torch(name):
    """Every quantity PyTorch computes agrees (what it leaves unimplemented raises
    NotImplementedError here too), and so do the gradients of a weighted sum of them with
    respect to the parameters and log_prob's value."""
    (ours, ours_params), (theirs, theirs_params) = _both(name, requires_grad=True)
    assert ours.batch_shape == theirs.batch_shape and ours.event_shape == theirs.event_shape
    assert ours.has_rsample == theirs.has_rsample
    assert set(ours.arg_constraints) == set(theirs.arg_constraints)
    assert repr(ours.support) == repr(theirs.support)
    values = {lib: _argument(name, "log_prob", lib).requires_grad_() for lib in (cg, torch)}
    quantities = (PARAMETERIZATION_QUANTITIES if name in ("WishartPrecision", "WishartScaleTril")
                  else QUANTITIES)
    results = {}
    for what in quantities:
        for dist, lib in ((ours, cg), (theirs, torch)):
            value = values[lib] if what != "icdf" else _argument(name, what, lib)
            results[what, lib] = call(dist, what, value)
    computed = [what for what in quantities if not isinstance(results[what, torch], type)]
    cg.realize(*(results[what, cg] for what in computed))      # in one schedule
    losses = {cg: 0, torch: 0}
    for k, what in enumerate(quantities):
        if what not in computed:
            assert results[what, cg] is results[what, torch], (what, results[what, cg])
            continue
        assert_close(results[what, cg], results[what, torch], what=what)
        for lib in (cg, torch):
            if results[what, lib].requires_grad:
                losses[lib] = losses[lib] + _finite_sum(results[what, lib], k, lib)
    losses[cg].backward()
    losses[torch].backward()
    cg.realize(values[cg].grad, *(p.grad for p in ours_params.values()))
    for key, tensor in theirs_params.items():
        assert_close(ours_params[key].grad, tensor.grad, rtol=1e-3, atol=1e-4, what=key)
    assert_close(values[cg].grad, values[torch].grad, rtol=1e-3, atol=1e-4, what="value")


@pytest.mark.parametrize("name", [n for n in FAMILIES if n not in ("WishartPrecision",
                                                                    "WishartScaleTril")])
def test_samples_and_expand_are_pytorchs(name):
    """Samples of PyTorch's shape and dtype, in the support; an expanded distribution of
    PyTorch's shapes and log_prob."""
    (ours, _), (theirs, _) = _both(name)
    sample = ours.sample((2,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # PyTorch's Wishart warns at every draw
        expected = theirs.sample((2,))
    assert sample.shape == expected.shape and sample.dtype.name == str(expected.dtype)[6:]
    assert not sample.requires_grad
    assert ours.support.check(sample).all().item()
    expanded = ours.expand((2,) + tuple(ours.batch_shape))
    reference = theirs.expand(expanded.batch_shape)
    assert type(expanded) is type(ours)
    assert (expanded.batch_shape, expanded.event_shape) == (reference.batch_shape,
                                                            reference.event_shape)
    assert expanded.sample().shape == reference.batch_shape + reference.event_shape
    value = _argument(name, "log_prob", cg).unsqueeze(1)    # a dimension for the new batch
    assert_close(expanded.log_prob(value),
                 reference.log_prob(_argument(name, "log_prob", torch).unsqueeze(1)))
    if not theirs.has_rsample:
        with pytest.raises(NotImplementedError):
            ours.rsample()


def test_numbers_give_scalar_distributions():
    for make in (lambda M: M.FisherSnedecor(3.0, 5.0),
                 lambda M: M.GeneralizedPareto(0.5, 2.0, 0.2),
                 lambda M: M.VonMises(0.5, 2.0), lambda M: M.LKJCholesky(2, 1.5),
                 lambda M: M.LogisticNormal(0.5, 2.0)):
        ours, theirs = make(D), make(TD)
        assert (ours.batch_shape, ours.event_shape) == (theirs.batch_shape,
                                                        theirs.event_shape)
        assert ours.sample((3,)).shape == theirs.sample((3,)).shape


# ---- sample statistics --------------------------------------------------------------------

N = 20000


def _assert_moments(draws, mean, variance):
    """The mean and variance of draws (along dimension 0) are within five standard errors
    of mean and variance (the fourth central moment estimated from the draws)."""
    draws = draws.astype(np.float64)
    n = draws.shape[0]
    centered = draws - draws.mean(0)
    fourth = (centered ** 4).mean(0)
    assert (np.abs(draws.mean(0) - mean) < 5 * np.sqrt(variance / n) + 1e-6).all()
    spread = np.sqrt(np.maximum(fourth - variance ** 2, 0) / n)
    assert (np.abs(draws.var(0) - variance) < 5 * spread + 1e-6).all()


STATISTICS = {
    # finite fourth moments: df2 > 8, concentration < 1/4
    "FisherSnedecor": lambda M, L: M.FisherSnedecor(L.tensor([[3.0], [6.0]]),
                                                    L.tensor([12.0, 15.0, 20.0])),
    "GeneralizedPareto": lambda M, L: M.GeneralizedPareto(
        L.tensor([[0.5], [-1.0]]), L.tensor([1.0, 2.0, 0.5]),
        L.tensor([[0.1, -0.3, 0.0], [0.2, -0.1, 0.05]])),
    "LowRankMultivariateNormal": lambda M, L: M.LowRankMultivariateNormal(
        L.tensor([1.0, -1.0, 0.5]), L.tensor([[1.0, 0.5], [0.0, -1.0], [0.3, 0.3]]),
        L.tensor([0.5, 1.0, 0.2])),
    "Wishart": lambda M, L: M.Wishart(L.tensor([4.0, 6.5]),
                                      L.tensor([[1.0, 0.3], [0.3, 0.5]])),
}


@pytest.mark.parametrize("name", STATISTICS)
def test_sample_statistics(name):
    cg.manual_seed(7)
    dist = STATISTICS[name](D, cg)
    draws = dist.sample((N,)).numpy()
    _assert_moments(draws, dist.mean.numpy(), dist.variance.numpy())
    if name == "LowRankMultivariateNormal":     # and the covariances
        covariance = dist.covariance_matrix.numpy()
        sampled = np.cov(draws.astype(np.float64).T)
        error = np.sqrt((np.outer(np.diag(covariance), np.diag(covariance))
                         + covariance ** 2) / N)
        assert (np.abs(sampled - covariance) < 5 * error).all()


def test_von_mises_samples_have_the_circular_moments():
    """Angles in [-pi, pi) whose mean resultant, cos(x - loc), is 1 - the circular variance,
    and sin(x - loc) averages 0, within five standard errors; the concentrations span the
    sampler's small-kappa expansion, both sides of 3.75 and a sharp peak."""
    cg.manual_seed(8)
    loc = np.array([0.5, -3.0, 3.0, 1.0], np.float32)
    dist = D.VonMises(cg.tensor(loc), cg.tensor([1e-6, 1.0, 5.0, 200.0]))
    draws = dist.sample((N,)).numpy().astype(np.float64)
    assert ((draws >= -math.pi) & (draws < math.pi)).all()
    for statistic, expected in ((np.cos(draws - loc), 1 - dist.variance.numpy()),
                                (np.sin(draws - loc), 0.0)):
        error = statistic.std(0) / math.sqrt(N)
        assert (np.abs(statistic.mean(0) - expected) < 5 * error + 1e-6).all()


def test_lkj_cholesky_samples_have_the_marginal_correlations():
    """L L^T is a correlation matrix whose off-diagonal elements have mean 0 and variance
    1 / (2 eta + d - 1) (each 2 Beta(eta - 1 + d / 2, same) - 1), rows 2 and 3 too (where
    PyTorch's sampler draws correlations of larger variance)."""
    cg.manual_seed(9)
    eta = np.array([0.5, 1.0, 3.0], np.float32)
    factor = D.LKJCholesky(4, cg.tensor(eta)).sample((N // 4,)).numpy().astype(np.float64)
    correlation = factor @ np.swapaxes(factor, -1, -2)
    np.testing.assert_allclose(np.diagonal(correlation, axis1=-2, axis2=-1), 1, atol=1e-5)
    rows, columns = np.tril_indices(4, -1)
    off_diagonal = correlation[..., rows, columns]          # (n, 3, 6)
    variance = (1 / (2 * eta + 3))[:, None].repeat(6, 1)
    _assert_moments(off_diagonal, 0.0, variance)


def test_logistic_normal_samples_are_normal_before_stick_breaking():
    cg.manual_seed(10)
    loc, scale = np.array([0.5, -1.0, 0.0], np.float32), np.array([1.0, 0.5, 2.0], np.float32)
    draws = D.LogisticNormal(cg.tensor(loc), cg.tensor(scale)).sample((N,))
    assert D.constraints.simplex.check(draws).all().item()
    normal = D.transforms.StickBreakingTransform().inv(draws).numpy()
    _assert_moments(normal, loc, scale ** 2)


# ---- rsample: pathwise gradients for the same base draws ----------------------------------

def _standard_gamma_path(alpha, g):
    """A standard Gamma draw g of concentration alpha with PyTorch's implicit gradient."""
    slope = torch._standard_gamma_grad(alpha.detach().expand_as(g), g)
    return g + (alpha - alpha.detach()) * slope


def _replayed_gammas(params, seed, sample_shape):
    """The two Gamma draws a FisherSnedecor rsample makes after manual_seed(seed)."""
    cg.manual_seed(seed)
    df1, df2 = np.broadcast_arrays(params["df1"], params["df2"])
    draws = [D.Gamma(cg.tensor(df * 0.5), cg.tensor(df)).sample(sample_shape).numpy()
             for df in (df1, df2)]
    return [torch.tensor(d.astype(np.float64)) for d in draws]


def _fisher_snedecor_path(dist, x, seed):
    x1, x2 = _replayed_gammas(FAMILIES["FisherSnedecor"][1], seed, x.shape[:1])
    df1, df2 = torch.broadcast_tensors(dist.df1, dist.df2)
    paths = [_standard_gamma_path(df * 0.5, (draw * df).detach()) / df
             for df, draw in ((df1, x1), (df2, x2))]
    return paths[0] / paths[1]


def _generalized_pareto_path(dist, x, seed):
    """icdf of the uniform draw the rsample made (PyTorch's cdf has no float64)."""
    cg.manual_seed(seed)
    return dist.icdf(torch.tensor(cg.rand(*x.shape).numpy().astype(np.float64)))


def _logistic_normal_path(dist, x, seed):
    stick_breaking = TD.transforms.StickBreakingTransform()
    eps = ((stick_breaking.inv(x) - dist.loc) / dist.scale).detach()
    return stick_breaking(dist.loc + dist.scale * eps)


def _low_rank_path(dist, x, seed):
    """loc + W eps_W + sqrt(D) eps_D for the normal draws the rsample made."""
    cg.manual_seed(seed)
    eps_w = cg.randn(*(tuple(x.shape[:-1]) + (dist.cov_factor.shape[-1],)))
    eps_d = cg.randn(*x.shape)
    eps_w, eps_d = (torch.tensor(e.numpy().astype(np.float64)) for e in (eps_w, eps_d))
    return (dist.loc + (dist.cov_factor @ eps_w.unsqueeze(-1)).squeeze(-1)
            + dist.cov_diag.sqrt() * eps_d)


def _wishart_path(dist, x, seed):
    """L A A^T L^T for Bartlett's A recovered from the sample (the Cholesky factor of
    L^-1 x L^-T), its diagonal the roots of Chi2(df - i) draws with their implicit
    gradients."""
    factor = torch.linalg.cholesky(dist.covariance_matrix)
    inner = torch.linalg.solve_triangular(factor.detach(), x, upper=False)
    inner = torch.linalg.solve_triangular(factor.detach(), inner.mT, upper=False)
    bartlett = torch.linalg.cholesky(inner)
    p = x.shape[-1]
    alpha = (dist.df.unsqueeze(-1) - torch.arange(p, dtype=x.dtype)) / 2
    chi2 = 2 * _standard_gamma_path(alpha, torch.diagonal(bartlett, dim1=-2, dim2=-1) ** 2 / 2)
    bartlett = torch.diag_embed(chi2.sqrt()) + bartlett.tril(-1)
    chol = factor @ bartlett
    return chol @ chol.mT


PATHS = {"FisherSnedecor": _fisher_snedecor_path, "GeneralizedPareto": _generalized_pareto_path,
         "LogisticNormal": _logistic_normal_path,
         "LowRankMultivariateNormal": _low_rank_path, "Wishart": _wishart_path}


@pytest.mark.parametrize("name", PATHS)
def test_rsample_gradients_are_pytorchs_for_the_same_draws(name):
    """d loss(x) / d parameters for x = rsample: the reference recomputes x in float64 from
    the same base draws (replayed from the seed, or recovered from x)."""
    (ours, ours_params), _ = _both(name, requires_grad=True)
    cg.manual_seed(4)
    x = ours.rsample((5,))
    assert x.requires_grad
    weights = np.random.default_rng(2).normal(size=tuple(x.shape)).astype(np.float32)
    (x * cg.tensor(weights) + 0.01 * x * x).sum().backward()
    theirs_params = _params(name, torch, True, torch.float64)
    theirs = FAMILIES[name][0](TD, theirs_params)
    x_ref = PATHS[name](theirs, torch.tensor(x.detach().numpy().astype(np.float64)), 4)
    np.testing.assert_allclose(x_ref.detach().numpy(), x.detach().numpy(), rtol=1e-4,
                               atol=1e-5)
    (x_ref * torch.tensor(weights, dtype=torch.float64) + 0.01 * x_ref * x_ref).sum().backward()
    for key, tensor in theirs_params.items():
        np.testing.assert_allclose(ours_params[key].grad.numpy(), tensor.grad.numpy(),
                                   rtol=3e-3, atol=1e-4, err_msg=key)


def test_wishart_redraws_singular_samples():
    """Where df is near the dimension less one, a sample index whose batch holds a matrix
    that is not positive definite is drawn again, with a warning; no such draw is left."""
    cg.manual_seed(11)
    with pytest.warns(UserWarning, match="Low df values"):
        dist = D.Wishart(cg.tensor([1.0 + 1e-6]), cg.eye(2) * 1e-3)
    with pytest.warns(UserWarning, match="Singular sample detected"):
        sample = dist.rsample((200,), max_try_correction=20)
    assert dist.support.check(sample).all().item()


# ---- KL divergence ------------------------------------------------------------------------

def _kl_argument(kind, shape, rng):
    """A float32 array of shape: real, positive, a lower-triangular factor of positive
    diagonal, a positive-definite matrix, or degrees of freedom for 3 x 3 matrices."""
    if kind == "tril":
        return np.tril(rng.uniform(-1, 1, shape), -1) + np.diag(rng.uniform(0.5, 2, shape[-1]))
    if kind == "spd":
        return _spd(shape)
    low, high = {"real": (-1, 1), "positive": (0.5, 1.5), "df": (3, 6)}[kind]
    return rng.uniform(low, high, shape)


# name: (constructor of (module, tensors), (kind, shape) of each tensor): batch shapes (2,)
# and () broadcast, ranks 2 and 1
KL_PAIRS = {
    "LowRank-LowRank": (lambda M, t: (M.LowRankMultivariateNormal(t[0], t[1], t[2]),
                                      M.LowRankMultivariateNormal(t[3], t[4], t[5])),
                        [("real", (2, 3)), ("real", (2, 3, 2)), ("positive", (3,)),
                         ("real", (3,)), ("real", (3, 1)), ("positive", (2, 3))]),
    "MVN-LowRank": (lambda M, t: (M.MultivariateNormal(t[0], scale_tril=t[1]),
                                  M.LowRankMultivariateNormal(t[2], t[3], t[4])),
                    [("real", (2, 3)), ("tril", (3, 3)), ("real", (3,)),
                     ("real", (2, 3, 2)), ("positive", (3,))]),
    "LowRank-MVN": (lambda M, t: (M.LowRankMultivariateNormal(t[0], t[1], t[2]),
                                  M.MultivariateNormal(t[3], scale_tril=t[4])),
                    [("real", (3,)), ("real", (2, 3, 2)), ("positive", (2, 3)),
                     ("real", (2, 3)), ("tril", (3, 3))]),
    # by the Bregman divergence of the log-normalizer (PyTorch's sums its df term over the
    # batch: a negative value is PyTorch's too)
    "Wishart-Wishart": (lambda M, t: (M.Wishart(t[0], t[1]), M.Wishart(t[2], t[3])),
                        [("df", (2,)), ("spd", (3, 3)), ("df", (2,)), ("spd", (2, 3, 3))]),
    # through the transformed distributions' base Normals
    "LogisticNormal-LogisticNormal": (lambda M, t: (M.LogisticNormal(t[0], t[1]),
                                                    M.LogisticNormal(t[2], t[3])),
                                      [("real", (2, 3)), ("positive", (3,)), ("real", (3,)),
                                       ("positive", (2, 3))]),
}


@pytest.mark.parametrize("name", KL_PAIRS)
def test_kl_divergence_values_and_gradients_are_pytorchs(name):
    make, arguments = KL_PAIRS[name]
    rng = np.random.default_rng(13)
    arrays = [_kl_argument(kind, shape, rng).astype(np.float32) for kind, shape in arguments]
    results = []
    for M, L in ((D, cg), (TD, torch)):
        tensors = [L.tensor(x, requires_grad=True) for x in arrays]
        kl = M.kl_divergence(*make(M, tensors))
        (kl * L.tensor([0.7, -1.3])).sum().backward()
        results.append((kl, [t.grad for t in tensors]))
    assert_close(results[0][0], results[1][0], what="kl")
    for k, (ours, theirs) in enumerate(zip(results[0][1], results[1][1])):
        if theirs is None:      # p's natural parameters are detached in a Bregman divergence
            assert ours is None
            continue
        assert_close(ours, theirs, rtol=1e-3, atol=1e-4, what=f"gradient {k}")


def test_kl_divergence_refuses_different_event_shapes():
    for M, L in ((D, cg), (TD, torch)):
        low_rank = M.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(2))
        for other in (M.LowRankMultivariateNormal(L.zeros(3), L.ones(3, 1), L.ones(3)),
                      M.MultivariateNormal(L.zeros(3), L.eye(3))):
            for p, q in ((low_rank, other), (other, low_rank)):
                with pytest.raises(ValueError, match="different event shapes"):
                    M.kl_divergence(p, q)


# ---- transforms -----------------------------------------------------------------------------

def _transforms(M, L):
    """(transform, input shape): joined transforms whose parts have event dimensions 0 and 1,
    their log |det J| joined along a batch dimension or summed over an event one."""
    T = M.transforms
    return [
        (T.CatTransform([T.ExpTransform(), T.identity_transform,
                         T.AffineTransform(1.0, L.tensor([2.0, -0.5, 3.0]))],
                        dim=-1, lengths=[2, 1, 3]), (4, 6)),
        (T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                         T.IndependentTransform(T.SigmoidTransform(), 1)],
                        dim=0, lengths=[1, 3]), (4, 6)),
        (T.CatTransform([T.IndependentTransform(T.ExpTransform(), 1),
                         T.IndependentTransform(T.TanhTransform(), 1)],
                        dim=-1, lengths=[2, 4]), (4, 6)),
        (T.StackTransform([T.ExpTransform(), T.identity_transform, T.SigmoidTransform()],
                          dim=1), (4, 3, 2)),
        (T.CorrCholeskyTransform(), (4, 6)),
        (T.PositiveDefiniteTransform(), (4, 3, 3)),
        (T.CorrCholeskyTransform().inv, (4, 4, 4)),
    ]


@pytest.mark.parametrize("index", range(7))
def test_transforms_are_pytorchs(index):
    """y, its inverse and log |det J| where PyTorch has one, with gradients; domains,
    codomains, event dimensions, bijectivity and shapes."""
    (ours, shape), (theirs, _) = _transforms(D, cg)[index], _transforms(TD, torch)[index]
    x = np.random.default_rng(index).uniform(-1.2, 1.2, shape).astype(np.float32)
    if index == 6:      # a point of the codomain of CorrCholeskyTransform's inverse
        x = _corr_cholesky(shape)
    results = []
    for t, L in ((ours, cg), (theirs, torch)):
        xt = L.tensor(x, requires_grad=True)
        y = t(xt)
        weights = L.tensor(np.cos(np.arange(y.numel())).reshape(tuple(y.shape))
                           .astype(np.float32))
        outputs = [y, t.inv(y)]
        if t.bijective:
            outputs.append(t.log_abs_det_jacobian(xt, y))
        loss = (y * weights).sum() + sum(out.sum() for out in outputs[1:])
        loss.backward()
        results.append(outputs + [xt.grad])
    for k, (a, b) in enumerate(zip(*results)):
        assert_close(a, b, rtol=1e-3, atol=1e-4, what=f"result {k}")
    assert repr(ours.domain) == repr(theirs.domain)
    assert repr(ours.codomain) == repr(theirs.codomain)
    assert ours.bijective == theirs.bijective
    assert (ours.domain.event_dim, ours.codomain.event_dim) == (theirs.domain.event_dim,
                                                                theirs.codomain.event_dim)
    assert ours.forward_shape(shape) == theirs.forward_shape(shape)
    y_shape = theirs.forward_shape(shape)
    assert ours.inverse_shape(y_shape) == theirs.inverse_shape(y_shape)


def test_transform_caching_and_equality():
    T = D.transforms
    parts = [T.ExpTransform(), T.SigmoidTransform()]
    for joined in (T.CatTransform(parts, dim=0, lengths=[1, 2]), T.StackTransform(parts)):
        cached = joined.with_cache()
        assert cached is not joined and cached.with_cache() is cached
        assert all(t._cache_size == 1 for t in cached.transforms)
        x = cg.tensor([[0.5], [1.0], [-1.0]])[: 3 if isinstance(joined, T.CatTransform) else 2]
        y = cached(x)
        assert cached(x) is y and cached.inv(y) is x
    assert T.CatTransform(parts).length == 2 and T.CatTransform(parts).event_dim == 0
    assert T.PositiveDefiniteTransform() == T.PositiveDefiniteTransform()
    assert T.PositiveDefiniteTransform() != T.LowerCholeskyTransform()
    corr = T.CorrCholeskyTransform()
    assert corr == corr and corr != T.CorrCholeskyTransform()    # PyTorch's: by identity


def _error(fn, M, L) -> str:
    """fn(M, L)'s exception as its class and message, module names as clgrad's."""
    try:
        fn(M, L)
    except (ValueError, NotImplementedError, AssertionError, TypeError) as error:
        return f"{type(error).__name__}: {error}".replace("torch.", "clgrad.")
    return "no error"


TRANSFORM_ERRORS = [
    lambda M, L: M.transforms.CatTransform([M.transforms.ExpTransform(), 1.0]),
    lambda M, L: M.transforms.CatTransform([M.transforms.ExpTransform()], 0, [1, 2]),
    lambda M, L: M.transforms.CatTransform([M.transforms.ExpTransform()], 0, [2])(L.ones(3)),
    lambda M, L: M.transforms.CatTransform([M.transforms.ExpTransform()], 2)(L.ones(1)),
    lambda M, L: M.transforms.CatTransform([M.transforms.ExpTransform()], 0, [2]).inv(
        L.ones(3)),
    lambda M, L: M.transforms.CatTransform([M.transforms.ExpTransform()], 1).log_abs_det_jacobian(
        L.ones(2, 1), L.ones(2)),
    lambda M, L: M.transforms.StackTransform([M.transforms.ExpTransform()])(L.ones(2, 3)),
    lambda M, L: M.transforms.StackTransform([M.transforms.ExpTransform()], 1).inv(L.ones(1)),
    lambda M, L: M.transforms.StackTransform([M.transforms.ExpTransform()]).log_abs_det_jacobian(
        L.ones(1), L.ones(2)),
    lambda M, L: M.transforms.CorrCholeskyTransform().forward_shape((4,)),
    lambda M, L: M.transforms.CorrCholeskyTransform().forward_shape(()),
    lambda M, L: M.transforms.CorrCholeskyTransform().inverse_shape((2, 3)),
    lambda M, L: M.transforms.CorrCholeskyTransform().inverse_shape((3,)),
]


@pytest.mark.parametrize("case", range(len(TRANSFORM_ERRORS)))
def test_transform_errors_are_pytorchs(case):
    expected = _error(TRANSFORM_ERRORS[case], TD, torch)
    assert expected != "no error"
    assert _error(TRANSFORM_ERRORS[case], D, cg) == expected


# ---- biject_to and transform_to -------------------------------------------------------------

def _constraints(M, L):
    """(constraint, shape of an unconstrained point)."""
    C = M.constraints
    return [
        (C.real, (2, 3)), (C.real_vector, (2, 3)), (C.independent(C.positive, 1), (2, 3)),
        (C.positive, (2, 3)), (C.nonnegative, (2, 3)),
        (C.greater_than(L.tensor([-1.0, 0.5, 2.0])), (2, 3)), (C.greater_than_eq(0.5), (2, 3)),
        (C.less_than(2.0), (2, 3)), (C.unit_interval, (2, 3)), (C.interval(0, 1), (2, 3)),
        (C.interval(-1.0, L.tensor([1.0, 2.0, 3.0])), (2, 3)),
        (C.half_open_interval(-2.0, 3.0), (2, 3)), (C.simplex, (2, 3)),
        (C.lower_cholesky, (2, 3, 3)), (C.positive_definite, (2, 3, 3)),
        (C.positive_semidefinite, (2, 3, 3)), (C.corr_cholesky, (2, 3)),
        (C.cat([C.positive, C.real, C.unit_interval], -1, [1, 1, 1]), (2, 3)),
        (C.stack([C.positive, C.interval(-1.0, 1.0)], 0), (2, 3)),
        (C.boolean, (2, 3)), (C.lower_triangular, (2, 3, 3)),
    ]


@pytest.mark.parametrize("registry", ["biject_to", "transform_to"])
def test_constraint_registries_are_pytorchs(registry):
    """The transform registered for each constraint (its structure as its repr shows it),
    its values, inverse and log |det J| where bijective, the point landing in the
    constraint; PyTorch's NotImplementedError where none is registered."""
    ours_all, theirs_all = _constraints(D, cg), _constraints(TD, torch)
    outputs, checks = {cg: [], torch: []}, []
    for k, ((ours, shape), (theirs, _)) in enumerate(zip(ours_all, theirs_all)):
        expected = _error(lambda M, L: getattr(M, registry)(theirs), TD, torch)
        if expected != "no error":
            assert _error(lambda M, L: getattr(M, registry)(ours), D, cg) == expected
            continue
        x = np.random.default_rng(k).uniform(-1.5, 1.5, shape).astype(np.float32)
        for constraint, lib, M in ((ours, cg, D), (theirs, torch, TD)):
            transform = getattr(M, registry)(constraint)
            xt = lib.tensor(x)
            y = transform(xt)
            outputs[lib] += [y, transform.inv(y)]
            if transform.bijective:
                outputs[lib].append(transform.log_abs_det_jacobian(xt, y))
            if lib is cg:
                checks.append(constraint.check(y).all())
        assert repr(getattr(D, registry)(ours)) == repr(getattr(TD, registry)(theirs)), k
    cg.realize(*outputs[cg], *checks)       # in one schedule
    assert all(check.item() for check in checks)
    for k, (a, b) in enumerate(zip(outputs[cg], outputs[torch])):
        assert_close(a, b, rtol=1e-3, atol=1e-4, what=str(k))


def test_constraint_registry_register():
    for M in (D, TD):
        registry = type(M.biject_to)()
        with pytest.raises(NotImplementedError, match="Cannot transform _Real constraints"):
            registry(M.constraints.real)
        registry.register(M.constraints.real, lambda c: M.transforms.ExpTransform())
        assert isinstance(registry(M.constraints.real), M.transforms.ExpTransform)

        @registry.register(M.constraints.interval)
        def _factory(constraint):
            return M.transforms.AffineTransform(constraint.lower_bound, 1.0)
        assert registry(M.constraints.interval(2.0, 3.0)).loc == 2.0
        assert registry(M.constraints.unit_interval).loc == 0.0
        with pytest.raises(TypeError, match="Expected constraint to be either a Constraint"):
            registry.register(3, _factory)
    assert D.constraint_registry.__all__ == TD.constraint_registry.__all__


# ---- utils and constraints ------------------------------------------------------------------

@pytest.mark.parametrize("diag", [-1, 0, 1])
def test_tril_matrix_to_vec_and_back_are_pytorchs(diag):
    from clgrad.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
    from torch.distributions.utils import tril_matrix_to_vec as theirs_to_vec
    from torch.distributions.utils import vec_to_tril_matrix as theirs_to_matrix
    length = {-1: 3, 0: 6, 1: 8}[diag]     # a 3 x 3 matrix's elements on and below diag
    vec = np.random.default_rng(3).normal(size=(2, length)).astype(np.float32)
    results = []
    for to_matrix, to_vec, L in ((vec_to_tril_matrix, tril_matrix_to_vec, cg),
                                 (theirs_to_matrix, theirs_to_vec, torch)):
        v = L.tensor(vec, requires_grad=True)
        matrix = to_matrix(v, diag)
        again = to_vec(matrix * L.arange(1.0, 10.0).reshape(3, 3), diag)
        again.sum().backward()
        results.append((matrix, again, v.grad))
    for a, b in zip(*results):
        assert_close(a, b)


def test_tril_helpers_refuse_what_pytorchs_refuse():
    from clgrad.distributions.utils import tril_matrix_to_vec, vec_to_tril_matrix
    from torch.distributions.utils import tril_matrix_to_vec as theirs_to_vec
    from torch.distributions.utils import vec_to_tril_matrix as theirs_to_matrix
    for to_matrix, to_vec, L in ((vec_to_tril_matrix, tril_matrix_to_vec, cg),
                                 (theirs_to_matrix, theirs_to_vec, torch)):
        with pytest.raises(ValueError, match="The size of last dimension is 5 which cannot"):
            to_matrix(L.ones(5))
        with pytest.raises(ValueError, match=r"diag \(3\) provided is outside \[-3, 2\]"):
            to_vec(L.ones(3, 3), 3)
        with pytest.raises(RuntimeError, match="shape mismatch"):
            to_matrix(L.ones(2, 4), -1)     # rounds to 3 x 3, which holds 3


def test_corr_cholesky_constraint_is_pytorchs():
    values = np.stack([_corr_cholesky((3, 3)),
                       np.array([[1.0, 0, 0], [0.5, 0.5, 0], [0, 0.6, 0.8]]),      # a short row
                       np.array([[1.0, 0, 0], [0.6, -0.8, 0], [0, 0.6, 0.8]]),     # diagonal < 0
                       np.array([[1.0, 0.1, 0], [0.6, 0.8, 0], [0, 0.6, 0.8]])]    # not lower
                      ).astype(np.float32)
    ours, theirs = D.constraints.corr_cholesky, TD.constraints.corr_cholesky
    assert repr(ours) == repr(theirs) and ours.event_dim == theirs.event_dim == 2
    np.testing.assert_array_equal(ours.check(cg.tensor(values)).numpy(),
                                  theirs.check(torch.tensor(values)).numpy())


def test_exports_are_pytorchs():
    assert set(TD.__all__) <= set(D.__all__)
    assert set(D.transforms.__all__) == set(TD.transforms.__all__)
    assert set(D.constraints.__all__) == set(TD.constraints.__all__)
    assert D.biject_to is D.constraint_registry.biject_to
    for name in TD.__all__:
        assert hasattr(D, name), name


# ---- validation -----------------------------------------------------------------------------

INVALID = [
    # the Gamma inside raises first, as in PyTorch
    lambda M, L: M.FisherSnedecor(L.tensor([-1.0]), L.tensor([1.0])),
    lambda M, L: M.FisherSnedecor(1.0, 2.0).log_prob(L.tensor([-1.0])),
    lambda M, L: M.GeneralizedPareto(0.0, -1.0, 0.5),
    lambda M, L: M.GeneralizedPareto(0.0, 1.0, -0.5).log_prob(L.tensor([3.0])),
    lambda M, L: M.GeneralizedPareto(L.tensor([0.0]), 1.0, 0.5).log_prob(L.tensor([-1.0])),
    lambda M, L: M.VonMises(L.tensor([0.0]), L.tensor([0.0])),
    lambda M, L: M.VonMises(L.tensor([0.0, 1.0]), 1.0).log_prob(L.tensor([0.0, 1.0, 2.0])),
    lambda M, L: M.LKJCholesky(1),
    lambda M, L: M.LKJCholesky(2, L.tensor([-1.0])),     # the Beta's Dirichlet raises
    lambda M, L: M.LKJCholesky(2).log_prob(L.tensor([[1.0, 0.0], [0.5, 0.5]])),
    lambda M, L: M.LogisticNormal(L.tensor([0.0]), L.tensor([-1.0])),
    lambda M, L: M.LogisticNormal(L.tensor([0.0, 0.0]), 1.0).log_prob(L.tensor([0.5, 0.6, 0.2])),
    lambda M, L: M.LowRankMultivariateNormal(L.tensor(0.0), L.ones(1, 1), L.ones(1)),
    lambda M, L: M.LowRankMultivariateNormal(L.zeros(2), L.ones(2), L.ones(2)),
    lambda M, L: M.LowRankMultivariateNormal(L.zeros(2), L.ones(3, 1), L.ones(2)),
    lambda M, L: M.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.ones(3)),
    lambda M, L: M.LowRankMultivariateNormal(L.zeros(3, 2), L.ones(2, 2, 1), L.ones(2)),
    lambda M, L: M.LowRankMultivariateNormal(L.zeros(2), L.ones(2, 1), L.tensor([1.0, -1.0])),
    lambda M, L: M.Wishart(L.tensor([3.0])),
    lambda M, L: M.Wishart(L.tensor([0.5]), L.eye(2)),
    lambda M, L: M.Wishart(3.0, L.tensor([1.0, 2.0])),
    lambda M, L: M.Wishart(3.0, L.tensor([[1.0, 2.0], [2.0, 1.0]])),
    lambda M, L: M.Wishart(3.0, scale_tril=L.tensor([[1.0, 0.0], [2.0, -1.0]])),
    lambda M, L: M.Wishart(3.0, L.eye(2)).log_prob(L.tensor([[1.0, 2.0], [2.0, 1.0]])),
]


@pytest.mark.parametrize("case", range(len(INVALID)))
def test_validation_errors_are_pytorchs(case, validated):
    expected = _error(INVALID[case], TD, torch)
    assert expected != "no error"
    assert _error(INVALID[case], D, cg) == expected


def test_wishart_warns_of_low_degrees_of_freedom(validated):
    for M, L in ((D, cg), (TD, torch)):
        with pytest.warns(UserWarning, match="Low df values detected"):
            M.Wishart(L.tensor([1.5, 3.0]), L.eye(2))


# ---- edge values ----------------------------------------------------------------------------

# (constructor of (module, library), value, quantities), scored without validation as
# PyTorch scores them: values on and beyond support boundaries, concentrations about 0
EDGES = [
    (lambda M, L: M.GeneralizedPareto(L.tensor([0.0, 0.0, 0.0, 1.0]), 2.0,
                                      L.tensor([0.5, -0.5, 1e-9, -1.0])),
     [0.0, 4.0, 3.0, 3.0], ("log_prob", "cdf", "icdf", "mean", "variance", "entropy")),
    (lambda M, L: M.GeneralizedPareto(0.0, 1.0, L.tensor([0.5, -0.5, 0.0])),
     [-1.0, 5.0, -0.5], ("log_prob", "cdf", "log_survival_function")),
    (lambda M, L: M.GeneralizedPareto(0.0, 1.0, L.tensor([0.5, -0.5, 0.0])),
     [0.0, 1.0, 1.0], ("icdf",)),
    (lambda M, L: M.VonMises(L.tensor([0.0, 1.0, -2.0, 0.5]),
                             L.tensor([1e-4, 3.75, 3.7499, 500.0])),
     [7.0, -1.0, 3.0, 0.5], ("log_prob", "variance")),
    (lambda M, L: M.FisherSnedecor(L.tensor([2.0, 1.0, 3.0]), L.tensor([2.0, 4.0, 4.5])),
     [0.0, 1e-30, 1e30], ("log_prob", "mean", "variance", "mode")),
    (lambda M, L: M.LKJCholesky(2, L.tensor([1.0, 0.1])),
     [[[1.0, 0.0], [1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]]], ("log_prob",)),
]


@pytest.mark.parametrize("case", range(len(EDGES)))
def test_edge_values_are_pytorchs(case):
    """The values, and the gradients with respect to the value of each function of it (a
    weighted sum of its finite elements)."""
    make, value, quantities = EDGES[case]
    ours, theirs = make(D, cg), make(TD, torch)
    for what in quantities:
        values = [L.tensor(value, requires_grad=True) for L in (cg, torch)]
        results = [call(ours, what, values[0]), call(theirs, what, values[1])]
        assert_close(*results, what=what)
        if results[1].requires_grad:
            for result, lib in zip(results, (cg, torch)):
                _finite_sum(result, 0, lib).backward()
            assert_close(values[0].grad, values[1].grad, rtol=1e-3, atol=1e-4,
                         what=f"d {what}")


EMPTY_BATCHES = [
    (lambda M, L: M.FisherSnedecor(L.ones(0), 2.0), (0,)),
    (lambda M, L: M.GeneralizedPareto(L.zeros(0), 1.0, 0.5), (0,)),
    (lambda M, L: M.VonMises(L.zeros(0), 1.0), (0,)),
    (lambda M, L: M.LKJCholesky(3, L.ones(0)), (0, 3, 3)),
    (lambda M, L: M.LogisticNormal(L.zeros(0, 2), 1.0), (0, 3)),
    (lambda M, L: M.LowRankMultivariateNormal(L.zeros(0, 2), L.ones(2, 1), L.ones(2)), (0, 2)),
    (lambda M, L: M.Wishart(L.full((0,), 3.0), L.eye(2)), (0, 2, 2)),
]


def _outcome(fn):
    """fn()'s result, or the class of what it raises."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # PyTorch's Wishart warns at every draw
            return fn()
    except (RuntimeError, IndexError, NotImplementedError) as error:
        return type(error)


@pytest.mark.parametrize("case", range(len(EMPTY_BATCHES)))
def test_empty_batches_are_pytorchs(case):
    """A batch of no distributions: samples, log_prob and entropy of PyTorch's shapes, or
    PyTorch's exception (an empty reduction or reshape)."""
    make, value_shape = EMPTY_BATCHES[case]
    ours, theirs = make(D, cg), make(TD, torch)
    assert ours.batch_shape == theirs.batch_shape
    value = np.ones(value_shape, np.float32)
    for what in ("sample", "log_prob", "entropy"):
        results = [_outcome(lambda: dist.sample((2,)) if what == "sample" else
                            call(dist, what, L.tensor(value)))
                   for dist, L in ((ours, cg), (theirs, torch))]
        if isinstance(results[1], type):
            assert results[0] is results[1], (what, results[0])
        else:
            assert_close(*results, what=what)
