"""Activation modules: PyTorch's constructors, defaults and reprs around nn/activation.py."""
from __future__ import annotations

from ..frontend import creation
from . import activation as A
from .functional_module import FunctionalModule
from .module import Module, place
from .parameter import Parameter


class _Inplace(FunctionalModule):
    """An activation with only an inplace flag."""

    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class SiLU(_Inplace, fn=A.silu):
    """x * sigmoid(x), elementwise."""


class Mish(_Inplace, fn=A.mish):
    """x * tanh(softplus(x)), elementwise."""


class SELU(_Inplace, fn=A.selu):
    """ELU scaled to keep activations self-normalising."""


class Hardswish(_Inplace, fn=A.hardswish):
    """x * relu6(x + 3) / 6, elementwise."""


class Hardsigmoid(_Inplace, fn=A.hardsigmoid):
    """relu6(x + 3) / 6, elementwise."""


class Softsign(FunctionalModule, fn=A.softsign):
    """x / (1 + |x|), elementwise."""


class LogSigmoid(FunctionalModule, fn=A.logsigmoid):
    """log(sigmoid(x)), elementwise."""


class Tanhshrink(FunctionalModule, fn=A.tanhshrink):
    """x - tanh(x), elementwise."""


class LeakyReLU(FunctionalModule, fn=A.leaky_relu):
    def __init__(self, negative_slope: float = 0.01, inplace: bool = False):
        super().__init__(negative_slope=negative_slope, inplace=inplace)


class ELU(FunctionalModule, fn=A.elu):
    def __init__(self, alpha: float = 1.0, inplace: bool = False):
        super().__init__(alpha=alpha, inplace=inplace)


class CELU(ELU, fn=A.celu):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)), elementwise."""


class Hardtanh(FunctionalModule, fn=A.hardtanh):
    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False,
                 min_value: float | None = None, max_value: float | None = None):
        if min_value is not None:
            min_val = min_value
        if max_value is not None:
            max_val = max_value
        if not max_val > min_val:
            raise AssertionError(f"Hardtanh: max_val ({max_val}) must be greater than min_val "
                                 f"({min_val})")
        super().__init__(min_val=min_val, max_val=max_val, inplace=inplace)


class ReLU6(Hardtanh):
    def __init__(self, inplace: bool = False):
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Softplus(FunctionalModule, fn=A.softplus):
    def __init__(self, beta: float = 1.0, threshold: float = 20.0):
        super().__init__(beta=beta, threshold=threshold)


class Threshold(FunctionalModule, fn=A.threshold):
    def __init__(self, threshold: float, value: float, inplace: bool = False):
        super().__init__(threshold=threshold, value=value, inplace=inplace)


class Hardshrink(FunctionalModule, fn=A.hardshrink):
    def __init__(self, lambd: float = 0.5):
        super().__init__(lambd=lambd)

    def extra_repr(self) -> str:
        return f"{self.lambd}"


class Softshrink(Hardshrink, fn=A.softshrink):
    """x moved towards 0 by lambd, and 0 within lambd of it."""


class PReLU(Module):
    def __init__(self, num_parameters: int = 1, init: float = 0.25, device=None, dtype=None):
        super().__init__()
        self.num_parameters, self.init = num_parameters, init
        self.weight = Parameter(creation.full((num_parameters,), init))
        place(self, device, dtype)

    def reset_parameters(self) -> None:
        from . import init
        init.constant_(self.weight, self.init)

    def forward(self, input):
        return A.prelu(input, self.weight)

    def extra_repr(self) -> str:
        return f"num_parameters={self.num_parameters}"


class GLU(FunctionalModule, fn=A.glu):
    def __init__(self, dim: int = -1):
        super().__init__(dim=dim)


class Softmin(FunctionalModule, fn=A.softmin):
    def __init__(self, dim: int | None = None):
        super().__init__(dim=dim)


class RReLU(FunctionalModule, fn=A.rrelu):
    def __init__(self, lower: float = 1.0 / 8, upper: float = 1.0 / 3, inplace: bool = False):
        super().__init__(lower=lower, upper=upper, inplace=inplace)

    def forward(self, input):
        return self._fn(input, self.lower, self.upper, self.training, self.inplace)


class Softmax2d(Module):
    """Softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.ndim not in (3, 4):
            raise ValueError(f"Softmax2d: expected input to be 3D or 4D, got {input.ndim}D "
                             f"instead (shape {tuple(input.shape)})")
        return input.softmax(-3)


__all__ = ["RReLU", "Softmax2d", "SiLU", "Mish", "LeakyReLU", "ELU", "SELU", "CELU", "Hardtanh",
           "ReLU6", "Hardswish", "Hardsigmoid", "Softplus", "Softsign", "LogSigmoid", "Tanhshrink",
           "Threshold", "Hardshrink", "Softshrink", "PReLU", "GLU", "Softmin"]
