"""torch.special: the special functions, with PyTorch's values, gradients (or PyTorch's refusal
of one, or outputs that do not require grad) and errors. Those clgrad has under torch's
top-level names are aliases with torch.special's signatures (frontend/special_aliases.py)."""
from .frontend.bessel import (airy_ai, bessel_j0, bessel_j1, bessel_y0, bessel_y1,
                              spherical_bessel_j0)
from .frontend.erfcx import erfcx
from .frontend.math_functions import entr, xlog1py
from .frontend.modified_bessel import (modified_bessel_i0, modified_bessel_i1,
                                       modified_bessel_k0, modified_bessel_k1,
                                       scaled_modified_bessel_k0, scaled_modified_bessel_k1)
from .frontend.normal_distribution import log_ndtr, ndtr, ndtri
from .frontend.orthogonal_polynomials import (chebyshev_polynomial_t, chebyshev_polynomial_u,
                                              chebyshev_polynomial_v, chebyshev_polynomial_w,
                                              hermite_polynomial_h, hermite_polynomial_he,
                                              laguerre_polynomial_l, legendre_polynomial_p,
                                              shifted_chebyshev_polynomial_t,
                                              shifted_chebyshev_polynomial_u,
                                              shifted_chebyshev_polynomial_v,
                                              shifted_chebyshev_polynomial_w)
from .frontend.special_aliases import (digamma, erf, erfc, erfinv, exp2, expit, expm1, gammainc,
                                       gammaincc, gammaln, i0, log1p, log_softmax, logit,
                                       logsumexp, multigammaln, polygamma, psi, round, sinc,
                                       softmax, xlogy)
from .frontend.special_functions import i0e, i1, i1e, zeta

__all__ = ["airy_ai", "bessel_j0", "bessel_j1", "bessel_y0", "bessel_y1",
           "chebyshev_polynomial_t", "chebyshev_polynomial_u", "chebyshev_polynomial_v",
           "chebyshev_polynomial_w", "digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2",
           "expit", "expm1", "gammainc", "gammaincc", "gammaln", "hermite_polynomial_h",
           "hermite_polynomial_he", "i0", "i0e", "i1", "i1e", "laguerre_polynomial_l",
           "legendre_polynomial_p", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp",
           "modified_bessel_i0", "modified_bessel_i1", "modified_bessel_k0",
           "modified_bessel_k1", "multigammaln", "ndtr", "ndtri", "polygamma", "psi", "round",
           "scaled_modified_bessel_k0", "scaled_modified_bessel_k1",
           "shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_u",
           "shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_w", "sinc", "softmax",
           "spherical_bessel_j0", "xlog1py", "xlogy", "zeta"]
