"""Tensor.apply_, map_ and map2_: a Python callable applied to each element (with the
matching elements of other tensors, broadcast to self's shape), as PyTorch's CPU-only
methods. The values are read to the host, the callable runs on Python numbers, and the results
are written back in self's dtype through inplace.assign (version counter, views, NumPy's
shared memory), on any device."""
from __future__ import annotations

import numbers

import numpy as np

from . import creation, inplace
from .tensor import host_values


def _python_type(dtype):
    """What a result is converted to: PyTorch truncates a float result for an integer tensor."""
    return float if dtype.is_float else bool if dtype.name == "bool" else int


def _mapped(op: str, self, others: tuple, callable):
    if self.requires_grad:
        raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use "
                           f"var.detach().{op}() instead.")
    columns = [host_values(self).reshape(-1).tolist()]
    for name, other in others:
        if other.dtype != self.dtype:
            raise TypeError(f"{op}: expected a {self.dtype.name} tensor for '{name}' (got "
                            f"{other.dtype.name})")
        columns.append(host_values(other.expand(self.shape)).reshape(-1).tolist())
    convert, results = _python_type(self.dtype), []
    for args in zip(*columns):
        result = callable(*args)
        if not isinstance(result, numbers.Real):
            raise TypeError(f"must be real number, not {type(result).__name__}")
        results.append(convert(result))
    values = np.array(results, dtype=np.float64 if self.dtype.is_float else np.int64)
    new = creation.tensor(values.reshape(self.shape), dtype=self.dtype, device=self.device)
    return inplace.assign(self, new, op)


def apply_(self, callable):
    """self[i] = callable(self[i]) for every element."""
    return _mapped("apply_", self, (), callable)


def map_(self, tensor, callable):
    """self[i] = callable(self[i], tensor[i]), tensor broadcast to self's shape."""
    return _mapped("map_", self, (("other", tensor),), callable)


def map2_(self, x, y, callable):
    """self[i] = callable(self[i], x[i], y[i]), x and y broadcast to self's shape."""
    return _mapped("map2_", self, (("x", x), ("y", y)), callable)


METHODS = [("apply_", apply_), ("map_", map_), ("map2_", map2_)]
