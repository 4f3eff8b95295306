"""FisherSnedecor(df1, df2): the F distribution, a ratio of two scaled Chi2 draws."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.size import Size
from . import constraints
from .distribution import Distribution
from .gamma import Gamma
from .utils import batch_shape_of, broadcast_all, where


class FisherSnedecor(Distribution):
    """The Fisher-Snedecor distribution of df1 and df2 degrees of freedom; rsample is
    X1 / X2 for X1 ~ Gamma(df1 / 2, df1) and X2 ~ Gamma(df2 / 2, df2), differentiable through
    both Gamma draws. Its mean is NaN where df2 <= 2, its variance where df2 <= 4, its mode
    where df1 <= 2."""
    arg_constraints = {"df1": constraints.positive, "df2": constraints.positive}
    support = constraints.positive
    has_rsample = True

    def __init__(self, df1, df2, validate_args=None):
        self.df1, self.df2 = broadcast_all(df1, df2)
        self._gamma1 = Gamma(self.df1 * 0.5, self.df1)
        self._gamma2 = Gamma(self.df2 * 0.5, self.df2)
        super().__init__(batch_shape_of(self.df1, df1, df2), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(FisherSnedecor, _instance)
        batch_shape = Size(batch_shape)
        new.df1 = self.df1.expand(batch_shape)
        new.df2 = self.df2.expand(batch_shape)
        new._gamma1 = self._gamma1.expand(batch_shape)
        new._gamma2 = self._gamma2.expand(batch_shape)
        return self._expanded_init(new, batch_shape)

    def _df2_above(self, bound):
        """df2, NaN where it is at most bound (where it gets no gradient, as PyTorch's)."""
        return where(self.df2 <= bound, math.nan, self.df2)

    @property
    def mean(self):
        df2 = self._df2_above(2)
        return df2 / (df2 - 2)

    @property
    def mode(self):
        mode = (self.df1 - 2) / self.df1 * self.df2 / (self.df2 + 2)
        return where(self.df1 <= 2, math.nan, mode)

    @property
    def variance(self):
        df1, df2 = self.df1, self._df2_above(4)
        return 2 * df2.pow(2) * (df1 + df2 - 2) / (df1 * (df2 - 2).pow(2) * (df2 - 4))

    def rsample(self, sample_shape=Size()):
        x1 = self._gamma1.rsample(sample_shape)
        x2 = self._gamma2.rsample(sample_shape)
        tiny = ops.finfo(x2.dtype).tiny
        return (x1 / x2.clamp(min=tiny)).clamp(min=tiny)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        ct1 = self.df1 * 0.5
        ct2 = self.df2 * 0.5
        ct3 = self.df1 / self.df2
        t1 = (ct1 + ct2).lgamma() - ct1.lgamma() - ct2.lgamma()
        t2 = ct1 * ct3.log() + (ct1 - 1) * value.log()
        t3 = (ct1 + ct2) * (ct3 * value).log1p()
        return t1 + t2 - t3
