"""torch.testing: assert_close, with PyTorch's default tolerances per dtype and its messages;
make_tensor; and the deprecated assert_allclose. Values are compared on the host, in the
tensors' own precision (a bfloat16 one in float32), so the differences a message reports
are the ones PyTorch's would."""
from __future__ import annotations

import collections.abc
import math
import numbers
import warnings

import numpy as np

from .compiler import dtype as dt
from .frontend.tensor import Tensor

# (rtol, atol) of each dtype; every other dtype is compared exactly
_TOLERANCES = {dt.float16: (1e-3, 1e-5), dt.bfloat16: (1.6e-2, 1e-5),
               dt.float32: (1.3e-6, 1e-5), dt.float64: (1e-7, 1e-7)}


def assert_close(actual, expected, *, allow_subclasses: bool = True, rtol: float | None = None,
                 atol: float | None = None, equal_nan: bool = False, check_device: bool = True,
                 check_dtype: bool = True, check_layout: bool = True, check_stride: bool = False,
                 msg=None) -> None:
    """Raises AssertionError unless actual and expected, tensors, arrays, numbers or nested
    sequences and mappings of them, agree: element by element |a - e| <= atol + rtol |e|,
    after their shapes, devices, dtypes (and strides, when asked) agree."""
    if (rtol is None) != (atol is None):
        raise ValueError(f"Both 'rtol' and 'atol' must be either specified or omitted, but got "
                         f"no {'rtol' if rtol is None else 'atol'}.")
    options = dict(rtol=rtol, atol=atol, equal_nan=equal_nan, check_device=check_device,
                   check_dtype=check_dtype, check_stride=check_stride)
    try:
        _compare(actual, expected, "", options)
    except AssertionError as error:
        if msg is None:
            raise
        raise AssertionError(msg(str(error)) if callable(msg) else msg) from None


def assert_allclose(actual, expected, rtol=None, atol=None, equal_nan=True, msg="") -> None:
    warnings.warn("`clgrad.testing.assert_allclose()` is deprecated since 1.12 and will be "
                  "removed in a future release. Please use `clgrad.testing.assert_close()` "
                  "instead.", FutureWarning, stacklevel=2)
    assert_close(actual, expected, rtol=rtol, atol=atol, equal_nan=equal_nan,
                 check_device=True, check_dtype=False, check_stride=False, msg=msg or None)


def _compare(actual, expected, path: str, options: dict) -> None:
    """One pair, or each pair of a container's items (path names the item, as PyTorch's
    "[1]['a']")."""
    try:
        if actual is None or expected is None:
            if actual is not expected:
                raise AssertionError(f"None mismatch: {actual} is not {expected}")
        elif _is_bool(actual) and _is_bool(expected):
            if bool(actual) is not bool(expected):
                raise AssertionError(f"Booleans mismatch: {actual} is not {expected}")
        elif _is_number(actual) and _is_number(expected):
            _compare_numbers(actual, expected, options)
        elif (isinstance(actual, Tensor) and isinstance(expected, Tensor)) or \
                (isinstance(actual, np.ndarray) and isinstance(expected, np.ndarray)):
            _compare_tensors(actual, expected, options)
        elif _is_sequence(actual) and _is_sequence(expected):
            if len(actual) != len(expected):
                raise AssertionError(f"The length of the sequences mismatch: {len(actual)} != "
                                     f"{len(expected)}")
        elif isinstance(actual, collections.abc.Mapping) and \
                isinstance(expected, collections.abc.Mapping):
            _compare_keys(actual, expected)
        else:
            raise TypeError(f"No comparison pair was able to handle inputs of type "
                            f"{type(actual)} and {type(expected)}.")
    except AssertionError as error:
        if path:
            raise AssertionError(f"{error}\n\nThe failure occurred for item {path}") from None
        raise
    if _is_sequence(actual):
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, f"{path}[{i}]", options)
    elif isinstance(actual, collections.abc.Mapping):
        for key in actual:
            _compare(actual[key], expected[key], f"{path}[{key!r}]", options)


def _is_bool(x) -> bool:
    return isinstance(x, (bool, np.bool_))


def _is_number(x) -> bool:
    return isinstance(x, numbers.Number) and not _is_bool(x)


def _is_sequence(x) -> bool:
    return isinstance(x, collections.abc.Sequence) and not isinstance(x, str)


def _compare_keys(actual, expected) -> None:
    if set(actual) != set(expected):
        missing = sorted(set(expected) - set(actual), key=repr)
        extra = sorted(set(actual) - set(expected), key=repr)
        raise AssertionError(f"The keys of the mappings do not match:\nMissing keys in the "
                             f"actual mapping: {missing}\nAdditional keys in the actual "
                             f"mapping: {extra}")


def _compare_numbers(actual, expected, options: dict) -> None:
    kinds = [float if isinstance(x, numbers.Real) and not isinstance(x, numbers.Integral)
             else int for x in (actual, expected)]
    if options["check_dtype"] and type(actual) is not type(expected) and kinds[0] is not kinds[1]:
        raise AssertionError(f"The (d)types do not match: {type(actual)} != {type(expected)}.")
    exact = kinds[0] is int and kinds[1] is int
    rtol, atol = _tolerances(options, [dt.int64 if exact else dt.float64])
    if _close(np.float64(actual), np.float64(expected), rtol, atol, options["equal_nan"]):
        return
    raise AssertionError(_scalar_mismatch(actual, expected, rtol, atol))


def _compare_tensors(actual, expected, options: dict) -> None:
    for name, value in (("shape", lambda t: t.shape),
                        ("device", lambda t: getattr(t, "device", None)),
                        ("dtype", lambda t: t.dtype),
                        ("stride()", _strides)):
        if name == "device" and not options["check_device"] or \
                name == "dtype" and not options["check_dtype"] or \
                name == "stride()" and not options["check_stride"]:
            continue
        a, e = value(actual), value(expected)
        if a != e:
            raise AssertionError(f"The values for attribute '{name}' do not match: {a} != {e}.")
    dtypes = [_dtype_of(actual), _dtype_of(expected)]
    rtol, atol = _tolerances(options, dtypes)
    common = dt.promote(*dtypes)
    host = np.float32 if common == dt.bfloat16 else common.np
    a, e = _host(actual).astype(host), _host(expected).astype(host)
    matches = _close(a, e, rtol, atol, options["equal_nan"])
    if matches.all():
        return
    if a.ndim == 0:
        raise AssertionError(_scalar_mismatch(a.item(), e.item(), rtol, atol))
    raise AssertionError(_tensor_mismatch(a, e, matches, rtol, atol, common))


def _strides(t) -> tuple:
    if isinstance(t, Tensor):
        return t.stride()
    return tuple(s // t.itemsize for s in t.strides)


def _dtype_of(t) -> dt.DType:
    return t.dtype if isinstance(t, Tensor) else dt.from_numpy(t.dtype)


def _host(t) -> np.ndarray:
    """t's values as an array of its precision (bfloat16's in float32: NumPy lacks it)."""
    if isinstance(t, np.ndarray):
        return t
    t = t.detach()
    return (t.float() if t.dtype == dt.bfloat16 else t).numpy()


def _tolerances(options: dict, dtypes) -> tuple[float, float]:
    if options["rtol"] is not None:
        return options["rtol"], options["atol"]
    pairs = [_TOLERANCES.get(d, (0.0, 0.0)) for d in dtypes]
    return max(p[0] for p in pairs), max(p[1] for p in pairs)


def _close(a, e, rtol: float, atol: float, equal_nan: bool):
    if a.dtype.kind not in "fc":
        return np.equal(a, e) if rtol == 0 and atol == 0 else \
            np.abs(a.astype(np.float64) - e) <= atol + rtol * np.abs(e.astype(np.float64))
    with np.errstate(invalid="ignore", over="ignore"):
        return np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)


def _tensor_mismatch(a: np.ndarray, e: np.ndarray, matches: np.ndarray, rtol, atol,
                     dtype: dt.DType) -> str:
    """PyTorch's report: how many differ, and the greatest absolute and relative differences
    among them with their indices (NaN, where one is, is the greatest), computed in dtype."""
    total, wrong = matches.size, int(matches.size - matches.sum())
    if a.dtype.kind not in "fc":
        a, e = a.astype(np.int64), e.astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        absolute = np.abs(a - e).reshape(-1)
        absolute[matches.reshape(-1)] = 0
        absolute = _rounded(absolute, dtype)
        relative = _rounded(absolute / np.abs(e.reshape(-1)), dtype)
        relative[matches.reshape(-1)] = 0
    where_abs, where_rel = int(np.argmax(absolute)), int(np.argmax(relative))
    index = [tuple(int(i) for i in np.unravel_index(k, a.shape)) for k in (where_abs, where_rel)]
    return _mismatch("Tensor-likes", f"Mismatched elements: {wrong} / {total} "
                     f"({wrong / total:.1%})", absolute[where_abs].item(), index[0],
                     relative[where_rel].item(), index[1], rtol, atol)


def _rounded(x: np.ndarray, dtype: dt.DType) -> np.ndarray:
    """float32 results rounded to bfloat16, as PyTorch's bfloat16 ops round theirs."""
    if dtype != dt.bfloat16:
        return x
    return (dt.round_bfloat16(x).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _scalar_mismatch(actual, expected, rtol, atol) -> str:
    absolute = abs(actual - expected)
    relative = math.inf if expected == 0 else absolute / abs(expected)
    return _mismatch("Scalars", f"Expected {expected} but got {actual}.", absolute, None,
                     relative, None, rtol, atol)


def _mismatch(what: str, extra: str, absolute, abs_index, relative, rel_index, rtol, atol) -> str:
    equality = rtol == 0 and atol == 0
    lines = [f"{what} are not {'equal' if equality else 'close'}!", "", extra]
    for kind, diff, index, tol in (("absolute", absolute, abs_index, atol),
                                   ("relative", relative, rel_index, rtol)):
        line = f"{kind.title()} difference: {diff}" if index is None else \
            f"Greatest {kind} difference: {diff} at index {index}"
        lines.append(line if equality else f"{line} (up to {tol} allowed)")
    return "\n".join(lines)


def make_tensor(*shape, dtype, device=None, low=None, high=None, requires_grad: bool = False,
                noncontiguous: bool = False, exclude_zero: bool = False,
                memory_format=None) -> Tensor:
    """A tensor of random values in [low, high) (defaults -9 and 9, or 10 exclusive for
    integers; uint8 from 0), clamped to dtype's range, drawn from the global random stream.
    noncontiguous makes it a strided view of a larger tensor, as PyTorch's does (clgrad reads
    every tensor row-major: stride() does not show it)."""
    from . import frontend as fe
    from .frontend.type_info import finfo, iinfo
    if len(shape) == 1 and isinstance(shape[0], collections.abc.Sequence):
        shape = tuple(shape[0])
    if requires_grad and not dtype.is_float:
        raise ValueError(f"`requires_grad=True` is not supported for boolean and integral "
                         f"dtypes, but got dtype={dtype}")
    if dtype == dt.bool_:
        low, high = _bounds(low, high, 0, 2, 0, 2, dtype)
        result = fe.randint(math.ceil(low), math.ceil(high), shape, device=device).bool()
    elif dtype.is_float:
        info = finfo(dtype)
        low, high = _bounds(low, high, info.min, info.max, -9, 9, dtype)
        result = (fe.rand(*shape, device=device, dtype=dt.float64) * (high - low) + low)
        result = result.clamp(low, high).to(dtype)
    else:
        info = iinfo(dtype)
        top = info.max + (0 if dtype == dt.int64 else 1)   # (randint's bounds are int64s)
        low, high = _bounds(low, high, info.min, top, -9, 10, dtype)
        result = fe.randint(math.ceil(low), math.ceil(high), shape, device=device, dtype=dtype)
    if noncontiguous and result.numel() > 1:
        result = result.repeat_interleave(2, dim=-1)[..., ::2]
    if exclude_zero:
        zero = result == 0
        tiny = True if dtype == dt.bool_ else finfo(dtype).tiny if dtype.is_float else 1
        result = fe.full_like(result, tiny).where(zero, result)
    if requires_grad:
        result.requires_grad_(True)
    return result


def _bounds(low, high, lowest: float, highest: float, default_low: float, default_high: float,
            dtype):
    """make_tensor's range [low, high): defaults where not given, checked against dtype's
    [lowest, highest), then clamped to it."""
    low = default_low if low is None else low
    high = default_high if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low >= high and not (low == high and dtype.is_float):
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise ValueError(f"The value interval specified by `low` and `high` is [{low}, {high}), "
                         f"but {dtype} only supports [{lowest}, {highest})")
    return min(max(low, lowest), highest), min(max(high, lowest), highest)
