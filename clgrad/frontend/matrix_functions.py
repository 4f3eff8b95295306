"""matrix_exp: scaling and squaring of a Taylor polynomial, all matrix products (its gradient
comes from theirs)."""
from __future__ import annotations

import math

import numpy as np

from ..compiler.factorizations import eye
from .backward import record
from .matrices import square

_TAYLOR_DEGREE = 13         # 0.5**14 / 14! ~ 7e-16: float64 accuracy once the norm is <= 1/2
_SCALED_NORM = 0.5


def matrix_exp(A):
    """exp(A) = (T(A / 2^s))^(2^s), T the degree-13 Taylor polynomial, s making the scaled
    1-norm at most 1/2. Choosing s reads A's largest 1-norm (a wait for its value, as
    PyTorch reads it on the host). Horner's steps differ only in the coefficient, held in a
    buffer, so they run as one kernel."""
    square("linalg.matrix_exp", A)
    if A.numel() == 0:
        return record("linalg_matrix_exp", A.node, A.device, [A])
    from .creation import tensor
    norm = float(A.detach().abs().sum(-2).amax().item())
    s = math.ceil(math.log2(norm / _SCALED_NORM)) if math.isfinite(norm) and \
        norm > _SCALED_NORM else 0
    x = A.node * (2.0 ** -s)
    identity = eye(A.shape[-1], A.node)
    poly = identity
    for k in range(_TAYLOR_DEGREE, 0, -1):
        coefficient = tensor(np.array(1 / k), dtype=A.dtype, device=A.device).node
        poly = identity + (x @ poly) * coefficient.reshape((1,) * A.ndim).expand(poly.shape)
    for _ in range(s):
        poly = poly @ poly
    return record("linalg_matrix_exp", poly, A.device, [A])


METHODS = [("matrix_exp", matrix_exp)]
