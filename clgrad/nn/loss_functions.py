"""Losses and distances of torch.nn.functional: l1_loss, smooth_l1_loss, huber_loss,
binary_cross_entropy, kl_div, margin_ranking_loss, cosine_embedding_loss,
cosine_similarity, pairwise_distance and normalize, recorded under PyTorch's grad_fn names.

Each is built from node operators, so its gradient comes from the primitive rules; where
PyTorch's backward is a formula of its own (binary_cross_entropy's clamped denominator) the
value is computed apart from a term that carries that gradient and adds zero.
"""
from __future__ import annotations

import math
import warnings

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend.backward import record
from ..frontend.jit_protocol import in_jit
from ..frontend.no_derivative import refuse_gradient
from ..frontend.reductions import mean_node, reduce_node
from ..frontend.operands import (as_float, broadcast_shape, broadcast_to, common_device,
                                 result_dtype)
from .activation import log1p, softplus_node
from .distance import pairwise_distance
from .huber_kernels import (huber_derivation, huber_elements, smooth_l1_derivation,
                            smooth_l1_elements)

REDUCTIONS = ("none", "mean", "sum")


def reduce_loss(loss: ir.Node, reduction: str, divisor: ir.Node | None = None) -> ir.Node:
    """loss as is ('none'), summed, or averaged (over its elements, or divided by divisor);
    the mean of nothing is NaN, as PyTorch's."""
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not a valid value for reduction")
    if reduction == "none":
        return loss
    if reduction == "mean" and divisor is None:     # PyTorch's loss.mean(): a division
        return mean_node(loss.reshape((loss.numel,)), (0,)).reshape(())
    total = _total(loss)
    return total if reduction == "sum" else total / divisor


def legacy_reduction(size_average, reduce, reduction: str) -> str:
    """PyTorch's deprecated size_average and reduce flags, as a reduction."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = ("mean" if size_average else "sum") if reduce else "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use "
                  f"reduction='{reduction}' instead.", stacklevel=3)
    return reduction


def check_same_shape(op: str, input, target) -> None:
    if tuple(input.shape) != tuple(target.shape):
        raise ValueError(f"{op}: target size {tuple(target.shape)} must be the same as input "
                         f"size {tuple(input.shape)}")


def check_reduction(reduction: str, allowed=REDUCTIONS) -> None:
    if reduction not in allowed:
        raise ValueError(f"{reduction} is not a valid value for reduction")


_BROADCAST_FIRST = ("mse_loss", "l1_loss", "smooth_l1_loss")


def _pair(op: str, input, target, warn: bool = True):
    """input and target as float nodes of their common dtype and broadcast shape (PyTorch
    warns when the shapes differ), and their device."""
    device = common_device(op, [input, target])
    x, y = input.node, target.node
    if x.shape == y.shape and x.dtype is y.dtype and x.dtype.is_float:
        return x, y, device         # the common case: nothing to warn of, cast or broadcast
    if warn and tuple(target.shape) != tuple(input.shape):
        warnings.warn(f"{op}: Using a target size {tuple(target.shape)} that is different to "
                      f"the input size {tuple(input.shape)}. This will likely lead to "
                      "incorrect results due to broadcasting. Please ensure they have the same "
                      "size.", UserWarning, stacklevel=3)
    # mse, l1 and smooth_l1 broadcast the two first (PyTorch's torch.broadcast_tensors), so that
    # a 0-d one stands as the other's equal: a float16 input and a 0-d float32 target are
    # float32, as a loss of float16 and 0-d float32 values of another loss is float16
    dtype = dt.promote(input.dtype, target.dtype) if op in _BROADCAST_FIRST else \
        result_dtype(op, (input, target))
    x = as_float(ir.cast(input.node, dtype))
    shape = broadcast_shape(op, input.shape, target.shape)
    return broadcast_to(x, shape), broadcast_to(target.node.cast(x.dtype), shape), device


def _sample_weight(op: str, weight, input, loss: ir.Node) -> ir.Node:
    if tuple(weight.shape) != tuple(input.shape):
        raise ValueError(f"{op}: Weights and input must have the same size, got weight of "
                         f"shape {tuple(weight.shape)} and input of shape {tuple(input.shape)}")
    return loss * broadcast_to(weight.node.cast(loss.dtype), loss.shape)


def _total(node: ir.Node) -> ir.Node:
    """The sum of node's elements; of none, 0, whose gradient still reaches the inputs (as
    zeros: a NaN slope upstream makes them NaN, as in PyTorch)."""
    return reduce_node(Op.SUM, node.reshape((node.numel,)), (0,)).reshape(())


def _weighted_reduce(op, loss, input, target, weight, reduction, device, mean_by_weight):
    """PyTorch's weighted l1 and huber losses: the loss times weight, then summed, averaged,
    or (l1) divided by the weights' sum."""
    check_reduction(reduction)
    loss = _sample_weight(op, weight, input, loss)
    tensors = [input, target, weight]
    if reduction == "none":
        return record("mul", loss, device, tensors)
    if reduction == "sum":
        return record("sum", _total(loss), device, tensors)
    if mean_by_weight:
        return record("div", _total(loss) / _total(weight.node.cast(loss.dtype)), device, tensors)
    return record("mean", reduce_loss(loss, "mean"), device, tensors)


def mse_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
             weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t, device = _pair("mse_loss", input, target)
    d = x - t
    if weight is not None:
        return _weighted_reduce("mse_loss", d * d, input, target, weight, reduction, device, True)
    check_reduction(reduction)
    return record("mse_loss", reduce_loss(d * d, reduction), device, [input, target])


def l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
            weight=None):
    reduction = legacy_reduction(size_average, reduce, reduction)
    x, t, device = _pair("l1_loss", input, target)
    loss = (x - t).abs()
    if weight is not None:
        return _weighted_reduce("l1_loss", loss, input, target, weight, reduction, device, True)
    check_reduction(reduction)
    name = {"none": "abs", "mean": "mean", "sum": "sum"}[reduction]
    return record(name, reduce_loss(loss, reduction), device, [input, target])


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction: str = "mean",
                   beta: float = 1.0):
    reduction = legacy_reduction(size_average, reduce, reduction)
    if beta < 0:
        raise RuntimeError(f"smooth_l1_loss does not support negative values for beta, got "
                           f"{beta}")
    if beta == 0:
        return l1_loss(input, target, reduction=reduction)
    x, t, device = _pair("smooth_l1_loss", input, target)
    check_reduction(reduction)
    derivation = _elements_derivation(smooth_l1_derivation(x, t, beta, reduction), reduction)
    return record("smooth_l1_loss", reduce_loss(smooth_l1_elements(x, t, beta), reduction),
                  device, [input, target], derivation)


def huber_loss(input, target, reduction: str = "mean", delta: float = 1.0, weight=None):
    if delta <= 0:
        raise RuntimeError(f"huber_loss does not support non-positive values for delta, got "
                           f"{delta}")
    x, t, device = _pair("huber_loss", input, target)
    loss = huber_elements(x, t, delta)
    if loss.dtype != input.dtype and input.dtype.is_float:
        # PyTorch's loss is empty_like(input), a wider target's common dtype rounded to it
        # (a float16 input and a float32 target of a dim: float16; fuzz seed 101600231)
        loss = loss.cast(input.dtype)
    if weight is not None:
        return _weighted_reduce("huber_loss", loss, input, target, weight, reduction, device,
                                False)
    check_reduction(reduction)
    derivation = _elements_derivation(huber_derivation(x, t, delta, reduction), reduction)
    return record("huber_loss", reduce_loss(loss, reduction), device, [input, target],
                  derivation)


def _elements_derivation(derivation: ir.Node, reduction: str) -> ir.Node:
    """The derivation of a loss reduced from elements of that derivation: their sum, each
    element taking g whole (the mean's 1 / n is in the elements' own)."""
    return derivation if reduction == "none" else _total(derivation)


def _check_probabilities(input) -> None:
    """PyTorch checks the values of binary_cross_entropy's input; lazily computed inputs would
    have to be computed and read for it, so only an input already in a buffer is checked
    (values outside [0, 1] give NaN otherwise)."""
    if input.node.op is not Op.BUFFER or in_jit() or not input.numel():
        return
    values = input.detach().numpy()
    if ((values < 0) | (values > 1)).any():
        raise RuntimeError(f"binary_cross_entropy: all elements of input should be between 0 "
                           f"and 1 (input of shape {tuple(input.shape)})")


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """-(y log x + (1 - y) log(1 - x)), each log clamped at -100 as PyTorch does; the gradient
    is PyTorch's (x - y) / max(x (1 - x), 1e-12), finite at x = 0 and 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if tuple(target.shape) != tuple(input.shape):
        raise ValueError(f"binary_cross_entropy: Using a target size {list(target.shape)} "
                         f"that is different to the input size {list(input.shape)} is "
                         "deprecated. Please ensure they have the same size.")
    if input.dtype != target.dtype or not input.dtype.is_float:
        raise RuntimeError(f"binary_cross_entropy: expected input and target of one floating "
                           f"point dtype, got {input.dtype.name} input and {target.dtype.name} "
                           "target")
    tensors = [t for t in (input, target, weight) if t is not None]
    device = common_device("binary_cross_entropy", tensors)
    refuse_gradient("binary_cross_entropy", "weight", weight)
    _check_probabilities(input)
    x, y = input.node, target.node
    w = None if weight is None else broadcast_to(weight.node.cast(x.dtype), x.shape)

    def weighted(v: ir.Node) -> ir.Node:
        return v if w is None else v * w

    # where x (1 - x) >= 1e-12 (so log x > -28) the formula itself, differentiable again
    denom = (1 - x) * x
    inside = ~(denom < 1e-12) & denom.eq(denom)         # NaN goes to the edge branch
    xs = inside.where(x, 0.5)                           # reads no 0 or 1 (log 0 * 0 = NaN)
    plain = weighted((y - 1) * log1p(-xs) - y * xs.log())
    # at the edges: the logs clamped at -100, and PyTorch's (x - y) / max(x (1 - x), 1e-12)
    # as the gradient, carried by x - x.detach() (0, as x is in [0, 1])
    xd = x.detach()

    def clamped_log(v: ir.Node) -> ir.Node:
        return (v < -100).where(v.const_like(-100), v)      # NaN stays NaN (fmax would not)
    edge_value = weighted((y - 1) * clamped_log(log1p(-xd)) - y * clamped_log(xd.log()))
    slope = weighted((xd - y) / 1e-12).detach()
    edge = edge_value + (inside.where(0, x) - inside.where(0, xd)) * slope
    loss = inside.where(plain, edge)
    return record("binary_cross_entropy", reduce_loss(loss, reduction), device, tensors)


def kl_div(input, target, size_average=None, reduce=None, reduction: str = "mean",
           log_target: bool = False):
    """PyTorch's ops in turn, each in the dtype its operands promote to (a 16-bit target's
    xlogy rounded to the type before a float32 input's product promotes the difference), so
    the gradients are those ops' formulas: xlogy(target, target) - target * input (0 log 0
    = 0), or with log_target exp(target) * (target - input); then the reduction, and
    'batchmean' divides the sum by the batch size."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction, REDUCTIONS + ("batchmean",))
    if reduction == "mean":
        warnings.warn("kl_div: reduction: 'mean' divides the total loss by both the batch size "
                      "and the support size. 'batchmean' divides only by the batch size, and "
                      "aligns with the KL div math definition. 'mean' will be changed to behave "
                      "the same as 'batchmean' in the next major release.", UserWarning,
                      stacklevel=2)
    common_device("kl_div", [input, target])
    if not (input.dtype.is_float and target.dtype.is_float):
        raise RuntimeError(f"kl_div: Integral inputs not supported (input {input.dtype.name}, "
                           f"target {target.dtype.name}; expected floating point tensors)")
    if log_target:
        loss = target.exp() * (target - input)
    else:
        loss = target.xlogy(target) - target * input
    if reduction == "none":
        return loss
    if reduction == "mean":
        return loss.mean()
    total = loss.sum()
    return total / input.shape[0] if reduction == "batchmean" and input.ndim else total


def _clamp_min0(v: ir.Node) -> ir.Node:
    """max(v, 0), gradient 1 at v = 0 (clamp_min's), NaN kept."""
    return (v < 0).where(v.const_like(0), v)


def margin_ranking_loss(input1, input2, target, margin: float = 0, size_average=None,
                        reduce=None, reduction: str = "mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not input1.ndim == input2.ndim == target.ndim:
        raise RuntimeError(f"margin_ranking_loss : All input tensors should have same dimension "
                           f"but got sizes: input1: {tuple(input1.shape)}, input2: "
                           f"{tuple(input2.shape)}, target: {tuple(target.shape)}")
    tensors = [input1, input2, target]
    device = common_device("margin_ranking_loss", tensors)
    dtype = result_dtype("margin_ranking_loss", tensors)
    shape = broadcast_shape("margin_ranking_loss", *(t.shape for t in tensors))
    a, b, y = (broadcast_to(as_float(t.node.cast(dtype)), shape) for t in tensors)
    loss = _clamp_min0(-y * (a - b) + margin)
    name = {"none": "clamp_min", "mean": "mean", "sum": "sum"}[reduction]
    return record(name, reduce_loss(loss, reduction), device, tensors)


def cosine_embedding_loss(input1, input2, target, margin: float = 0, size_average=None,
                          reduce=None, reduction: str = "mean"):
    """1 - cos(x1, x2) where target is 1, max(0, cos - margin) where it is -1; cos computed as
    PyTorch's, with 1e-12 added to each squared magnitude."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if target.ndim not in (0, 1):
        raise RuntimeError(f"cosine_embedding_loss: 0D or 1D target tensor expected, "
                           f"multi-target not supported (target of shape {tuple(target.shape)})")
    want = target.ndim + 1
    if input1.ndim != want or input2.ndim != want:
        raise RuntimeError(f"cosine_embedding_loss: {target.ndim}D target tensor expects "
                           f"{want}D input tensors, but found inputs with sizes "
                           f"{tuple(input1.shape)} and {tuple(input2.shape)}")
    tensors = [input1, input2, target]
    device = common_device("cosine_embedding_loss", tensors)
    dtype = result_dtype("cosine_embedding_loss", [input1, input2])
    shape = broadcast_shape("cosine_embedding_loss", input1.shape, input2.shape)
    a, b = (broadcast_to(as_float(t.node.cast(dtype)), shape) for t in (input1, input2))
    axis = (target.ndim,)
    out_shape = shape[:target.ndim]
    prod = (a * b).sum(axis).reshape(out_shape)
    mag1 = (a * a).sum(axis).reshape(out_shape) + 1e-12
    mag2 = (b * b).sum(axis).reshape(out_shape) + 1e-12
    cos = prod / (mag1 * mag2).sqrt()
    y = broadcast_to(target.node.cast(cos.dtype),
                     broadcast_shape("cosine_embedding_loss", out_shape, target.shape))
    if y.shape != cos.shape:
        raise RuntimeError(f"cosine_embedding_loss: target of shape {tuple(target.shape)} does "
                           f"not match the {out_shape} similarities of inputs of shape {shape}")
    loss = y.eq(1).where(1 - cos, 0) + y.eq(-1).where(_clamp_min0(cos - margin), 0)
    name = {"none": "add", "mean": "mean", "sum": "sum"}[reduction]
    return record(name, reduce_loss(loss, reduction), device, tensors)


def _named_reduce(loss: ir.Node, reduction: str, none_name: str, device, tensors):
    check_reduction(reduction)
    name = {"none": none_name, "mean": "mean", "sum": "sum"}[reduction]
    return record(name, reduce_loss(loss, reduction), device, tensors)


def hinge_embedding_loss(input, target, margin: float = 1.0, size_average=None, reduce=None,
                         reduction: str = "mean"):
    """x where target is 1, max(0, margin - x) where it is -1 (both terms elsewhere)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if not input.dtype.is_float:
        raise RuntimeError(f"hinge_embedding_loss: expected a floating point input, got "
                           f"{input.dtype.name} of shape {tuple(input.shape)}")
    x, y, device = _pair("hinge_embedding_loss", input, target, warn=False)
    loss = y.ne(1).where(_clamp_min0(margin - x), 0) + y.ne(-1).where(x, 0)
    return _named_reduce(loss, reduction, "add", device, [input, target])


def poisson_nll_loss(input, target, log_input: bool = True, full: bool = False,
                     size_average=None, eps: float = 1e-8, reduce=None, reduction: str = "mean"):
    """exp(x) - y x (log_input), or x - y log(x + eps); full adds Stirling's term for y > 1."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    x, y, device = _pair("poisson_nll_loss", input, target, warn=False)
    loss = x.exp() - y * x if log_input else x - y * (x + eps).log()
    name = "sub"
    if full:
        big = y > 1
        ys = big.where(y, 1)        # the term reads no y <= 1 (log 0)
        stirling = ys * ys.log() - ys + 0.5 * (2 * math.pi * ys).log()
        loss, name = loss + big.where(stirling, 0), "add"
    return _named_reduce(loss, reduction, name, device, [input, target])


def _check_nonnegative(var) -> None:
    """PyTorch checks var's values; here only a var already in a buffer is read for it."""
    if var.node.op is not Op.BUFFER or in_jit() or not var.numel():
        return
    if (var.detach().numpy() < 0).any():
        raise ValueError("gaussian_nll_loss: var has negative entry/entries")


def gaussian_nll_loss(input, target, var, full: bool = False, eps: float = 1e-6,
                      reduction: str = "mean"):
    """0.5 (log(var) + (x - y)^2 / var), var raised to eps at least outside autograd (its
    gradient is var's own), as PyTorch does; var may be one dim short of input, or differ
    from it in one dim of size 1 (one variance shared)."""
    from ..frontend.creation import full as full_like_shape
    if isinstance(var, (int, float)):
        if var < 0:
            raise ValueError("gaussian_nll_loss: var has negative entry/entries")
        var = full_like_shape(input.shape, float(var), dtype=input.dtype, device=input.device)
    else:
        _check_nonnegative(var)
    v = var.node
    if tuple(var.shape) != tuple(input.shape):
        if tuple(input.shape[:-1]) == tuple(var.shape):
            v = v.reshape(tuple(var.shape) + (1,))
        elif not (input.ndim == var.ndim and sum(b for a, b in zip(input.shape, var.shape)
                                                 if a != b) == 1):
            raise ValueError(f"gaussian_nll_loss: var is of incorrect size {tuple(var.shape)} "
                             f"for input of shape {tuple(input.shape)}")
    if reduction not in REDUCTIONS:
        raise ValueError(f"{reduction} is not valid")
    x, y, device = _pair("gaussian_nll_loss", input, target, warn=False)
    v = broadcast_to(v.cast(x.dtype), broadcast_shape("gaussian_nll_loss", v.shape, x.shape))
    v = (v < eps).where(v - v.detach() + eps, v)
    d = x - y
    loss = 0.5 * (v.log() + d * d / v)
    if full:
        loss = loss + 0.5 * math.log(2 * math.pi)
    return _named_reduce(loss, reduction, "add" if full else "mul", device,
                         [input, target] + ([var] if var.requires_grad else []))


def multilabel_soft_margin_loss(input, target, weight=None, size_average=None, reduce=None,
                                reduction: str = "mean"):
    """-(y logsigmoid(x) + (1 - y) logsigmoid(-x)), weighted, averaged over the classes (the
    last dim)."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    x, y, device = _pair("multilabel_soft_margin_loss", input, target, warn=False)
    loss = y * softplus_node(-x) + (1 - y) * softplus_node(x)
    tensors = [input, target]
    if weight is not None:
        loss = loss * broadcast_to(weight.node.cast(loss.dtype), loss.shape)
        tensors.append(weight)
    c = x.shape[-1]
    loss = loss.sum((len(loss.shape) - 1,)).reshape(loss.shape[:-1]) * (1 / c)
    return _named_reduce(loss, reduction, "div", device, tensors)


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, size_average=None, reduce=None,
                        reduction: str = "mean"):
    """max(0, margin + d(a, p) - d(a, n)), d the pairwise p-norm distance (with swap, the
    smaller of d(a, n) and d(p, n))."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if not anchor.ndim == positive.ndim == negative.ndim:
        raise RuntimeError(f"triplet_margin_loss: The anchor, positive, and negative tensors are "
                           f"expected to have the same number of dimensions, but got: anchor "
                           f"{anchor.ndim}D, positive {positive.ndim}D, and negative "
                           f"{negative.ndim}D inputs")
    tensors = [anchor, positive, negative]
    device = common_device("triplet_margin_loss", tensors)

    def distance(a, b):
        return pairwise_distance(a, b, p, eps).node
    d_pos, d_neg = distance(anchor, positive), distance(anchor, negative)
    if swap:
        d_neg = d_neg.minimum(distance(positive, negative))
    loss = _clamp_min0(margin + d_pos - d_neg)
    return _named_reduce(loss, reduction, "clamp_min", device, tensors)


def multi_margin_loss(input, target, p: int = 1, margin: float = 1.0, weight=None,
                      size_average=None, reduce=None, reduction: str = "mean"):
    """The mean over the classes i != y of max(0, margin - x[y] + x[i])^p (times weight[y]),
    for (N, C) or (C,) input and class indices y."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    check_reduction(reduction)
    if p not in (1, 2):
        raise ValueError("multi_margin_loss: only p == 1 and p == 2 supported")
    if input.ndim not in (1, 2) or (input.ndim == 2 and input.shape[1] == 0):
        raise RuntimeError(f"multi_margin_loss: Expected non-empty vector or matrix with "
                           f"optional 0-dim batch size, but got: {list(input.shape)}")
    n_rows = input.shape[0] if input.ndim == 2 else 1
    if target.ndim > 1 or target.numel() != n_rows:
        raise RuntimeError(f"multi_margin_loss: inconsistent target size: "
                           f"{list(target.shape)} for input of size: {list(input.shape)}")
    tensors = [t for t in (input, weight) if t is not None]
    device = common_device("multi_margin_loss", tensors + [target])
    refuse_gradient("multi_margin_loss", "weight", weight)
    c = input.shape[-1]
    x = as_float(input.node).reshape((n_rows, c))
    if target.node.op is Op.BUFFER and not in_jit():
        values = target.numpy().reshape(-1)
        bad = values[(values < 0) | (values >= c)]
        if bad.size:
            raise IndexError(f"multi_margin_loss: target {int(bad[0])} is out of bounds for {c} "
                             "classes")
    y = target.node.cast(dt.int64).reshape((n_rows, 1)).expand((n_rows, c))
    classes = ir.iota(c, dt.int64).reshape((1, c)).expand((n_rows, c))
    picked = y.eq(classes)
    x_y = picked.where(x, 0).sum((1,)).expand((n_rows, c))
    z = margin - x_y + x
    h = (z > 0).where(z, 0)
    if p == 2:
        h = h * h
    if weight is not None:
        w = weight.node.cast(x.dtype).reshape((1, c)).expand((n_rows, c))
        w_y = picked.where(w, 0).sum((1,)).expand((n_rows, c))
        h = h * w_y
    loss = picked.where(0, h).sum((1,)).reshape((n_rows,)) * (1 / c)
    if input.ndim == 1:
        loss = loss.reshape(())
    return record("multi_margin_loss", reduce_loss(loss, reduction), device, tensors)


__all__ = ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "binary_cross_entropy", "kl_div",
           "margin_ranking_loss", "cosine_embedding_loss",
           "hinge_embedding_loss", "poisson_nll_loss",
           "gaussian_nll_loss", "multilabel_soft_margin_loss", "triplet_margin_loss",
           "multi_margin_loss"]
