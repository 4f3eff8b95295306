"""Elementwise ops: arithmetic, comparisons, math functions, where, clamp."""
from __future__ import annotations

import math
import weakref

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from . import jit_protocol
from .backward import record
from .formula_steps import gradient_steps
from .grad_mode import is_grad_enabled
from .no_derivative import record_without_derivative
from .scalar_inputs import number_node
from .operands import (as_float, broadcast_shape, common_device, from_opmath, is_tensor,
                       lift, numpy_operands, opmath, result_dtype)


_NUMBERS = (int, float)     # Python numbers the fast path of _operands takes (bools take the other)


def _tensors(args):
    return [a for a in args if is_tensor(a)]


def operands(name: str, a, b, float_only=False, integer_numbers_read=False):
    """The tensors among a and b, their device, and a and b as nodes of the common dtype and
    the broadcast shape. A Python number is read from a buffer in float arithmetic, and in
    integer arithmetic too with integer_numbers_read (else it is a constant: integer products,
    divisions and shifts by one compile to cheaper code)."""
    # the common cases first, with nothing to promote, broadcast or check: two tensors of one
    # dtype and shape, or a float tensor and a Python number
    if is_tensor(a):
        na = a.node
        if is_tensor(b):
            nb = b.node
            if (na.dtype == nb.dtype and na.shape == nb.shape and a.device == b.device
                    and (na.dtype.is_float or not float_only)):
                return [a, b], a.device, na, nb
        elif type(b) in _NUMBERS and na.dtype.is_float:
            return [a], a.device, na, number_node(b, na.dtype, na.shape, a.device)
    elif type(a) in _NUMBERS and is_tensor(b) and b.dtype.is_float:
        nb = b.node
        return [b], b.device, number_node(a, nb.dtype, nb.shape, b.device), nb
    a, b = numpy_operands(a, b)
    tensors = _tensors((a, b))
    device = common_device(name, tensors)
    dtype = result_dtype(name, (a, b))
    if float_only and not dtype.is_float:
        dtype = dt.DEFAULT_FLOAT
    shape = broadcast_shape(name, *(t.shape for t in tensors))
    return (tensors, device, _operand(a, dtype, shape, device, integer_numbers_read),
            _operand(b, dtype, shape, device, integer_numbers_read))


def _operand(x, dtype: dt.DType, shape, device, integer_numbers_read: bool) -> ir.Node:
    """x (a tensor or a Python number) as a node of dtype and shape; a number read from a
    buffer (scalar_inputs) where dtype is a float, or an integer type and
    integer_numbers_read."""
    if type(x) in _NUMBERS and (dtype.is_float or integer_numbers_read and dtype != dt.bool_):
        return number_node(x, dtype, shape, device)
    return lift(x, dtype, shape)


_READS_INTEGERS = frozenset({Op.ADD, Op.SUB, Op.CMPLT, Op.CMPEQ})


def binary(name: str, op: Op, a, b, *, float_only=False, derive=None):
    """a op b with broadcasting and PyTorch promotion; a or b may be a Python number. name
    names the op in messages and its grad_fn (grad_fn_names). derive(a, b, na, nb), where
    given, makes the op's derivation (backward.record) from the operands and their nodes, or
    None."""
    if type(a) is np.ndarray or type(b) is np.ndarray:
        a, b = numpy_operands(a, b)     # uploaded once, for operands and the 16-bit branch
    # (a position, a mask's threshold: integer sums and comparisons read their numbers too)
    tensors, device, na, nb = operands(name, a, b, float_only,
                                       integer_numbers_read=op in _READS_INTEGERS)
    if op in (Op.MUL, Op.DIV) and na.dtype.is_16_bit_float:
        a, b = numpy_operands(a, b)     # (a NumPy scalar is read whole as a Python number)
        if _read_whole(b, na.dtype) or (op is Op.MUL and type(a) in _NUMBERS):
            node, derivation = _by_whole_number(op, a, b, na, nb, device)
            return record(name, node, device, tensors, derivation=derivation)
    derivation = derive(a, b, na, nb) if derive else None
    return record(name, ir.binary(op, na, nb), device, tensors, derivation=derivation)


def _read_whole(b, dtype: dt.DType) -> bool:
    """Whether PyTorch's CPU kernel of a 16-bit float a * b or a / b (of result dtype) reads
    b whole, in float32, rather than rounded to dtype: b a Python number, or a tensor of one
    element in another dtype (a 0-d float32 or int64: TensorIterator's is_scalar(2), read
    by original_scalar_value)."""
    return type(b) in _NUMBERS or is_tensor(b) and b.dtype != dtype and b.numel() == 1


def _by_whole_number(op: Op, a, b, na: ir.Node, nb: ir.Node, device) -> tuple:
    """(value, derivation) of a 16-bit float tensor times or divided by a number as PyTorch's
    kernels take it (_read_whole): whole, in float (x * 0.1 is x times 0.1, rounded once);
    its other ops take the number rounded to the tensor's dtype, as the constant is
    (dtype.scalar). Beside a number, the gradient is the value's own, g times the number
    whole; beside a tensor b, PyTorch's formulas, g * b and g / b to a (products by b whole
    again), g * a and -g * ((a / b) / b) (each quotient by b whole, rounded) to b in the
    type, summed over the shape in it, then cast to b's dtype."""
    wide = [_whole(given, na.shape, device) for given in (a, b)]
    value = ir.binary(op, *wide).cast(na.dtype)
    if not (is_tensor(a) and is_tensor(b)):
        return value, None
    whole = wide[1]
    to_b = na if op is Op.MUL else -(opmath(value) / whole).cast(value.dtype)
    return value, (gradient_steps(na, [(op, whole)], na.dtype)
                   + gradient_steps(nb, [(Op.MUL, to_b)], nb.dtype))


def _whole(given, shape, device) -> ir.Node:
    """A Python number or a tensor as a float32 node of shape."""
    if type(given) in _NUMBERS:
        return number_node(given, dt.float32, shape, device)
    return lift(given, dt.float32, shape)


def _divisor_as_read(b, nb: ir.Node, device) -> ir.Node:
    """The divisor b (nb as an operand of the result's dtype) as PyTorch's CPU kernels of div
    with a rounding mode read it: whole, in float32, beside a 16-bit float (_read_whole), as
    its mul and div do; else nb."""
    if nb.dtype.is_16_bit_float and _read_whole(b, nb.dtype):
        return _whole(b, nb.shape, device)
    return nb


def unary(name: str, op: Op, x):
    """A math function; integer inputs are computed in the default float type, as in PyTorch."""
    node = x.node if x.dtype.is_float else x.node.cast(dt.DEFAULT_FLOAT)
    return record(name, ir.unary(op, node), x.device, [x])


def cast(x, dtype: dt.DType):
    if x.dtype == dtype:
        return x
    return record("to", x.node.cast(dtype), x.device, [x])


def where(cond, a, b):
    tensors = _tensors((cond, a, b))
    device = common_device("where", tensors)
    if not is_tensor(cond) or cond.dtype != dt.bool_:
        raise TypeError("where: expected condition to be a bool tensor, got "
                        f"{cond.dtype.name if is_tensor(cond) else type(cond).__name__}")
    dtype = result_dtype("where", (a, b))
    shape = broadcast_shape("where", *(t.shape for t in tensors))
    # (a value of an int tensor a loop changes, as a float one: read from a buffer)
    node = lift(cond, dt.bool_, shape).where(_operand(a, dtype, shape, device, True),
                                             _operand(b, dtype, shape, device, True))
    return record("where", node, device, tensors)


def power(x, exponent):
    dtype = result_dtype("pow", (x, exponent))
    if not dtype.is_float:
        return _int_pow(x, exponent, dtype)
    if is_tensor(exponent) or not is_tensor(x):
        tensors, device, base, power = operands("pow", x, exponent, float_only=True)
        out = base ** power
        return record(_pow_name(x), out, device, tensors,
                      derivation=None if is_tensor(x) else _rpow_derivation(x, power, out))
    node = x.node.cast(dtype)
    if exponent == 2:    # exact and cheaper than pow(); same gradient
        return record("pow", node * node, x.device, [x])
    # PyTorch computes these as sqrt and rsqrt, which are NaN at -inf (pow gives inf and 0)
    # and -inf at -0.0 (pow: inf); x ** -0.5's gradient stays pow's, -0.5 * x ** -1.5, as
    # PyTorch's: g * -0 at -inf, NaN for a NaN g (the NaN there is added, not selected, so
    # that no where cuts the gradient to an exact 0: fuzz seed 4600882)
    if exponent == 0.5:
        return record("pow", node.sqrt(), x.device, [x])
    if exponent == -0.5:
        zero = node.eq(0)     # each form reads 1 where it is not taken: no 0 * inf gradient
        rsqrt = zero.where(zero.where(node, 1).sqrt().recip(), zero.where(1, node) ** exponent)
        return record("pow", rsqrt + node.eq(-math.inf).where(math.nan, node.const_like(0)),
                      x.device, [x])
    return record("pow", node ** exponent, x.device, [x])


def _rpow_derivation(base, exponent: ir.Node, out: ir.Node) -> ir.Node:
    """PyTorch's gradient of a number to a tensor's power: g * (r * log(base)), the log whole
    (a 16-bit float's r * log(base) rounded to it, then times g: not log(base) rounded
    first), and 0 for g to multiply where the base is 0 and the exponent >= 0."""
    base = float(base)
    log = math.log(base) if base > 0 else -math.inf if base == 0 else math.nan
    slope = from_opmath(opmath(out) * log, out)
    if base == 0:
        slope = (exponent >= 0).where(0, slope)
    return gradient_steps(exponent, [(Op.MUL, slope)], exponent.dtype)


def _pow_name(x) -> str:
    """The name of a power with a tensor exponent: of a tensor, or of a number."""
    return "pow_tensor" if is_tensor(x) else "rpow"


def _int_pow(x, exponent, dtype):
    """Integer powers: repeated squaring for a Python exponent, else pow in float64, rounded."""
    tensors = _tensors((x, exponent))
    device = common_device("pow", tensors)
    shape = broadcast_shape("pow", *(t.shape for t in tensors))
    if is_tensor(x) and not is_tensor(exponent):
        if exponent < 0:
            raise RuntimeError(f"pow: integers to negative integer powers are not allowed "
                               f"(base {x.dtype.name} {x.shape}, exponent {exponent})")
        base = x.node.cast(dtype)
        result = base.const_like(1)
        while exponent:
            if exponent & 1:
                result = result * base
            exponent >>= 1
            if exponent:
                base = base * base
        return record("pow", result, device, tensors)
    wide = dt.float64 if device.has_fp64 else dt.float32
    node = (lift(x, wide, shape) ** lift(exponent, wide, shape)).round().cast(dtype)
    return record(_pow_name(x), node, device, tensors)


def relu(x):
    """0 where x < 0, else x, as PyTorch's max(x, 0): -0.0 and NaN stay. The gradient is 0
    where x <= 0 (threshold_backward): x == 0 reads a detached x, which the kernel compiler
    folds away (x == 0 ? x : x); a NaN passes it."""
    node = x.node
    zero = node.const_like(0)
    kept = node.eq(zero).where(node.detach(), node)
    return record("relu", (node < zero).where(zero, kept), x.device, [x])


# Below this, sigmoid(x) is exp(x) once rounded (exp(x) is under half an ulp of 1)
_SIGMOID_IS_EXP = {4: -17.0, 8: -37.0}


def sigmoid(x):
    """1 / (1 + t) with t = exp(-|x|) for x >= 0, 1 / (1 + 1 / t) below, t itself far below.
    t never overflows, so the gradient far below zero is 0 as PyTorch's, not 0 * inf. Each
    form reads x along one path: its gradient is one product, g * sigmoid'(x), so an
    infinite g stays infinite (t / (1 + t) reads t twice: inf - inf = NaN)."""
    given = as_float(x.node)
    node = opmath(given)
    below = node < 0
    t = below.where(node, -node).exp()
    far = node < _SIGMOID_IS_EXP[8 if node.dtype.itemsize == 8 else 4]
    # 1 / t overflows far below and above zero, where this form is not taken: there it reads
    # 1, so that its gradient (0) is no 0 * inf
    negative = 1 / (1 + 1 / (below & ~far).where(t, 1))
    value = below.where(far.where(t, negative), 1 / (1 + t))
    out = from_opmath(value, given)
    # a 16-bit float's gradient is PyTorch's sigmoid_backward, g (1 - r) r of the rounded
    # result r (not of the float32 value): for bfloat16 in float32, rounded once, for
    # float16 each step rounded to it
    derivation = None
    if given.dtype.is_16_bit_float:
        steps_in = dt.float32 if given.dtype == dt.bfloat16 else given.dtype
        r = out.cast(steps_in)
        derivation = gradient_steps(given, [(Op.MUL, 1 - r), (Op.MUL, r)], steps_in)
    return record("sigmoid", out, x.device, [x], derivation=derivation)


def rsqrt_node(x: ir.Node) -> ir.Node:
    """1 / sqrt(x) of a float node as PyTorch's rsqrt: a 16-bit float's in float32, rounded
    once."""
    return from_opmath(opmath(x).sqrt().recip(), x)


def rsqrt(x):
    """1 / sqrt(x) (rsqrt_node). The gradient is PyTorch's, -0.5 g r³ of the result r, a
    16-bit float's each step rounded (its pow(r, 3): a float16's rounded once, a bfloat16's
    each product)."""
    given = as_float(x.node)
    out = rsqrt_node(given)
    r = opmath(out) if given.dtype != dt.bfloat16 else out
    cube = from_opmath(r * r * r, given)
    return record("rsqrt", out, x.device, [x],
                  derivation=gradient_steps(given, [(Op.MUL, -0.5), (Op.MUL, cube)], given.dtype))


def sign(x):
    """-1 below 0, 1 above, else 0 (NaN too). As selects, not (0 < x) - (x < 0): Intel's
    compiler folds that of a negation (-x) to 0 for the most negative integer (-x wraps to
    itself). The last branch is |round(x)| (+0 there, for -0 too), so that the gradient is
    PyTorch's: zeros that flow on (0 * inf is NaN before), not none at all."""
    node = x.node
    zero = node.const_like(0)
    rest = node.eq(node).where(node.round().abs(), zero)
    above = (zero < node).where(node.const_like(1), rest)
    return record("sign", (node < zero).where(node.const_like(-1), above), x.device, [x])


def zero_gradient(value, *nodes):
    """A derivation for record (backward.record) of value, whose gradient to each of nodes is
    zeros (PyTorch's formula) rather than none, whatever flows in: value (detached or made of
    comparisons) with the nodes joined through floor, whose rule gives 0. The kernels compute
    value alone. floor(x) * 0 is NaN at ±inf and NaN, where a plain 0 stands instead."""
    for node in nodes:
        zero = (node - node).eq(0).where((node.floor() * 0).abs(), node.const_like(0))
        value = value - zero.cast(value.dtype)
    return value


def clamp(x, min=None, max=None):
    if min is None and max is None:
        raise ValueError("clamp: at least one of min and max must be given")
    for bound in (min, max):
        if bound is not None and is_tensor(bound):
            raise TypeError("clamp: tensor bounds are not supported; use maximum/minimum")
    dtype = result_dtype("clamp", [x] + [b for b in (min, max) if b is not None])
    node = x.node.cast(dtype)
    differentiated = node.dtype.is_float and x.requires_grad and is_grad_enabled()
    if min is not None:
        lo = _operand(min, dtype, node.shape, x.device, True)
        node = _clamp_side(node, node >= lo if differentiated else None, node < lo, lo)
    if max is not None:
        hi = _operand(max, dtype, node.shape, x.device, True)
        node = _clamp_side(node, node <= hi if differentiated else None, hi < node, hi)
    return record("clamp", node, x.device, [x])


def _clamp_side(node: ir.Node, inside: ir.Node | None, beyond: ir.Node,
                bound: ir.Node) -> ir.Node:
    """bound where beyond, else node. Where a gradient is taken (inside given), a NaN
    (neither inside nor beyond) stays NaN with gradient 0, as in PyTorch, whose clamp passes
    the gradient where min <= x <= max only; without one the two forms are the same values,
    and the shorter records faster (a custom ReLU's forward, under no_grad)."""
    if inside is None:
        return beyond.where(bound, node)
    return inside.where(node, beyond.where(bound, node.detach()))


def _signs_differ(x: ir.Node, y: ir.Node) -> ir.Node:
    zero = x.const_like(0)
    return (x < zero).ne(y < zero)


class IntegerDivisionByZero(RuntimeError, ZeroDivisionError):
    """An integer // or % by zero. PyTorch raises RuntimeError("ZeroDivisionError") on the
    CPU; this is both, so either except clause catches it."""


# buffer node of an integer divisor read and found free of zeros; held weakly (the entry goes
# with the node), as a buffer node's values do not change while it lives
_DIVISORS_READ: weakref.WeakSet = weakref.WeakSet()


def _check_divisor(name: str, a, b, dtype: dt.DType) -> None:
    """Raises IntegerDivisionByZero when b, an integer divisor, has a zero. A number is
    checked as it is; a tensor is read on the host, computed first if it is lazy (a wait on
    the device, once per buffer: a divisor read before is not read again). In a jitted step,
    whose replays get new values, it is not read: the kernels divide by 1 where the divisor
    is 0 (render.py), so a zero there gives a defined value, never a trap."""
    if dtype.is_float or dtype == dt.bool_ or is_tensor(a) and a.numel() == 0:
        return      # (an empty result divides nothing)
    if not is_tensor(b):
        zero = b == 0
    elif b.node.op is Op.CONST:
        zero = b.node.arg == 0
    else:
        if jit_protocol.in_jit() or b.numel() == 0:
            return
        b.realize()
        if b.node in _DIVISORS_READ:
            return
        zero = not b.numpy().all()
        if not zero:
            _DIVISORS_READ.add(b.node)
    if zero:
        left = f"{a.dtype.name} tensor of shape {a.shape}" if is_tensor(a) else repr(a)
        right = f"a {b.dtype.name} tensor of shape {b.shape} holding 0" if is_tensor(b) else "0"
        raise IntegerDivisionByZero(f"{name}: ZeroDivisionError: integer division by zero "
                                    f"({left} by {right})")


def floor_divide(a, b):
    """Python's // : rounds toward negative infinity (_floor_quotient for floats). PyTorch has
    no derivative for it: backward through a float result raises (div's rounding_mode='floor'
    has the zero gradient)."""
    tensors, device, _, _, node = _floored("floor_divide", a, b)
    return record_without_derivative("floor_divide", node, device, tensors)


def _floored(name: str, a, b):
    """operands' tensors, device and nodes for a // b, and its quotient's node."""
    a, b = numpy_operands(a, b)
    tensors, device, na, nb = operands(name, a, b)
    _check_divisor(name, a, b, na.dtype)
    if na.dtype.is_float:
        return tensors, device, na, nb, _floor_quotient(na, _divisor_as_read(b, nb, device))
    # C truncates; step down where the signs differ and it did not divide evenly
    q = na / nb
    adjust = (q * nb).ne(na) & _signs_differ(na, nb)
    return tensors, device, na, nb, q - adjust.cast(na.dtype)


def _floor_quotient(a: ir.Node, b: ir.Node) -> ir.Node:
    """a // b of floats, read detached, by PyTorch's steps (Python's for floats): the quotient
    of a - fmod(a, b), which is exact, stepped down where the remainder's sign is not b's, then
    rounded to the nearest integer; not floor(a / b), which gives 10 for 1 // 0.1 (a / b
    rounds up to 10; Python and PyTorch give 9), ±inf for ±inf // 2 (NaN) and -0.0 for
    -5 // inf (-1). 16-bit floats compute in float32, as PyTorch's CPU kernels (b may be a
    float32 divisor read whole); the quotient is of a's dtype."""
    x, y = opmath(a.detach()), opmath(b.detach())
    mod = x % y
    div = (x - mod) / y
    div = (mod.ne(0) & _signs_differ(y, mod)).where(div - 1, div)
    floor = div.floor()
    nearest = (div - floor > 0.5).where(floor + 1, floor)
    quotient = x / y
    node = div.ne(0).where(nearest, ir.binary(Op.COPYSIGN, x.const_like(0), quotient))
    return y.eq(0).where(quotient, node).cast(a.dtype)


def divide(a, b, rounding_mode: str | None = None):
    """a / b, its quotient truncated toward zero (rounding_mode 'trunc') or floored ('floor');
    integer operands keep their dtype when rounded, as in PyTorch."""
    if rounding_mode is None:
        return a / b
    if rounding_mode == "floor":
        tensors, device, na, nb, node = _floored("div", a, b)
        derivation = zero_gradient(node, na, nb) if node.dtype.is_float else None
        return record("div_rounded", node, device, tensors, derivation=derivation)
    if rounding_mode != "trunc":
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' "
                           f"but found '{rounding_mode}'")
    a, b = numpy_operands(a, b)
    tensors, device, na, nb = operands("div", a, b)
    if na.dtype.is_float:       # gradient 0, also where a / b's is NaN (a = ±inf, NaN)
        quotient = _truncated_quotient(na, b, nb, device)
        return record("div_rounded", quotient, device, tensors,
                      derivation=zero_gradient(quotient, na, nb))
    _check_divisor("div", a, b, na.dtype)
    return record("div_rounded", na / nb, device, tensors)  # C's integer division truncates


def _truncated_quotient(na: ir.Node, b, nb: ir.Node, device) -> ir.Node:
    """trunc(a / b) of floats, detached, as PyTorch's div with rounding_mode 'trunc': a 16-bit
    quotient rounded to the type, then truncated; by a divisor read whole, truncated in
    float32, then rounded."""
    divisor = _divisor_as_read(b, nb, device).detach()
    quotient = na.detach().cast(divisor.dtype) / divisor
    return (quotient < 0).where(quotient.ceil(), quotient.floor()).cast(na.dtype)


def remainder(a, b):
    """Python's % : the result takes the sign of the divisor. Its gradient is PyTorch's:
    -a // b to b (Python's floor division, not fmod's rule's truncated a / b corrected; its
    div(a, b, rounding_mode='floor'), which reads b whole where % rounds it)."""
    a, b = numpy_operands(a, b)
    tensors, device, na, nb = operands("remainder", a, b)
    _check_divisor("remainder", a, b, na.dtype)
    r = na % nb
    fix = _signs_differ(r, nb) & r.ne(0)
    derivation = None
    if na.dtype.is_float:
        derivation = na - _floor_quotient(na, _divisor_as_read(b, nb, device)) * nb
    return record("remainder", fix.where(r + nb, r), device, tensors, derivation=derivation)


def fmod(self, other):
    """C's fmod: the remainder of truncated division, with the dividend's sign; exact. (The
    Tensor method and, self renamed input, torch.fmod.)"""
    tensors, device, na, nb = operands("fmod", self, other)
    _check_divisor("fmod", self, other, na.dtype)
    derivation = None
    if is_tensor(other) and nb.dtype.is_16_bit_float and _read_whole(other, nb.dtype):
        # PyTorch's gradient to other, -g * self.div(other, rounding_mode="trunc"), reads a
        # 0-d float32 other whole; the MOD rule's quotient rounds first (fuzz seed 101900337)
        derivation = na - _truncated_quotient(na, other, nb, device) * nb
    return record("fmod", na % nb, device, tensors, derivation=derivation)


def logical_not(x):
    return record("logical_not", x.node.cast(dt.bool_).logical_not(), x.device, [x])


_COMPARE = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
            "ge": lambda a, b: a >= b, "eq": lambda a, b: a.eq(b), "ne": lambda a, b: a.ne(b)}


def compare(name: str, a, b):
    """a < b, <=, >, >=, ==, != (name lt, le, gt, ge, eq, ne) with broadcasting and
    promotion. A NaN compares false with everything (true for ne), as in PyTorch; the result
    is a bool tensor outside autograd."""
    from .tensor import Tensor
    tensors, device, na, nb = operands(name, a, b, integer_numbers_read=True)
    return Tensor(_COMPARE[name](na, nb), device)


def bitwise_not(x):
    """~x: the bitwise complement of an integer tensor, the logical not of a bool one."""
    if x.dtype.is_float:
        raise TypeError(f"bitwise_not: ~ (operator.invert) is only implemented on integer and "
                        f"Boolean-type tensors, got {x.dtype.name} {x.shape}")
    from .tensor import Tensor
    return Tensor(~x.node, x.device)
