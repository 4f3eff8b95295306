"""The functions of torch.special that are clgrad's functions under torch's top-level names,
with torch.special's signatures (special.softmax(input, dim, *, dtype=None), special.
polygamma(n, input), special.multigammaln(input, p), special.logit(input, eps=None), ...),
and special.round, which is round's decimals overload (RoundBackward1, no integers)."""
from __future__ import annotations

from . import elementwise as ew
from . import special_arguments
from .backward import record
from .math_functions import xlogy as _xlogy
from .operands import from_opmath, opmath
from .special_functions import polygamma_function
from .type_functions import _SCALAR_TYPE


def _method(special_name: str, method: str):
    """special.<special_name>(input, *args) as input.<method>(*args)."""
    def function(input, *args, **kwargs):
        special_arguments.tensor_argument(f"special_{special_name}", input)
        return getattr(input, method)(*args, **kwargs)
    return special_arguments.named(function, special_name,
                                   f"torch.special.{special_name}: clgrad's {method}.")


erf = _method("erf", "erf")
erfc = _method("erfc", "erfc")
erfinv = _method("erfinv", "erfinv")
exp2 = _method("exp2", "exp2")
expm1 = _method("expm1", "expm1")
log1p = _method("log1p", "log1p")
i0 = _method("i0", "i0")
sinc = _method("sinc", "sinc")
digamma = _method("digamma", "digamma")
psi = _method("psi", "digamma")
gammaln = _method("gammaln", "lgamma")
expit = _method("expit", "sigmoid")
gammainc = _method("gammainc", "igamma")
gammaincc = _method("gammaincc", "igammac")


def logit(input, eps: float | None = None):
    special_arguments.tensor_argument("special_logit", input)
    return input.logit(eps)


def multigammaln(input, p: int):
    special_arguments.tensor_argument("special_multigammaln", input)
    return input.mvlgamma(p)


def polygamma(n: int, input):
    special_arguments.tensor_argument("special_polygamma", input, position=2)
    return polygamma_function(n, input, "special_polygamma")


def softmax(input, dim: int, *, dtype=None):
    special_arguments.tensor_argument("special_softmax", input)
    return input.softmax(dim, dtype)


def log_softmax(input, dim: int, *, dtype=None):
    special_arguments.tensor_argument("special_log_softmax", input)
    return input.log_softmax(dim, dtype)


def logsumexp(input, dim, keepdim: bool = False):
    special_arguments.tensor_argument("special_logsumexp", input)
    return input.logsumexp(dim, keepdim)


def xlogy(input, other):
    special_arguments.binary("xlogy", input, other)
    return _xlogy(input, other)


def round(input, *, decimals: int = 0):  # noqa: A001  (torch.special.round)
    """To the nearest integer, ties to even, or to decimals places as PyTorch's kernel: x
    times 10^decimals rounded and divided back (divided, rounded and multiplied for negative
    decimals), in float for 16-bit floats. Its gradient is zero; integer tensors are refused
    as PyTorch's kernel refuses them."""
    special_arguments.tensor_argument("special_round", input)
    if not input.dtype.is_float:
        raise NotImplementedError(f'"round_vml_cpu" not implemented for '
                                  f"'{_SCALAR_TYPE[input.dtype]}'")
    given = input.node
    x = opmath(given)
    scale = float(10 ** abs(decimals))
    if decimals == 0:
        value = x.round()
    elif decimals > 0:
        value = (x * scale).round() / scale
    else:
        value = (x / scale).round() * scale
    value = from_opmath(value, given)
    return record("round_decimals", value, input.device, [input],
                  derivation=ew.zero_gradient(value, given))
