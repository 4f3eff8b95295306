"""PyTorch's names for the backward nodes of clgrad's ops: `t.grad_fn.name()` is what PyTorch
would print. Ops record under their own name (autograd.record); this table gives the grad_fn
name. PyTorch numbers the overloads of one operator (pow with a tensor or a number exponent);
clgrad's ops name the variant they are."""

GRAD_FN_NAMES = {
    # arithmetic
    "add": "AddBackward0",
    "sub": "SubBackward0",
    "rsub": "RsubBackward1",                # number - t
    "mul": "MulBackward0",
    "div": "DivBackward0",
    "div_scalar": "DivBackward1",           # t / number, where PyTorch keeps the number apart
    "rdiv": "MulBackward0",                 # number / t: PyTorch computes reciprocal(t) * number
    "floor_divide": "DivBackward0",
    "remainder": "RemainderBackward0",
    "pow": "PowBackward0",                  # t ** number
    "pow_tensor": "PowBackward1",           # t ** tensor
    "rpow": "PowBackward2",                 # number ** t
    "neg": "NegBackward0",
    "maximum": "MaximumBackward0",
    "minimum": "MinimumBackward0",
    "clamp": "ClampBackward1",
    "where": "WhereBackward0",
    # math functions
    "abs": "AbsBackward0",
    "exp": "ExpBackward0",
    "log": "LogBackward0",
    "sqrt": "SqrtBackward0",
    "rsqrt": "RsqrtBackward0",
    "sin": "SinBackward0",
    "cos": "CosBackward0",
    "tanh": "TanhBackward0",
    "sigmoid": "SigmoidBackward0",
    "relu": "ReluBackward0",
    "reciprocal": "ReciprocalBackward0",
    "floor": "FloorBackward0",
    "ceil": "CeilBackward0",
    "round": "RoundBackward0",
    "sign": "SignBackward0",
    # comparisons and logic
    "lt": "LtBackward0",
    "gt": "GtBackward0",
    "eq": "EqBackward0",
    "and": "BitwiseAndBackward0",
    "or": "BitwiseOrBackward0",
    "logical_not": "NotBackward0",
    # reductions: "_dim" is the overload given a dim
    "sum": "SumBackward0",
    "sum_dim": "SumBackward1",
    "mean": "MeanBackward0",
    "mean_dim": "MeanBackward1",
    "prod": "ProdBackward0",
    "prod_dim": "ProdBackward1",
    "max": "MaxBackward1",
    "max_dim": "MaxBackward0",
    "min": "MinBackward1",
    "min_dim": "MinBackward0",
    "amax": "AmaxBackward0",
    "amin": "AminBackward0",
    "var": "VarBackward0",
    "std": "StdBackward0",
    "logsumexp": "LogsumexpBackward0",
    "softmax": "SoftmaxBackward0",
    "log_softmax": "LogSoftmaxBackward0",
    # movement, copies and matmul
    "view": "ViewBackward0",
    "reshape": "ViewBackward0",             # PyTorch 2's name
    "permute": "PermuteBackward0",
    "transpose": "TransposeBackward0",
    "t": "TBackward0",
    "expand": "ExpandBackward0",
    "unsqueeze": "UnsqueezeBackward0",
    "squeeze": "SqueezeBackward0",
    "squeeze_dim": "SqueezeBackward1",
    "flip": "FlipBackward0",
    "repeat": "RepeatBackward0",
    "pad": "ConstantPadNdBackward0",
    "cat": "CatBackward0",
    "mm": "MmBackward0",
    "bmm": "BmmBackward0",
    "matmul": "MatmulBackward0",
    "addmm": "AddmmBackward0",
    "to": "ToCopyBackward0",
    "clone": "CloneBackward0",
    # indexing and in-place writes
    "select": "SelectBackward0",
    "slice": "SliceBackward0",
    "index": "IndexBackward0",
    "masked_fill": "MaskedFillBackward0",
    "index_put": "IndexPutBackward0",
    "copy_slices": "CopySlices",
    "copy_": "CopyBackwards",
    "fill_": "FillBackward0",
    "zero_": "ZeroBackward0",
    # nn.functional
    "gelu": "GeluBackward0",
    "dropout": "NativeDropoutBackward0",
    "embedding": "EmbeddingBackward0",
    "layer_norm": "NativeLayerNormBackward0",
    "batch_norm": "NativeBatchNormBackward0",
    "mse_loss": "MseLossBackward0",
    "nll_loss": "NllLossBackward0",
    "binary_cross_entropy_with_logits": "BinaryCrossEntropyWithLogitsBackward0",
    "conv2d": "ConvolutionBackward0",
    "max_pool2d": "MaxPool2DWithIndicesBackward0",
    "avg_pool2d": "AvgPool2DBackward0",
}
