"""torch.*'s process-wide settings: the random ops' seed and state, the default device, print
options, and the flags PyTorch keeps for thread counts, determinism, matmul precision,
anomaly detection and warnings (clgrad's kernels are OpenCL's to schedule: the thread
counts are kept and reported, not applied)."""
from __future__ import annotations

import copy
import os
import warnings

import numpy as np

from ..config import config
from ..runtime import get_device
from ..runtime.core_share import usable_cores
from . import creation
from .printing import set_printoptions


def seed() -> int:
    """Reseeds the random ops from the operating system's entropy; returns the new seed."""
    new_seed = int(np.random.SeedSequence().entropy) % 2**63
    creation.manual_seed(new_seed)
    return new_seed


def get_rng_state() -> dict:
    """A copy of the random ops' state (NumPy's bit generator state: a dict, where PyTorch
    has a byte tensor) that set_rng_state restores."""
    return copy.deepcopy(creation.generator().bit_generator.state)


def set_rng_state(new_state: dict) -> None:
    if not isinstance(new_state, dict) or "bit_generator" not in new_state:
        raise TypeError(f"set_rng_state(): expected a state from get_rng_state(), got "
                        f"{type(new_state).__name__}")
    creation.generator().bit_generator.state = copy.deepcopy(new_state)


def set_default_device(device) -> None:
    """The device of tensors made without one (None: back to CLGRAD_DEVICE's, else the
    preferred one)."""
    if device is not None:
        get_device(device)          # fails here, on an unknown spec, not at the next tensor
    config.DEVICE = (os.environ.get("CLGRAD_DEVICE") or None) if device is None else \
        getattr(device, "spec", device)


def get_default_device():
    return get_device()


class _Settings:
    threads = usable_cores()
    interop_threads = threads
    interop_threads_set = False
    deterministic, deterministic_warn_only = False, False
    matmul_precision = "highest"
    anomaly, anomaly_check_nan = False, True
    warn_always = False


def _require(op: str, name: str, value, kind: type, position: int = 1) -> None:
    if type(value) is not kind:     # (not isinstance: PyTorch refuses a bool for an int too)
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be "
                        f"{kind.__name__}, not {type(value).__name__}")


def _positive_threads(op: str, n) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise RuntimeError(f"{op} expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise RuntimeError(f"{op} expects a positive integer, got {n}")
    return n


def get_num_threads() -> int:
    return _Settings.threads


def set_num_threads(n: int) -> None:
    _Settings.threads = _positive_threads("set_num_threads", n)


def init_num_threads() -> None:
    """PyTorch initializes its thread pool for the calling thread; OpenCL's runtimes keep their
    own, so there is nothing to do."""


def set_flush_denormal(mode: bool) -> bool:
    """Whether denormal floats were set to flush to zero: False, always, as PyTorch answers on a
    CPU that cannot. clgrad's kernels run under the OpenCL runtime's own floating point mode,
    which a program cannot change, so mode (True or False) changes nothing."""
    if not isinstance(mode, bool):
        raise RuntimeError(f"flush_denormal expects a bool, but got {type(mode).__name__}")
    return False


def get_num_interop_threads() -> int:
    return _Settings.interop_threads


def set_num_interop_threads(n: int) -> None:
    """Once per process, as in PyTorch."""
    n = _positive_threads("set_num_interop_threads", n)
    if _Settings.interop_threads_set:
        raise RuntimeError("Error: cannot set number of interop threads after parallel work has "
                           "started or set_num_interop_threads called")
    _Settings.interop_threads, _Settings.interop_threads_set = n, True


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    _require("_set_deterministic_algorithms", "mode", mode, bool)
    _Settings.deterministic, _Settings.deterministic_warn_only = mode, warn_only


def are_deterministic_algorithms_enabled() -> bool:
    return _Settings.deterministic


_DEBUG_MODES = ("default", "warn", "error")


def set_deterministic_debug_mode(debug_mode: int | str) -> None:
    """"default"/0: off; "warn"/1: deterministic, warning only; "error"/2: deterministic."""
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError(f"invalid value of debug_mode, expected one of `default`, `warn`, "
                               f"`error`, but got {debug_mode}")
        debug_mode = _DEBUG_MODES.index(debug_mode)
    elif debug_mode not in (0, 1, 2):
        raise RuntimeError(f"invalid value of debug_mode, expected 0, 1, or 2, but got "
                           f"{debug_mode}")
    use_deterministic_algorithms(debug_mode > 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    if not _Settings.deterministic:
        return 0
    return 1 if _Settings.deterministic_warn_only else 2


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    return _Settings.deterministic_warn_only


def set_float32_matmul_precision(precision: str) -> None:
    """"highest", "high" or "medium"; anything else warns and changes nothing, as in PyTorch.
    (clgrad's float32 matmuls always accumulate in float32: "highest".)"""
    if precision not in ("highest", "high", "medium"):
        warnings.warn(f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
                      f"setFloat32MatmulPrecision call has no effect.", UserWarning, stacklevel=2)
        return
    _Settings.matmul_precision = precision


def get_float32_matmul_precision() -> str:
    return _Settings.matmul_precision


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    _require("set_anomaly_enabled", "enabled", enabled, bool)
    _Settings.anomaly, _Settings.anomaly_check_nan = enabled, check_nan


def is_anomaly_enabled() -> bool:
    return _Settings.anomaly


def is_anomaly_check_nan_enabled() -> bool:
    return _Settings.anomaly_check_nan


def set_warn_always(b: bool) -> None:
    if not isinstance(b, bool):
        raise RuntimeError(f"setWarnOnlyOnce expects a bool, but got {type(b).__name__}")
    _Settings.warn_always = b


def is_warn_always_enabled() -> bool:
    return _Settings.warn_always


FUNCTIONS = {fn.__name__: fn for fn in (
    seed, get_rng_state, set_rng_state, set_default_device, get_default_device,
    set_printoptions, get_num_threads, set_num_threads, get_num_interop_threads,
    set_num_interop_threads, use_deterministic_algorithms, are_deterministic_algorithms_enabled,
    is_deterministic_algorithms_warn_only_enabled, set_deterministic_debug_mode,
    get_deterministic_debug_mode, set_float32_matmul_precision, get_float32_matmul_precision,
    set_anomaly_enabled, is_anomaly_enabled, is_anomaly_check_nan_enabled, set_warn_always,
    is_warn_always_enabled, init_num_threads, set_flush_denormal)}
FUNCTIONS["initial_seed"] = creation.initial_seed
