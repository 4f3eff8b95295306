"""The standard normal distribution's functions of torch.special, as PyTorch computes them:
ndtr (its composite (1 + erf(x / sqrt 2)) / 2), its inverse ndtri (Cephes: a rational
function of y - 1/2 in the centre, of 1 / sqrt(-2 log y) in the tails) and log_ndtr (SciPy's:
log(erfcx(-x / sqrt 2) / 2) - x² / 2 below -1, log1p(-erfc(x / sqrt 2) / 2) above). The
gradients are PyTorch's formulas."""
from __future__ import annotations

import math

from ..compiler import ir, special
from ..compiler.ir import Node
from ..compiler.ops import Op
from . import special_arguments
from .backward import record
from .erfcx import erfcx_node
from .formula_steps import gradient_steps
from .math_functions import erf_slope
from .operands import from_opmath, opmath

_SQRT_HALF = 0.70710678118654752440
_SQRT_2PI = 2.50662827463100050242
_EXP_MINUS_2 = 0.13533528323661269189

# Cephes' ndtri: P0/Q0 for |y - 1/2| <= 3/8, P1/Q1 for sqrt(-2 log y) in [2, 8], P2/Q2 beyond
_P0 = (-59.96335010141079, 98.00107541859997, -56.67628574690703, 13.931260938727968,
       -1.2391658386738125)
_Q0 = (1.0, 1.9544885833814176, 4.676279128988815, 86.36024213908905, -225.46268785411937,
       200.26021238006066, -82.03722561683334, 15.90562251262117, -1.1833162112133)
_P1 = (4.0554489230596245, 31.525109459989388, 57.16281922464213, 44.08050738932008,
       14.684956192885803, 2.1866330685079025, -0.1402560791713545, -0.03504246268278482,
       -0.0008574567851546854)
_Q1 = (1.0, 15.779988325646675, 45.39076351288792, 41.3172038254672, 15.04253856929075,
       2.504649462083094, -0.14218292285478779, -0.03808064076915783, -0.0009332594808954574)
_P2 = (3.2377489177694603, 6.915228890689842, 3.9388102529247444, 1.3330346081580755,
       0.20148538954917908, 0.012371663481782003, 0.00030158155350823543, 2.6580697468673755e-06,
       6.239745391849833e-09)
_Q2 = (1.0, 6.02427039364742, 3.6798356385616087, 1.3770209948908132, 0.21623699359449663,
       0.013420400608854318, 0.00032801446468212774, 2.8924786474538068e-06, 6.790194080099813e-09)


def ndtr(input):
    """The standard normal CDF, as PyTorch's composite (float16 rounded at each of its ops),
    and its gradient the composite's, g * 0.5, times erf's derivative, times sqrt(1/2), each
    step rounded; grad_fn MulBackward1, its last op."""
    node = special_arguments.unary("ndtr", input, half=True)
    scaled = from_opmath(opmath(node) * _SQRT_HALF, node)
    value = (ir.unary(Op.ERF, scaled) + 1) * 0.5
    steps = [(Op.MUL, 0.5), (Op.MUL, erf_slope(scaled)), (Op.MUL, _SQRT_HALF)]
    return record("special_ndtr", value, input.device, [input],
                  derivation=gradient_steps(node, steps, node.dtype))


def _ndtri(y0: Node) -> Node:
    upper = y0 > 1 - _EXP_MINUS_2
    y = upper.where(1 - y0, y0)
    central = y > _EXP_MINUS_2
    c = central.where(y, 0.5) - 0.5            # the tails' branch reads 1/2 here: finite
    c2 = c * c
    middle = (c + c * (c2 * special.polynomial(_P0, c2) / special.polynomial(_Q0, c2)))
    middle = middle * _SQRT_2PI
    x = (-2 * central.where(0.5, y).log()).sqrt()
    z = 1 / x
    near = z * special.polynomial(_P1, z) / special.polynomial(_Q1, z)
    far = z * special.polynomial(_P2, z) / special.polynomial(_Q2, z)
    tail = x - x.log() / x - (x < 8).where(near, far)
    value = central.where(middle, upper.where(tail, -tail))
    value = y0.eq(0).where(-math.inf, y0.eq(1).where(math.inf, value))
    return ((y0 < 0) | (y0 > 1)).where(math.nan, value)


def ndtri(input):
    """The inverse of ndtr on [0, 1] (±inf at its ends, NaN beyond); the gradient is PyTorch's,
    sqrt(2 pi) exp(ndtri(y)² / 2)."""
    y = special_arguments.unary("ndtri", input)
    value = _ndtri(y)
    return record("special_ndtri", value, input.device, [input],
                  derivation=ir.sloped(y, _SQRT_2PI * (value * value * 0.5).exp()))


def log_ndtr(input):
    """log(ndtr(x)) without its underflow below (SciPy's); the gradient is PyTorch's,
    exp(-(log_ndtr(x) + x² / 2)) / sqrt(2 pi)."""
    x = special_arguments.unary("log_ndtr", input)
    t = x * _SQRT_HALF
    low = x < -1
    below = (erfcx_node(low.where(-t, 0), input.device) / 2).log() - t * t
    above = special.log1p(-ir.unary(Op.ERFC, t) / 2)
    value = low.where(below, above)
    slope = (-(value + x * x / 2)).exp() / _SQRT_2PI
    return record("special_log_ndtr", value, input.device, [input],
                  derivation=ir.sloped(x, slope))
