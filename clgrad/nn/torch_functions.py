"""The nn.functional ops PyTorch also offers at top level (torch.conv2d, torch.dropout, ...),
and their native forms (native_layer_norm, native_dropout, embedding_bag's four outputs, ...),
for cg.*. Most are the same function; the rest keep torch.*'s own signatures: dropout's train
is positional, batch_norm and instance_norm take weight and bias first, embedding takes the
weight first, the losses take reduction as an enum number, the norms a cudnn flag; the
recurrent cells (rnn_tanh_cell, gru_cell, lstm_cell, ...) and loops (rnn_functions.py) take
their weights as arguments."""
from __future__ import annotations

from ..frontend.lowrank import FUNCTIONS as LOWRANK_FUNCTIONS
from ..frontend.operands import is_tensor
from ..frontend.segment_reduce import FUNCTIONS as SEGMENT_FUNCTIONS
from . import functional as F
from .batch_norm_stats import FUNCTIONS as BATCH_NORM_STATS
from .convolution import convolution
from .distance import cdist
from .native_dropouts import FUNCTIONS as DROPOUT_FUNCTIONS
from .native_dropouts import check_probability
from .native_embedding import FUNCTIONS as EMBEDDING_FUNCTIONS
from .native_norms import FUNCTIONS as NORM_FUNCTIONS
from .recurrent import gru_step, lstm_step, rnn_step
from .rnn_functions import FUNCTIONS as RNN_FUNCTIONS
from .spectral import FUNCTIONS as SPECTRAL_FUNCTIONS

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
    check_probability(p)        # (torch.*'s raise RuntimeError, F's ValueError)
    return F.dropout(input, p, training=train)


def alpha_dropout(input, p: float, train: bool):
    check_probability(p)
    return F.alpha_dropout(input, p, training=train)


def feature_alpha_dropout(input, p: float, train: bool):
    check_probability(p)
    return F.feature_alpha_dropout(input, p, training=train)


def addmv_(input, mat, vec, *, beta=1, alpha=1):
    return input.addmv_(mat, vec, beta=beta, alpha=alpha)


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


def _check_cell(op: str, input, states, w_ih, w_hh, gates: int) -> None:
    """PyTorch's checks of a cell's arguments, in its order: weights, input, hidden states."""
    hidden_size = w_hh.shape[1] if w_hh.ndim > 1 else 0
    for name, w in (("weight_ih", w_ih), ("weight_hh", w_hh)):
        if w.shape[0] != gates * hidden_size:
            raise RuntimeError(f"{op}: {name} first dim must be {gates} * hidden_size = "
                               f"{gates * hidden_size}, but got {w.shape[0]}")
    if input.ndim != 2:
        raise IndexError(f"{op}: expected a 2-d input (batch, input_size), got shape "
                         f"{tuple(input.shape)}")
    if input.shape[1] != w_ih.shape[1]:
        raise RuntimeError(f"{op}: input has inconsistent input_size: got {input.shape[1]} "
                           f"expected {w_ih.shape[1]}")
    for k, h in enumerate(states):
        if h.ndim != 2 or input.shape[0] != h.shape[0]:
            raise RuntimeError(f"{op}: Input batch size {input.shape[0]} doesn't match "
                               f"hidden{k} batch size {h.shape[0] if h.ndim else None} "
                               f"(hidden{k} of shape {tuple(h.shape)})")
        if h.shape[1] != hidden_size:
            raise RuntimeError(f"{op}: hidden{k} has inconsistent hidden_size: got "
                               f"{h.shape[1]}, expected {hidden_size}")


def _require_tensor(op: str, hx) -> None:
    if not is_tensor(hx):
        raise TypeError(f"{op}(): argument 'hx' (position 2) must be Tensor, not "
                        f"{type(hx).__name__}")


def rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One step of an Elman RNN: tanh(input w_ih^T + b_ih + hx w_hh^T + b_hh)."""
    _require_tensor("rnn_tanh_cell", hx)
    _check_cell("rnn_tanh_cell", input, [hx], w_ih, w_hh, 1)
    return rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, relu=False)


def rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _require_tensor("rnn_relu_cell", hx)
    _check_cell("rnn_relu_cell", input, [hx], w_ih, w_hh, 1)
    return rnn_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh, relu=True)


def gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    _require_tensor("gru_cell", hx)
    _check_cell("gru_cell", input, [hx], w_ih, w_hh, 3)
    return gru_step(F.linear(input, w_ih, b_ih), hx, w_hh, b_hh)


def lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None):
    """One LSTM step from hx = (h, c); returns the new (h, c)."""
    if not isinstance(hx, (tuple, list)) or not all(is_tensor(h) for h in hx):
        raise TypeError(f"lstm_cell(): argument 'hx' (position 2) must be tuple of Tensors, "
                        f"not {type(hx).__name__}")
    if len(hx) != 2:
        raise RuntimeError(f"lstm_cell expects two hidden states, got {len(hx)}")
    _check_cell("lstm_cell", input, hx, w_ih, w_hh, 4)
    return lstm_step(F.linear(input, w_ih, b_ih), tuple(hx), w_hh, b_hh)


FUNCTIONS = {name: getattr(F, name) for name in SAME} | {"cdist": cdist,
                                                        "convolution": convolution}
FUNCTIONS.update({fn.__name__: fn for fn in (
    dropout, alpha_dropout, feature_alpha_dropout, embedding, layer_norm, group_norm, batch_norm,
    instance_norm, adaptive_max_pool1d, kl_div, binary_cross_entropy_with_logits,
    margin_ranking_loss, hinge_embedding_loss, cosine_embedding_loss, poisson_nll_loss,
    triplet_margin_loss, ctc_loss, grid_sampler, affine_grid_generator, rnn_tanh_cell,
    rnn_relu_cell, gru_cell, lstm_cell, addmv_)})
FUNCTIONS.update(grid_sampler_2d=grid_sampler, grid_sampler_3d=grid_sampler)
FUNCTIONS.update(RNN_FUNCTIONS)     # rnn_tanh, rnn_relu, gru, lstm (rnn_functions.py)
# the native forms and helpers, module by module (native_norms.py: native_layer_norm, ...)
for _functions in (NORM_FUNCTIONS, DROPOUT_FUNCTIONS, BATCH_NORM_STATS, EMBEDDING_FUNCTIONS,
                   SEGMENT_FUNCTIONS, LOWRANK_FUNCTIONS, SPECTRAL_FUNCTIONS):
    FUNCTIONS.update(_functions)

# the ones PyTorch also has as Tensor methods (x.prelu(weight)); clgrad/__init__.py puts them on
# Tensor, since frontend/ cannot import nn
TENSOR_METHODS = ("prelu", "hardshrink", "stft", "istft")
