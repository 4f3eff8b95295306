"""Convolution layers: Conv1d, Conv2d, Conv3d and their transposes, PyTorch's constructors,
parameters, padding modes and reprs around nn/convolution.py's functionals."""
from __future__ import annotations

from . import functional as F
from .convolution import ntuple
from .layers import WeightedLayer

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


class _ConvNd(WeightedLayer):
    """What every convolution layer shares: hyperparameters as tuples of the layer's spatial
    rank, a weight of (out, in / groups, *kernel) (transposed: (in, out / groups, *kernel))
    and PyTorch's repr."""
    _dims = 0
    _transposed = False

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride, padding,
                 dilation, groups: int, bias: bool, padding_mode: str, device, dtype,
                 output_padding=0):
        super().__init__()
        name, dims = type(self).__name__, self._dims
        if groups <= 0:
            raise ValueError(f"{name}: groups must be a positive integer, got {groups}")
        if in_channels % groups or out_channels % groups:
            raise ValueError(f"{name}: in_channels ({in_channels}) and out_channels "
                             f"({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise ValueError(f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                             f"padding_mode='{padding_mode}'")
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(f"Invalid padding string '{padding}', should be one of "
                                 "['valid', 'same']")
            if padding == "same" and any(s != 1 for s in ntuple(stride, dims, "stride")):
                raise ValueError("padding='same' is not supported for strided convolutions")
        self.in_channels, self.out_channels, self.groups = in_channels, out_channels, groups
        self.kernel_size = ntuple(kernel_size, dims, "kernel_size")
        self.stride = ntuple(stride, dims, "stride")
        self.dilation = ntuple(dilation, dims, "dilation")
        self.padding = padding if isinstance(padding, str) else \
            ntuple(padding, dims, "padding")
        self.output_padding = ntuple(output_padding, dims, "output_padding")
        self.padding_mode = padding_mode
        channels = (in_channels, out_channels // groups) if self._transposed else \
            (out_channels, in_channels // groups)
        self._create_parameters((*channels, *self.kernel_size), bias, device, dtype,
                                out_channels)

    def extra_repr(self) -> str:
        s = (f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, "
             f"stride={self.stride}")
        if self.padding != (0,) * self._dims:
            s += f", padding={self.padding}"
        if self.dilation != (1,) * self._dims:
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * self._dims:
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """A convolution: the functional, after padding the input itself for the modes other than
    zeros (as PyTorch does)."""
    _fn = None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 dilation=1, groups: int = 1, bias: bool = True, padding_mode: str = "zeros",
                 device=None, dtype=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype)

    def forward(self, input):
        if self.padding_mode == "zeros":
            return self._fn(input, self.weight, self.bias, self.stride, self.padding,
                            self.dilation, self.groups)
        padded = F.pad(input, self._padding_per_side(), mode=self.padding_mode)
        return self._fn(padded, self.weight, self.bias, self.stride, 0, self.dilation,
                        self.groups)

    def _padding_per_side(self) -> tuple[int, ...]:
        """F.pad's (last dim first, before and after) form of the layer's padding."""
        if self.padding == "valid":
            return (0, 0) * self._dims
        if self.padding == "same":
            sides = []
            for k, d in zip(reversed(self.kernel_size), reversed(self.dilation)):
                total = d * (k - 1)
                sides += [total // 2, total - total // 2]
            return tuple(sides)
        return tuple(p for p in reversed(self.padding) for _ in (0, 1))


class _ConvTranspose(_ConvNd):
    """A transposed convolution; forward's output_size picks the output padding."""
    _transposed, _fn = True, None

    def __init__(self, in_channels: int, out_channels: int, kernel_size, stride=1, padding=0,
                 output_padding=0, groups: int = 1, bias: bool = True, dilation=1,
                 padding_mode: str = "zeros", device=None, dtype=None):
        if padding_mode != "zeros":
            raise ValueError(f'Only "zeros" padding mode is supported for '
                             f'{type(self).__name__}')
        if isinstance(padding, str):
            raise ValueError(f"{type(self).__name__}: padding must be numbers, got {padding!r}")
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation,
                         groups, bias, padding_mode, device, dtype, output_padding)

    def forward(self, input, output_size=None):
        return self._fn(input, self.weight, self.bias, self.stride, self.padding,
                        self._output_padding(input, output_size), self.groups, self.dilation)

    def _output_padding(self, input, output_size) -> tuple[int, ...]:
        if output_size is None:
            return self.output_padding
        dims = self._dims
        wanted = list(output_size)[-dims:]
        if len(wanted) != dims:
            raise ValueError(f"ConvTranspose{dims}D: output_size must have {dims} or "
                             f"{dims + 2} elements (got {len(output_size)})")
        padding = []
        for axis in range(dims):
            smallest = ((input.shape[input.ndim - dims + axis] - 1) * self.stride[axis]
                        - 2 * self.padding[axis]
                        + self.dilation[axis] * (self.kernel_size[axis] - 1) + 1)
            largest = smallest + self.stride[axis] - 1
            if not smallest <= wanted[axis] <= largest:
                raise ValueError(f"requested an output size of {wanted}, but valid sizes range "
                                 f"from {smallest} to {largest} (for an input of "
                                 f"{list(input.shape[-dims:])})")
            padding.append(wanted[axis] - smallest)
        return tuple(padding)


def _layer(name: str, base: type, dims: int, fn) -> type:
    """PyTorch's layer `name`: base over dims spatial dims, calling fn."""
    return type(name, (base,), {"_dims": dims, "_fn": staticmethod(fn), "__module__": __name__,
                                "__qualname__": name})


# (the layers differ only in their dims and functional: a table, not six class statements)
Conv1d = _layer("Conv1d", _Conv, 1, F.conv1d)
Conv2d = _layer("Conv2d", _Conv, 2, F.conv2d)
Conv3d = _layer("Conv3d", _Conv, 3, F.conv3d)
ConvTranspose1d = _layer("ConvTranspose1d", _ConvTranspose, 1, F.conv_transpose1d)
ConvTranspose2d = _layer("ConvTranspose2d", _ConvTranspose, 2, F.conv_transpose2d)
ConvTranspose3d = _layer("ConvTranspose3d", _ConvTranspose, 3, F.conv_transpose3d)


__all__ = ["Conv1d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d"]
