"""The nn.functional ops PyTorch also offers at top level (torch.conv2d, torch.dropout, ...),
for cg.*. Most are the same function; the rest keep torch.*'s own signatures: dropout's train
is positional, batch_norm and instance_norm take weight and bias first, embedding takes the
weight first, the losses take reduction as an enum number, the norms a cudnn flag."""
from __future__ import annotations

from . import functional as F
from .convolution import convolution
from .distance import cdist

SAME = ("conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
        "conv_transpose3d", "pixel_shuffle", "pixel_unshuffle", "cosine_similarity",
        "pairwise_distance", "celu", "celu_", "selu", "selu_", "rrelu", "rrelu_", "threshold",
        "threshold_", "prelu", "hardshrink", "max_pool1d", "max_pool2d", "max_pool3d",
        "avg_pool1d", "adaptive_avg_pool1d", "bilinear", "channel_shuffle",
        "native_channel_shuffle", "pdist", "rms_norm", "conv_tbc", "max_pool1d_with_indices")

_REDUCTION_NAMES = ("none", "mean", "sum")    # torch.* losses' enum: 0, 1, 2


def _reduction(reduction) -> str:
    if not isinstance(reduction, int) or not 0 <= reduction < len(_REDUCTION_NAMES):
        raise TypeError(f"argument 'reduction' must be int 0 (none), 1 (mean) or 2 (sum), not "
                        f"{reduction!r}")
    return _REDUCTION_NAMES[reduction]


def dropout(input, p: float, train: bool):
    return F.dropout(input, p, training=train)


def alpha_dropout(input, p: float, train: bool):
    return F.alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input, p: float, train: bool):
    return F.feature_alpha_dropout(input, p, training=train)


def embedding(weight, indices, padding_idx: int = -1, scale_grad_by_freq: bool = False,
              sparse: bool = False):
    return F.embedding(indices, weight, None if padding_idx == -1 else padding_idx)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enable: bool = True):
    return F.layer_norm(input, normalized_shape, weight, bias, eps)


def group_norm(input, num_groups: int, weight=None, bias=None, eps: float = 1e-5,
               cudnn_enabled: bool = True):
    return F.group_norm(input, num_groups, weight, bias, eps)


def batch_norm(input, weight, bias, running_mean, running_var, training: bool, momentum: float,
               eps: float, cudnn_enabled: bool):
    return F.batch_norm(input, running_mean, running_var, weight, bias, training, momentum, eps)


def instance_norm(input, weight, bias, running_mean, running_var, use_input_stats: bool,
                  momentum: float, eps: float, cudnn_enabled: bool):
    return F.instance_norm(input, running_mean, running_var, weight, bias, use_input_stats,
                           momentum, eps)


def adaptive_max_pool1d(input, output_size):
    """(values, indices), always, as torch.adaptive_max_pool1d."""
    return F.adaptive_max_pool1d(input, output_size, return_indices=True)


def kl_div(input, target, reduction=1, *, log_target: bool = False):
    return F.kl_div(input, target, reduction=_reduction(reduction), log_target=log_target)


def binary_cross_entropy_with_logits(input, target, weight=None, pos_weight=None, reduction=1):
    return F.binary_cross_entropy_with_logits(input, target, weight, pos_weight=pos_weight,
                                              reduction=_reduction(reduction))


def margin_ranking_loss(input1, input2, target, margin: float = 0.0, reduction=1):
    return F.margin_ranking_loss(input1, input2, target, margin, reduction=_reduction(reduction))


def hinge_embedding_loss(input, target, margin: float = 1.0, reduction=1):
    return F.hinge_embedding_loss(input, target, margin, reduction=_reduction(reduction))


def cosine_embedding_loss(input1, input2, target, margin: float = 0.0, reduction=1):
    return F.cosine_embedding_loss(input1, input2, target, margin,
                                   reduction=_reduction(reduction))


def poisson_nll_loss(input, target, log_input: bool, full: bool, eps: float, reduction):
    return F.poisson_nll_loss(input, target, log_input, full, eps=eps,
                              reduction=_reduction(reduction))


def triplet_margin_loss(anchor, positive, negative, margin: float = 1.0, p: float = 2,
                        eps: float = 1e-6, swap: bool = False, reduction=1):
    return F.triplet_margin_loss(anchor, positive, negative, margin, p, eps, swap,
                                 reduction=_reduction(reduction))


def ctc_loss(log_probs, targets, input_lengths, target_lengths, blank: int = 0, reduction=1,
             zero_infinity: bool = False):
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank,
                      _reduction(reduction), zero_infinity)


_GRID_MODES = ("bilinear", "nearest", "bicubic")            # torch.grid_sampler's enums
_GRID_PADDINGS = ("zeros", "border", "reflection")


def grid_sampler(input, grid, interpolation_mode: int, padding_mode: int, align_corners: bool):
    return F.grid_sample(input, grid, _GRID_MODES[interpolation_mode],
                         _GRID_PADDINGS[padding_mode], align_corners)


def affine_grid_generator(theta, size, align_corners: bool):
    return F.affine_grid(theta, size, align_corners)


FUNCTIONS = {name: getattr(F, name) for name in SAME} | {"cdist": cdist,
                                                        "convolution": convolution}
FUNCTIONS.update({fn.__name__: fn for fn in (
    dropout, alpha_dropout, feature_alpha_dropout, embedding, layer_norm, group_norm, batch_norm,
    instance_norm, adaptive_max_pool1d, kl_div, binary_cross_entropy_with_logits,
    margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss, poisson_nll_loss,
    triplet_margin_loss, ctc_loss, grid_sampler, affine_grid_generator)})
FUNCTIONS.update(grid_sampler_2d=grid_sampler, grid_sampler_3d=grid_sampler)

# the ones PyTorch also has as Tensor methods (x.prelu(weight)); clgrad/__init__.py puts them on
# Tensor, since frontend/ cannot import nn
TENSOR_METHODS = ("prelu", "hardshrink")
