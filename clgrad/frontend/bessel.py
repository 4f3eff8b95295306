"""Bessel functions of the first and second kind of orders 0 and 1 (bessel_j0, bessel_j1,
bessel_y0, bessel_y1), the spherical Bessel function j0 and the Airy function Ai, as
PyTorch's CPU kernels compute them (Cephes: rational functions of x² up to 5, Hankel's
asymptotic form beyond; Ai's power series, or its asymptotic forms past ±2.09). PyTorch gives
these no gradient: their results never require grad."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node
from ..compiler.special import polynomial
from . import special_arguments
from .tensor import Tensor

# Cephes' coefficients, highest degree first (as PyTorch's kernels hold them)
_AIRY_AN = (0.346538101525629, 12.007595273964581, 76.27960536152345, 168.08922493463058,
            159.75639135016442, 70.53609068404442, 14.026469116338967, 1.0)
_AIRY_AD = (0.5675945326387702, 14.75625625848472, 84.51389701414746, 177.31808814540045,
            164.2346928715297, 71.47784008255756, 14.095913560783403, 1.0)
_AIRY_AFN = (-0.1316963234183318, -0.6264565444319123, -0.6931580360369335, -0.2797799815451191,
             -0.04919001326095003, -0.004062659235948854, -0.0001592764962392621,
             -2.776491081552329e-06, -1.6778769848911465e-08)
_AIRY_AFD = (13.356042070655324, 32.682503279522464, 26.736704094149957, 9.187074029072596,
             1.4752914677166642, 0.11568717379518804, 0.004402916416152112, 7.547203482874142e-05,
             4.5185009297058035e-07)
_AIRY_AGN = (0.01973399320916857, 0.39110302961568827, 1.0657989759959559, 0.9391692298166502,
             0.35146565610554764, 0.06338889196289255, 0.005858041130483885, 0.000282851600836737,
             6.98793669997261e-06, 8.117892395543892e-08, 3.415517847659236e-10)
_AIRY_AGD = (9.30892908077442, 19.835292871831214, 15.564662893286462, 5.476860694229755,
             0.9542936116189619, 0.08645808263523921, 0.004126565238242226, 0.00010125908511650914,
             1.1716673321441352e-06, 4.9183457006293e-09)
_J0_PP = (0.0007969367292973471, 0.08283523921074408, 1.239533716464143, 5.447250030587687,
          8.74716500199817, 5.303240382353949, 1.0)
_J0_PQ = (0.0009244088105588637, 0.08562884743544745, 1.2535274390105895, 5.470977403304171,
          8.761908832370695, 5.306052882353947, 1.0)
_J0_QP = (-0.011366383889846916, -1.2825271867050931, -19.553954425773597, -93.20601521237683,
          -177.68116798048806, -147.07750515495118, -51.41053267665993, -6.050143506007285)
_J0_QQ = (64.3178256118178, 856.4300259769806, 3882.4018360540163, 7240.467741956525,
          5930.727011873169, 2062.0933166032783, 242.0057402402914)
_J0_RP = (-4794432209.782018, 1956174919465.5657, -249248344360967.72, 9708622510473064.0)
_J0_RQ = (499.563147152651, 173785.4016763747, 48440965.83399621, 11185553704.535683,
          2112775201154.892, 310518229857422.56, 3.1812195594320496e+16, 1.7108629408104315e+18)
_J1_PP = (0.0007621256162081731, 0.07313970569409176, 1.1271960812968493, 5.112079511468076,
          8.424045901417724, 5.214515986823615, 1.0)
_J1_PQ = (0.0005713231280725487, 0.06884559087544954, 1.105142326340617, 5.073863861286015,
          8.399855543276042, 5.209828486823619, 1.0)
_J1_QP = (0.05108625947501766, 4.982138729512334, 75.82382841325453, 366.7796093601508,
          710.8563049989261, 597.4896124006136, 211.68875710057213, 25.207020585802372)
_J1_QQ = (74.23732770356752, 1056.4488603826283, 4986.410583376536, 9562.318924047562,
          7997.041604473507, 2826.1927851763908, 336.0936078106983)
_J1_RP = (-899971225.7055594, 452228297998.19403, -72749424522181.83, 3682957328638529.0)
_J1_RQ = (620.8364781180543, 256987.25675774884, 83514679.14319493, 22151159547.97925,
          4749141220799.914, 784369607876235.9, 8.952223361846274e+16, 5.322786203326801e+18)
_Y0_YP = (15592.436785523574, -14663929.59039716, 5435264770.518765, -982136065717.9115,
          87590639439536.7, -3466283033847297.0, 4.4273326857256984e+16, -1.8495080043698668e+16)
_Y0_YQ = (1041.2835366425984, 626107.330137135, 268919633.39381415, 86400248710.3935,
          20297961275010.555, 3171577528429750.5, 2.5059625617265306e+17)
_Y1_YP = (1263204747.9017804, -647355876379.1603, 114509511541823.73, -8127702555013251.0,
          2.024394757135949e+17, -7.788771962659501e+17)
_Y1_YQ = (594.3015923461282, 235564.09294306856, 73481194.44597217, 18760131610.870617,
          3882312774962.3857, 620557727146953.8, 6.871410873553005e+16, 3.9727060811656064e+18)

_QUARTER_PI = 0.785398163397448309615660845819875721
_THREE_QUARTERS_PI = 2.356194490192344928846982537459627163
_SQRT_2_OVER_PI = 0.797884560802865355879892119868763737
_TWO_OVER_PI = 0.636619772367581343075535053490057448
_INVERSE_SQRT_PI = 5.64189583547756286948e-01
_AIRY_TERMS = {dt.float32: 16, dt.float64: 20}   # the series' steps (it stops by 9 and 13)


def _hankel(x: Node, order: int, second_kind: bool) -> Node:
    """J or Y of order 0 or 1 for x > 5: (P cos(x - phase) ∓ 5/x Q sin(x - phase)) sqrt(2/πx),
    with Y's sin and cos exchanged."""
    pp, pq, qp, qq = (_J0_PP, _J0_PQ, _J0_QP, _J0_QQ) if order == 0 else \
        (_J1_PP, _J1_PQ, _J1_QP, _J1_QQ)
    five = 5 / x
    z = 25 / (x * x) if order == 0 else five * five
    p = polynomial(pp, z) / polynomial(pq, z)
    q = polynomial(qp, z) / polynomial(qq, z)
    phase = x - (_QUARTER_PI if order == 0 else _THREE_QUARTERS_PI)
    if second_kind:
        value = p * phase.sin() + five * q * phase.cos()
    else:
        value = p * phase.cos() - five * q * phase.sin()
    return value * _SQRT_2_OVER_PI / x.sqrt()


def _j0(node: Node) -> Node:
    x = node.abs()
    xx = x * x
    near = (xx - 5.78318596294678452118) * (xx - 30.4712623436620863991) * \
        polynomial(_J0_RP, xx) / polynomial(_J0_RQ, xx)
    near = (x < 0.00001).where(1 - xx / 4, near)
    return (x <= 5).where(near, _hankel(x, 0, False))


def _j1(node: Node) -> Node:
    x = node.abs()
    xx = x * x
    near = polynomial(_J1_RP, xx) / polynomial(_J1_RQ, xx) * x * \
        (xx - 14.6819706421238932572) * (xx - 49.2184563216946036703)
    value = (x <= 5).where(near, _hankel(x, 1, False))
    return (node < 0).where(-value, value)


def _y0(x: Node) -> Node:
    xx = x * x
    near = polynomial(_Y0_YP, xx) / polynomial(_Y0_YQ, xx) + \
        _TWO_OVER_PI * x.log() * _j0(x)
    near = x.eq(0).where(-math.inf, (x < 0).where(math.nan, near))
    return (x <= 5).where(near, _hankel(x, 0, True))


def _y1(x: Node) -> Node:
    xx = x * x
    near = x * (polynomial(_Y1_YP, xx) / polynomial(_Y1_YQ, xx)) + \
        _TWO_OVER_PI * (_j1(x) * x.log() - 1 / x)
    near = x.eq(0).where(-math.inf, (x <= 0).where(math.nan, near))
    return (x <= 5).where(near, _hankel(x, 1, True))


def _spherical_j0(x: Node) -> Node:
    xx = x * x
    series = polynomial((1 / 6227020800, -1 / 39916800, 1 / 362880, -1 / 5040, 1 / 120,
                         -1 / 6, 1), xx)
    value = (x.abs() < 0.5).where(series, x.sin() / x)
    return x.abs().eq(math.inf).where(0, value)


def _airy_ai(x: Node) -> Node:
    """Ai(x): 0 beyond 103.892, NaN at ±inf; past ±2.09 its asymptotic forms, between them
    the series f and g of Ai = c1 f - c2 g, summed until a term of f is below epsilon of f
    (then frozen, as Cephes stops)."""
    root = (-x).sqrt()
    zeta_minus = -2 * x * root / 3
    z = 1 / zeta_minus
    zz = z * z
    t = zeta_minus + 0.25 * math.pi
    oscillating = _INVERSE_SQRT_PI / root.sqrt() * (
        t.sin() * (1 + zz * polynomial(_AIRY_AFN, zz) / polynomial(_AIRY_AFD, zz))
        - t.cos() * (z * polynomial(_AIRY_AGN, zz) / polynomial(_AIRY_AGD, zz)))
    zeta = 2 * x * x.sqrt() / 3
    inverse = 1 / zeta
    decaying = _INVERSE_SQRT_PI * (polynomial(_AIRY_AN, inverse) / polynomial(_AIRY_AD, inverse))
    decaying = decaying / (2 * x.sqrt().sqrt() * zeta.exp())
    epsilon = 2.0 ** (-23 if x.dtype == dt.float32 else -52)
    f, g, k, m, n = x.const_like(1), x, 1.0, x.const_like(1), x
    cube = x * x * x
    running = x.const_like(1) > 0
    for _ in range(_AIRY_TERMS[x.dtype]):
        m = m * cube / (k + 1)
        n = n * cube / (k + 2)
        m = m / (k + 2)
        f = running.where(f + m, f)
        n = n / (k + 3)
        g = running.where(g + n, g)
        k += 3
        running = running & ((m / f).abs() > epsilon)
    series = 0.355028053887817239260 * f - 0.258819403792806798405 * g
    value = (x < -2.09).where(oscillating, (x >= 2.09).where(decaying, series))
    value = (x > 103.892).where(0, value)
    return x.abs().eq(math.inf).where(math.nan, value)


def without_gradient(name: str, compute):
    def function(input):
        x = special_arguments.unary(name, input)
        return Tensor(compute(x.detach()), input.device)
    return special_arguments.named(function, name, f"torch.special.{name}, as PyTorch "
                                   "computes it; it has no gradient.")


airy_ai = without_gradient("airy_ai", _airy_ai)
bessel_j0 = without_gradient("bessel_j0", _j0)
bessel_j1 = without_gradient("bessel_j1", _j1)
bessel_y0 = without_gradient("bessel_y0", _y0)
bessel_y1 = without_gradient("bessel_y1", _y1)
spherical_bessel_j0 = without_gradient("spherical_bessel_j0", _spherical_j0)
