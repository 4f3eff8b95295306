"""VonMises(loc, concentration): the circular normal distribution."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.grad_mode import no_grad
from ..frontend.size import Size
from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, where

# PyTorch's polynomial approximations (Abramowitz and Stegun 9.8.1-9.8.4) of I0 and I1:
# in (x / 3.75)² below 3.75, in 3.75 / x (times exp(x) / sqrt(x)) above
_COEF_SMALL = ([1.0, 3.5156229, 3.0899424, 1.2067492, 0.2659732, 0.360768e-1, 0.45813e-2],
               [0.5, 0.87890594, 0.51498869, 0.15084934, 0.2658733e-1, 0.301532e-2,
                0.32411e-3])
_COEF_LARGE = ([0.39894228, 0.1328592e-1, 0.225319e-2, -0.157565e-2, 0.916281e-2,
                -0.2057706e-1, 0.2635537e-1, -0.1647633e-1, 0.392377e-2],
               [0.39894228, -0.3988024e-1, -0.362018e-2, 0.163801e-2, -0.1031555e-1,
                0.2282967e-1, -0.2895312e-1, 0.1787654e-1, -0.420059e-2])


def _eval_poly(y, coef):
    """The polynomial of coefficients coef (constant first) at y, by Horner's rule."""
    result = coef[-1]
    for c in reversed(coef[:-1]):
        result = c + y * result
    return result


def _log_modified_bessel_fn(x, order: int = 0):
    """log I_order(x) for x > 0 and order 0 or 1."""
    if order not in (0, 1):
        raise AssertionError(f"order must be 0 or 1, got {order}")
    y = x / 3.75
    small = _eval_poly(y * y, _COEF_SMALL[order])
    if order == 1:
        small = x.abs() * small
    large = x - 0.5 * x.log() + _eval_poly(3.75 / x, _COEF_LARGE[order]).log()
    return where(x < 3.75, small.log(), large)


# Best and Fisher's sampler accepts a proposal with probability at least 0.65 whatever the
# concentration (about 0.658 as it grows), so an element still has none after this many
# rounds with probability below 0.35 ** 64 < 1e-29: PyTorch's unbounded loop, bounded where
# no sample reaches
_MAX_ROUNDS = 64


def _rejection_sample(loc, concentration, proposal_r, x):
    """Best and Fisher's rejection sampler: rounds of proposals, each accepted where x has
    none yet, until every element has one; the angles wrapped into [-pi, pi)."""
    done = ops.full(tuple(x.shape), False, device=loc.device)
    for _ in range(_MAX_ROUNDS):
        u1, u2, u3 = ops.rand(3, *x.shape, dtype=loc.dtype, device=loc.device).unbind()
        z = (math.pi * u1).cos()
        f = (1 + proposal_r * z) / (proposal_r + z)
        c = concentration * (proposal_r - f)
        accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
        x = where(accept, (u3 - 0.5).sign() * f.acos(), x)
        done = done | accept
        ops.realize(x, done)        # each round the same small kernel, not a growing graph
        if done.all().item():
            break
    return (x + math.pi + loc) % (2 * math.pi) - math.pi


class VonMises(Distribution):
    """The von Mises distribution of mean angle loc and concentration concentration; loc and
    values may be any reals, read as angles modulo 2 pi. Its mean and variance are the
    circular ones. Sampled in double precision (Best and Fisher's rejection sampler)."""
    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        super().__init__(self.loc.shape, Size(), validate_args)

    def expand(self, batch_shape, _instance=None):
        return self._expand_parameters(VonMises, batch_shape, _instance,
                                       ("loc", "concentration"))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        log_prob = self.concentration * (value - self.loc).cos()
        return (log_prob - math.log(2 * math.pi)
                - _log_modified_bessel_fn(self.concentration, order=0))

    @lazy_property
    def _loc(self):
        return self.loc.double()

    @lazy_property
    def _concentration(self):
        return self.concentration.double()

    @lazy_property
    def _proposal_r(self):
        kappa = self._concentration
        tau = 1 + (1 + 4 * kappa ** 2).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * kappa)
        proposal_r = (1 + rho ** 2) / (2 * rho)
        # its second-order Taylor expansion around 0, for small kappa
        proposal_r_taylor = 1 / kappa + kappa
        return where(kappa < 1e-5, proposal_r_taylor, proposal_r)

    def sample(self, sample_shape=Size()):
        """Best and Fisher's rejection sampler ("Efficient simulation of the von Mises
        distribution", 1979), in double precision: in single precision it stops accepting
        for concentrations near 1e-4."""
        with no_grad():
            shape = self._extended_shape(sample_shape)
            x = ops.zeros(*shape, dtype=self._loc.dtype, device=self.loc.device)
            sample = _rejection_sample(self._loc, self._concentration, self._proposal_r, x)
            return sample.to(self.loc.dtype)

    @property
    def mean(self):
        """The circular mean."""
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        """The circular variance."""
        return 1 - (_log_modified_bessel_fn(self.concentration, order=1)
                    - _log_modified_bessel_fn(self.concentration, order=0)).exp()
