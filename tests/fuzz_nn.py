"""The fuzzer's families of torch.nn.functional lines: activations, normalisations and losses
(see fuzz_ops for what a family is). Each keeps its operands clear of the points where its
value or gradient jumps."""
from __future__ import annotations

import math

import torch

from fuzz_gen import SIXTEEN_BIT, Builder, Value

F = "fw.nn.functional"

# activation template -> the points where its value or gradient jumps
ACTIVATIONS = {
    "{F}.gelu({x})": (), "{F}.gelu({x}, approximate='tanh')": (), "{F}.silu({x})": (),
    "{F}.mish({x})": (), "{F}.softplus({x})": (), "{F}.softplus({x}, beta=2.0, threshold=1.5)":
    (0.75,), "{F}.logsigmoid({x})": (), "{F}.softsign({x})": (), "{F}.tanhshrink({x})": (),
    "{F}.elu({x})": (0.0,), "{F}.elu({x}, alpha=0.5)": (0.0,), "{F}.selu({x})": (0.0,),
    "{F}.celu({x}, alpha=1.5)": (0.0,), "{F}.leaky_relu({x}, 0.1)": (0.0,),
    "{F}.relu6({x})": (0.0, 6.0), "{F}.hardtanh({x})": (-1.0, 1.0),
    "{F}.hardtanh({x}, -0.5, 1.5)": (-0.5, 1.5), "{F}.hardsigmoid({x})": (-3.0, 3.0),
    "{F}.hardswish({x})": (-3.0, 3.0), "{F}.hardshrink({x}, 0.5)": (-0.5, 0.5),
    "{F}.softshrink({x}, 0.5)": (-0.5, 0.5), "{F}.threshold({x}, 0.25, -1.0)": (0.25,),
    "{F}.rrelu({x}, training=False)": (0.0,), "{F}.glu({x}, -1)": (),
}


# PyTorch's gradient of these at NaN depends on where the element lies: 1 (or 0 for the
# shrinks) in its kernels' scalar loop, NaN or 0 in their vector body (tensors of more than
# 8 elements, on AVX2); clgrad's is the scalar loop's, PyTorch's formula
NAN_GRADIENT_BY_POSITION = ("elu", "selu", "celu", "hardswish", "hardtanh", "relu6",
                            "hardshrink", "softshrink")


def activation(b: Builder) -> str | None:
    x = b.operand(("float",))
    template = b.ch.pick(list(ACTIVATIONS))
    if any(f".{name}(" in template for name in NAN_GRADIENT_BY_POSITION) \
            and bool(x.t.isnan().any()):
        return None
    for point in ACTIVATIONS[template]:
        if not b.clear(x.t - point, max(x.scale, 1.0)):
            return None
    return template.format(F=F, x=x.name)


def normalization(b: Builder) -> str | None:
    """layer_norm, rms_norm over trailing dims; normalize along a dim; batch_norm (training,
    batch statistics) and group_norm over channels (dim 1)."""
    x = b.operand(("float",), min_ndim=1)
    form = b.ch.pick(("layer_norm", "rms_norm", "normalize", "batch_norm", "group_norm"))
    if form in ("layer_norm", "rms_norm"):
        trailing = tuple(x.shape[-b.ch.integer(1, min(2, len(x.shape))):])
        affine = _affine(b, trailing, bias=form == "layer_norm", finite=form == "layer_norm")
        if affine is None:
            return None
        return f"{F}.{form}({x.name}, {trailing}{affine}, eps=1e-5)"
    if form == "normalize":
        return f"{F}.normalize({x.name}, dim={b.dim(len(x.shape))})"
    if len(x.shape) < 2 or not x.t.numel():
        return None
    channels = x.shape[1]
    if form == "batch_norm":
        if x.t.numel() == channels:
            return None     # PyTorch refuses one value per channel in training
        affine = _affine(b, (channels,), bias=True, keywords=True, finite=True)
        if affine is None:
            return None
        # a 16-bit view PyTorch does not hold contiguous takes its generic kernel, which
        # rounds the statistics and each step to the type (fuzz seed 100301178: a transposed
        # bfloat16, 42 of 104 elements an ulp from its contiguous copy's): clgrad's tensors
        # have no strides, and compute as PyTorch's contiguous kernel
        name = f"{x.name}.contiguous()" if x.t.dtype in SIXTEEN_BIT else x.name
        line = f"{F}.batch_norm({name}, None, None{affine}, training=True)"
        # PyTorch's backward of a 4-d or 5-d one is wrong where the gradient reaching it is
        # a permuted view it reads as channels-last (89 of 372 shapes and orders; seed
        # 100500815: the numeric gradient is clgrad's): a flattened copy's gradient comes
        # back contiguous
        return f"{line}.flatten().view({tuple(x.shape)})" if x.t.dim() > 3 else line
    groups = b.ch.pick([g for g in (1, 2, 3, 4) if channels % g == 0])
    affine = _affine(b, (channels,), True, finite=True)
    if affine is None:
        return None
    return f"{F}.group_norm({x.name}, {groups}{affine})"


def _affine(b: Builder, shape: tuple, bias: bool, keywords: bool = False,
            finite: bool = False) -> str | None:
    """Optional weight (and bias) arguments of a normalisation over shape. finite: a weight
    free of infinities, NaNs and zeros, for the norms whose PyTorch kernels fold it into a
    scale and a shift, x * (w / std) + (b - mean * w / std) (NaN where an infinite w meets
    a finite x, +0.0 where a zero w meets a negative one), and whose backward formulas
    combine g * w across the row (layer_norm's: inf - inf); clgrad's (x - mean) / std * w + b
    and its derivative differ from them there only. None where a finite weight is past
    the generator's size (edge seed 100100424)."""
    if b.ch.chance(40):
        return ""
    weight = b.new_input(shape)
    if finite and b.edges:
        weight = b.emit(f"{weight.name}.nan_to_num(1.0, 2.0, -2.0)")
        if weight is None:
            return None
    weight = weight.name
    names = ("weight=", "bias=") if keywords else ("", "")
    text = f", {names[0]}{weight}"
    return text + (f", {names[1]}{b.new_input(shape).name}" if bias and b.ch.chance(60) else "")


def loss(b: Builder) -> str | None:
    """A loss of a float value against a target of its shape (or class indices)."""
    x = b.operand(("float",))
    reduction = b.ch.pick(("mean", "sum", "none"))
    form = b.ch.pick(("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss",
                      "binary_cross_entropy_with_logits", "cross_entropy", "nll_loss",
                      "kl_div", "soft_margin_loss"))
    if form == "soft_margin_loss" and b.edges:
        return None     # past -y x = 88 PyTorch's is inf, its gradient NaN; clgrad's are not
    if form in ("cross_entropy", "nll_loss"):
        return _classification(b, x, form, reduction)
    target = b.partner(x) if b.ch.chance(40) else b.new_input(x.shape)
    if torch.broadcast_shapes(x.shape, target.shape) != x.shape:
        return None         # PyTorch warns and broadcasts x; no loss is written so
    if form in ("binary_cross_entropy_with_logits", "soft_margin_loss"):
        target = b.emit(f"{target.name}.sigmoid()" if form.startswith("binary")
                        else f"{target.name}.sign()")
    elif form == "kl_div":
        target = b.emit(f"{target.name}.softmax(-1)") if target.shape else None
    if target is None:
        return None
    if form == "l1_loss" and not b.clear(x.t - target.t, max(x.scale, target.scale)):
        return None         # its gradient jumps where the two are equal
    return f"{F}.{form}({x.name}, {target.name}, reduction='{reduction}')"


def _classification(b: Builder, x: Value, form: str, reduction: str) -> str | None:
    """cross_entropy (maybe with label smoothing) or nll_loss of x's rows: (N, C) or (N, C,
    d...) logits, class indices written into the line."""
    if len(x.shape) < 2 or not x.shape[1] or math.prod(x.shape) == 0:
        return None
    shape = (x.shape[0],) + x.shape[2:]
    if math.prod(shape) > 64:
        return None
    classes = x.shape[1]
    picks = torch.tensor([b.ch.integer(0, classes - 1) for _ in range(math.prod(shape))])
    target = f"fw.tensor({picks.reshape(shape).tolist()!r})"
    if form == "nll_loss":
        x = b.emit(f"{x.name}.log_softmax(1)")
        if x is None:
            return None
    extra = f", label_smoothing={b.ch.pick(('0.1', '0.25'))}" \
        if form == "cross_entropy" and b.ch.chance(30) else ""
    return f"{F}.{form}({x.name}, {target}, reduction='{reduction}'{extra})"
