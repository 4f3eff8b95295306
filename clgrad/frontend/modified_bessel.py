"""The modified Bessel functions of torch.special: I0, I1 (modified_bessel_i0/i1, Cephes'
Chebyshev series as special_functions' i0 and i1, with all their terms at every precision)
and K0, K1 (modified_bessel_k0/k1; exp(x) K(x) when scaled: a series in x² - 2 times
log(x / 2) I(x) up to 2, a Chebyshev series in 8 / x - 2 beyond), as PyTorch's CPU kernels.
PyTorch gives these no gradient: their results never require grad."""
from __future__ import annotations

import math

from ..compiler.ir import Node
from ..compiler.special import chebyshev
from .bessel import without_gradient
from .special_functions import _I0_FAR, _I0_NEAR, _I1_FAR, _I1_NEAR

# Cephes' Chebyshev coefficients of K0 and K1: of x² - 2 on (0, 2], of 8 / x - 2 beyond
_K0_NEAR = (1.374465435613523e-16, 4.25981614279661e-14, 1.0349695257633842e-11,
            1.904516377220209e-09, 2.5347910790261494e-07, 2.286212103119452e-05,
            0.001264615411446926, 0.0359799365153615, 0.3442898999246285, -0.5353273932339028)
_K0_FAR = (5.300433772686263e-18, -1.6475804301524212e-17, 5.2103915050390274e-17,
           -1.678231096805412e-16, 5.512055978524319e-16, -1.848593377343779e-15,
           6.3400764774050706e-15, -2.2275133269916698e-14, 8.032890775363575e-14,
           -2.9800969231727303e-13, 1.140340588208475e-12, -4.514597883373944e-12,
           1.8559491149547177e-11, -7.957489244477107e-11, 3.577397281400301e-10,
           -1.69753450938906e-09, 8.574034017414225e-09, -4.660489897687948e-08,
           2.766813639445015e-07, -1.8317555227191195e-06, 1.39498137188765e-05,
           -0.00012849549581627802, 0.0015698838857300533, -0.0314481013119645, 2.4403030820659555)
_K1_NEAR = (-7.023863479386288e-18, -2.427449850519366e-15, -6.666901694199329e-13,
            -1.4114883926335278e-10, -2.213387630734726e-08, -2.4334061415659684e-06,
            -0.0001730288957513052, -0.006975723859639864, -0.12261118082265715,
            -0.3531559607765449, 1.5253002273389478)
_K1_FAR = (-5.756744483665017e-18, 1.7940508731475592e-17, -5.689462558442859e-17,
           1.838093544366639e-16, -6.057047248373319e-16, 2.038703165624334e-15,
           -7.019837090418314e-15, 2.4771544244813043e-14, -8.976705182324994e-14,
           3.3484196660784293e-13, -1.2891739609510289e-12, 5.13963967348173e-12,
           -2.1299678384275683e-11, 9.218315187605006e-11, -4.1903547593418965e-10,
           2.015049755197033e-09, -1.0345762465678097e-08, 5.7410841254500495e-08,
           -3.5019606030878126e-07, 2.406484947837217e-06, -1.936197974166083e-05,
           0.00019521551847135162, -0.002857816859622779, 0.10392373657681724, 2.7206261904844427)


def _i(x: Node, order: int) -> Node:
    a = x.abs()
    near = a <= 8
    safe = near.where(8, a)
    inner = chebyshev(_I0_NEAR if order == 0 else _I1_NEAR, a / 2 - 2)
    outer = chebyshev(_I0_FAR if order == 0 else _I1_FAR, 32 / safe - 2)
    if order == 0:
        inner = a.exp() * inner
    else:
        inner = inner * a * a.exp()
    value = near.where(inner, a.exp() * outer / safe.sqrt())
    return value if order == 0 else (x < 0).where(-value, value)


def _k(x: Node, order: int, scaled: bool) -> Node:
    near = x <= 2
    series = chebyshev(_K0_NEAR if order == 0 else _K1_NEAR, x * x - 2)
    logarithm = (0.5 * x).log()
    if order == 0:
        inner = series - logarithm * _i(x, 0)
    else:
        inner = logarithm * _i(x, 1) + series / x
    safe = near.where(2, x)
    outer = chebyshev(_K0_FAR if order == 0 else _K1_FAR, 8 / safe - 2)
    if scaled:
        value = near.where(inner * x.exp(), outer / safe.sqrt())
    else:
        value = near.where(inner, (-x).exp() * outer / safe.sqrt())
    return x.eq(0).where(math.inf, (x < 0).where(math.nan, value))


modified_bessel_i0 = without_gradient("modified_bessel_i0", lambda x: _i(x, 0))
modified_bessel_i1 = without_gradient("modified_bessel_i1", lambda x: _i(x, 1))
modified_bessel_k0 = without_gradient("modified_bessel_k0", lambda x: _k(x, 0, False))
modified_bessel_k1 = without_gradient("modified_bessel_k1", lambda x: _k(x, 1, False))
scaled_modified_bessel_k0 = without_gradient("scaled_modified_bessel_k0",
                                              lambda x: _k(x, 0, True))
scaled_modified_bessel_k1 = without_gradient("scaled_modified_bessel_k1",
                                              lambda x: _k(x, 1, True))
