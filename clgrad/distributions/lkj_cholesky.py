"""LKJCholesky(dim, concentration): the LKJ distribution over lower Cholesky factors of
correlation matrices (after NumPyro's, as PyTorch's)."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .beta import Beta
from .distribution import Distribution
from .utils import broadcast_all, where


class LKJCholesky(Distribution):
    """Lower Cholesky factors L of dim x dim correlation matrices, L L^T of density
    proportional to det(L L^T) ** (concentration - 1): uniform over correlation matrices
    where concentration is 1. Sampled by the onion method (Lewandowski, Kurowicka and Joe,
    2009, section 3): each row a direction on the sphere times the root of a Beta draw.
    PyTorch's sampler gives row i >= 2 a Beta(i - 1/2, .) draw where the method (and
    NumPyro's, which it follows) has Beta(i / 2, .): its samples do not follow its own
    density for dim > 2 (their correlations are not exchangeable); these do."""
    arg_constraints = {"concentration": constraints.positive}
    support = constraints.corr_cholesky

    def __init__(self, dim: int, concentration=1.0, validate_args=None):
        if dim < 2:
            raise ValueError(f"Expected dim to be an integer greater than or equal to 2. "
                             f"Found dim={dim}.")
        self.dim = dim
        (self.concentration,) = broadcast_all(concentration)
        # the onion method: row i's squared length off the diagonal, y_i, is
        # Beta(i / 2, eta + (dim - 1 - i) / 2); the first row's Beta goes unused
        marginal_conc = self.concentration + 0.5 * (self.dim - 2)
        offset = ops.arange(self.dim - 1, dtype=self.concentration.dtype,
                            device=self.concentration.device)
        offset = ops.cat([offset.new_zeros((1,)), offset])
        self._beta = Beta(0.5 * offset + 0.5, marginal_conc.unsqueeze(-1) - 0.5 * offset)
        super().__init__(self.concentration.size(), Size((dim, dim)), validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LKJCholesky, _instance)
        batch_shape = Size(batch_shape)
        new.dim = self.dim
        new.concentration = self.concentration.expand(batch_shape)
        new._beta = self._beta.expand(batch_shape + (self.dim,))
        return self._expanded_init(new, batch_shape)

    def sample(self, sample_shape=Size()):
        y = self._beta.sample(sample_shape).unsqueeze(-1)
        shape = self._extended_shape(sample_shape)
        u_normal = ops.randn(*shape, dtype=y.dtype, device=y.device).tril(-1)
        # each row's direction; the first row has none (0 / 0), it is the unit vector e1
        first_row = ops.arange(self.dim, device=y.device).unsqueeze(-1) == 0
        u_hypersphere = where(first_row, 0.0, u_normal / u_normal.norm(dim=-1, keepdim=True))
        w = y.sqrt() * u_hypersphere
        tiny = ops.finfo(w.dtype).tiny
        diag_elems = (1 - (w ** 2).sum(dim=-1)).clamp(min=tiny).sqrt()
        return w + diag_elems.diag_embed()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        diag_elems = value.diagonal(dim1=-1, dim2=-2)[..., 1:]
        order = ops.arange(2, self.dim + 1, device=self.concentration.device)
        order = 2 * (self.concentration - 1).unsqueeze(-1) + self.dim - order
        unnormalized_log_pdf = (order * diag_elems.log()).sum(dim=-1)
        dm1 = self.dim - 1
        alpha = self.concentration + 0.5 * dm1
        denominator = alpha.lgamma() * dm1
        numerator = (alpha - 0.5).mvlgamma(dm1)
        pi_constant = 0.5 * dm1 * math.log(math.pi)
        return unnormalized_log_pdf - (pi_constant + numerator - denominator)
