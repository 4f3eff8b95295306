"""torch.*'s native normalisations, which also return the statistics they normalised with:
native_layer_norm (out, mean, rstd), native_batch_norm (out, save_mean, save_invstd),
native_group_norm (out, mean, rstd); and the norms native_norm and norm_except_dim.

Shapes and dtypes are PyTorch's CPU ones: layer norm's statistics keep the normalised dims
as size 1, group norm's are (N, group), batch norm's (C,) in training and empty in eval; they
have the input's dtype, or float32 for a float16/bfloat16 input with float32 parameters.
A normalised group of no elements has mean 0 and rstd NaN, as PyTorch's kernels give. Layer
and batch norm's statistics carry no gradient (PyTorch's are not differentiable outputs);
group norm's do, as PyTorch's NativeGroupNormBackward0 differentiates all three outputs."""
from __future__ import annotations

import math

from ..compiler import ir
from ..frontend.backward import record
from ..frontend.no_derivative import record_without_derivative
from ..frontend.operands import common_device, from_opmath, opmath
from ..frontend.tensor import Tensor
from .batch_norm import batch_normalized
from .normalization import (affine, group_norm_derivation_of, layer_normalized, statistics,
                            stats_dtype)

_TORCH_NAMES = {"int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                "uint8": "Byte", "bool": "Bool", "float16": "Half", "bfloat16": "BFloat16",
                "float32": "Float", "float64": "Double"}


def torch_dtype_name(dtype) -> str:
    """PyTorch's name of a dtype in its messages (c10::ScalarType): Long, Float, ..."""
    return _TORCH_NAMES[dtype.name]


def _float_kernel(kernel: str, input) -> None:
    if not input.dtype.is_float:
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{torch_dtype_name(input.dtype)}'")


def _statistic(node: ir.Node, dtype, device, inputs=()) -> Tensor:
    node = node.cast(dtype)
    if inputs:
        return record("group_norm", node, device, list(inputs))
    return Tensor(node.detach(), device)


def native_layer_norm(input, normalized_shape, weight, bias, eps: float):
    if not isinstance(normalized_shape, (tuple, list)) or \
            not all(isinstance(s, int) for s in normalized_shape):
        raise TypeError(f"native_layer_norm(): argument 'normalized_shape' (position 2) must be "
                        f"tuple of ints, not {type(normalized_shape).__name__}")
    shape = tuple(normalized_shape)
    if not shape:
        raise RuntimeError("Expected normalized_shape to be at least 1-dimensional, i.e., "
                           "containing at least one element, but got normalized_shape = []")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(f"Expected {name} to be of same shape as normalized_shape, but "
                               f"got {name} of shape {list(t.shape)} and normalized_shape = "
                               f"{list(shape)}")
    k = len(shape)
    if input.ndim < k or tuple(input.shape[input.ndim - k:]) != shape:
        raise RuntimeError(f"Given normalized_shape={list(shape)}, expected input with shape "
                           f"[*, {', '.join(map(str, shape))}], but got input of size"
                           f"{list(input.shape)}")
    _float_kernel("LayerNormKernelImpl", input)
    stats = stats_dtype(input, (weight, bias))
    device = common_device("native_layer_norm", [t for t in (input, weight, bias) if t is not None])
    out, mean, rstd = layer_normalized(input, input.node, shape, weight, bias, eps, device)
    return out, _statistic(mean, stats, device), _statistic(rstd, stats, device)


def _check_channels(op: str, input, tensors) -> int:
    c = input.shape[1]
    for name, t in tensors:
        if t is not None and tuple(t.shape) != (c,):
            raise RuntimeError(f"{op}: expected {name} of shape [{c}] (the input's channels), "
                               f"got {list(t.shape)}")
    return c


def native_batch_norm(input, weight, bias, running_mean, running_var, training: bool,
                      momentum: float, eps: float):
    """Normalises over every dim but dim 1: with the batch's statistics in training (then
    updating the running ones in place, with the unbiased variance), else with the running
    ones. save_mean and save_invstd are the batch's mean and 1 / sqrt(var + eps) in training,
    empty in eval."""
    if input.ndim < 2:
        rank = max(input.ndim, 1)
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, "
                         f"{rank - 1}], but got 1)")
    if (running_mean is None) != (running_var is None):
        raise ValueError("running_mean and running_var must either both be None or neither "
                         "be None")
    _float_kernel("batch_norm", input)
    c = _check_channels("native_batch_norm", input, (
        ("weight", weight), ("bias", bias), ("running_mean", running_mean),
        ("running_var", running_var)))
    stats = stats_dtype(input, (weight, bias, running_mean, running_var))
    device = common_device("native_batch_norm", [t for t in (input, weight, bias) if t is not None])
    if training and not input.numel():
        raise RuntimeError(f"input tensor must have at least one element, but got "
                           f"input_sizes = {list(input.shape)}")
    if not training and running_mean is None:    # (PyTorch's kernel reads a null pointer here)
        raise RuntimeError("native_batch_norm: running_mean and running_var are needed "
                           "when training is False")
    out, statistics = batch_normalized(input, input.node, weight, bias, running_mean,
                                       running_var, training, momentum, eps, device)
    if statistics is None:
        saved = tuple(Tensor(ir.const(0.0, stats, (0,)), device) for _ in range(2))
    else:
        saved = tuple(_statistic(s.reshape((c,)), stats, device) for s in statistics)
    return (out,) + saved


def native_group_norm(input, weight, bias, N: int, C: int, HxW: int, group: int, eps: float):
    """input read as (N, C, HxW), normalised over each of group groups of channels per sample;
    mean and rstd are (N, group)."""
    if group <= 0:
        raise RuntimeError(f"Expected num groups to be greater than 0, got {group}")
    if C % group:
        raise RuntimeError(f"Expected number of channels in input to be divisible by "
                           f"num_groups, but got input of shape {list(input.shape)} and "
                           f"num_groups={group}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (t.ndim != 1 or t.numel() != C):
            raise RuntimeError(f"Expected {name} to be a vector of size equal to the number of "
                               f"channels in input, but got {name} of shape {list(t.shape)} and "
                               f"input of shape {list(input.shape)}")
    _float_kernel("GroupNormKernelImpl", input)
    stats = stats_dtype(input, (weight, bias))
    if input.numel() != N * C * HxW:
        raise RuntimeError("Expected X.numel() == N * C * HxW to be true, but got false.  "
                           "(Could this error message be improved?  If so, please report an "
                           "enhancement request to PyTorch.)")
    tensors = [t for t in (input, weight, bias) if t is not None]
    device = common_device("native_group_norm", tensors)
    node = input.node
    x = opmath(node)
    grouped = x.reshape((N, group, C // group * HxW))
    y, mean, rstd = statistics(grouped, (2,), eps)
    y = affine(y.reshape((N, C, HxW)), weight, bias, (1, C, 1)).reshape(x.shape)
    derivation = group_norm_derivation_of(input, node, mean, rstd, weight, bias,
                                          (N, group, C // group, HxW))
    out = record("group_norm", from_opmath(y, node), device, tensors, derivation)
    return (out, _statistic(mean.reshape((N, group)), stats, device, [input]),
            _statistic(rstd.reshape((N, group)), stats, device, [input]))


# ---- norms ----------------------------------------------------------------------------------

_UNSET = object()


def native_norm(input, p=2, dim=_UNSET, keepdim=_UNSET, dtype=_UNSET):
    """PyTorch's kernel is for sparse tensors only: the norm of the stored (nonzero) values.
    clgrad has no sparse tensors; on a dense tensor this is what PyTorch computes for its
    to_sparse(): the p-norm of the nonzero elements (p = 0 counts them; p = -inf and p < 0
    leave the zeros out). As PyTorch's, only full reductions, no keepdim, no dtype, and no
    gradient (backward raises)."""
    given = [a is not _UNSET for a in (dim, keepdim, dtype)]
    if any(given) and not all(given):
        raise TypeError("native_norm() received an invalid combination of arguments: expected "
                        "(Tensor input, Number p = 2) or (Tensor input, Number p, tuple of ints "
                        "dim, bool keepdim, torch.dtype dtype)")
    if all(given):
        _check_full_reduction(input, dim)
        if keepdim:
            raise RuntimeError("norm_sparse currently does not support keepdim=True")
        if dtype is not None:
            raise RuntimeError("norm_sparse currently does not support 'dtype' argument")
    p = 2 if p is None else p
    if not input.dtype.is_float:
        raise RuntimeError(f"norm(): input dtype should be either floating point or complex. "
                           f"Got {torch_dtype_name(input.dtype)} instead.")
    if (p < 0 or p == math.inf) and not (input.numel() and bool((input != 0).any())):
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty "
                           f"tensor because the operation does not have an identity")
    x = opmath(input.node).reshape((input.numel(),))
    a = x.abs()
    nonzero = x.ne(0)
    if p == 0:
        value = nonzero.cast(x.dtype).sum((0,))
    elif p == math.inf:
        value = a.max((0,))
    elif p == -math.inf:
        value = -(-nonzero.where(a, math.inf)).max((0,))
    elif p < 0:
        value = nonzero.where(a ** p, 0.0).sum((0,)) ** (1 / p)
    elif p == 1:
        value = a.sum((0,))
    else:
        value = (a ** p).sum((0,)) ** (1 / p)
    return record_without_derivative("native_norm", from_opmath(value.reshape(()), input.node),
                                     input.device, [input])


def _check_full_reduction(input, dim) -> None:
    dims = [dim] if isinstance(dim, int) else list(dim)
    full = len(dims) == input.ndim
    if dims and full:
        for d in dims:
            if not -input.ndim <= d < input.ndim:
                raise IndexError(f"Dimension out of range (expected to be in range of "
                                 f"[{-input.ndim}, {input.ndim - 1}], but got {d})")
        wrapped = [d % input.ndim for d in dims]
        full = len(set(wrapped)) == len(wrapped)
    if dims and not full:
        raise RuntimeError("norm_sparse currently only supports full reductions, so 'dim' must "
                           "either be empty or contain all dimensions of the input")


def norm_except_dim(v, pow: int = 2, dim: int = 0):
    """The pow-norm of v over every dim but dim, that dim kept and the others size 1 (weight
    norm's); dim = -1 is the norm of all of v, a 0-dim tensor."""
    if not isinstance(pow, int) or isinstance(pow, bool):
        raise TypeError(f"norm_except_dim(): argument 'pow' (position 2) must be int, not "
                        f"{type(pow).__name__}")
    if dim == -1:
        return v.norm(pow)
    if v.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    last = v.ndim - 1
    if dim == 0:
        rows = v.contiguous().reshape(v.shape[0], -1)
        return rows.norm(pow, 1).reshape(v.shape[0], *(1,) * last)
    if dim == last:
        cols = v.contiguous().reshape(-1, v.shape[last])
        return cols.norm(pow, 0).reshape(*(1,) * last, v.shape[last])
    return norm_except_dim(v.transpose(0, dim), pow, 0).transpose(0, dim)


FUNCTIONS = {fn.__name__: fn for fn in (native_layer_norm, native_batch_norm, native_group_norm,
                                         native_norm, norm_except_dim)}
