"""Checks and conversions shared by every op: devices, dtypes, broadcasting, scalars.
Errors are raised here, when the op is recorded, and name the op and what it got."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node


def is_tensor(x) -> bool:
    return isinstance(x, tensor.Tensor)


def common_device(op: str, tensors):
    device = tensors[0].device
    for t in tensors:       # by identity first: a Device hashes and compares in Python
        if t.device is not device:
            break
    else:
        return device
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        names = ", ".join(sorted(d.spec for d in devices))
        raise RuntimeError(f"{op}: expected all tensors on one device, got tensors on {names}; "
                           f"move them with .to(device)")
    return next(iter(devices))


def broadcast_shape(op: str, *shapes: tuple[int, ...]) -> tuple[int, ...]:
    if len(shapes) == 1 or all(s == shapes[0] for s in shapes):
        return tuple(shapes[0])
    ndim = max(len(s) for s in shapes)
    result = []
    for axis in range(ndim):
        sizes = {s[axis - ndim + len(s)] for s in shapes if axis - ndim + len(s) >= 0} - {1}
        if len(sizes) > 1:
            shown = " and ".join(str(tuple(s)) for s in shapes)
            raise RuntimeError(f"{op}: shapes {shown} cannot be broadcast together "
                               f"(dimension {axis - ndim} has sizes {sorted(sizes)})")
        result.append(sizes.pop() if sizes else 1)
    return tuple(result)


def broadcast_to(node: Node, shape: tuple[int, ...]) -> Node:
    if node.shape == shape:
        return node
    node = ir.reshape(node, (1,) * (len(shape) - len(node.shape)) + node.shape)
    return ir.expand(node, shape)


def numpy_operands(a, b) -> tuple:
    """a and b as PyTorch reads NumPy operands of arithmetic: a NumPy scalar is a Python
    number, an array a tensor (on the other operand's device)."""
    def read(value, other):
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, np.ndarray) and is_tensor(other):
            if not value.ndim and other.ndim:
                # PyTorch promotes with a 0-d array as with a dimensioned tensor (float32 +
                # a float64 array is float64); shaped (1,), it broadcasts away all the same
                value = value.reshape(1)
            return creation.tensor(value, device=other.device)
        return value
    return read(a, b), read(b, a)


def check_scalar(op: str, value) -> None:
    if not isinstance(value, (bool, int, float)):
        raise TypeError(f"{op}: expected a Tensor or a Python number, got {type(value).__name__}")


def result_dtype(op: str, args) -> dt.DType:
    # the common case first: tensors of one float or integer dtype with Python ints or floats,
    # which that dtype holds (a float scalar raises only an integer dtype)
    dtype, float_scalar = None, False
    for a in args:
        if type(a) is float:
            float_scalar = True
        elif type(a) is not int:
            if not is_tensor(a) or dtype is not None and a.dtype is not dtype:
                break
            dtype = a.dtype
    else:
        if dtype is not None and (dtype.is_float or dtype.kind == "i" and not float_scalar):
            return dtype
    dims, zero_dims, scalars = [], [], []
    for a in args:
        if is_tensor(a):
            (dims if a.ndim else zero_dims).append(a.dtype)
        else:
            check_scalar(op, a)
            scalars.append(type(a))
    return dt.result_type(dims, zero_dims, scalars)


def lift(x, dtype: dt.DType, shape: tuple[int, ...]) -> Node:
    """x (a Tensor or a Python number) as a node of dtype and shape."""
    if is_tensor(x):
        return broadcast_to(ir.cast(x.node, dtype), shape)
    return ir.const(x, dtype, shape)


def as_float(node: Node) -> Node:
    """node, cast to the default float type unless it is float: math functions of integers
    are computed in it, as in PyTorch."""
    return node if node.dtype.is_float else node.cast(dt.DEFAULT_FLOAT)


def opmath(node: Node) -> Node:
    """node in the type a function made of several ops computes in: float32 for a 16-bit
    float, whose every op's result is rounded, where PyTorch's kernel of the function (a
    softmax, a norm, an activation) rounds only what it returns (a float16 group_norm was 44
    half-ulps off)."""
    return node.cast(dt.float32) if node.dtype.is_16_bit_float else node


def from_opmath(result: Node, node: Node) -> Node:
    """result, computed in opmath(node)'s type, in node's."""
    return result.cast(node.dtype)


def rounded_once(build, *nodes: Node) -> tuple[Node, Node | None]:
    """(value, derivation) for backward.record of build(*nodes), ops that PyTorch's kernel
    computes for 16-bit floats in float32 and rounds once (a product and the bias added to
    it: addmm, a convolution), where its backward runs the 16-bit ops its formulas name (a
    product of g rounded to the type, a sum of g): the value is build of the nodes in
    opmath, rounded once, the gradients those of build of the nodes themselves. Of other
    dtypes, build(*nodes) and no derivation."""
    if not nodes[0].dtype.is_16_bit_float:
        return build(*nodes), None
    return from_opmath(build(*(opmath(n) for n in nodes)), nodes[0]), build(*nodes)


def normalize_dim(op: str, dim: int, ndim: int) -> int:
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"{op}: dimension {dim} is out of range for a tensor of {ndim} "
                         f"dimensions (expected {-rank} to {rank - 1})")
    return dim % rank


def normalize_dims(op: str, dims, ndim: int) -> tuple[int, ...]:
    if dims is None:
        return tuple(range(ndim))
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(normalize_dim(op, d, ndim) for d in dims)
    if len(set(out)) != len(out):
        raise RuntimeError(f"{op}: dimension appears more than once in {tuple(dims)}")
    return out if ndim else ()


# last: tensor.py imports this module, and a function-level import costs ~1 us per call
from . import creation, tensor  # noqa: E402
