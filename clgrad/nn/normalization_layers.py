"""GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm, Unflatten and Bilinear:
PyTorch's constructors, defaults and reprs around nn/normalization.py."""
from __future__ import annotations

import math
import warnings

from ..frontend import creation
from ..frontend.tensor import realize
from . import functional as F
from . import init
from . import normalization as N
from .functional_module import FunctionalModule
from .layers import NormBase
from .module import Module, place
from .parameter import Parameter, register_affine, register_bias


class _AffineNorm(Module):
    """A normalisation whose functional takes, after the input, a layout (LayerNorm's
    normalized_shape, GroupNorm's num_groups), then an optional learned scale and shift and
    eps."""
    _layout = ""    # the attribute the functional takes as its layout

    def __init_subclass__(cls, fn, layout: str, **kwargs):
        super().__init_subclass__(**kwargs)
        cls._fn, cls._layout = staticmethod(fn), layout

    def _affine(self, shape: tuple[int, ...], affine: bool, bias: bool, device, dtype) -> None:
        register_affine(self, shape, affine, bias)
        place(self, device, dtype)

    def _over_trailing_dims(self, normalized_shape, eps, elementwise_affine: bool, bias: bool,
                            device, dtype) -> None:
        """LayerNorm's and RMSNorm's attributes: the trailing shape normalised over (an int is
        one dim), eps, and the parameters of that shape."""
        self.normalized_shape = (normalized_shape,) if isinstance(normalized_shape, int) else \
            tuple(normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        self._affine(self.normalized_shape, elementwise_affine, bias, device, dtype)

    def reset_parameters(self) -> None:
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return self._fn(input, getattr(self, self._layout), self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class LayerNorm(_AffineNorm, fn=F.layer_norm, layout="normalized_shape"):
    def __init__(self, normalized_shape, eps: float = 1e-5, elementwise_affine: bool = True,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self._over_trailing_dims(normalized_shape, eps, elementwise_affine, bias, device, dtype)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", bias={self.bias is not None}"


class RMSNorm(_AffineNorm, fn=N.rms_norm, layout="normalized_shape"):
    def __init__(self, normalized_shape, eps: float | None = None,
                 elementwise_affine: bool = True, device=None, dtype=None):
        super().__init__()
        self._over_trailing_dims(normalized_shape, eps, elementwise_affine, False, device, dtype)

    def forward(self, input):       # a scale and no shift: rms_norm takes no bias
        return self._fn(input, self.normalized_shape, self.weight, self.eps)


class GroupNorm(_AffineNorm, fn=N.group_norm, layout="num_groups"):
    def __init__(self, num_groups: int, num_channels: int, eps: float = 1e-5,
                 affine: bool = True, device=None, dtype=None, *, bias: bool = True):
        super().__init__()
        if num_groups <= 0 or num_channels % num_groups:
            raise ValueError(f"num_channels ({num_channels}) must be divisible by num_groups "
                             f"({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        self._affine((num_channels,), affine, bias, device, dtype)

    def extra_repr(self) -> str:
        return (f"{self.num_groups}, {self.num_channels}, eps={self.eps}, "
                f"affine={self.affine}, bias={self.bias is not None}")


class _InstanceNorm(NormBase):
    _dims: tuple[int, int] = (0, 0)        # (without, with) the batch dim

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = False, track_running_stats: bool = False, device=None,
                 dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias)

    def reset_parameters(self) -> None:
        self.reset_running_stats()
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        name = type(self).__name__
        if input.ndim not in self._dims:
            raise ValueError(f"{name}: expected {self._dims[0]}D or {self._dims[1]}D input (got "
                             f"{input.ndim}D input of shape {tuple(input.shape)})")
        feature_dim = input.ndim - self._dims[0]
        if input.shape[feature_dim] != self.num_features:
            if self.affine:
                raise ValueError(f"{name}: expected input's size at dim={feature_dim} to match "
                                 f"num_features ({self.num_features}), but got: "
                                 f"{input.shape[feature_dim]} (input of shape "
                                 f"{tuple(input.shape)}).")
            warnings.warn(f"{name}: input's size at dim={feature_dim} does not match "
                          "num_features. You can silence this warning by not passing in "
                          "num_features, which is not used because affine=False",
                          UserWarning, stacklevel=2)
        unbatched = input.ndim == self._dims[0]
        x = input.unsqueeze(0) if unbatched else input
        use_input_stats = self.training or not self.track_running_stats
        if self.track_running_stats and use_input_stats:
            realize(self.running_mean, self.running_var)    # last step's update, still lazy
        momentum = self.momentum if self.momentum is not None else 0.0
        out = N.instance_norm(x, self.running_mean, self.running_var, self.weight, self.bias,
                              use_input_stats, momentum, self.eps)
        return out.squeeze(0) if unbatched else out

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


class InstanceNorm1d(_InstanceNorm):
    _dims = (2, 3)


class InstanceNorm2d(_InstanceNorm):
    _dims = (3, 4)


class InstanceNorm3d(_InstanceNorm):
    _dims = (4, 5)


class LocalResponseNorm(FunctionalModule, fn=N.local_response_norm):
    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0):
        super().__init__(size=size, alpha=alpha, beta=beta, k=k)

    def extra_repr(self) -> str:
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class Unflatten(Module):
    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(dim, int):
            raise TypeError(f"Unflatten: invalid type of dim {type(dim).__name__}, expected an "
                            "int (named tensors are not supported)")
        if not isinstance(unflattened_size, (tuple, list)) or \
                not all(isinstance(s, int) for s in unflattened_size):
            raise TypeError(f"Unflatten: unflattened_size must be a tuple of ints, but found "
                            f"{unflattened_size!r}")
        self.dim, self.unflattened_size = dim, unflattened_size

    def forward(self, input):
        dim = self.dim % input.ndim if input.ndim else 0
        sizes = list(self.unflattened_size)
        if sizes.count(-1) > 1:
            raise RuntimeError("Unflatten: only one dimension can be inferred")
        known = math.prod(s for s in sizes if s != -1)
        if -1 in sizes:
            sizes[sizes.index(-1)] = input.shape[dim] // known if known else 0
        if math.prod(sizes) != input.shape[dim]:
            raise RuntimeError(f"unflatten: Provided sizes {list(self.unflattened_size)} don't "
                               f"multiply up to the size of dim {self.dim} "
                               f"({input.shape[dim]}) in the input tensor of shape "
                               f"{tuple(input.shape)}")
        return input.reshape(*input.shape[:dim], *sizes, *input.shape[dim + 1:])

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"


class Bilinear(Module):
    def __init__(self, in1_features: int, in2_features: int, out_features: int,
                 bias: bool = True, device=None, dtype=None):
        super().__init__()
        self.in1_features, self.in2_features = in1_features, in2_features
        self.out_features = out_features
        self.weight = Parameter(creation.zeros(out_features, in1_features, in2_features))
        register_bias(self, out_features, bias)
        self.reset_parameters()
        place(self, device, dtype)

    def reset_parameters(self) -> None:
        if self.in1_features <= 0:
            raise ValueError(f"in1_features must be > 0, but got (in1_features="
                             f"{self.in1_features})")
        bound = 1 / math.sqrt(self.weight.shape[1])
        init.uniform_(self.weight, -bound, bound)
        if self.bias is not None:
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input1, input2):
        return N.bilinear(input1, input2, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in1_features={self.in1_features}, in2_features={self.in2_features}, "
                f"out_features={self.out_features}, bias={self.bias is not None}")


__all__ = ["RMSNorm", "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d",
           "LocalResponseNorm", "Unflatten", "Bilinear"]
