"""KL(p || q) among the further families (Cauchy, Gumbel, HalfNormal, Pareto,
ContinuousBernoulli) and the infinite pairs PyTorch registers for them: q's support leaves out
some of p's."""
from __future__ import annotations

import math

from .beta import Beta
from .cauchy import Cauchy
from .continuous_bernoulli import ContinuousBernoulli
from .exponential import Exponential
from .gamma import Gamma
from .gumbel import Gumbel
from .half_normal import HalfNormal
from .kl import infinite_like, kl_divergence, register_kl
from .laplace import Laplace
from .normal import Normal
from .pareto import Pareto
from .uniform import Uniform
from .utils import euler_constant, where


@register_kl(ContinuousBernoulli, ContinuousBernoulli)
def _kl_continuous_bernoulli_continuous_bernoulli(p, q):
    t1 = p.mean * (p.logits - q.logits)
    t2 = p._cont_bern_log_norm() + (-p.probs).log1p()
    t3 = -q._cont_bern_log_norm() - (-q.probs).log1p()
    return t1 + t2 + t3


@register_kl(Gumbel, Gumbel)
def _kl_gumbel_gumbel(p, q):
    ct1 = p.scale / q.scale
    ct2 = q.loc / q.scale
    ct3 = p.loc / q.scale
    t1 = -ct1.log() - ct2 + ct3
    t2 = ct1 * euler_constant
    t3 = (ct2 + (1 + ct1).lgamma() - ct3).exp()
    return t1 + t2 + t3 - (1 + euler_constant)


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return kl_divergence(p.base_dist, q.base_dist)     # Normal's


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    t1 = q.alpha * scale_ratio.log()
    t2 = -alpha_ratio.log()
    result = t1 + t2 + alpha_ratio - 1
    return where(p.support.lower_bound < q.support.lower_bound, math.inf, result)


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    t1 = ((p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)).log()
    t2 = (4 * p.scale * q.scale).log()
    return t1 - t2


@register_kl(Gumbel, Normal)
def _kl_gumbel_normal(p, q):
    param_ratio = p.scale / q.scale
    t1 = (param_ratio / math.sqrt(2 * math.pi)).log()
    t2 = (math.pi * param_ratio * 0.5).pow(2) / 3
    t3 = ((p.loc + p.scale * euler_constant - q.loc) / q.scale).pow(2) * 0.5
    return -t1 + t2 + t3 - (euler_constant + 1)


def _infinite_in_loc(p, q):
    return infinite_like(p.loc)


def _infinite_in_scale(p, q):
    return infinite_like(p.scale)


def _infinite_in_rate(p, q):
    return infinite_like(p.rate)


for _q in (Beta, ContinuousBernoulli, Exponential, Gamma, Pareto, Uniform):
    register_kl(Gumbel, _q)(_infinite_in_loc)
for _pair in ((Laplace, ContinuousBernoulli), (Laplace, Pareto),
              (Normal, ContinuousBernoulli), (Normal, Pareto)):
    register_kl(*_pair)(_infinite_in_loc)
for _q in (Beta, ContinuousBernoulli, Uniform):
    register_kl(Pareto, _q)(_infinite_in_scale)
for _q in (ContinuousBernoulli, Pareto):
    register_kl(Exponential, _q)(_infinite_in_rate)
