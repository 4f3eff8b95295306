"""Argument checks of torch.special's functions, with PyTorch's exception types and words,
raised when the op is recorded: a tensor where one is required, the (Tensor, Tensor),
(Number, Tensor) and (Tensor, Number) forms of the binary functions, and the dtypes a CPU
kernel takes (integers and bools are computed in the default float type)."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler.ir import Node
from . import elementwise as ew
from .operands import as_float, is_tensor
from .type_functions import _SCALAR_TYPE

_NUMBERS = (bool, int, float)


def tensor_argument(name: str, x, argument: str = "input", position: int = 1) -> None:
    if not is_tensor(x):
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be "
                        f"Tensor, not {type(x).__name__}")


def kernel_dtype(name: str, dtype: dt.DType, half: bool) -> None:
    """PyTorch's CPU kernel of name takes float16 and bfloat16 only when half holds."""
    if dtype.is_16_bit_float and not half:
        raise NotImplementedError(f'"{name}_cpu" not implemented for '
                                  f"'{_SCALAR_TYPE[dtype]}'")


def unary(name: str, x, half: bool = False) -> Node:
    """x's node for a float function of one tensor (integers in the default float type)."""
    tensor_argument(f"special_{name}", x)
    node = as_float(x.node)
    kernel_dtype(name, node.dtype, half)
    return node


def binary(name: str, a, b, names: tuple[str, str] = ("input", "other"), half: bool = True):
    """(tensors, device, a, b) as elementwise.operands gives them, for a function PyTorch
    takes as (Tensor, Tensor), (Number, Tensor) or (Tensor, Number), in float."""
    if not ((is_tensor(a) or isinstance(a, _NUMBERS)) and (is_tensor(b) or isinstance(
            b, _NUMBERS)) and (is_tensor(a) or is_tensor(b))):
        got = ", ".join(type(v).__name__ if not is_tensor(v) else "Tensor" for v in (a, b))
        first, second = names
        raise TypeError(
            f"special_{name}() received an invalid combination of arguments - got ({got}), but "
            f"expected one of:\n * (Tensor {first}, Tensor {second}, *, Tensor out = None)\n"
            f" * (Number {'self' if first == 'input' else first}, Tensor {second}, *, Tensor "
            f"out = None)\n * (Tensor {first}, Number {second}, *, Tensor out = None)\n")
    tensors, device, na, nb = ew.operands(f"special_{name}", a, b, float_only=True)
    kernel_dtype(name, na.dtype, half)
    return tensors, device, na, nb


def variant(op: str, a, b) -> str:
    """The op's name for autograd: PyTorch numbers the overloads whose first or second
    operand is a Python number (XlogyBackward1, SpecialZetaBackward2)."""
    if not is_tensor(a):
        return f"{op}_self_scalar"
    return op if is_tensor(b) else f"{op}_other_scalar"


def named(function, name: str, doc: str):
    """function under torch.special's name for it, with its docstring."""
    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function
