"""Folding an eval-mode batch norm into the convolution or linear layer before it, as
torch.nn.utils.fusion: one layer computing both."""
from __future__ import annotations

import copy

from ...frontend import creation
from ..parameter import Parameter


def _check_eval(layer, bn) -> None:
    if layer.training or bn.training:
        raise AssertionError("Fusion only for eval!")
    if bn.running_mean is None or bn.running_var is None:
        raise AssertionError("bn.running_mean and bn.running_var must not be None")


def fuse_conv_bn_eval(conv, bn, transpose: bool = False):
    """A copy of conv whose output is bn(conv(x)) (both in eval mode)."""
    _check_eval(conv, bn)
    fused = copy.deepcopy(conv)
    fused.weight, fused.bias = fuse_conv_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias,
        transpose)
    return fused


def fuse_conv_bn_weights(conv_w, conv_b, bn_rm, bn_rv, bn_eps: float, bn_w, bn_b,
                         transpose: bool = False) -> tuple[Parameter, Parameter]:
    """The weight and bias of a convolution followed by a batch norm of these statistics and
    affine parameters (None: the identity); transpose for a transposed convolution, whose
    output channels are the weight's dimension 1."""
    bias_dtype = conv_w.dtype if conv_b is None else conv_b.dtype
    conv_b = creation.zeros_like(bn_rm) if conv_b is None else conv_b
    bn_w = creation.ones_like(bn_rm) if bn_w is None else bn_w
    bn_b = creation.zeros_like(bn_rm) if bn_b is None else bn_b
    rsqrt_var = (bn_rv + bn_eps).rsqrt()
    shape = [1, -1] if transpose else [-1, 1]
    shape += [1] * (conv_w.ndim - 2)
    fused_w = (conv_w * (bn_w * rsqrt_var).reshape(shape)).to(conv_w.dtype)
    fused_b = ((conv_b - bn_rm) * rsqrt_var * bn_w + bn_b).to(bias_dtype)
    return Parameter(fused_w, conv_w.requires_grad), Parameter(fused_b, conv_b.requires_grad)


def fuse_linear_bn_eval(linear, bn):
    """A copy of linear whose output is bn(linear(x)) (both in eval mode)."""
    _check_eval(linear, bn)
    if linear.out_features != bn.num_features and bn.num_features != 1:
        raise AssertionError("To fuse, linear.out_features == bn.num_features or "
                             f"bn.num_features == 1, got linear.out_features="
                             f"{linear.out_features} and bn.num_features={bn.num_features}")
    fused = copy.deepcopy(linear)
    fused.weight, fused.bias = fuse_linear_bn_weights(
        fused.weight, fused.bias, bn.running_mean, bn.running_var, bn.eps, bn.weight, bn.bias)
    return fused


def fuse_linear_bn_weights(linear_w, linear_b, bn_rm, bn_rv, bn_eps: float, bn_w,
                           bn_b) -> tuple[Parameter, Parameter]:
    """The weight and bias of a linear layer followed by a batch norm of these statistics and
    affine parameters."""
    bias_dtype = linear_w.dtype if linear_b is None else linear_b.dtype
    linear_b = creation.zeros_like(bn_rm) if linear_b is None else linear_b
    scale = bn_w * (bn_rv + bn_eps).rsqrt()
    fused_w = linear_w * scale.unsqueeze(-1).to(linear_w.dtype)
    fused_b = ((linear_b - bn_rm) * scale + bn_b).to(bias_dtype)
    return Parameter(fused_w, linear_w.requires_grad), Parameter(fused_b, linear_b.requires_grad)


__all__ = ["fuse_conv_bn_eval", "fuse_conv_bn_weights", "fuse_linear_bn_eval",
           "fuse_linear_bn_weights"]
