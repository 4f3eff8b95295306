"""binary_cross_entropy_with_logits, step by step as PyTorch's: its value in the dtypes
PyTorch's steps take, and its gradients by PyTorch's formulas in theirs (formula_steps)."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend.backward import record
from ..frontend.formula_steps import gradient_steps, in_place, promoted
from ..frontend.no_derivative import refuse_gradient
from ..frontend.operands import as_float, broadcast_to, common_device, from_opmath, opmath
from .activation import sigmoid_node, softplus_node
from .loss_functions import check_same_shape, legacy_reduction, reduce_loss


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


def _log_sigmoid(x: ir.Node) -> ir.Node:
    """log(sigmoid(x)) in x's dtype, rounded once (PyTorch's log_sigmoid kernel)."""
    return from_opmath(-softplus_node(-opmath(x)), x)


__all__ = ["binary_cross_entropy_with_logits"]
