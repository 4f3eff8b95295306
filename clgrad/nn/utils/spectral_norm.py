"""The legacy spectral normalisation, as torch.nn.utils.spectral_norm: a forward pre-hook sets
module.<name> to <name>_orig over its spectral norm, estimated by power iteration on the
buffers <name>_u and <name>_v in training mode (nn.utils.parametrizations.spectral_norm is its
successor). PyTorch also converts checkpoints of its first version, from before 2018, on
loading; clgrad reads the current layout only."""
from __future__ import annotations

from ...frontend.grad_mode import no_grad
from .. import distance
from ..module import Module
from ..module_hooks import find_pre_hook, remove_pre_hook
from ..parameter import Parameter
from .parametrizations import spectral_norm_dim, weight_as_matrix


class SpectralNorm:
    """The forward pre-hook: sets module.<name> to <name>_orig / sigma."""
    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def reshape_weight_to_matrix(self, weight):
        return weight_as_matrix(weight, self.dim)

    def compute_weight(self, module: Module, do_power_iteration: bool):
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            with no_grad():     # u and v change in place: the buffers move on
                for _ in range(self.n_power_iterations):
                    distance.normalize(weight_mat.t().mv(u), dim=0, eps=self.eps, out=v)
                    distance.normalize(weight_mat.mv(v), dim=0, eps=self.eps, out=u)
                u, v = u.clone(), v.clone()
        return weight / u.dot(weight_mat.mv(v))

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        if find_pre_hook(module, SpectralNorm, name) is not None:
            raise RuntimeError(f"Cannot register two spectral_norm hooks on the same parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = distance.normalize(weight.new_empty(h).normal_(0, 1), dim=0, eps=fn.eps)
            v = distance.normalize(weight.new_empty(w).normal_(0, 1), dim=0, eps=fn.eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u.realize())
        module.register_buffer(name + "_v", v.realize())
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Keeps module.<name> as <name>_orig and recomputes <name> as it over its spectral norm
    before each call."""
    SpectralNorm.apply(module, name, n_power_iterations, spectral_norm_dim(module, dim), eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    """Makes module.<name> one parameter again, of its current value."""
    return remove_pre_hook(module, SpectralNorm, name, "spectral_norm")


__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]
