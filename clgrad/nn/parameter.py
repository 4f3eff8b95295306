"""Parameter: a leaf tensor that a Module registers as one of its weights."""
from __future__ import annotations

from ..frontend.tensor import Tensor


class Parameter(Tensor):
    """A Tensor that requires grad by default and that Modules register when assigned."""

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            from ..frontend.creation import empty
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"Parameter: expected a Tensor, got {type(data).__name__}")
        # shares data's buffer, as PyTorch's Parameter shares storage; a lazy data is computed
        # first, so the parameter is a buffer node of its own, not a graph autograd walks into
        data.realize()
        super().__init__(data.node, data.device)
        if requires_grad:
            self.requires_grad_()

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()


def register_affine(module, shape: tuple[int, ...], affine: bool, bias: bool = True) -> None:
    """A normalisation layer's weight (ones) and bias (zeros) of shape, or None for each it
    does not have."""
    from ..frontend.creation import ones, zeros
    module.register_parameter("weight", Parameter(ones(*shape)) if affine else None)
    module.register_parameter("bias", Parameter(zeros(*shape)) if affine and bias else None)


def register_running_stats(module, num_features: int, track: bool) -> None:
    """A normalisation layer's running mean (zeros), variance (ones) and batch count, or None
    for each when it does not track them."""
    from ..compiler.dtype import int64
    from ..frontend.creation import full, ones, zeros
    module.register_buffer("running_mean", zeros(num_features).realize() if track else None)
    module.register_buffer("running_var", ones(num_features).realize() if track else None)
    module.register_buffer("num_batches_tracked", full((), 0, dtype=int64) if track else None)


def register_bias(module, features: int, bias: bool) -> None:
    """A layer's bias of `features` zeros (its reset_parameters fills it), or None if bias is
    False."""
    from ..frontend.creation import zeros
    module.register_parameter("bias", Parameter(zeros(features)) if bias else None)
