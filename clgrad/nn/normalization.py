"""layer norm's computation (layer_normalized, behind F.layer_norm and torch.native_layer_norm),
group_norm, instance_norm, rms_norm, the channel-wise dropouts (dropout1d/2d/3d), alpha_dropout
and bilinear, as torch.nn.functional's, recorded under PyTorch's grad_fn names. A 16-bit
float's layer and group norm gradients are PyTorch's backward kernels' (reduced_norms)."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ops import Op
from ..frontend.backward import record
from ..frontend.grad_mode import no_grad
from ..frontend.operands import as_float, common_device, from_opmath, opmath
from ..frontend.variance import row_first
from .activation import check_float
from .reduced_norms import group_norm_derivation, layer_norm_derivation


def standardize(x: ir.Node, axes, eps: float) -> tuple[ir.Node, ir.Node, ir.Node]:
    """(x - mean) / sqrt(var + eps) over axes, with the mean and the biased variance (the
    axes kept as size 1)."""
    x = _own_layout(x)
    count = math.prod(x.shape[a] for a in axes)
    share = 1 / count if count else math.nan     # the mean of nothing is NaN (x is empty)
    if count:
        # summed from each row's first element: a row of equal values then has a mean equal
        # to them exactly and normalises to 0, as in PyTorch, not to its sum's rounding error
        # over a variance of that error's size (a row of 1234.567 gave 0.077). Detached: the
        # mean does not depend on the pivot
        pivot = row_first(x, axes).detach()
        mean = pivot + (x - pivot.expand(x.shape)).sum(axes) * share
    else:
        mean = x.sum(axes) * share
    centered = x - mean.expand(x.shape)
    var = (centered * centered).sum(axes) * share
    return centered * (var + eps).sqrt().recip().expand(x.shape), mean, var


def statistics(x: ir.Node, axes, eps: float) -> tuple[ir.Node, ir.Node, ir.Node]:
    """(normalised x, mean, rstd) over axes (kept as size 1); no elements: mean 0, rstd NaN,
    as PyTorch's kernels give."""
    y, mean, var = standardize(x, axes, eps)
    if not math.prod(x.shape[a] for a in axes):
        return y, mean.const_like(0.0), mean.const_like(math.nan)
    return y, mean, (var + eps).sqrt().recip()


def _own_layout(x: ir.Node) -> ir.Node:
    """x in a buffer of its own layout where it is a permuted view: a normalisation reads it
    in several passes (its mean, its variance, the normalised values, and in backward again),
    each through the permutation otherwise. A convolution's output is its product's rows
    (N, H, W, C): BatchNorm's per-channel passes gathered 16 floats 32 channels apart for
    each vector (64 x 32 x 32 x 32: up to 3.4 ms a pass); one copy into (N, C, H, W) costs
    1.2 ms there (the small ResNet step, W10, on Intel's runtime: 152 -> 126 ms)."""
    node = x
    while node.op in (Op.RESHAPE, Op.PERMUTE):
        if node.op is Op.PERMUTE:
            return x.contiguous()
        node = node.src[0]
    return x


def affine(y: ir.Node, weight, bias, shape) -> ir.Node:
    """y * weight + bias, each (when given) viewed as shape and broadcast."""
    if weight is not None:
        y = y * weight.node.cast(y.dtype).reshape(shape).expand(y.shape)
    if bias is not None:
        y = y + bias.node.cast(y.dtype).reshape(shape).expand(y.shape)
    return y


def stats_dtype(input, params):
    """The dtype of the statistics: the input's, or float32 where a float16/bfloat16 input has
    float32 parameters (PyTorch's CPU mixed type); other mixes are refused, as PyTorch's."""
    kinds = {p.dtype for p in params if p is not None}
    if not kinds or kinds == {input.dtype}:
        return input.dtype
    if input.dtype not in (dt.float16, dt.bfloat16, dt.float32):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    if kinds != {dt.float32}:
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    return dt.float32


def layer_normalized(input, node: ir.Node, normalized_shape, weight, bias, eps: float, device):
    """(output, mean, rstd): node (input's value, a float) normalised over its last
    len(normalized_shape) dims, scaled by weight and shifted by bias, recorded as
    LayerNormBackward0; the statistics are float nodes with those dims kept as size 1."""
    k = len(normalized_shape)
    axes = tuple(range(len(node.shape) - k, len(node.shape)))
    y, mean, rstd = statistics(opmath(node), axes, eps)
    y = affine(y, weight, bias, (1,) * (len(node.shape) - k) + tuple(normalized_shape))
    derivation = None
    if node.dtype.is_16_bit_float:      # (a mix of dtypes PyTorch refuses raises, empty or not)
        stats = stats_dtype(input, (weight, bias))
        if node.numel:
            derivation = layer_norm_derivation(node, mean, rstd, weight, bias, axes, stats)
    tensors = [t for t in (input, weight, bias) if t is not None]
    return record("layer_norm", from_opmath(y, node), device, tensors, derivation), mean, rstd


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5):
    """Normalises each of num_groups groups of channels (with their spatial dims) per sample,
    then scales and shifts per channel."""
    if input.ndim < 2:
        raise RuntimeError(f"group_norm: Expected at least 2 dimensions for input tensor but "
                           f"received {input.ndim}")
    n, c = input.shape[:2]
    if num_groups <= 0 or c % num_groups:
        raise RuntimeError(f"group_norm: Expected number of channels in input to be divisible "
                           f"by num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"group_norm: Expected {name} to be a vector of size equal to the "
                               f"number of channels in input ({c}), but got {name} of shape "
                               f"{list(t.shape)} and input of shape {list(input.shape)}")
    tensors = [t for t in (input, weight, bias) if t is not None]
    device = common_device("group_norm", tensors)
    node = as_float(input.node)
    x = opmath(node)
    grouped = x.reshape((n, num_groups, math.prod(input.shape[1:]) // num_groups))
    y, mean, rstd = statistics(grouped, (2,), eps)
    y = affine(y.reshape(x.shape), weight, bias, (1, c) + (1,) * (input.ndim - 2))
    derivation = group_norm_derivation_of(input, node, mean, rstd, weight, bias, (
        n, num_groups, c // num_groups, math.prod(input.shape[2:])))
    return record("group_norm", from_opmath(y, node), device, tensors, derivation)


def group_norm_derivation_of(input, node: ir.Node, mean: ir.Node, rstd: ir.Node, weight, bias,
                             grouped: tuple[int, int, int, int]) -> ir.Node | None:
    """What group_norm's output is differentiated from: for a 16-bit node (input's value),
    PyTorch's backward kernel's steps (reduced_norms), else None (the output itself)."""
    if not node.dtype.is_16_bit_float:
        return None
    stats = stats_dtype(input, (weight, bias))      # (a mix PyTorch refuses raises, empty or not)
    if not node.numel:
        return None
    return group_norm_derivation(node, mean, rstd, weight, bias, grouped, stats)


def rms_norm(input, normalized_shape, weight=None, eps: float | None = None):
    """input / sqrt(mean(input^2) + eps) over the last len(normalized_shape) dims, times
    weight; eps None is the machine epsilon of the dtype it is computed in."""
    if not isinstance(normalized_shape, (tuple, list)):
        raise TypeError(f"rms_norm: argument 'normalized_shape' must be a tuple of ints, not "
                        f"{type(normalized_shape).__name__}")
    check_float("rms_norm", input)
    shape = tuple(normalized_shape)
    k = len(shape)
    if tuple(input.shape[input.ndim - k:]) != shape or k > input.ndim:
        raise RuntimeError(f"rms_norm: Given normalized_shape={list(shape)}, expected input "
                           f"with shape [*, {', '.join(map(str, shape))}], but got input of "
                           f"size {list(input.shape)}")
    if weight is not None and tuple(weight.shape) != shape:
        raise RuntimeError(f"rms_norm: Expected weight to be of same shape as normalized_shape, "
                           f"but got weight of shape {list(weight.shape)} and normalized_shape = "
                           f"{list(shape)}")
    tensors = [t for t in (input, weight) if t is not None]
    device = common_device("rms_norm", tensors)
    dtype = input.dtype if weight is None else dt.promote(input.dtype, weight.dtype)
    x = opmath(input.node.cast(dtype))
    if eps is None:     # the epsilon of the type it is computed in: float16's is float32
        eps = float(np.finfo(x.dtype.np).eps)
    count = math.prod(shape)
    if input.numel():       # (an empty input's output is empty: no sums over no rows)
        axes = tuple(range(input.ndim - k, input.ndim))
        mean_square = (x * x).sum(axes) * (1 / count)
        x = x * (mean_square + eps).sqrt().recip().expand(x.shape)
    y = affine(x, weight, None, (1,) * (input.ndim - k) + shape)
    # in input's dtype whatever weight's, as PyTorch's (its result.type_as(input))
    return record("mul", y.cast(input.dtype), device, tensors)


def _spatial_count(input) -> int:
    return math.prod(input.shape[2:])


def instance_norm(input, running_mean=None, running_var=None, weight=None, bias=None,
                  use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5):
    """Normalises each channel of each sample over its spatial dims. With use_input_stats and
    running statistics, those are updated in place with the batch's mean of the per-instance
    statistics (unbiased variance), as PyTorch does."""
    if input.ndim < 2:
        raise ValueError(f"instance_norm: expected at least 2-D input (N, C, ...), got shape "
                         f"{tuple(input.shape)}")
    n, c = input.shape[:2]
    tensors = [t for t in (input, weight, bias) if t is not None]
    device = common_device("instance_norm", tensors)
    axes = tuple(range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    x = as_float(input.node)
    if use_input_stats:
        count = _spatial_count(input)
        if count <= 1:
            raise ValueError(f"instance_norm: Expected more than 1 spatial element when training, "
                             f"got input size {list(input.shape)}")
        y, mean, var = standardize(x, axes, eps)
        if running_mean is not None and running_var is not None:
            _update_running_instance(running_mean, running_var, mean, var, n, c, count,
                                     momentum)
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("instance_norm: Expected running_mean and running_var to be "
                               "defined when use_input_stats is false")
        mean = running_mean.node.cast(x.dtype).reshape(shape)
        inv = (running_var.node.cast(x.dtype).reshape(shape) + eps).sqrt().recip()
        y = (x - mean.expand(x.shape)) * inv.expand(x.shape)
    y = affine(y, weight, bias, shape)
    return record("view", y, device, tensors)


def _update_running_instance(running_mean, running_var, mean, var, n, c, count, momentum):
    from ..frontend.tensor import Tensor
    m = 0.1 if momentum is None else momentum
    with no_grad():
        batch_mean = Tensor(mean.reshape((n, c)), running_mean.device).detach().mean(0)
        batch_var = Tensor(var.reshape((n, c)), running_var.device).detach().mean(0) * (
            count / (count - 1))
        running_mean.copy_(running_mean * (1 - m) + batch_mean * m)
        running_var.copy_(running_var * (1 - m) + batch_var * m)


# ---- channel-wise dropout ---------------------------------------------------------------------

def _check_p(p: float) -> None:
    if not 0 <= p <= 1:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def _keep_mask(shape, p: float, like: ir.Node, device) -> ir.Node:
    """1 with probability 1 - p, else 0, as like's dtype, of shape."""
    from ..frontend.creation import rand
    keep = rand(*shape, device=device).node
    return (~(keep.cast(like.dtype) < p)).cast(like.dtype)


def _dropout(op: str, record_as: str, input, p: float, training: bool, inplace: bool, drop):
    """What the channel-wise and alpha dropouts share: the checks, the cases that change
    nothing, p = 1, and the in-place form; drop(x) computes the rest."""
    _check_p(p)
    if not training or p == 0 or input.numel() == 0:
        return input
    check_float(op, input)
    src = input._snapshot() if inplace else input
    x = src.node
    result = record(record_as, x * 0.0 if p == 1 else drop(x), src.device, [src])
    return input._assign(result, op + "_") if inplace else result


def _channels(x: ir.Node) -> tuple[int, ...]:
    """The shape of one draw per channel of each sample."""
    return (x.shape[0], x.shape[1]) + (1,) * (len(x.shape) - 2)


def _feature_dropout(op: str, input, p: float, training: bool, inplace: bool):
    """Zeroes whole channels (dim 1) of each sample with probability p, scales by 1 / (1 - p)."""
    def drop(x):
        mask = _keep_mask(_channels(x), p, x, input.device) * (1 / (1 - p))
        return x * mask.expand(x.shape)
    return _dropout(op, "mul", input, p, training, inplace, drop)


def _unbatched(op, input, p, training, inplace, batched_ndim):
    """An input without its batch dim is dropped out as a batch of one."""
    if input.ndim != batched_ndim - 1:
        return _feature_dropout(op, input, p, training, inplace)
    if not training or p == 0 or input.numel() == 0:
        return input
    out = _feature_dropout(op, input.unsqueeze(0), p, training, False).squeeze(0)
    return input.copy_(out) if inplace else out


def dropout1d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    _check_p(p)
    if input.ndim not in (2, 3):
        raise RuntimeError(f"dropout1d: Expected 2D or 3D input, but received a {input.ndim}D "
                           "input. Note that dropout1d exists to provide channel-wise dropout "
                           "on inputs with 1 spatial dimension, a channel dimension, and an "
                           "optional batch dimension (i.e. 2D or 3D inputs).")
    return _unbatched("dropout1d", input, p, training, inplace, 3)


def _warn_unless_ndim(op: str, input, ndims) -> None:
    if input.ndim not in ndims:
        warnings.warn(f"{op}: Received a {input.ndim}-D input to {op}, which is deprecated and "
                      "will result in an error in a future release. To retain the behavior and "
                      "silence this warning, please use dropout instead.", UserWarning,
                      stacklevel=3)


def dropout2d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    """Channel-wise dropout of (N, C, H, W); a 3-D input is taken as (N, C, L), with
    PyTorch's warning."""
    _check_p(p)
    _warn_unless_ndim("dropout2d", input, (3, 4))
    if input.ndim == 3:
        warnings.warn("dropout2d: Received a 3D input to dropout2d and assuming that "
                      "channel-wise 1D dropout behavior is desired - input is interpreted as "
                      "shape (N, C, L), where C is the channel dim. This behavior will change in "
                      "a future release to interpret the input as one without a batch "
                      "dimension, i.e. shape (C, H, W). To maintain the 1D channel-wise dropout "
                      "behavior, please switch to using dropout1d instead.", UserWarning,
                      stacklevel=2)
    return _feature_dropout("dropout2d", input, p, training, inplace)


def dropout3d(input, p: float = 0.5, training: bool = True, inplace: bool = False):
    _check_p(p)
    _warn_unless_ndim("dropout3d", input, (4, 5))
    if input.ndim == 4:
        return _unbatched("dropout3d", input, p, training, inplace, 5)
    return _feature_dropout("dropout3d", input, p, training, inplace)


_SELU_ALPHA_PRIME = 1.7580993408473766      # -selu's alpha * scale: SELU's negative saturation


def _alpha_dropout(op: str, input, p: float, training: bool, inplace: bool, feature: bool):
    def drop(x):
        alpha = _SELU_ALPHA_PRIME
        a = 1 / math.sqrt((alpha * alpha * p + 1) * (1 - p))
        keep = _keep_mask(_channels(x) if feature else x.shape, p, x, input.device)
        b = (keep - 1) * (alpha * a) + alpha * a * p
        return x * (keep * a).expand(x.shape) + b.expand(x.shape)
    return _dropout(op, "add", input, p, training, inplace, drop)


def alpha_dropout(input, p: float = 0.5, training: bool = False, inplace: bool = False):
    """Dropout that keeps SELU's self-normalising mean and variance: dropped elements become
    -alpha', then everything is scaled by a and shifted by b (PyTorch's a and b)."""
    return _alpha_dropout("alpha_dropout", input, p, training, inplace, feature=False)


def feature_alpha_dropout(input, p: float = 0.5, training: bool = False,
                          inplace: bool = False):
    """alpha_dropout of whole channels (dim 1) of each sample."""
    if training and p not in (0, 1) and input.ndim < 2:
        raise RuntimeError(f"feature_alpha_dropout: Feature dropout requires at least 2 "
                           f"dimensions in the input, got shape {tuple(input.shape)}")
    return _alpha_dropout("feature_alpha_dropout", input, p, training, inplace, feature=True)


def local_response_norm(input, size: int, alpha: float = 1e-4, beta: float = 0.75,
                        k: float = 1.0):
    """x / (k + alpha * mean of x^2 over `size` neighbouring channels)^beta; the window is
    zero-padded by size // 2 before and (size - 1) // 2 after, and always divided by size."""
    if input.ndim < 3:
        raise ValueError(f"local_response_norm: Expected 3D or higher dimensionality input "
                         f"(got {input.ndim} dimensions)")
    if input.numel() == 0:
        return input
    x = as_float(input.node)
    sq = x * x
    pads = tuple((size // 2, (size - 1) // 2) if a == 1 else (0, 0)
                 for a in range(len(x.shape)))
    window = sq.pad(pads).window(1, size)                  # N C size ...
    mean = window.sum((2,)).reshape(x.shape) * (1 / size)
    div = (mean * alpha + k) ** beta
    return record("div", x / div, input.device, [input])


def bilinear(input1, input2, weight, bias=None):
    """y[..., o] = sum_ij input1[..., i] weight[o, i, j] input2[..., j] + bias[o]."""
    tensors = [t for t in (input1, input2, weight, bias) if t is not None]
    common_device("bilinear", tensors)
    if weight.ndim != 3 or input1.shape[-1:] != weight.shape[1:2] or \
            input2.shape[-1:] != weight.shape[2:3] or input1.shape[:-1] != input2.shape[:-1]:
        raise RuntimeError(f"bilinear: input1 of shape {tuple(input1.shape)} and input2 of shape "
                           f"{tuple(input2.shape)} do not fit weight of shape "
                           f"{tuple(weight.shape)} (expected (..., in1), (..., in2) and "
                           "(out, in1, in2))")
    out_f, in1, in2 = weight.shape
    lead = input1.shape[:-1]
    rows = math.prod(lead)
    left = input1.reshape(rows, in1) @ weight.permute(1, 0, 2).reshape(in1, out_f * in2)
    out = (left.reshape(rows, out_f, in2) * input2.reshape(rows, 1, in2)).sum(-1)
    out = out.reshape(*lead, out_f)
    return out + bias if bias is not None else out


__all__ = ["group_norm", "instance_norm", "rms_norm", "dropout1d", "dropout2d", "dropout3d",
           "alpha_dropout", "feature_alpha_dropout", "local_response_norm", "bilinear"]
