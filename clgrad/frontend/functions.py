"""torch.* functions: each Tensor method PyTorch also offers as a function (cg.exp(x) is
x.exp()), and the comparisons of whole tensors (isclose, allclose, equal)."""
from __future__ import annotations

import functools
import inspect
import math

from . import array_functions, host_functions, more_creation, products, shape_functions
from . import copies, gamma_sampling, global_state, legacy_linalg, random_fills, type_functions
from . import array_interop, functional_forms, histograms, layouts, numeric_gradient
from . import autocast_state, control_flow, legacy_types, real_tensors, special_functions
from . import lobpcg, symbolic_numbers
from . import strided_views, triangular, vmap_loop
from .lu import lu_solve_deprecated, lu_unpack
from .matrix_functions import matrix_exp
from .statistics import FUNCTIONS
from .tensor import Tensor

# Tensor methods that torch also has as functions of the tensor (and, for binary ops, another
# operand): torch.add(a, b) is a.add(b).
METHODS_AS_FUNCTIONS = (
    "abs", "add", "all", "amax", "amin", "any", "argmax", "argmin", "bmm", "ceil", "clamp",
    "clamp_", "clone", "cos", "detach", "detach_", "div", "exp", "fill_", "flatten", "flip",
    "floor", "log", "log_softmax", "logical_not", "logsumexp", "max", "mean", "min", "mm", "mul",
    "neg", "numel", "permute", "pow", "prod", "reciprocal", "relu", "reshape", "round", "rsqrt",
    "sigmoid", "sign", "sin", "softmax", "sqrt", "square", "squeeze", "std", "sub", "sum", "t",
    "tanh", "transpose", "unsqueeze", "var", "zero_",
    # composed of other methods (composite_methods.py)
    "eq", "ne", "lt", "le", "gt", "ge", "remainder", "floor_divide", "true_divide", "swapaxes",
    "swapdims", "moveaxis", "movedim", "ravel", "broadcast_to", "clamp_min", "clamp_max",
    "isnan", "isinf", "isfinite", "isposinf", "isneginf", "nan_to_num", "trunc", "frac", "fmod",
    "log2", "log10", "exp2", "log1p", "expm1", "lerp", "addcmul", "addcdiv", "masked_fill",
    "narrow", "split", "chunk", "unbind", "select", "tile", "roll", "tril", "triu", "diagonal",
    "diag", "trace", "outer", "dot", "mv", "addmm", "gather", "take_along_dim", "index_select",
    "is_floating_point", "is_signed", "abs_", "exp_", "log_", "sqrt_", "sin_", "cos_", "tanh_",
    "sigmoid_", "relu_", "neg_", "reciprocal_", "floor_", "ceil_", "round_", "rsqrt_",
    "square_", "clamp_min_", "clamp_max_", "trunc_", "frac_", "log2_", "log10_", "log1p_",
    "expm1_", "exp2_", "nan_to_num_",
    # scans (scans.py)
    "cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
    # sorting (sorting.py)
    "sort", "argsort", "msort", "topk", "kthvalue", "median", "nanmedian", "mode",
    # composed reductions (statistics.py)
    "norm", "nansum", "nanmean", "count_nonzero", "aminmax", "diff",
    # writing at indices (scatter.py)
    "scatter", "scatter_add", "scatter_reduce", "index_add", "index_copy", "index_fill",
    "index_put", "index_put_", "put", "take", "index_reduce",
    # slice_scatters.py
    "select_scatter", "slice_scatter", "diagonal_scatter", "masked_scatter",
    # math_functions.py
    "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfc",
    "arcsin", "arccos", "arctan", "arcsinh", "arccosh", "arctanh", "atan2", "arctan2", "hypot",
    "copysign", "signbit", "positive", "sgn", "deg2rad", "rad2deg", "sinc", "logaddexp",
    "logaddexp2", "logit", "xlogy", "fmax", "fmin", "heaviside", "float_power", "ldexp",
    "tan_", "asin_", "acos_", "atan_", "sinh_", "cosh_", "asinh_", "acosh_", "atanh_", "erf_",
    "erfc_", "arcsin_", "arccos_", "arctan_", "arcsinh_", "arccosh_", "arctanh_", "deg2rad_",
    "rad2deg_", "sinc_", "logit_", "ldexp_", "xlogy_", "lgamma", "digamma", "erfinv",
    "nextafter", "frexp", "gcd", "gcd_", "lcm", "lcm_",
    # special_functions.py
    "i0", "i0_", "mvlgamma",
    # incomplete_gamma.py
    "igamma", "igammac",
    # quantiles.py
    "quantile", "nanquantile",
    # bitwise.py
    "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "bitwise_left_shift",
    "bitwise_right_shift", "logical_and", "logical_or", "logical_xor",
    "get_device",
    # numpy's names (composite_methods.SECOND_NAMES)
    "absolute", "absolute_", "negative", "negative_", "multiply", "divide", "subtract",
    "greater", "greater_equal", "less", "less_equal", "not_equal", "fix", "fix_", "clip",
    "clip_",
    # the complex-number API on real tensors (real_tensors.py)
    "isreal", "adjoint", "is_neg", "resolve_neg", "is_conj", "resolve_conj", "conj",
    "conj_physical", "conj_physical_", "is_complex", "angle",
    # linear algebra (lu.py, triangular.py, matrix_functions.py, qr.py, eigen.py, householder.py)
    "inverse", "det", "slogdet", "logdet", "matrix_power", "cholesky", "qr", "pinverse", "svd",
    "lu", "orgqr", "geqrf", "ormqr",
)


def _as_function(name: str):
    method = getattr(Tensor, name)

    @functools.wraps(method)
    def function(*args, **kwargs):
        if "input" in kwargs:
            args = (kwargs.pop("input"),) + args
        if not args or not isinstance(args[0], Tensor):
            got = type(args[0]).__name__ if args else "nothing"
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {got}")
        return getattr(args[0], name)(*args[1:], **kwargs)

    function.__qualname__ = name
    function.__signature__ = _with_input_first(inspect.signature(method))
    return function


def _with_input_first(signature: inspect.Signature) -> inspect.Signature:
    """A method's signature as its torch.* function's: the tensor is the parameter input."""
    parameters = list(signature.parameters.values())
    if parameters and parameters[0].kind is parameters[0].POSITIONAL_OR_KEYWORD:
        parameters[0] = parameters[0].replace(name="input")
    return signature.replace(parameters=parameters)


globals().update({name: _as_function(name) for name in METHODS_AS_FUNCTIONS})
globals().update(FUNCTIONS)
_COMPOSED = {**shape_functions.FUNCTIONS, **products.FUNCTIONS, **type_functions.FUNCTIONS,
             **host_functions.FUNCTIONS, **more_creation.FUNCTIONS, **array_functions.FUNCTIONS,
             **global_state.FUNCTIONS, **copies.FUNCTIONS, **random_fills.FUNCTIONS,
             **triangular.FUNCTIONS, **special_functions.FUNCTIONS, **legacy_linalg.FUNCTIONS,
             **autocast_state.FUNCTIONS, **legacy_types.FUNCTIONS, **symbolic_numbers.FUNCTIONS,
             **control_flow.FUNCTIONS, **vmap_loop.FUNCTIONS, "lu_unpack": lu_unpack,
             "lu_solve": lu_solve_deprecated, "matrix_exp": matrix_exp,
             **array_interop.FUNCTIONS, **functional_forms.FUNCTIONS, **histograms.FUNCTIONS,
             **layouts.FUNCTIONS, **numeric_gradient.FUNCTIONS, **strided_views.FUNCTIONS,
             **real_tensors.FUNCTIONS, **gamma_sampling.FUNCTIONS, **lobpcg.FUNCTIONS}
globals().update(_COMPOSED)


def _check_tensors(op: str, input, other) -> None:
    for position, (name, value) in enumerate((("input", input), ("other", other)), 1):
        if not isinstance(value, Tensor):
            raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, "
                            f"not {type(value).__name__}")


def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08,
            equal_nan: bool = False) -> Tensor:
    """|input - other| <= atol + rtol * |other| elementwise; equal infinities are close, NaN is
    close to nothing (to NaN when equal_nan)."""
    _check_tensors("isclose", input, other)
    if input.dtype != other.dtype:
        raise RuntimeError(f"isclose: input dtype {input.dtype.name} did not match other dtype "
                           f"{other.dtype.name}")
    if rtol < 0 or atol < 0:
        raise RuntimeError(f"isclose: rtol ({rtol}) and atol ({atol}) must be non-negative")
    close = input == other
    if input.dtype.name == "bool":
        return close
    error, allowed = (input - other).abs(), atol + rtol * other.abs()
    # < or ==, not <=, so that a NaN error is never within the tolerance; an infinite error
    # (inf against -inf) never either, whatever the tolerance
    close = close | (((error < allowed) | (error == allowed)) & (error < math.inf))
    if equal_nan:
        close = close | ((input != input) & (other != other))
    return close


def allclose(input: Tensor, other, rtol: float = 1e-05, atol: float = 1e-08,
             equal_nan: bool = False) -> bool:
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input: Tensor, other: Tensor) -> bool:
    """True if both have the same shape and the same elements (NaN equals nothing)."""
    _check_tensors("equal", input, other)
    return input.shape == other.shape and bool((input == other).all().item())


# whole-tensor comparisons are Tensor methods too (x.allclose(y))
Tensor.isclose, Tensor.allclose, Tensor.equal = isclose, allclose, equal

__all__ = list(METHODS_AS_FUNCTIONS) + list(FUNCTIONS) + list(_COMPOSED) + ["isclose", "allclose",
                                                                     "equal"]
