"""clgrad.nn.functional: layers and losses as functions of tensors.

Each op builds its IR from primitives and records it under PyTorch's grad_fn name, so its
gradient is derived from the primitive rules and fuses with the ops around it.
"""
from __future__ import annotations

import math
import weakref

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend import elementwise as ew
from ..frontend import linalg, movement
from ..frontend.backward import record
from ..frontend.jit_protocol import in_jit
from ..frontend.no_derivative import refuse_gradient
from ..frontend.operands import as_float, common_device, from_opmath, opmath, rounded_once
from ..frontend.reductions import log_softmax_derivation, log_softmax_in_type
from .batch_norm import batch_normalized
from .embedding_bag import renorm_rows_
from .embedding_frequency import rows_scaled_by_frequency
from .logit_losses import (binary_cross_entropy_with_logits,  # noqa: F401 (re-exported)
                           soft_margin_loss)
from .loss_functions import check_same_shape, legacy_reduction, reduce_loss
from .normalization import layer_normalized
from .avg_pooling import avg_pool2d  # noqa: F401 (re-exported)
from .convolution import (conv1d, conv2d, conv3d, conv_tbc,  # noqa: F401
                          conv_transpose1d, conv_transpose2d, conv_transpose3d,
                          max_pool2d)  # (re-exported)

# ---- activations ----------------------------------------------------------------------------

def relu(input, inplace: bool = False):
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return input.relu_()


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return x.softmax(_implicit_dim(input, dim))


def log_softmax(input, dim=None, _stacklevel: int = 3, dtype=None):
    x = input if dtype is None else input.to(dtype)
    return x.log_softmax(_implicit_dim(input, dim))


def _implicit_dim(x, dim) -> int:
    if dim is not None:
        return dim
    return 0 if x.ndim in (0, 1, 3) else 1


def gelu(input, approximate: str = "none"):
    """x * cdf(x). The gradient is PyTorch's formula, g * (cdf + x * pdf) as one product:
    the value's own derivative multiplies g into both terms, which an infinite g turns into
    inf - inf where x < 0."""
    node = as_float(input.node)
    x = opmath(node)
    if approximate == "tanh":
        k = math.sqrt(2 / math.pi)
        tanh = (k * (x + 0.044715 * (x * x * x))).tanh()
        cdf = 0.5 * (1 + tanh)
        slope = cdf + 0.5 * x * (1 - tanh * tanh) * (k * (1 + 3 * 0.044715 * (x * x)))
    elif approximate == "none":
        # 1 + erf(u) is erfc(-u), which keeps its digits where erf(u) nears -1 (x = -3)
        cdf = 0.5 * ir.unary(Op.ERFC, x * (-1 / math.sqrt(2)))
        slope = cdf + x * ((x * x * -0.5).exp() * (1 / math.sqrt(2 * math.pi)))
    else:
        raise ValueError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return record("gelu", from_opmath(x * cdf, node), input.device, [input],
                  derivation=from_opmath(ir.sloped(x, slope), node))


# ---- linear, dropout, embedding, pad ------------------------------------------------------

def linear(input, weight, bias=None):
    """input @ weight.T + bias; the bias add runs as the matmul kernel's epilogue."""
    tensors = [input, weight] if bias is None else [input, weight, bias]
    device = common_device("linear", tensors)
    # shapes read once, from the nodes (a layer runs this at every step)
    x, w = input.node, weight.node
    if len(w.shape) != 2 or not x.shape or x.shape[-1] != w.shape[1]:
        raise RuntimeError(f"linear: input of shape {tuple(input.shape)} cannot be multiplied "
                           f"with weight of shape {tuple(weight.shape)} (expects last dim "
                           f"{weight.shape[1] if weight.ndim == 2 else '?'})")
    b = None if bias is None else bias.node
    if b is not None and b.shape not in ((w.shape[0],), ()):
        raise RuntimeError(f"linear: expected bias of shape ({weight.shape[0]},), got "
                           f"{tuple(bias.shape)}")
    if w.dtype is not x.dtype or (b is not None and b.dtype is not x.dtype):
        raise RuntimeError(f"linear: expected input, weight and bias of one dtype, got "
                           f"{', '.join(t.dtype.name for t in tensors)} (convert the input with "
                           f".to(weight.dtype) or the module with .to(input.dtype))")
    lead = x.shape[:-1]
    rows = x.reshape((math.prod(lead), x.shape[-1]))
    derivation = None
    # a product of at most one term signed as PyTorch's: addmm's or addmv's onto the bias,
    # else matmul's (its matrix product of every row)
    if b is None:
        out = linalg.product(rows, w.permute((1, 0)),
                             linalg.gemm_keeps_sign(math.prod(lead), w.shape[0]))
    elif len(b.shape) == 1 or len(x.shape) == 2:
        # PyTorch's addmm: a 16-bit float's bias added to the float32 product, rounded once
        out, derivation = rounded_once(_biased_product, rows, w, b)
    else:
        # (its matmul, then add_: a 0-d bias of an input of other dims meets the rounded one)
        out = _biased_product(rows, w, b)
    out = out.reshape(lead + (w.shape[0],))
    derivation = None if derivation is None else derivation.reshape(out.shape)
    # named as PyTorch's linear decomposes: addmm (2-D, a bias), mm (2-D), else ending in a view
    name = "addmm" if b is not None and len(x.shape) == 2 else \
        "mm" if len(x.shape) == 2 else "view"
    return record(name, out, device, tensors, derivation=derivation)


def _biased_product(rows: ir.Node, weight: ir.Node, bias: ir.Node) -> ir.Node:
    out = linalg.product_onto(rows, weight.permute((1, 0)))
    return out + bias.reshape((1,) * (2 - len(bias.shape)) + bias.shape).expand(out.shape)


def dropout(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    if not training or p == 0:
        return input
    if p == 1:
        return input * 0.0
    from ..frontend.creation import rand
    keep = rand(*input.shape, device=input.device).node
    x = as_float(input.node)
    mask = (~(keep.cast(x.dtype) < p)).cast(x.dtype)
    return record("dropout", x * (mask * (1 / (1 - p))), input.device, [input])


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type: float = 2.0,
              scale_grad_by_freq: bool = False, sparse: bool = False):
    """Rows of weight picked by the integer tensor input; no gradient reaches padding_idx, and
    with scale_grad_by_freq a row's gradient is divided by how often input picks it. The
    gradient is always dense (clgrad has no sparse tensors), so sparse=True changes nothing."""
    if input.dtype.is_float or input.dtype == dt.bool_:
        raise RuntimeError(f"embedding: expected an integer index tensor, got {input.dtype.name}")
    if max_norm is not None:
        renorm_rows_(weight, input, max_norm, norm_type)
    if scale_grad_by_freq:
        return rows_scaled_by_frequency(weight, input, padding_idx)
    from ..frontend import indexing
    picked = indexing.getitem(weight, input).node
    if padding_idx is None:
        return record("embedding", picked, weight.device, [weight])
    padding_idx = padding_idx % weight.shape[0]
    from ..frontend.creation import alias
    frozen_rows = indexing.getitem(alias(weight), input).node
    idx = input.node.cast(dt.int64)
    is_pad = idx.eq(padding_idx).reshape(idx.shape + (1,)).expand(picked.shape)
    return record("embedding", is_pad.where(frozen_rows, picked), weight.device, [weight])


def pad(input, pad, mode: str = "constant", value=None):
    if mode != "constant":
        raise NotImplementedError(f"pad: mode {mode!r} is not supported (only 'constant')")
    return movement.pad(input, pad, 0.0 if value is None else value)


# ---- normalisation --------------------------------------------------------------------------

def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5):
    normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
        tuple(normalized_shape)
    k = len(normalized_shape)
    if tuple(input.shape[input.ndim - k:]) != normalized_shape:
        raise RuntimeError(f"layer_norm: expected input with shape [*, "
                           f"{', '.join(map(str, normalized_shape))}], got {list(input.shape)}")
    device = common_device("layer_norm", [t for t in (input, weight, bias) if t is not None])
    out, _, _ = layer_normalized(input, as_float(input.node), normalized_shape, weight, bias,
                                 eps, device)
    return out


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training: bool = False,
               momentum: float = 0.1, eps: float = 1e-5):
    """Normalises over every dim but the channel dim 1. In training the batch statistics are
    used and the running ones updated in place (momentum None: 0.1; a cumulative average is
    the caller's job)."""
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected at least 2-D input, got shape {tuple(input.shape)}")
    device = common_device("batch_norm", [t for t in (input, weight, bias) if t is not None])
    if training:
        count = math.prod(n for dim, n in enumerate(input.shape) if dim != 1)
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {list(input.shape)}")
    elif running_mean is None or running_var is None:
        raise RuntimeError("batch_norm: running_mean and running_var are needed in eval mode")
    out, _ = batch_normalized(input, as_float(input.node), weight, bias, running_mean,
                              running_var, training, 0.1 if momentum is None else momentum, eps,
                              device)
    return out


# ---- losses ---------------------------------------------------------------------------------

# buffer node of a target already read -> ((ignore_index, classes), no entry ignored): a training
# loop passes the same target each step, and reading it back waits on the device (~0.3 ms). A
# buffer node's values do not change while it lives (writes give the tensor a new node); held
# weakly, so the entry goes with the node and its buffer is not kept.
_TARGETS_READ: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _class_mask(input, target, op: str, ignore_index: int):
    """One-hot of target over dim 1 of input (as input's dtype), and the valid mask (N, 1, ...),
    None when the target was read and no entry is ignore_index (fewer nodes to walk). A target
    not read on the host (lazy, or in a jitted step, whose replays get new targets) has no
    bounds check: its mask is NaN at an out-of-range class, so the loss is NaN, not wrong."""
    if target.dtype.is_float or target.dtype == dt.bool_:
        raise RuntimeError(f"{op}: expected target of an integer dtype (class indices), got "
                           f"{target.dtype.name}")
    n_classes = input.shape[1]
    expect = (input.shape[0],) + tuple(input.shape[2:])
    if tuple(target.shape) != expect:
        raise ValueError(f"{op}: expected target of shape {expect} for input of shape "
                         f"{tuple(input.shape)}, got {tuple(target.shape)}")
    all_valid = checked = False
    if target.node.op is Op.BUFFER and target.numel() and not in_jit():
        checked = True
        known = _TARGETS_READ.get(target.node)
        if known is not None and known[0] == (ignore_index, n_classes):
            all_valid = known[1]
        else:
            values = target.numpy()
            ignored = values == ignore_index
            bad = values[~ignored & ((values < 0) | (values >= n_classes))]
            if bad.size:
                raise IndexError(f"{op}: target {int(bad[0])} is out of bounds for {n_classes} "
                                 "classes")
            all_valid = not ignored.any()
            _TARGETS_READ[target.node] = ((ignore_index, n_classes), all_valid)
    idx = target.node.cast(dt.int64)
    idx = idx.reshape((idx.shape[0], 1) + idx.shape[1:])
    full = input.shape
    classes = ir.iota(n_classes, dt.int64).reshape((1, n_classes) + (1,) * (len(full) - 2))
    onehot = idx.expand(full).eq(classes.expand(full)).cast(as_float(input.node).dtype)
    if all_valid:
        return onehot, None
    valid = idx.ne(ignore_index)
    mask = valid.cast(onehot.dtype)
    if checked:
        return onehot, mask
    out_of_range = valid & ((idx < 0) | ~(idx < n_classes))
    return onehot, out_of_range.where(math.nan, mask)


def _count_valid(valid: ir.Node | None, onehot: ir.Node) -> ir.Node:
    """The number of targets not ignored, as a scalar of onehot's dtype."""
    if valid is None:
        return ir.const(onehot.shape[0] * math.prod(onehot.shape[2:]), onehot.dtype, ())
    return valid.reshape((valid.numel,)).sum((0,)).reshape(())


def _class_weight(op: str, weight, input, like: ir.Node) -> ir.Node:
    """weight (C,) as like's dtype, broadcast over like's shape (N, C, ...)."""
    if tuple(weight.shape) != (input.shape[1],):
        raise RuntimeError(f"{op}: weight should be a 1-D tensor of {input.shape[1]} "
                           f"elements, got shape {tuple(weight.shape)}")
    w = weight.node.cast(like.dtype).reshape((1, input.shape[1]) + (1,) * (input.ndim - 2))
    return w.expand(like.shape)


def _mean_divisor(onehot: ir.Node, valid: ir.Node | None, weighted: bool) -> ir.Node:
    """What a mean over targets divides by: their count, or the sum of their class weights
    (onehot then holds each target's weight)."""
    if not weighted:
        return _count_valid(valid, onehot)
    picked_weight = onehot.sum((1,))                                           # (N,1,..)
    if valid is not None:
        picked_weight = picked_weight * valid
    return picked_weight.reshape((picked_weight.numel,)).sum((0,)).reshape(())


def _per_target(loss: ir.Node, valid: ir.Node | None, input) -> ir.Node:
    """A (N, 1, ...) sum over classes as the loss of each target, zero where ignored."""
    if valid is not None:
        loss = loss * valid.expand(loss.shape)
    return (-loss).reshape((input.shape[0],) + tuple(input.shape[2:]))


def _nll(logp: ir.Node, input, target, weight, ignore_index, reduction, op) -> ir.Node:
    onehot, valid = _class_mask(input, target, op, ignore_index)     # (N,C,..), (N,1,..)
    if weight is not None:
        onehot = onehot * _class_weight(op, weight, input, onehot)
    # where, not onehot * logp: a masked (-inf) logit of another class would make 0 * -inf
    loss = _per_target(onehot.ne(0).where(onehot * logp, 0).sum((1,)), valid, input)
    divisor = _mean_divisor(onehot, valid, weight is not None) if reduction == "mean" else None
    return reduce_loss(loss, reduction, divisor)


def _refuse_class_weight(input, weight) -> None:
    """PyTorch has no derivative for nll_loss's class weights (named by its kernel's name)."""
    kernel = "nll_loss_forward" if input.ndim <= 2 else "nll_loss2d_forward"
    refuse_gradient(kernel, "weight", weight)


def nll_loss(input, target, weight=None, size_average=None, ignore_index: int = -100,
             reduce=None, reduction: str = "mean"):
    reduction = legacy_reduction(size_average, reduce, reduction)
    tensors = [t for t in (input, weight) if t is not None]
    device = common_device("nll_loss", tensors + [target])
    if input.ndim < 2:
        raise ValueError(f"nll_loss: expected input of shape (N, C, ...), got {tuple(input.shape)}")
    _refuse_class_weight(input, weight)
    out = _nll(as_float(input.node), input, target, weight, ignore_index, reduction, "nll_loss")
    return record("nll_loss", out, device, tensors)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index: int = -100,
                  reduce=None, reduction: str = "mean", label_smoothing: float = 0.0):
    """log_softmax over dim 1 followed by nll_loss (class indices) or by the soft-label cross
    entropy (float target of input's shape), in one recorded op."""
    reduction = legacy_reduction(size_average, reduce, reduction)
    if input.ndim == 1:
        loss = cross_entropy(input.unsqueeze(0), target.unsqueeze(0), weight,
                             ignore_index=ignore_index, reduction=reduction,
                             label_smoothing=label_smoothing)
        return loss.reshape(()) if reduction == "none" else loss
    if not 0 <= label_smoothing <= 1:
        raise ValueError(f"label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    tensors = [t for t in (input, weight) if t is not None]
    device = common_device("cross_entropy", tensors + [target])
    x = as_float(input.node)
    logp = log_softmax_in_type(x, 1)    # (PyTorch's log_softmax, then its nll_loss)
    # PyTorch's backward of a 16-bit float's log_softmax reads the rounded logp
    derived = (log_softmax_derivation(x, logp, 1) if x.dtype.is_16_bit_float and x.numel
               else None)
    if target.dtype.is_float:
        check_same_shape("cross_entropy", input, target)
        probs = target.node.cast(x.dtype)
        if label_smoothing:
            probs = from_opmath(opmath(probs) * (1 - label_smoothing), probs) + (
                label_smoothing / input.shape[1])
        out = _soft_label_loss(probs * logp, weight, reduction)
        derivation = None
        if derived is not None:     # (the target's gradient is g times the rounded logp)
            derivation = _soft_label_loss(probs.detach() * derived + probs * logp.detach(),
                                          weight, reduction)
        # named as PyTorch's soft-label loss ends: a sum over classes, for the mean a division
        return record("div_scalar" if reduction == "mean" else "sum_dim", out, device,
                      tensors + ([target] if target.requires_grad else []), derivation)
    _refuse_class_weight(input, weight)

    def loss(logp: ir.Node) -> ir.Node:
        return _class_index_loss(logp, input, target, weight, ignore_index, reduction,
                                 label_smoothing)
    derivation = None if derived is None else loss(derived)
    return record("nll_loss", loss(logp), device, tensors, derivation=derivation)


def _soft_label_loss(terms: ir.Node, weight, reduction: str) -> ir.Node:
    """cross_entropy's loss of class probabilities from their products with logp (N, C, ...),
    weighted by class, summed over classes, reduced."""
    if weight is not None:
        w = weight.node.cast(terms.dtype).reshape((1, terms.shape[1])
                                                  + (1,) * (len(terms.shape) - 2))
        terms = terms * w.expand(terms.shape)
    loss = -(terms.sum((1,)).reshape((terms.shape[0],) + terms.shape[2:]))
    return reduce_loss(loss, reduction)


def _class_index_loss(logp: ir.Node, input, target, weight, ignore_index: int, reduction: str,
                      label_smoothing: float) -> ir.Node:
    """cross_entropy's loss of class indices from logp, as PyTorch's nll_loss of it, mixed
    with the uniform part by label_smoothing (each part scaled by its number whole)."""
    out = _nll(logp, input, target, weight, ignore_index, reduction, "cross_entropy")
    if not label_smoothing:
        return out
    # PyTorch's: the uniform part weighted by class, as the nll is
    onehot, valid = _class_mask(input, target, "cross_entropy", ignore_index)
    terms = logp
    if weight is not None:
        w = _class_weight("cross_entropy", weight, input, logp)
        terms, onehot = logp * w, onehot * w
    smooth = _per_target(terms.sum((1,)), valid, input)
    divisor = (_mean_divisor(onehot, valid, weight is not None) if reduction == "mean"
               else None)
    smooth = reduce_loss(smooth, reduction, divisor)
    eps = label_smoothing
    return (from_opmath(opmath(out) * (1 - eps), out)
            + from_opmath(opmath(smooth) * (eps / logp.shape[1]), smooth))


def one_hot(tensor, num_classes: int = -1):
    if num_classes < 0:
        num_classes = int(tensor.max().item()) + 1
    classes = movement.unsqueeze(tensor, -1)
    from ..frontend.creation import arange
    return ew.cast(classes == arange(num_classes, device=tensor.device), dt.int64)


__all__ = ["relu", "relu_", "sigmoid", "tanh", "softmax", "log_softmax", "gelu", "linear", "dropout",
           "embedding", "pad", "layer_norm", "batch_norm", "nll_loss",
           "cross_entropy", "binary_cross_entropy_with_logits", "soft_margin_loss", "conv1d",
           "conv2d",
           "conv3d", "conv_tbc", "conv_transpose1d", "conv_transpose2d", "conv_transpose3d",
           "max_pool2d",
           "avg_pool2d", "one_hot"]

# ---- more of torch.nn.functional, in modules of their own (re-exported) --------------------
from . import (activation as _activation, attention as _attention,  # noqa: E402
               ctc as _ctc, distance as _distance, embedding_bag as _embedding_bag, folding as _folding,
               fractional_pooling as _fractional_pooling,
               linear_cross_entropy as _linear_cross_entropy,
               grid_sampling as _grid_sampling, loss_functions as _loss_functions,
               normalization as _normalization, pooling as _pooling,
               ranking_losses as _ranking_losses, resampling as _resampling,
               unpooling as _unpooling)
from .activation import *  # noqa: E402,F401,F403
from .attention import *  # noqa: E402,F401,F403
from .ctc import *  # noqa: E402,F401,F403
from .distance import *  # noqa: E402,F401,F403
from .embedding_bag import *  # noqa: E402,F401,F403
from .folding import *  # noqa: E402,F401,F403
from .fractional_pooling import *  # noqa: E402,F401,F403
from .linear_cross_entropy import *  # noqa: E402,F401,F403
from .grid_sampling import *  # noqa: E402,F401,F403
from .ranking_losses import *  # noqa: E402,F401,F403
from .unpooling import *  # noqa: E402,F401,F403
from .loss_functions import *  # noqa: E402,F401,F403
from .normalization import *  # noqa: E402,F401,F403
from .pooling import *  # noqa: E402,F401,F403
from .resampling import *  # noqa: E402,F401,F403

pad = _resampling.with_modes(pad)   # the constant pad above, and reflect, replicate, circular
__all__ += [name for module in (_activation, _attention, _ctc, _distance, _embedding_bag, _folding,
                                _fractional_pooling, _grid_sampling, _linear_cross_entropy,
                                _loss_functions, _normalization, _pooling, _ranking_losses,
                                _resampling, _unpooling)
           for name in module.__all__]
