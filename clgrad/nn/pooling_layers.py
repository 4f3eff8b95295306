"""Pooling, upsampling and padding modules: PyTorch's constructors, defaults and reprs around
nn/pooling.py and nn/resampling.py."""
from __future__ import annotations

from . import folding
from . import fractional_pooling as FP
from . import functional as F
from . import pooling as P
from . import resampling as R
from . import unpooling as U
from .convolution import ntuple
from .functional_module import FunctionalModule
from .module import Module


class AdaptiveAvgPool1d(FunctionalModule, fn=P.adaptive_avg_pool1d):
    def __init__(self, output_size):
        super().__init__(output_size=output_size)


class AdaptiveAvgPool2d(AdaptiveAvgPool1d, fn=P.adaptive_avg_pool2d):
    """Averages (N, C, H, W) input down to output_size."""


class AdaptiveAvgPool3d(AdaptiveAvgPool1d, fn=P.adaptive_avg_pool3d):
    """Averages (N, C, D, H, W) input down to output_size."""


class AdaptiveMaxPool1d(FunctionalModule, fn=P.adaptive_max_pool1d):
    def __init__(self, output_size, return_indices: bool = False):
        super().__init__(output_size=output_size, return_indices=return_indices)

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}"


class AdaptiveMaxPool2d(AdaptiveMaxPool1d, fn=P.adaptive_max_pool2d):
    """The maxima of (N, C, H, W) input's output_size windows."""


class AdaptiveMaxPool3d(AdaptiveMaxPool1d, fn=P.adaptive_max_pool3d):
    """The maxima of (N, C, D, H, W) input's output_size windows."""


class _MaxPoolNd(FunctionalModule):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1,
                 return_indices: bool = False, ceil_mode: bool = False):
        super().__init__(kernel_size=kernel_size,
                         stride=kernel_size if stride is None else stride, padding=padding,
                         dilation=dilation, ceil_mode=ceil_mode, return_indices=return_indices)

    def extra_repr(self) -> str:
        return (f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}, "
                f"dilation={self.dilation}, ceil_mode={self.ceil_mode}")


class MaxPool1d(_MaxPoolNd, fn=P.max_pool1d):
    """The maxima of (N, C, L) input's windows."""


class MaxPool2d(_MaxPoolNd, fn=F.max_pool2d):
    """The maxima of (N, C, H, W) input's windows."""


class MaxPool3d(_MaxPoolNd, fn=P.max_pool3d):
    """The maxima of (N, C, D, H, W) input's windows."""


class _AvgPoolNd(FunctionalModule):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True, divisor_override=None):
        super().__init__(kernel_size=kernel_size,
                         stride=kernel_size if stride is None else stride, padding=padding,
                         ceil_mode=ceil_mode, count_include_pad=count_include_pad,
                         divisor_override=divisor_override)

    def extra_repr(self) -> str:
        return f"kernel_size={self.kernel_size}, stride={self.stride}, padding={self.padding}"


class AvgPool2d(_AvgPoolNd, fn=F.avg_pool2d):
    """The means of (N, C, H, W) input's windows."""


class AvgPool3d(_AvgPoolNd, fn=P.avg_pool3d):
    """The means of (N, C, D, H, W) input's windows."""


def _single(value) -> tuple[int]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,)


class AvgPool1d(_AvgPoolNd):
    """As PyTorch's: its sizes are kept as 1-tuples, and it takes no divisor_override."""

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode: bool = False,
                 count_include_pad: bool = True):
        super().__init__(_single(kernel_size), _single(stride if stride is not None
                                                       else kernel_size),
                         _single(padding), ceil_mode, count_include_pad)

    def forward(self, input):
        return P.avg_pool1d(input, self.kernel_size, self.stride, self.padding, self.ceil_mode,
                            self.count_include_pad)


class Upsample(Module):
    def __init__(self, size=None, scale_factor=None, mode: str = "nearest", align_corners=None,
                 recompute_scale_factor=None):
        super().__init__()
        self.size = size
        if isinstance(scale_factor, (tuple, list)):
            self.scale_factor = tuple(float(f) for f in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode, self.align_corners = mode, align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return R.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                             recompute_scale_factor=self.recompute_scale_factor)

    def extra_repr(self) -> str:
        info = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else \
            f"size={self.size!r}"
        return info + f", mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class LPPool1d(FunctionalModule, fn=P.lp_pool1d):
    def __init__(self, norm_type, kernel_size, stride=None, ceil_mode: bool = False):
        super().__init__(norm_type=norm_type, kernel_size=kernel_size, stride=stride,
                         ceil_mode=ceil_mode)


class LPPool2d(LPPool1d, fn=P.lp_pool2d):
    """The p-norms of (N, C, H, W) input's windows."""


class LPPool3d(LPPool1d, fn=P.lp_pool3d):
    """The p-norms of (N, C, D, H, W) input's windows."""


class _MaxUnpoolNd(FunctionalModule):
    """Pooled values back at their indices' positions; hyperparameters as tuples of the
    layer's rank (stride defaults to the kernel), as PyTorch stores them."""
    _dims = 0

    def __init__(self, kernel_size, stride=None, padding=0):
        kernel = ntuple(kernel_size, self._dims, "kernel_size")
        super().__init__(kernel_size=kernel,
                         stride=kernel if stride is None else
                         ntuple(stride, self._dims, "stride"),
                         padding=ntuple(padding, self._dims, "padding"))

    def forward(self, input, indices, output_size=None):
        return self._fn(input, indices, self.kernel_size, self.stride, self.padding, output_size)


class MaxUnpool1d(_MaxUnpoolNd, fn=U.max_unpool1d):
    _dims = 1


class MaxUnpool2d(_MaxUnpoolNd, fn=U.max_unpool2d):
    _dims = 2


class MaxUnpool3d(_MaxUnpoolNd, fn=U.max_unpool3d):
    _dims = 3


class ChannelShuffle(FunctionalModule, fn=R.channel_shuffle):
    def __init__(self, groups: int):
        super().__init__(groups=groups)


class Unfold(FunctionalModule, fn=folding.unfold):
    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(kernel_size=kernel_size, dilation=dilation, padding=padding,
                         stride=stride)


class Fold(FunctionalModule, fn=folding.fold):
    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__(output_size=output_size, kernel_size=kernel_size, dilation=dilation,
                         padding=padding, stride=stride)


class PixelShuffle(FunctionalModule, fn=R.pixel_shuffle):
    def __init__(self, upscale_factor: int):
        super().__init__(upscale_factor=upscale_factor)


class PixelUnshuffle(FunctionalModule, fn=R.pixel_unshuffle):
    def __init__(self, downscale_factor: int):
        super().__init__(downscale_factor=downscale_factor)


# ---- padding -----------------------------------------------------------------------------

def _ntuple(padding, n: int, name: str) -> tuple[int, ...]:
    if isinstance(padding, int):
        return (padding,) * (2 * n)
    padding = tuple(padding)
    if len(padding) != 2 * n:
        raise ValueError(f"{name}: padding must be an int or a {2 * n}-tuple, got {padding}")
    return padding


class _Pad(Module):
    _dims = 1
    _mode = "constant"

    def __init__(self, padding):
        super().__init__()
        self.padding = _ntuple(padding, self._dims, type(self).__name__)

    def forward(self, input):
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _ConstantPad(_Pad):
    def __init__(self, padding, value: float):
        super().__init__(padding)
        self.value = value

    def forward(self, input):
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class _ZeroPad(_ConstantPad):
    def __init__(self, padding):
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


def _pad_class(name: str, base, dims: int, mode: str):
    return type(name, (base,), {"_dims": dims, "_mode": mode, "__module__": __name__})


ReflectionPad1d = _pad_class("ReflectionPad1d", _Pad, 1, "reflect")
ReflectionPad2d = _pad_class("ReflectionPad2d", _Pad, 2, "reflect")
ReflectionPad3d = _pad_class("ReflectionPad3d", _Pad, 3, "reflect")
ReplicationPad1d = _pad_class("ReplicationPad1d", _Pad, 1, "replicate")
ReplicationPad2d = _pad_class("ReplicationPad2d", _Pad, 2, "replicate")
ReplicationPad3d = _pad_class("ReplicationPad3d", _Pad, 3, "replicate")
CircularPad1d = _pad_class("CircularPad1d", _Pad, 1, "circular")
CircularPad2d = _pad_class("CircularPad2d", _Pad, 2, "circular")
CircularPad3d = _pad_class("CircularPad3d", _Pad, 3, "circular")
ConstantPad1d = _pad_class("ConstantPad1d", _ConstantPad, 1, "constant")
ConstantPad2d = _pad_class("ConstantPad2d", _ConstantPad, 2, "constant")
ConstantPad3d = _pad_class("ConstantPad3d", _ConstantPad, 3, "constant")
ZeroPad1d = _pad_class("ZeroPad1d", _ZeroPad, 1, "constant")
ZeroPad2d = _pad_class("ZeroPad2d", _ZeroPad, 2, "constant")
ZeroPad3d = _pad_class("ZeroPad3d", _ZeroPad, 3, "constant")



class _FractionalMaxPoolNd(Module):
    """The maxima of pseudo-random windows (fractional_pooling.py), fixed by _random_samples
    when given (a buffer, as in PyTorch)."""
    _dims: int

    def __init__(self, kernel_size, output_size=None, output_ratio=None,
                 return_indices: bool = False, _random_samples=None):
        super().__init__()
        name, dims = type(self).__name__, self._dims
        if output_size is None and output_ratio is None:
            raise ValueError(f"{name} requires specifying either an output size, or a pooling "
                             f"ratio")
        if output_size is not None and output_ratio is not None:
            raise ValueError("only one of output_size and output_ratio may be specified")
        self.kernel_size = ntuple(kernel_size, dims, "kernel_size")
        self.return_indices = return_indices
        self.register_buffer("_random_samples", _random_samples)
        self.output_size = (None if output_size is None
                            else ntuple(output_size, dims, "output_size"))
        self.output_ratio = (None if output_ratio is None
                             else FP.per_axis(output_ratio, dims, "output_ratio", name))
        if self.output_ratio is not None and not all(0 < r < 1 for r in self.output_ratio):
            raise ValueError(f"output_ratio must be between 0 and 1 (got {output_ratio})")

    def forward(self, input):
        pool = FP.fractional_max_pool2d if self._dims == 2 else FP.fractional_max_pool3d
        return pool(input, self.kernel_size, self.output_size, self.output_ratio,
                    self.return_indices, _random_samples=self._random_samples)


class FractionalMaxPool2d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, H, W) or (C, H, W) input."""
    _dims = 2


class FractionalMaxPool3d(_FractionalMaxPoolNd):
    """Fractional max pooling of (N, C, D, H, W) or (C, D, H, W) input."""
    _dims = 3

__all__ = ["MaxPool2d", "AvgPool2d", "MaxPool3d", "AvgPool3d", "AdaptiveAvgPool3d",
           "AdaptiveMaxPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
           "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "MaxPool1d", "AvgPool1d",
           "Upsample", "PixelShuffle", "PixelUnshuffle", "Unfold", "Fold", "LPPool1d",
           "LPPool2d", "LPPool3d", "MaxUnpool1d", "MaxUnpool2d", "MaxUnpool3d",
           "ChannelShuffle", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "ReflectionPad1d", "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d",
           "ReplicationPad2d", "ReplicationPad3d", "CircularPad1d", "CircularPad2d",
           "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
           "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "FractionalMaxPool2d", "FractionalMaxPool3d"]
