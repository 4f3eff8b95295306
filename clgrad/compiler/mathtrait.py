"""Operators on IR nodes, so that maths on nodes reads as maths: `-(g * (n * n))`.

Each operator is one call of an ir constructor, which keeps its checks and folds, so an
expression builds exactly the nodes those calls would, in the tree it is written as:
`-(g * (n * n))` and `-g * n * n` are different graphs, hence different kernels. A Python
number becomes a constant of the node's dtype and shape. `==` stays identity (nodes are
interned and serve as dict keys): `.eq()` and `.ne()` compare values.
"""
from __future__ import annotations

from .ops import Op


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
    def __add__(self, x):
        return ir.binary(Op.ADD, self, self._lift(x))

    def __radd__(self, x):
        return ir.binary(Op.ADD, self._lift(x), self)

    def __sub__(self, x):
        return ir.binary(Op.SUB, self, self._lift(x))

    def __rsub__(self, x):
        return ir.binary(Op.SUB, self._lift(x), self)

    def __mul__(self, x):
        return ir.binary(Op.MUL, self, self._lift(x))

    def __rmul__(self, x):
        return ir.binary(Op.MUL, self._lift(x), self)

    def __truediv__(self, x):
        return ir.binary(Op.DIV, self, self._lift(x))

    def __rtruediv__(self, x):
        return ir.binary(Op.DIV, self._lift(x), self)

    def __mod__(self, x):
        return ir.binary(Op.MOD, self, self._lift(x))

    def __pow__(self, x):
        return ir.binary(Op.POW, self, self._lift(x))

    def __rpow__(self, x):
        return ir.binary(Op.POW, self._lift(x), self)

    def __neg__(self):
        return ir.unary(Op.NEG, self)

    def maximum(self, x):
        return ir.binary(Op.MAX, self, self._lift(x))

    def minimum(self, x):
        return ir.binary(Op.MIN, self, self._lift(x))

    def __matmul__(self, x):
        return ir.matmul(self, x)

    matmul = __matmul__

    # ---- comparisons and logic ----
    def __lt__(self, x):
        return ir.binary(Op.CMPLT, self, self._lift(x))

    def __gt__(self, x):
        return ir.binary(Op.CMPLT, self._lift(x), self)

    def __le__(self, x):
        # not `~(self > x)`: that is true where either side is NaN
        return (self < x) | self.eq(x)

    def __ge__(self, x):
        return (self > x) | self.eq(x)

    def eq(self, x):
        return ir.binary(Op.CMPEQ, self, self._lift(x))

    def ne(self, x):
        return ir.unary(Op.NOT, self.eq(x))     # the IR has no not-equal op

    def logical_not(self):
        return ir.unary(Op.NOT, self)

    __invert__ = logical_not

    def __and__(self, x):
        return ir.binary(Op.AND, self, self._lift(x))

    def __or__(self, x):
        return ir.binary(Op.OR, self, self._lift(x))

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
    def exp(self):
        return ir.unary(Op.EXP, self)

    def log(self):
        return ir.unary(Op.LOG, self)

    def sqrt(self):
        return ir.unary(Op.SQRT, self)

    def recip(self):
        return ir.unary(Op.RECIP, self)

    def sin(self):
        return ir.unary(Op.SIN, self)

    def cos(self):
        return ir.unary(Op.COS, self)

    def tanh(self):
        return ir.unary(Op.TANH, self)

    def abs(self):
        return ir.unary(Op.ABS, self)

    def floor(self):
        return ir.unary(Op.FLOOR, self)

    def ceil(self):
        return ir.unary(Op.CEIL, self)

    def round(self):
        return ir.unary(Op.ROUND, self)

    def cast(self, dtype):
        return ir.cast(self, dtype)

    def detach(self):
        return ir.detach(self)

    # ---- reductions: the reduced axes stay, as size 1 ----
    def sum(self, axes: tuple[int, ...]):
        return ir.reduce(Op.SUM, self, axes)

    def prod(self, axes: tuple[int, ...]):
        return ir.reduce(Op.PROD, self, axes)

    def max(self, axes: tuple[int, ...]):
        return ir.reduce(Op.RMAX, self, axes)

    # ---- movement and whole-kernel ops ----
    def reshape(self, shape: tuple[int, ...]):
        return ir.reshape(self, shape)

    def permute(self, order: tuple[int, ...]):
        return ir.permute(self, order)

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

    def gather(self, index):
        return ir.gather(self, index)


# last: ir.py imports this module for Node's base class
from . import ir  # noqa: E402
