"""clgrad.distributions: torch.distributions over clgrad tensors. Parameterizable
probability distributions with sampling (rsample: reparameterized, differentiable),
log_prob, cdf and icdf, moments and entropy, argument and sample validation, transforms,
the constraint registries biject_to and transform_to, and kl_divergence, with PyTorch's
semantics.

    m = Normal(loc, scale)
    x = m.rsample((64,))                 # gradients reach loc and scale
    loss = -m.log_prob(x).mean()
"""
from . import constraints, transforms
from .bernoulli import Bernoulli
from .beta import Beta
from .binomial import Binomial
from .cauchy import Cauchy, HalfCauchy
from .categorical import Categorical, OneHotCategorical, OneHotCategoricalStraightThrough
from .chi2 import Chi2
from .constraint_registry import biject_to, transform_to
from .continuous_bernoulli import ContinuousBernoulli
from .dirichlet import Dirichlet
from .distribution import Distribution
from .exp_family import ExponentialFamily
from .exponential import Exponential
from .fishersnedecor import FisherSnedecor
from .gamma import Gamma
from .generalized_pareto import GeneralizedPareto
from .geometric import Geometric
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .independent import Independent
from .inverse_gamma import InverseGamma
from .kl import kl_divergence, register_kl
from .kumaraswamy import Kumaraswamy
from .laplace import Laplace
from .lkj_cholesky import LKJCholesky
from .log_normal import LogNormal
from .logistic_normal import LogisticNormal
from .lowrank_multivariate_normal import LowRankMultivariateNormal
from .mixture_same_family import MixtureSameFamily
from .multivariate_normal import MultivariateNormal
from .multinomial import Multinomial
from .negative_binomial import NegativeBinomial
from .normal import Normal
from .pareto import Pareto
from .poisson import Poisson
from .relaxed_bernoulli import LogitRelaxedBernoulli, RelaxedBernoulli
from .relaxed_categorical import ExpRelaxedCategorical, RelaxedOneHotCategorical
from .studentT import StudentT
from .transformed_distribution import TransformedDistribution
from .transforms import *  # noqa: F401,F403
from .uniform import Uniform
from .von_mises import VonMises
from .weibull import Weibull
from .wishart import Wishart

__all__ = ["Bernoulli", "Beta", "Binomial", "Categorical", "Cauchy", "Chi2",
           "ContinuousBernoulli",
           "Dirichlet", "Distribution", "ExpRelaxedCategorical", "Exponential",
           "ExponentialFamily", "FisherSnedecor", "Gamma", "GeneralizedPareto", "Geometric",
           "Gumbel", "HalfCauchy", "HalfNormal", "Independent", "InverseGamma", "Kumaraswamy",
           "LKJCholesky", "Laplace", "LogNormal", "LogisticNormal", "LogitRelaxedBernoulli",
           "LowRankMultivariateNormal", "MixtureSameFamily",
           "Multinomial", "MultivariateNormal", "NegativeBinomial", "Normal", "OneHotCategorical",
           "OneHotCategoricalStraightThrough", "Pareto", "Poisson", "RelaxedBernoulli",
           "RelaxedOneHotCategorical", "StudentT", "TransformedDistribution", "Uniform",
           "VonMises", "Weibull", "Wishart",
           "biject_to", "constraints", "kl_divergence", "register_kl", "transform_to",
           "transforms"] + transforms.__all__
