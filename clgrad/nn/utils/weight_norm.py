"""The legacy weight normalisation, as torch.nn.utils.weight_norm: module.<name> is recomputed
from the parameters <name>_g and <name>_v by a forward pre-hook before each call
(nn.utils.parametrizations.weight_norm is its successor)."""
from __future__ import annotations

import warnings

from ..module import Module
from ..module_hooks import find_pre_hook, remove_pre_hook
from ..parameter import Parameter
from .parametrizations import norm_except_dim, weight_from_norm


class WeightNorm:
    """The forward pre-hook: sets module.<name> to g * v / |v|."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module):
        return weight_from_norm(getattr(module, self.name + "_v"),
                                getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn("`torch.nn.utils.weight_norm` is deprecated in favor of "
                      "`torch.nn.utils.parametrizations.weight_norm`.", FutureWarning,
                      stacklevel=3)
        if find_pre_hook(module, WeightNorm, name) is not None:
            raise RuntimeError(f"Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = getattr(module, name)
        del module._parameters[name]
        module.register_parameter(name + "_g",
                                  Parameter(norm_except_dim(weight, 2, fn.dim).detach()))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """Splits module.<name> into its norm <name>_g (over every dimension but dim; all of them
    for dim=None) and its direction <name>_v, both parameters."""
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    """Makes module.<name> one parameter again, of its current value."""
    return remove_pre_hook(module, WeightNorm, name, "weight_norm")


__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]
