"""torch.*'s autocast flags: whether autocast is on for a device type, the dtype it would cast
to, and its cache. clgrad has no autocast (every op runs in its inputs' dtypes): these keep and
report the state, as PyTorch's do, so that scripts which set or read it run; setting it changes
no computation. The legacy per-device functions (is_autocast_cpu_enabled, ...) warn as PyTorch's
do and act on the device type they name."""
from __future__ import annotations

import warnings

from ..compiler import dtype as dt

# PyTorch's device types, which it accepts as device_type ("cuda" is what no argument means)
_DEVICE_TYPES = ("cpu", "cuda", "ipu", "xpu", "mkldnn", "opengl", "opencl", "ideep", "hip", "ve",
                 "fpga", "maia", "xla", "lazy", "vulkan", "mps", "meta", "hpu", "mtia",
                 "privateuseone")
_BFLOAT16_BY_DEFAULT = ("cpu", "xla", "hpu")


class _Autocast:
    enabled: dict[str, bool] = {}
    dtypes: dict[str, dt.DType] = {}
    cache_enabled = True


def _device_type(op: str, device_type) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"{op}(): argument 'device_type' (position 1) must be str, not "
                        f"{type(device_type).__name__}")
    if device_type not in _DEVICE_TYPES:
        raise RuntimeError(f"Expected one of {', '.join(_DEVICE_TYPES)} device type at start of "
                           f"device string: {device_type}")
    return device_type


def _require_bool(op: str, enabled) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"{op}(): argument 'enabled' must be bool, not {type(enabled).__name__}")


def is_autocast_enabled(device_type: str = "cuda") -> bool:
    return _Autocast.enabled.get(_device_type("is_autocast_enabled", device_type), False)


def set_autocast_enabled(*args) -> None:
    """set_autocast_enabled(device_type, enabled), or set_autocast_enabled(enabled) for cuda."""
    device_type, enabled = args if len(args) == 2 else ("cuda", *args)
    _require_bool("set_autocast_enabled", enabled)
    _Autocast.enabled[_device_type("set_autocast_enabled", device_type)] = enabled


def get_autocast_dtype(device_type: str) -> dt.DType:
    device_type = _device_type("get_autocast_dtype", device_type)
    default = dt.bfloat16 if device_type in _BFLOAT16_BY_DEFAULT else dt.float16
    return _Autocast.dtypes.get(device_type, default)


def set_autocast_dtype(device_type: str, dtype) -> None:
    device_type = _device_type("set_autocast_dtype", device_type)
    if not isinstance(dtype, dt.DType):
        raise TypeError(f"set_autocast_dtype(): argument 'dtype' (position 2) must be "
                        f"torch.dtype, not {type(dtype).__name__}")
    _Autocast.dtypes[device_type] = dtype


def clear_autocast_cache() -> None:
    """Nothing is cached: clgrad casts nothing."""


def is_autocast_cache_enabled() -> bool:
    return _Autocast.cache_enabled


def set_autocast_cache_enabled(enabled: bool) -> None:
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
    _Autocast.cache_enabled = enabled


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"torch.{old} is deprecated. Please use torch.{new} instead.",
                  DeprecationWarning, stacklevel=3)


def _legacy(device_type: str, suffix: str):
    """The four deprecated functions of one device type: is_autocast_<suffix>_enabled, ..."""
    def is_enabled() -> bool:
        _deprecated(f"is_autocast_{suffix}_enabled()", f"is_autocast_enabled('{device_type}')")
        return is_autocast_enabled(device_type)

    def set_enabled(enabled: bool) -> None:
        _deprecated(f"set_autocast_{suffix}_enabled(enabled)",
                    f"set_autocast_enabled('{device_type}', enabled)")
        if not isinstance(enabled, bool):
            raise TypeError(f"enabled must be a bool (got {type(enabled).__name__})")
        set_autocast_enabled(device_type, enabled)

    def get_dtype() -> dt.DType:
        _deprecated(f"get_autocast_{suffix}_dtype()", f"get_autocast_dtype('{device_type}')")
        return get_autocast_dtype(device_type)

    def set_dtype(dtype) -> None:
        _deprecated(f"set_autocast_{suffix}_dtype(dtype)",
                    f"set_autocast_dtype('{device_type}', dtype)")
        set_autocast_dtype(device_type, dtype)

    functions = {f"get_autocast_{suffix}_dtype": get_dtype,
                 f"set_autocast_{suffix}_dtype": set_dtype}
    if suffix != "gpu":     # PyTorch has no is/set_autocast_gpu_enabled
        functions.update({f"is_autocast_{suffix}_enabled": is_enabled,
                          f"set_autocast_{suffix}_enabled": set_enabled})
    for name, fn in functions.items():
        fn.__name__ = fn.__qualname__ = name
    return functions


FUNCTIONS = {fn.__name__: fn for fn in (
    is_autocast_enabled, set_autocast_enabled, get_autocast_dtype, set_autocast_dtype,
    clear_autocast_cache, is_autocast_cache_enabled, set_autocast_cache_enabled)}
FUNCTIONS.update(_legacy("cpu", "cpu"))
FUNCTIONS.update(_legacy("cuda", "gpu"))
FUNCTIONS.update(_legacy("xla", "xla"))
