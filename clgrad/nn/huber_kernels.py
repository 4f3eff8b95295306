"""smooth_l1_loss's and huber_loss's elements, and their derivations (backward.record), as
PyTorch's CPU kernels compute them. Its float16 huber and bfloat16 smooth_l1 compute |x - y|
and the loss in float32 and round once; its other types round each op, delta or beta
rounded to the type. Its smooth_l1 backward computes in float32 from x - y unrounded and
rounds once; its huber backward rounds x - y and each product to the type, delta whole."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend.formula_steps import gradient_steps
from ..frontend.operands import from_opmath, opmath


def smooth_l1_elements(x: ir.Node, t: ir.Node, beta: float) -> ir.Node:
    """0.5 d² / beta where |d| < beta, else |d| - 0.5 beta, of d = x - t."""
    a, b = _operands(x, t, wide=x.dtype is dt.bfloat16)
    z = (a - b).abs()
    large = z >= beta           # (NaN is not: its square's NaN)
    zs = large.where(0, z)      # the square never reads a large (or infinite) difference
    return from_opmath(large.where(z - 0.5 * beta, 0.5 * zs * zs / beta), x)


def smooth_l1_derivation(x: ir.Node, t: ir.Node, beta: float, reduction: str) -> ir.Node:
    """g times n sign(d) where |d| >= beta, else n d / beta, in float32 for 16-bit floats
    and rounded once, n a mean's 1 / numel (else 1)."""
    d = opmath(x) - opmath(t)
    n = _norm(x, reduction)
    slope = (d.abs() >= beta).where((d > 0).where(d.const_like(n), -n), n * d / beta)
    return from_opmath(ir.sloped(d, slope), x)


def huber_elements(x: ir.Node, t: ir.Node, delta: float) -> ir.Node:
    """0.5 d² where |d| < delta, else delta (|d| - 0.5 delta), of d = x - t."""
    a, b = _operands(x, t, wide=x.dtype is dt.float16)
    z = (a - b).abs()
    large = z >= delta
    zs = large.where(0, z)
    return from_opmath(large.where(delta * (z - 0.5 * delta), 0.5 * zs * zs), x)


def huber_derivation(x: ir.Node, t: ir.Node, delta: float, reduction: str) -> ir.Node:
    """PyTorch's scalar code, each product rounded to the type: (n g) (± delta) where
    |d| >= delta, else (n d) g, of d = x - t rounded, n a mean's 1 / numel rounded. (Its
    vector code, on runs of 32 or 64 contiguous elements, takes n (± delta) first, delta
    rounded: the same bits where delta is a power of two, as the default 1.)"""
    d = x - t
    wide = opmath(d)
    large = wide.abs() >= delta                     # delta whole
    n = d.const_like(_norm(x, reduction))
    signed_delta = (wide > 0).where(wide.const_like(delta), -delta)
    at_large = gradient_steps(d, [(Op.MUL, n), (Op.MUL, signed_delta)], d.dtype)
    at_small = gradient_steps(d, [(Op.MUL, n * large.where(0, d))], d.dtype)
    return large.where(at_large, at_small)


def _operands(x: ir.Node, t: ir.Node, wide: bool) -> tuple[ir.Node, ir.Node]:
    """x and t in float32 where PyTorch's kernel computes in it (wide), else as they are."""
    return (opmath(x), opmath(t)) if wide else (x, t)


def _norm(x: ir.Node, reduction: str) -> float:
    """PyTorch's backward factor: 1 / numel for a mean (of none, 1: no gradient to scale)."""
    return 1 / x.numel if reduction == "mean" and x.numel else 1.0

