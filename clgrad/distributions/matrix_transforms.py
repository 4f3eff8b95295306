"""Transforms onto matrices: CorrCholeskyTransform (onto Cholesky factors of correlation
matrices) and PositiveDefiniteTransform."""
from __future__ import annotations

import math

from .. import frontend as ops
from ..frontend.triangular import linalg_cholesky
from ..nn.functional import pad, softplus
from . import constraints
from .transform import Transform
from .transforms import LowerCholeskyTransform
from .utils import tril_matrix_to_vec, vec_to_tril_matrix


class CorrCholeskyTransform(Transform):
    """A vector of D (D - 1) / 2 reals onto the lower Cholesky factor of a D x D correlation
    matrix (positive diagonal, rows of unit length): the vector fills the strict lower
    triangle row by row, through tanh into (-1, 1), and each row is made of unit length by a
    signed stick breaking of its squares."""
    domain = constraints.real_vector
    codomain = constraints.corr_cholesky
    bijective = True

    def _call(self, x):
        eps = ops.finfo(x.dtype).eps
        r = vec_to_tril_matrix(x.tanh().clamp(min=-1 + eps, max=1 - eps), diag=-1)
        # each row's stick left: the product of sqrt(1 - z) over the row's earlier elements
        z1m_cumprod_sqrt = (1 - r ** 2).sqrt().cumprod(-1)
        r = r + ops.eye(r.shape[-1], dtype=r.dtype, device=r.device)
        return r * pad(z1m_cumprod_sqrt[..., :-1], [1, 0], value=1)

    def _inverse(self, y):
        y_cumsum = 1 - (y * y).cumsum(dim=-1)
        y_cumsum_shifted = pad(y_cumsum[..., :-1], [1, 0], value=1)
        y_vec = tril_matrix_to_vec(y, diag=-1)
        y_cumsum_vec = tril_matrix_to_vec(y_cumsum_shifted, diag=-1)
        t = y_vec / y_cumsum_vec.sqrt()
        return (t.log1p() - t.neg().log1p()) / 2       # atanh(t)

    def log_abs_det_jacobian(self, x, y, intermediates=None):
        # the stick breaking's (the row stick left before each element), then tanh's
        y1m_cumsum = 1 - (y * y).cumsum(dim=-1)
        y1m_cumsum_tril = tril_matrix_to_vec(y1m_cumsum, diag=-2)
        stick_breaking_logdet = 0.5 * y1m_cumsum_tril.log().sum(-1)
        tanh_logdet = -2 * (x + softplus(-2 * x) - math.log(2.0)).sum(dim=-1)
        return stick_breaking_logdet + tanh_logdet

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        n = shape[-1]
        d = round((0.25 + 2 * n) ** 0.5 + 0.5)
        if d * (d - 1) // 2 != n:
            raise ValueError("Input is not a flattened lower-diagonal number")
        return shape[:-1] + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2:
            raise ValueError("Too few dimensions on input")
        if shape[-2] != shape[-1]:
            raise ValueError("Input is not square")
        d = shape[-1]
        return shape[:-2] + (d * (d - 1) // 2,)


class PositiveDefiniteTransform(Transform):
    """A square matrix onto a positive-definite one: L L^T for L its LowerCholeskyTransform;
    not bijective (its inverse reads only the lower triangle)."""
    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    def _call(self, x):
        factor = LowerCholeskyTransform()(x)
        return factor @ factor.mT

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(linalg_cholesky(y))
