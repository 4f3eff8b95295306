"""Parametrizations built on nn.utils.parametrize, as torch.nn.utils.parametrizations:
weight_norm (the weight as g * v / |v|), spectral_norm (the weight over its largest singular
value, estimated by power iteration) and orthogonal (orthogonal.py)."""
from __future__ import annotations

from ...frontend.grad_mode import no_grad
from ...frontend.tensor import Tensor
from .. import distance
from ..conv_layers import ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from ..module import Module
from . import parametrize
from .orthogonal import orthogonal


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:
    """The pow-norm of v over every dimension but dim, shaped to broadcast against v (dim -1:
    over all of v, one number), as torch.norm_except_dim."""
    if dim == -1:
        return v.norm(pow)
    dim = dim % v.ndim
    return v.norm(pow, dim=tuple(d for d in range(v.ndim) if d != dim), keepdim=True)


def weight_from_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    """v scaled to the norm g along dim (torch._weight_norm)."""
    return v * (g / norm_except_dim(v, 2, dim))


def weight_as_matrix(weight: Tensor, dim: int) -> Tensor:
    """weight with dimension dim first, the others flattened into columns."""
    if dim != 0:
        weight = weight.permute(dim, *(d for d in range(weight.ndim) if d != dim))
    return weight.flatten(1)


def spectral_norm_dim(module: Module, dim: int | None) -> int:
    """The dimension spectral_norm normalises by default: a transposed convolution's weight
    holds its output channels in dimension 1."""
    if dim is not None:
        return dim
    return 1 if isinstance(module, (ConvTranspose1d, ConvTranspose2d, ConvTranspose3d)) else 0


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return weight_from_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor):
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int = 0) -> Module:
    """Reparametrizes module.<name> as g * v / |v| (the norm over every dimension but dim; all
    of them for dim=None): parametrizations.<name>.original0 is g, original1 is v."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def load_legacy_keys(state_dict, prefix, *_):
        """A state dict of the legacy nn.utils.weight_norm names g and v <name>_g, <name>_v."""
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(load_legacy_keys)
    return module


class _SpectralNorm(Module):
    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError("Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim % ndim
        self.eps = eps
        if ndim > 1:
            self.n_power_iterations = n_power_iterations
            weight_mat = weight_as_matrix(weight, self.dim)
            h, w = weight_mat.shape
            u = weight_mat.new_empty(h).normal_(0, 1)
            v = weight_mat.new_empty(w).normal_(0, 1)
            self.register_buffer("_u", distance.normalize(u, dim=0, eps=self.eps))
            self.register_buffer("_v", distance.normalize(v, dim=0, eps=self.eps))
            self._power_method(weight_mat, 15)

    @no_grad()
    def _power_method(self, weight_mat: Tensor, n_power_iterations: int) -> None:
        """Moves _u and _v (in place) towards the first left and right singular vectors."""
        for _ in range(n_power_iterations):
            distance.normalize(weight_mat.mv(self._v), dim=0, eps=self.eps, out=self._u)
            distance.normalize(weight_mat.t().mv(self._u), dim=0, eps=self.eps, out=self._v)

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return distance.normalize(weight, dim=0, eps=self.eps)
        weight_mat = weight_as_matrix(weight, self.dim)
        if self.training:
            self._power_method(weight_mat, self.n_power_iterations)
        u, v = self._u.clone(), self._v.clone()
        return weight / u.vdot(weight_mat.mv(v))

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """Reparametrizes module.<name> as itself over its spectral norm, estimated by
    n_power_iterations steps of power iteration at each read in training mode (the vectors
    are the buffers parametrizations.<name>.0._u and _v)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    dim = spectral_norm_dim(module, dim)
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


__all__ = ["orthogonal", "spectral_norm", "weight_norm"]
