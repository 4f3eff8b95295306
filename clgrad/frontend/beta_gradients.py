"""The reparameterized gradients of Gamma and Beta samples, as PyTorch approximates them
(ATen's standard_gamma_grad_one and dirichlet_grad_one): d x / d alpha = -(d cdf / d alpha) /
pdf at a sample x, so that a sample drawn on the host carries the gradient of the quantile
function that would have produced it. Each is an elementwise graph of nodes: every branch of
PyTorch's is computed and `where` picks, the branches not taken may be NaN."""
from __future__ import annotations

from ..compiler import special
from ..compiler.ir import Node

# the rational approximation of d x / d alpha for a standard Gamma sample, in u = log(x/alpha)
# (rows: powers of u) and v = log(alpha) (columns: p's four coefficients, then q's)
_GAMMA_UV = ((0.16009398, -0.094634809, 0.025146376, -0.0030648343,
              1, 0.32668115, 0.10406089, 0.0014179084),
             (0.53487893, 0.1298071, 0.065735949, -0.0015649758,
              0.16639465, 0.020070113, -0.0035938915, -0.00058392623),
             (0.040121004, -0.0065914022, -0.0026286047, -0.0013441777,
              0.017050642, -0.0021309326, 0.00085092367, -1.5247877e-07))

# the rational correction of the Beta gradient: [p or q][power of u][power of a][power of b]
_BETA_PQ = (
    (((1.003668233, -0.01061107488, -0.0657888334, 0.01201642863),
      (0.6336835991, -0.3557432599, 0.05486251648, -0.001465281033),
      (-0.03276231906, 0.004474107445, 0.002429354597, -0.0001557569013)),
     ((0.221950385, -0.3187676331, 0.01799915743, 0.01074823814),
      (-0.2951249643, 0.06219954479, 0.01535556598, 0.001550077057),
      (0.02155310298, 0.004170831599, 0.001292462449, 6.976601077e-05)),
     ((-0.05980841433, 0.008441916499, 0.01085618172, 0.002319392565),
      (0.02911413504, 0.01400243777, -0.002721828457, 0.000751041181),
      (0.005900514878, -0.001936558688, -9.495446725e-06, 5.385558597e-05))),
    (((1, -0.02924021934, -0.04438342661, 0.007285809825),
      (0.6357567472, -0.3473456711, 0.05454656494, -0.002407477521),
      (-0.03301322327, 0.004845219414, 0.00231480583, -0.0002307248149)),
     ((0.5925320577, -0.1757678135, 0.01505928619, 0.000564515273),
      (0.1014815858, -0.06589186703, 0.01272886114, -0.0007316646956),
      (-0.007258481865, 0.001096195486, 0.0003934994223, -4.12701925e-05)),
     ((0.06469649321, -0.0236701437, 0.002902096474, -5.896963079e-05),
      (0.001925008108, -0.002869809258, 0.0008000589141, -6.063713228e-05),
      (-0.0003477407336, 6.959756487e-05, 1.097287507e-05, -1.650964693e-06))))


def _nan_to_zero(x: Node) -> Node:
    return x.ne(x).where(0.0, x)


def _horner(coefficients, t: Node) -> Node:
    """Σ c_k t^k, the coefficients (numbers or nodes) lowest degree first."""
    last = coefficients[-1]
    result = last if isinstance(last, Node) else t.const_like(last)
    for c in reversed(coefficients[:-1]):
        result = result * t + c
    return result


def standard_gamma_grad(alpha: Node, x: Node) -> Node:
    """d x / d alpha for x drawn from Gamma(alpha, 1): a Taylor series below x = 0.8, Rice's
    saddle point expansion above alpha = 8, else a rational approximation in log(x/alpha) and
    log(alpha). The series' cdf / pdf ratio is x e^x times the sums (PyTorch forms both
    powers of x and divides)."""
    numer, denom = x.const_like(1.0), alpha
    series1, series2 = denom.recip(), (denom * denom).recip()
    for i in range(1, 6):
        numer = numer * (-x / float(i))
        denom = denom + 1
        series1 = series1 + numer / denom
        series2 = series2 + numer / (denom * denom)
    log_x = x.log()
    ratio = x * x.exp()                                     # x^alpha / pdf
    small = _nan_to_zero(-((log_x - special.digamma(alpha)) * series1 - series2) * ratio)

    near_numer = (1 + 24 * alpha * (1 + 12 * alpha)) * (
        1440 * (alpha * alpha) + 6 * x * (53 - 120 * x) - 65 * x * x / alpha
        + alpha * (107 + 3600 * x))
    near = near_numer / (1244160 * (alpha * alpha) * (alpha * alpha))
    root = (8 * alpha).sqrt()
    log_ratio = (x / alpha).log()
    term2 = root / (alpha - x)
    term3 = (x - alpha - alpha * log_ratio) ** -1.5
    term23 = (x < alpha).where(term2 - term3, term2 + term3)
    term1 = log_ratio * term23 - (2 / alpha).sqrt() * (alpha + x) / ((alpha - x) * (alpha - x))
    stirling = 1 + 1 / (12 * alpha) * (1 + 1 / (24 * alpha))
    far = -stirling * (x * term1) / root
    large = ((0.9 * alpha <= x) & (x <= 1.1 * alpha)).where(near, far)

    v = alpha.log()
    coef = [c[0] + log_ratio * (c[1] + log_ratio * c[2]) for c in zip(*_GAMMA_UV)]
    rational = (_horner(coef[:4], v) / _horner(coef[4:], v)).exp()
    return (x < 0.8).where(small, (alpha > 8).where(large, rational))


def _beta_grad_alpha_small(x: Node, alpha: Node, beta: Node) -> Node:
    """d x / d alpha near x = 0 (a Taylor series in x)."""
    factor = special.digamma(alpha) - special.digamma(alpha + beta) - x.log()
    numer = x.const_like(1.0)
    series = numer / alpha * (factor + 1 / alpha)
    for i in range(1, 11):
        numer = numer * ((i - beta) * x / float(i))
        denom = alpha + i
        series = series + numer / denom * (factor + 1 / denom)
    return _nan_to_zero(x * (1 - x) ** -beta * series)


def _beta_grad_beta_small(x: Node, alpha: Node, beta: Node) -> Node:
    """d x / d beta near x = 0, where x is the Beta(alpha, beta) sample."""
    factor = special.digamma(alpha + beta) - special.digamma(beta)
    numer, betas, dbetas = x.const_like(1.0), x.const_like(1.0), x.const_like(0.0)
    series = factor / alpha
    for i in range(1, 9):
        numer = numer * (-x / float(i))
        dbetas = dbetas * (beta - i) + betas
        betas = betas * (beta - i)
        series = series + numer / (alpha + i) * (dbetas + factor * betas)
    return _nan_to_zero(-(1 - x) ** (1 - beta) * series)


def _beta_grad_alpha_mid(x: Node, alpha: Node, beta: Node) -> Node:
    """d x / d alpha for large alpha and beta (Rice's saddle point expansion)."""
    total = alpha + beta
    mean = alpha / total
    std = (alpha * beta / (total + 1)).sqrt() / total
    poly = 47 * x * (beta * beta) * (beta * beta) + alpha * (
        (43 + 20 * (16 + 27 * beta) * x) * (beta * beta) * beta + alpha * (
            3 * (59 + 180 * beta - 90 * x) * (beta * beta) + alpha * (
                (453 + 1620 * beta * (1 - x) - 455 * x) * beta + alpha * (
                    8 * (1 - x) * (135 * beta - 11)))))
    prefactor_num = (1 + 12 * alpha) * (1 + 12 * beta) / (total * total)
    prefactor_den = 12960 * alpha * alpha * alpha * beta * beta * (1 + 12 * total)
    near = prefactor_num / (1 - x) * poly / prefactor_den

    prefactor = -x / (2 * alpha * beta / total).sqrt()
    stirling = ((1 + 1 / (12 * alpha) + 1 / (288 * alpha * alpha))
                * (1 + 1 / (12 * beta) + 1 / (288 * beta * beta))
                / (1 + 1 / (12 * total) + 1 / (288 * total * total)))
    term1_num = 2 * (alpha * alpha) * (x - 1) + alpha * beta * (x - 1) - x * (beta * beta)
    axbx = alpha * (x - 1) + beta * x
    term1 = term1_num / ((2 * alpha / beta).sqrt() * total ** 1.5 * axbx * axbx)
    term2 = 0.5 * (alpha / (total * x)).log()
    term3 = (8 * alpha * beta / total).sqrt() / (beta * x + alpha * (x - 1))
    term4 = (beta * (beta / (total * (1 - x))).log()
             + alpha * (alpha / (total * x)).log()) ** -1.5
    far = stirling * prefactor * (term1 + term2 * (term3 + (x < mean).where(term4, -term4)))
    return ((mean - 0.1 * std <= x) & (x <= mean + 0.1 * std)).where(near, far)


def _beta_grad_rational(x: Node, alpha: Node, total: Node) -> Node:
    """An analytic approximation of d x / d alpha, corrected by a rational function."""
    u = x.log()
    a = alpha.log() - u
    b = total.log() - a
    powers_u, powers_a = (1.0, u, u * u), (1.0, a, a * a)
    sums = []
    for table in _BETA_PQ:
        total_sum = x.const_like(0.0)
        for i in range(3):
            for j in range(3):
                total_sum = total_sum + powers_u[i] * powers_a[j] * _horner(table[i][j], b)
        sums.append(total_sum)
    approx = x * (special.digamma(total) - special.digamma(alpha)) / (total - alpha)
    return sums[0] / sums[1] * approx


def dirichlet_grad(x: Node, alpha: Node, total: Node) -> Node:
    """d x / d alpha for x the first coordinate of a Beta(alpha, total - alpha) sample, divided
    by 1 - x: what a Dirichlet sample's backward scales by (PyTorch's _dirichlet_grad)."""
    beta = total - alpha
    boundary = total * x * (1 - x)
    near_zero = (x <= 0.5) & (boundary < 2.5)
    near_one = (x >= 0.5) & (boundary < 0.75)
    large = (alpha > 6) & (beta > 6)
    return near_zero.where(
        _beta_grad_alpha_small(x, alpha, beta),
        near_one.where(-_beta_grad_beta_small(1 - x, beta, alpha),
                       large.where(_beta_grad_alpha_mid(x, alpha, beta),
                                   _beta_grad_rational(x, alpha, total))))

