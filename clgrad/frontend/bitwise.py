"""Bitwise ops on integer and bool tensors (& | ^ ~ << >>, reflected and in place) and the
logical ops on any dtype, as PyTorch's: results outside autograd, floats refused where
PyTorch refuses them. Installed on Tensor by tensor.py from METHODS."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from . import elementwise as ew
from .composite_methods import _in_place
from .operands import is_tensor

_BITWISE = {"bitwise_and": Op.AND, "bitwise_or": Op.OR, "bitwise_xor": Op.XOR}


def _refuse(name: str, dtype: dt.DType, a, b) -> None:
    """PyTorch's CPU kernels of these ops take integers, and bools except for shifts."""
    if dtype.is_float or (dtype == dt.bool_ and name.endswith("shift")):
        operands = " and ".join(f"{v.dtype.name} {v.shape}" if is_tensor(v) else repr(v)
                                for v in (a, b))
        raise NotImplementedError(f'"{name}" not implemented for {dtype.name} '
                                  f"(operands {operands})")


def _result(node: ir.Node, device):
    from .tensor import Tensor
    return Tensor(node, device)


def _bitwise(name: str):
    def op(input, other):
        _, device, na, nb = ew.operands(name, input, other)
        _refuse(name, na.dtype, input, other)
        return _result(ir.binary(_BITWISE[name], na, nb), device)
    return op


def _shift(name: str, a, b):
    """a << b or a >> b (arithmetic, keeping the sign). Counts beyond the bit width or
    negative shift everything out, as PyTorch's: left to 0, right to 0 or -1. C leaves
    them undefined, so the kernel shifts by 0 there and picks the answer."""
    _, device, na, nb = ew.operands(name, a, b)
    _refuse(name, na.dtype, a, b)
    bits = na.dtype.itemsize * 8
    outside = (nb < 0) | (nb >= bits)
    count = outside.where(0, nb)
    if name == "bitwise_left_shift":
        node = outside.where(0, ir.binary(Op.SHL, na, count))
    else:
        node = outside.where(ir.binary(Op.SHR, na, na.const_like(bits - 1)),
                             ir.binary(Op.SHR, na, count))
    return _result(node, device)


def left_shift(input, other):
    return _shift("bitwise_left_shift", input, other)


def right_shift(input, other):
    return _shift("bitwise_right_shift", input, other)


def _logical(name: str, combine):
    """a and b as bools (nonzero, NaN included, is true), combined; a bool tensor."""
    def op(input, other):
        _, device, na, nb = ew.operands(name, input, other)
        return _result(combine(na.cast(dt.bool_), nb.cast(dt.bool_)), device)
    return op


_FUNCTIONS = {
    **{name: _bitwise(name) for name in _BITWISE},
    "bitwise_left_shift": left_shift, "bitwise_right_shift": right_shift,
    "logical_and": _logical("logical_and", lambda a, b: a & b),
    "logical_or": _logical("logical_or", lambda a, b: a | b),
    "logical_xor": _logical("logical_xor", lambda a, b: a.ne(b)),
}

_OPERATORS = {"and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
              "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift"}

IN_PLACE = (*_FUNCTIONS, "bitwise_not")

METHODS = (list(_FUNCTIONS.items())
           + [("bitwise_not", ew.bitwise_not)]
           + [(f"__{short}__", _FUNCTIONS[name]) for short, name in _OPERATORS.items()]
           + [(f"__r{short}__", lambda self, other, _fn=_FUNCTIONS[name]: _fn(other, self))
              for short, name in _OPERATORS.items()]
           + [(f"{name}_", _in_place(name)) for name in IN_PLACE]
           + [(f"__i{short}__", _in_place(name)) for short, name in _OPERATORS.items()])
