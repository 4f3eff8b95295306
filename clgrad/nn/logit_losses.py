"""binary_cross_entropy_with_logits and soft_margin_loss, step by step as PyTorch's: their
values in the dtypes PyTorch's steps take, and their gradients by PyTorch's formulas in
theirs (formula_steps)."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler import ir, special
from ..compiler.ops import Op
from ..frontend.backward import record
from ..frontend.formula_steps import gradient_steps, in_place, promoted
from ..frontend.no_derivative import refuse_gradient
from ..frontend.operands import (as_float, broadcast_shape, broadcast_to, common_device,
                                 from_opmath, opmath)
from .activation import sigmoid_node, softplus_node
from .loss_functions import check_reduction, check_same_shape, legacy_reduction, reduce_loss


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None):
    """PyTorch's steps in their dtypes: log_sigmoid(x) in the input's dtype (scaled in place
    by (pos_weight - 1) * target + 1, so rounded to it again), then (1 - target) * x - that,
    in place on 1 - target: in the target's dtype (a float32 input and a float16 target: a
    float16 loss), times the weight in place. The gradients are PyTorch's formulas (to the
    input sigmoid(x) - target, with pos_weight (pw t + 1 - t) sigmoid(x) - pw t; to the
    target -x, with pos_weight log_sigmoid(-x) - pw log_sigmoid(x)), then times g, the
    weight and 1 / n, each step in place on the formula's dtype (formula_steps)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_same_shape("binary_cross_entropy_with_logits", input, target)
    refuse_gradient("binary_cross_entropy_with_logits", "weight", weight)
    refuse_gradient("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    tensors = [t for t in (input, target, weight, pos_weight) if t is not None]
    device = common_device("binary_cross_entropy_with_logits", tensors)
    x = as_float(input.node)
    y = target.node if target.dtype.is_float else target.node.cast(x.dtype)
    log_sig = _log_sigmoid(x)
    if pos_weight is not None:
        pw = broadcast_to(pos_weight.node, x.shape)
        log_weight = promoted(Op.ADD, promoted(Op.MUL, pw - 1, y), 1)
        log_sig = in_place(log_sig, log_weight, Op.MUL)
    loss = in_place(in_place(1 - y, x, Op.MUL), log_sig, Op.SUB)      # (the target's dtype)
    w = None if weight is None else broadcast_to(weight.node, x.shape)
    if w is not None:
        loss = in_place(loss, w, Op.MUL)
    # PyTorch's gradient formulas, and the dtype each multiplies g in (a 0-d g, of a mean or
    # sum, promotes nothing)
    sig = from_opmath(sigmoid_node(opmath(x)), x)
    if pos_weight is None:
        to_input = in_place(sig, y, Op.SUB)
        to_target = -x
        target_dtype = x.dtype if reduction != "none" else dt.promote(x.dtype, loss.dtype)
    else:
        pwy = promoted(Op.MUL, pw, y)
        to_input = promoted(Op.SUB, promoted(Op.MUL, promoted(Op.SUB, pwy + 1, y), sig), pwy)
        to_target = in_place(_log_sigmoid(-x), in_place(_log_sigmoid(x), pw, Op.MUL), Op.SUB)
        target_dtype = to_target.dtype
    steps = [(Op.MUL, w)] if w is not None else []
    if reduction == "mean":
        steps.append((Op.DIV, x.numel))
    derivation = (
        gradient_steps(x, [(Op.MUL, to_input)] + steps, to_input.dtype, loss.dtype)
        + gradient_steps(y, [(Op.MUL, to_target)] + steps, target_dtype, loss.dtype))
    if reduction != "none":
        derivation = reduce_loss(derivation, "sum")
    return record("binary_cross_entropy_with_logits", reduce_loss(loss, reduction), device,
                  tensors, derivation=derivation)


def soft_margin_loss(input, target, size_average=None, reduce=None, reduction: str = "mean"):
    """log(1 + exp(-y x)) by PyTorch's steps, in place on -x in the input's dtype (a float16
    input and a float32 target: a float16 loss): times the target (broadcast to the input's
    shape), exp and log1p, each rounded to it, then reduced; past exp's range (-y x above 88
    in float32, 11 in float16), where PyTorch's is inf, computed without overflow. The
    gradient is PyTorch's formula (NaN past exp's range, inf / inf, as PyTorch's), y exp(-y x)
    times -1 / n (a mean's; -1 else), divided by exp(-y x) + 1, then times g, each step in
    place in the input's dtype, exp(-y x) in the two's (clgrad's was the float32 derivative of
    its value, of the two's dtype: a float16 input's loss float32, fuzz seed 99001685)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    device = common_device("soft_margin_loss", [input, target])
    refuse_gradient("soft_margin_loss", "target", target)
    shape = tuple(input.shape)
    if not input.dtype.is_float:
        raise RuntimeError(f"soft_margin_loss: expected a floating point input, got "
                           f"{input.dtype.name} of shape {shape} (its loss has its dtype)")
    if broadcast_shape("soft_margin_loss", shape, tuple(target.shape)) != shape:
        raise RuntimeError(f"soft_margin_loss: a target of shape {tuple(target.shape)} does not "
                           f"broadcast to the input's shape {shape}, which the loss has")
    x = input.node
    y = broadcast_to(target.node if target.dtype.is_float else target.node.cast(x.dtype),
                     x.shape)
    z = in_place(-x, y, Op.MUL)
    e = z.exp()
    loss = e.eq(math.inf).where(from_opmath(softplus_node(opmath(z)), z),
                                from_opmath(special.log1p(opmath(e)), e))
    ze = promoted(Op.MUL, -y, x).exp()
    scaled = promoted(Op.MUL, y, ze).cast(x.dtype)
    mean = reduction == "mean" and x.numel     # (an empty input's gradient scales nothing)
    scaled = from_opmath(opmath(scaled) * (-1 / x.numel if mean else -1.0), scaled)
    derivation = gradient_steps(x, [(Op.MUL, in_place(scaled, ze + 1, Op.DIV))], x.dtype)
    if reduction != "none":
        derivation = reduce_loss(derivation, "sum")
    return record("soft_margin_loss", reduce_loss(loss, reduction), device, [input, target],
                  derivation=derivation)


def _log_sigmoid(x: ir.Node) -> ir.Node:
    """log(sigmoid(x)) in x's dtype, rounded once (PyTorch's log_sigmoid kernel)."""
    return from_opmath(-softplus_node(-opmath(x)), x)


__all__ = ["binary_cross_entropy_with_logits", "soft_margin_loss"]
