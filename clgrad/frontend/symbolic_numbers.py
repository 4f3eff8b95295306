"""torch.sym_*: PyTorch's helpers for numbers that may be symbolic sizes while it traces.
clgrad traces nothing, so they take Python (and NumPy) numbers and behave as PyTorch's do on
them: sym_max and sym_min promote to float when either side is a float, sym_ite needs a bool
and two values of one type."""
from __future__ import annotations

import builtins
import math

import numpy as np

_NUMBERS = (np.integer, np.floating, builtins.int, builtins.float)
_FLOATS = (np.floating, builtins.float)


def sym_int(a):
    return builtins.int(a)


def sym_float(a):
    return builtins.float(a)


def _extreme(pick, a, b):
    for value in (a, b):
        if not isinstance(value, _NUMBERS):
            raise AssertionError(f"expected {_NUMBERS}, got {type(value)}")
    if isinstance(a, _FLOATS) or isinstance(b, _FLOATS):
        return builtins.float(pick(a, b))
    return pick(a, b)


def sym_max(a, b):
    return _extreme(builtins.max, a, b)


def sym_min(a, b):
    return _extreme(builtins.min, a, b)


def sym_not(a):
    return not a


def sym_sqrt(a):
    return math.sqrt(a)


def sym_sum(*args):
    """sym_sum(a, b, c) or sym_sum([a, b, c])."""
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = args[0]
    return builtins.sum(args)


def sym_ite(b, t, f):
    """t if b else f."""
    if not isinstance(b, builtins.bool):
        raise AssertionError(f"expected SymBool or bool, got {type(b)}")
    if type(t) is not type(f):
        raise AssertionError(f"type mismatch: {type(t)} vs {type(f)}")
    return t if b else f


FUNCTIONS = {fn.__name__: fn for fn in (sym_int, sym_float, sym_max, sym_min, sym_not,
                                        sym_sqrt, sym_sum, sym_ite)}
