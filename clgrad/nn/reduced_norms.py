"""The gradients of layer_norm and group_norm of a float16 or bfloat16 input, as PyTorch's CPU
backward kernels compute them.

They read the statistics the forward kernel saved, rounded to the statistics' dtype (the
input's, or float32 where the parameters are: stats_dtype), and compute in float32, rounding
each gradient once:
- per row (layer norm) or group (group norm), ds = sum(g x w) and db = sum(g w), w the
  weight (1 without one); b = (db mean - ds) rstd^3 / n and c = -b mean - db rstd / n;
- the input's gradient (rstd w g + b x) + c: layer norm's rstd w g is (rstd g) w, group
  norm's (rstd w) g; layer norm's ds multiplies (g x) by w, or (g w) by x where w is float32;
  group norm's sums g x over each channel's positions first, then those sums times w;
- group norm's weight gradient is the sum over the batch of (ds - db mean) rstd of each
  channel, its bias's the sum of g;
- layer norm's weight and bias gradients are sums over the rows that PyTorch keeps in a
  buffer of the input's 16-bit type for each of its threads, rounded at every row, so that
  its answer depends on its thread count: clgrad sums in float32 and rounds once.
The float32 sums are in clgrad's order (PyTorch's follows its vector width). Each derivation
is a graph for backward.record whose gradients are these: the outermost op of a path is the
first applied to g, and no node meets more than two gradients, whose sum has one order."""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend.operands import opmath
from ..frontend.reductions import reduce_node


def layer_norm_derivation(node: ir.Node, mean: ir.Node, rstd: ir.Node, weight, bias,
                          axes: tuple[int, ...], stats: dt.DType) -> ir.Node:
    """The derivation of layer_norm's output from node, its 16-bit input, normalised over
    axes with mean and rstd (float32, axes kept as size 1); weight and bias are tensors of
    the normalised shape, or None."""
    wide = opmath(node)
    spread = wide.shape
    mean, rstd = _saved(mean, stats), _saved(rstd, stats)
    view = tuple(s if a in axes else 1 for a, s in enumerate(spread))
    w = _parameter(weight, view)
    if w is None:
        scaled, ds, db = [(Op.MUL, rstd)], [(Op.MUL, wide)], []
    else:
        scaled, db = [(Op.MUL, rstd), (Op.MUL, w)], [(Op.MUL, w)]
        ds = [(Op.MUL, w), (Op.MUL, wide)] if stats == dt.float32 else \
            [(Op.MUL, wide), (Op.MUL, w)]
    derivation = _input_derivation(wide, mean, rstd, axes, scaled, ds + [(Op.SUM, axes)],
                                   db + [(Op.SUM, axes)])
    if w is not None:       # sum over the rows of g (x rstd - rstd mean)
        normalized = wide * rstd.expand(spread) + (-rstd * mean).expand(spread)
        derivation = derivation + ir.sloped(w.expand(spread), normalized)
    b = _parameter(bias, view)
    if b is not None:       # sum over the rows of g
        derivation = derivation + b.expand(spread)
    return derivation.cast(node.dtype)


def group_norm_derivation(node: ir.Node, mean: ir.Node, rstd: ir.Node, weight, bias,
                          grouped: tuple[int, int, int, int], stats: dt.DType) -> ir.Node:
    """The derivation of group_norm's output from node, its 16-bit input, read as grouped
    (N, groups, channels of a group, positions of a channel) and normalised over each group
    with mean and rstd (float32, (N, groups, 1))."""
    wide = opmath(node).reshape(grouped)
    channels = grouped[:3] + (1,)
    mean = _saved(mean, stats).reshape(grouped[:2] + (1, 1))
    rstd = _saved(rstd, stats).reshape(grouped[:2] + (1, 1))
    view = (1,) + grouped[1:3] + (1,)
    w = _parameter(weight, view)
    # sum(g x) and sum(g) over each channel's positions come first
    channel_ds, channel_db = [(Op.MUL, wide), (Op.SUM, (3,))], [(Op.SUM, (3,))]
    if w is None:
        scaled, ds, db = [(Op.MUL, rstd)], channel_ds, channel_db
    else:
        scaled = [(Op.MUL, rstd.expand(channels) * w.expand(channels))]
        ds, db = channel_ds + [(Op.MUL, w)], channel_db + [(Op.MUL, w)]
    derivation = _input_derivation(wide, mean, rstd, (2, 3), scaled, ds + [(Op.SUM, (2,))],
                                   db + [(Op.SUM, (2,))])
    if w is not None:       # sum over the batch of (ds - db mean) rstd, per channel
        per_sample = ir.sloped(w.expand(channels), rstd.expand(channels))
        derivation = derivation + _taking(per_sample, channel_ds, grouped) + _taking(
            -ir.sloped(per_sample, mean.expand(channels)), channel_db, grouped)
    b = _parameter(bias, view)
    if b is not None:       # each sample's sum(g) per channel, summed over the batch
        derivation = derivation + b.expand(channels).expand(grouped)
    return derivation.reshape(node.shape).cast(node.dtype)


def _saved(statistic: ir.Node, stats: dt.DType) -> ir.Node:
    """A statistic as PyTorch's forward kernel saves it: rounded to stats, read as float32."""
    return statistic.cast(stats).cast(dt.float32)


def _parameter(t, view: tuple[int, ...]) -> ir.Node | None:
    """A weight or bias (or None) as float32, viewed as view."""
    return None if t is None else t.node.cast(dt.float32).reshape(view)


def _input_derivation(wide: ir.Node, mean: ir.Node, rstd: ir.Node, axes: tuple[int, ...],
                      scaled: list, ds: list, db: list) -> ir.Node:
    """A graph of wide whose gradient is (rstd w g + b x) + c (module docstring): scaled are
    the steps from g to rstd w g, ds and db those to ds and db (ending in sums over axes)."""
    spread = wide.shape
    share = float(np.float32(1) / np.float32(math.prod(spread[a] for a in axes)))
    # rstd w g and b x meet at u, then c joins them at wide
    u = ir.sloped(wide, wide.const_like(1.0))
    negated_c = -reduce_node(Op.SUM, wide, axes)       # meets b mean and db rstd / n
    b = ir.sloped(negated_c, mean) + reduce_node(Op.SUM, ir.sloped(u, wide), axes)
    k = _taking(b, [(Op.MUL, rstd)] * 3 + [(Op.MUL, share)], b.shape)     # meets db mean - ds
    to_db = ir.sloped(k, mean) + _taking(negated_c, [(Op.MUL, rstd), (Op.MUL, share)], b.shape)
    return (_taking(u, scaled, spread) + _taking(-k, ds, spread)) + _taking(to_db, db, spread)


def _taking(node: ir.Node, steps: list, shape: tuple[int, ...]) -> ir.Node:
    """A node of node, of shape, whose gradient reaches node as g put through steps in turn:
    (Op.MUL, slope) multiplies by slope (a node, broadcast, or a number), (Op.SUM, axes) sums
    over axes (kept as size 1)."""
    shapes = [shape]
    for op, arg in steps:
        last = shapes[-1]
        shapes.append(tuple(1 if a in arg else s for a, s in enumerate(last))
                      if op is Op.SUM else last)
    for (op, arg), before in reversed(list(zip(steps, shapes))):
        if op is Op.SUM:
            node = node.expand(before)
        elif isinstance(arg, ir.Node):
            node = ir.sloped(node, arg.expand(before))
        else:
            node = ir.sloped(node, ir.const(arg, node.dtype, before))
    return node
