"""torch.*'s dropouts with PyTorch's positional (input, p, train): the in-place forms
(dropout_, alpha_dropout_, feature_dropout_, feature_alpha_dropout_), feature_dropout, and
native_dropout, which also returns its boolean keep mask.

One routine, as ATen's _dropout_impl: no change for p = 0, train False or an empty input;
for p = 1 the input times 0; else a noise tensor of 1s kept with probability 1 - p (one draw
per element, or per channel of each sample for the feature forms), scaled by 1 / (1 - p), or
for the alpha forms by SELU's a with the shift b of the dropped elements. The gradient is
derived from that product (a mask times a constant), as PyTorch's MulBackward0/AddBackward0."""
from __future__ import annotations

import math

from ..frontend import creation
from ..frontend.backward import record
from .native_norms import torch_dtype_name

_SELU_NEGATIVE_LIMIT = 1.7580993408473766     # -SELU(-inf): what alpha dropout drops to


def check_probability(p: float) -> None:
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p:g}")


def _float_only(input) -> None:
    """The noise is divided by 1 - p in the input's dtype: an integer input cannot take it."""
    if not input.dtype.is_float:
        raise RuntimeError(f"result type Float can't be cast to the desired output type "
                           f"{torch_dtype_name(input.dtype)}")


def _noise_shape(input, feature: bool) -> tuple[int, ...]:
    if not feature:
        return tuple(input.shape)
    if input.ndim < 2:
        raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
    return tuple(input.shape[:2]) + (1,) * (input.ndim - 2)


def _keep(input, p: float, shape) -> object:
    """1 where an element (or a channel) is kept, with probability 1 - p, as input's dtype."""
    return (creation.rand(*shape, device=input.device) >= p).to(input.dtype)


def _dropout_impl(op: str, input, p: float, train: bool, *, feature: bool, alpha: bool,
                  inplace: bool):
    check_probability(p)
    if p == 0 or not train or input.numel() == 0:
        return input
    src = input._snapshot() if inplace else input
    x = src.node
    if p == 1:
        result = record("mul", x * 0, src.device, [src])
    else:
        _float_only(input)
        keep = _keep(input, p, _noise_shape(input, feature)).node
        if alpha:
            a = 1 / math.sqrt((_SELU_NEGATIVE_LIMIT ** 2 * p + 1) * (1 - p))
            shift = (keep - 1) * (_SELU_NEGATIVE_LIMIT * a) + _SELU_NEGATIVE_LIMIT * a * p
            value = x * (keep * a).expand(x.shape) + shift.expand(x.shape)
            result = record("add", value, src.device, [src])
        else:
            result = record("mul", x * (keep * (1 / (1 - p))).expand(x.shape), src.device, [src])
    return input._assign(result, op) if inplace else result


def dropout_(input, p: float, train: bool):
    return _dropout_impl("dropout_", input, p, train, feature=False, alpha=False, inplace=True)


def alpha_dropout_(input, p: float, train: bool):
    return _dropout_impl("alpha_dropout_", input, p, train, feature=False, alpha=True,
                         inplace=True)


def feature_dropout(input, p: float, train: bool):
    """Zeroes whole channels (dim 1) of each sample with probability p, scales by 1 / (1 - p);
    a 2-D input has one element per channel."""
    return _dropout_impl("feature_dropout", input, p, train, feature=True, alpha=False,
                         inplace=False)


def feature_dropout_(input, p: float, train: bool):
    return _dropout_impl("feature_dropout_", input, p, train, feature=True, alpha=False,
                         inplace=True)


def feature_alpha_dropout_(input, p: float, train: bool):
    return _dropout_impl("feature_alpha_dropout_", input, p, train, feature=True, alpha=True,
                         inplace=True)


def native_dropout(input, p: float, train: bool | None):
    """(output, mask): the mask is bool, True where the element was kept. In training (train
    True or None) output = input * mask / (1 - p), all zeros for p = 1; otherwise output is a
    copy of input and the mask all True. Either way the output has a grad_fn
    (NativeDropoutBackward0), whose gradient is grad * mask / (1 - p) (grad in eval)."""
    if input.numel() == 0:      # (PyTorch's mask of an empty input has the input's dtype)
        return input, creation.zeros(*input.shape, dtype=input.dtype, device=input.device)
    x = input.node
    if train is None or train:
        if not 0 <= 1 - p <= 1:
            raise RuntimeError(f"bernoulli_ expects p to be in [0, 1], but got p={1 - p:g}")
        if p == 1:
            mask = creation.zeros(*input.shape, device=input.device).bool()
            value = x * 0
        else:
            _float_only(input)
            keep = _keep(input, p, tuple(input.shape))
            mask = keep.bool()
            value = x * (keep.node * (1 / (1 - p)))
    else:
        mask = creation.ones(*input.shape, device=input.device).bool()
        value = x
    return record("native_dropout", value, input.device, [input]), mask


FUNCTIONS = {fn.__name__: fn for fn in (dropout_, alpha_dropout_, feature_dropout,
                                         feature_dropout_, feature_alpha_dropout_,
                                         native_dropout)}
