"""Operators on IR nodes, so that maths on nodes reads as maths: `-(g * (n * n))`.

Each operator is one call of an ir constructor, which keeps its checks and folds, so an
expression builds exactly the nodes those calls would, in the tree it is written as:
`-(g * (n * n))` and `-g * n * n` are different graphs, hence different kernels. A Python
number becomes a constant of the node's dtype and shape. `==` stays identity (nodes are
interned and serve as dict keys): `.eq()` and `.ne()` compare values.
"""
from __future__ import annotations

from .ops import Op


# The operators that are one ir call, made from their Op (numpy's NDArrayOperatorsMixin's way)

def _binary(op: Op):
    """self op x."""
    def method(self, x):    # (_lift inlined: every operator on nodes runs this)
        return ir.binary(op, self, x if isinstance(x, MathTrait) else
                         ir.const(x, self.dtype, self.shape))
    return method


def _reflected(op: Op):
    """x op self, for a number x on the left of the operator."""
    def method(self, x):
        return ir.binary(op, x if isinstance(x, MathTrait) else
                         ir.const(x, self.dtype, self.shape), self)
    return method


def _unary(op: Op):
    def method(self):
        return ir.unary(op, self)
    return method


def _reduce(op: Op):
    def method(self, axes: tuple[int, ...]):
        return ir.reduce(op, self, axes)
    return method


class MathTrait:
    """Mixed into ir.Node, whose dtype and shape the operators read."""
    __slots__ = ()      # Node's own slots stay its only storage: no dict per node

    def const_like(self, value):
        """value as a constant of this node's dtype and shape."""
        return ir.const(value, self.dtype, self.shape)

    def _lift(self, x):
        """x as the other operand of a binary op: a node, or a number made a constant."""
        return x if isinstance(x, MathTrait) else ir.const(x, self.dtype, self.shape)

    # ---- arithmetic ----
    __add__, __radd__ = _binary(Op.ADD), _reflected(Op.ADD)
    __sub__, __rsub__ = _binary(Op.SUB), _reflected(Op.SUB)
    __mul__, __rmul__ = _binary(Op.MUL), _reflected(Op.MUL)
    __truediv__, __rtruediv__ = _binary(Op.DIV), _reflected(Op.DIV)
    __pow__, __rpow__ = _binary(Op.POW), _reflected(Op.POW)
    __mod__ = _binary(Op.MOD)
    maximum, minimum = _binary(Op.MAX), _binary(Op.MIN)

    __neg__ = _unary(Op.NEG)

    def __matmul__(self, x):
        return ir.matmul(self, x)

    matmul = __matmul__

    # ---- comparisons and logic ----
    __lt__, __gt__ = _binary(Op.CMPLT), _reflected(Op.CMPLT)
    eq = _binary(Op.CMPEQ)

    def __le__(self, x):
        # not `~(self > x)`: that is true where either side is NaN
        return (self < x) | self.eq(x)

    def __ge__(self, x):
        return (self > x) | self.eq(x)

    def ne(self, x):
        return ir.unary(Op.NOT, self.eq(x))     # the IR has no not-equal op

    logical_not = __invert__ = _unary(Op.NOT)

    __and__, __or__ = _binary(Op.AND), _binary(Op.OR)

    def __xor__(self, x):
        return ir.binary(Op.XOR, self, self._lift(x))

    def where(self, a, b):
        """a where this bool node holds, else b; a number takes the other branch's dtype."""
        if not isinstance(a, MathTrait):
            a = b.const_like(a)
        elif not isinstance(b, MathTrait):
            b = a.const_like(b)
        return ir.where(self, a, b)

    # ---- math functions ----
    exp, log, sqrt, recip = _unary(Op.EXP), _unary(Op.LOG), _unary(Op.SQRT), _unary(Op.RECIP)
    sin, cos, tanh, abs = _unary(Op.SIN), _unary(Op.COS), _unary(Op.TANH), _unary(Op.ABS)
    floor, ceil, round = _unary(Op.FLOOR), _unary(Op.CEIL), _unary(Op.ROUND)

    def cast(self, dtype):
        return ir.cast(self, dtype)

    def bitcast(self, dtype):
        return ir.bitcast(self, dtype)

    def detach(self):
        return ir.detach(self)

    # ---- reductions: the reduced axes stay, as size 1 ----
    sum, prod, max = _reduce(Op.SUM), _reduce(Op.PROD), _reduce(Op.RMAX)

    # ---- movement and whole-kernel ops ----
    def reshape(self, shape: tuple[int, ...]):
        return ir.reshape(self, shape)

    def permute(self, order: tuple[int, ...]):
        return ir.permute(self, order)

    def unpermute(self, order: tuple[int, ...]):
        """self, a value permuted by order, in its axes' first order."""
        return ir.permute(self, ir.inverse_order(order))

    def expand(self, shape: tuple[int, ...]):
        return ir.expand(self, shape)

    def pad(self, pads: tuple[tuple[int, int], ...], fill=0.0):
        return ir.pad(self, pads, fill)

    def shrink(self, bounds: tuple[tuple[int, int], ...]):
        return ir.shrink(self, bounds)

    def stride(self, steps: tuple[int, ...]):
        return ir.stride(self, steps)

    def window(self, axis: int, k: int, s: int = 1, d: int = 1):
        return ir.window(self, axis, k, s, d)

    def contiguous(self):
        return ir.contiguous(self)

    def gather(self, index, partials_in_type: bool = False):
        return ir.gather(self, index, partials_in_type)


# last: ir.py imports this module for Node's base class
from . import ir  # noqa: E402
