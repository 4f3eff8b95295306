"""PyTorch's names for the backward nodes of clgrad's ops: `t.grad_fn.name()` is what PyTorch
would print. Ops record under their own name (backward.record); most grad_fn names are that
name in CamelCase with "Backward0" (exp: ExpBackward0, log_softmax: LogSoftmaxBackward0), and
this table lists the others. PyTorch numbers the overloads of one operator (pow with a tensor
or a number exponent); clgrad's ops name the variant they are."""
import functools


@functools.cache    # asked at every op recorded for autograd: the string work once per name
def grad_fn_name(op: str) -> str:
    return GRAD_FN_NAMES.get(op) or "".join(part.title() for part in op.split("_")) + "Backward0"


GRAD_FN_NAMES = {
    # arithmetic
    "rsub": "RsubBackward1",                # number - t
    "div_scalar": "DivBackward1",           # t / number, where PyTorch keeps the number apart
    "div_rounded": "DivBackward2",          # div(..., rounding_mode='trunc' or 'floor')
    "lerp_tensor": "LerpBackward1",         # a tensor weight
    "pow_tensor": "PowBackward1",           # t ** tensor
    "rpow": "PowBackward2",                 # number ** t
    "clamp": "ClampBackward1",
    "log1p": "Log1PBackward0",
    # comparisons and logic
    "logical_not": "NotBackward0",
    # reductions: "_dim" is the overload given a dim
    "sum_dim": "SumBackward1",
    "mean_dim": "MeanBackward1",
    "prod_dim": "ProdBackward1",
    "max": "MaxBackward1",
    "max_dim": "MaxBackward0",
    "min": "MinBackward1",
    "min_dim": "MinBackward0",
    "median_dim": "MedianBackward1",
    "nanmedian_dim": "NanmedianBackward1",
    # movement, copies and matmul
    "reshape": "ViewBackward0",             # PyTorch 2's name
    "squeeze_dim": "SqueezeBackward1",
    "squeeze_": "SqueezeBackward3",         # the in-place shape changes (inplace.py)
    "squeeze__dim": "SqueezeBackward4",
    "squeeze__dims": "SqueezeBackward5",
    "unsqueeze_": "UnsqueezeBackward1",
    "transpose_": "TransposeBackward1",
    "t_": "TBackward1",
    "pad": "ConstantPadNdBackward0",
    "take_along_dim": "GatherBackward0",
    "as_strided_": "AsStridedBackward1",
    "fill_tensor": "FillBackward1",         # fill with a 0-d tensor
    "to": "ToCopyBackward0",
    # indexing and in-place writes
    "copy_slices": "CopySlices",
    "copy_": "CopyBackwards",
    "scatter_value": "ScatterBackward1",    # scatter of a number
    "index_fill_tensor": "IndexFillBackward1",
    # nn.functional
    "dropout": "NativeDropoutBackward0",
    "layer_norm": "NativeLayerNormBackward0",
    "batch_norm": "NativeBatchNormBackward0",
    "conv1d": "ConvolutionBackward0",
    "conv2d": "ConvolutionBackward0",
    "conv3d": "ConvolutionBackward0",
    "conv_transpose1d": "ConvolutionBackward0",
    "conv_transpose2d": "ConvolutionBackward0",
    "conv_transpose3d": "ConvolutionBackward0",
    "max_pool2d": "MaxPool2DWithIndicesBackward0",
    # nn activations, losses, normalisation, pooling and resampling (nn/activation.py, ...)
    "prelu": "PreluKernelBackward0",
    "norm": "NormBackward1",
    "group_norm": "NativeGroupNormBackward0",
    "rrelu": "RreluWithNoiseBackward0",
    "unfold": "Im2ColBackward0",
    "fold": "Col2ImBackward0",
    "max_pool3d": "MaxPool3DWithIndicesBackward0",
    # torch.special, and the overloads of its binary functions that take a Python number
    "xlogy_self_scalar": "XlogyBackward1",
    "xlogy_other_scalar": "XlogyBackward2",
    "special_xlog1py_self_scalar": "SpecialXlog1PyBackward1",
    "special_xlog1py_other_scalar": "SpecialXlog1PyBackward2",
    "special_zeta_self_scalar": "SpecialZetaBackward1",
    "special_zeta_other_scalar": "SpecialZetaBackward2",
    "special_ndtr": "MulBackward1",         # PyTorch's (1 + erf(x / sqrt 2)) * 0.5
    "round_decimals": "RoundBackward1",
}
