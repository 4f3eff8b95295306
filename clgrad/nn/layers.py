"""The layers: weights registered as Parameters, maths in nn.functional."""
from __future__ import annotations

import math

from ..compiler import dtype as dt
from ..compiler.ops import Op
from ..frontend import creation
from ..frontend.jit_protocol import each_call
from ..frontend.inplace import assign
from ..frontend.tensor import Tensor
from ..frontend.tensor import realize
from . import functional as F
from . import init
from .functional_module import FunctionalModule
from .module import Module, place
from .parameter import Parameter, register_affine, register_bias, register_running_stats


class WeightedLayer(Module):
    """Linear's and Conv2d's parameters: a weight and an optional bias of weight.shape[0],
    initialised as PyTorch's are (the weight kaiming-uniform with a=sqrt(5), the bias uniform
    in +-1/sqrt(fan_in)) and put on the constructor's device and dtype."""

    def _create_parameters(self, weight_shape: tuple[int, ...], bias: bool, device,
                           dtype, out_features: int | None = None) -> None:
        """out_features: the bias's size, when not weight_shape[0] (transposed convolutions)."""
        self.weight = Parameter(creation.zeros(*weight_shape))
        register_bias(self, weight_shape[0] if out_features is None else out_features, bias)
        self.reset_parameters()
        place(self, device, dtype)

    def reset_parameters(self) -> None:
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)


class Identity(Module):
    """Returns its input; takes and ignores any constructor arguments, as PyTorch's does."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(WeightedLayer):
    def __init__(self, in_features: int, out_features: int, bias: bool = True, device=None,
                 dtype=None):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self._create_parameters((out_features, in_features), bias, device, dtype)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}")


class NormBase(Module):
    """What batch and instance norms share (PyTorch's _NormBase): hyperparameters, an
    optional affine weight and bias, optional running statistics."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, device=None,
                 dtype=None, bias: bool = True):
        super().__init__()
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        register_affine(self, (num_features,), affine, bias)
        register_running_stats(self, num_features, track_running_stats)
        place(self, device, dtype)

    def reset_running_stats(self) -> None:
        if self.track_running_stats:
            init.zeros_(self.running_mean)
            init.ones_(self.running_var)
            self.num_batches_tracked = _count_tensor(0)


class _BatchNorm(NormBase):
    _dims: tuple[int, ...] = ()

    def _check_input_dim(self, input) -> None:
        if input.ndim not in self._dims:
            raise ValueError(f"{type(self).__name__}: expected {' or '.join(map(str, self._dims))}"
                             f"-D input, got {input.ndim}-D input of shape {tuple(input.shape)}")
        if input.shape[1] != self.num_features:
            raise ValueError(f"{type(self).__name__}: expected {self.num_features} channels in "
                             f"dim 1, got input of shape {tuple(input.shape)}")

    def forward(self, input):
        self._check_input_dim(input)
        use_batch = self.training or not self.track_running_stats
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            # last step's in-place update is still lazy: compute it now, so the graph of the
            # running statistics does not grow from step to step
            realize(self.running_mean, self.running_var)
            each_call(("batch count", id(self)), self._count_batch)
            if self.momentum is None:
                momentum = 1.0 / _count_value(self.num_batches_tracked)
        track = self.training and self.track_running_stats
        return F.batch_norm(input, self.running_mean if track or not use_batch else None,
                            self.running_var if track or not use_batch else None,
                            self.weight, self.bias, use_batch, momentum, self.eps)

    def _count_batch(self) -> list[Tensor]:
        """Counts a training batch in place, as PyTorch does; a jitted step's replays redo it."""
        tracked = self.num_batches_tracked
        return [assign(tracked, _count_tensor(_count_value(tracked) + 1))]

    def extra_repr(self) -> str:
        return (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, bias={self.bias is not None}, "
                f"track_running_stats={self.track_running_stats}")


def _count_tensor(n: int) -> Tensor:
    return creation.full((), n, dtype=dt.int64)


def _count_value(t: Tensor) -> int:
    return int(t.node.arg) if t.node.op is Op.CONST else int(t.item())


class BatchNorm1d(_BatchNorm):
    _dims = (2, 3)


class BatchNorm2d(_BatchNorm):
    _dims = (4,)


class BatchNorm3d(_BatchNorm):
    _dims = (5,)


class SyncBatchNorm(_BatchNorm):
    """Batch norm whose statistics span the processes of process_group; in one process, as
    clgrad runs (and PyTorch's does without a process group), they are this batch's."""
    _dims = range(2, 64)

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 affine: bool = True, track_running_stats: bool = True, process_group=None,
                 device=None, dtype=None, *, bias: bool = True):
        super().__init__(num_features, eps, momentum, affine, track_running_stats, device,
                         dtype, bias)
        self.process_group = process_group

    def _check_input_dim(self, input) -> None:
        if input.ndim < 2:
            raise ValueError(f"expected at least 2D input (got {input.ndim}D input)")
        super()._check_input_dim(input)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """module with every batch norm layer in it replaced by a SyncBatchNorm holding the
        same parameters, buffers and mode."""
        if isinstance(module, _BatchNorm) and not isinstance(module, cls):
            sync = cls(module.num_features, module.eps, module.momentum, module.affine,
                       module.track_running_stats, process_group)
            for name, value in [*module.named_parameters(recurse=False),
                                *module.named_buffers(recurse=False)]:
                setattr(sync, name, value)
            sync.train(module.training)
            return sync
        for name, child in list(module.named_children()):
            setattr(module, name, cls.convert_sync_batchnorm(child, process_group))
        return module


class Embedding(Module):
    def __init__(self, num_embeddings: int, embedding_dim: int, padding_idx: int | None = None,
                 max_norm=None, norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                 sparse: bool = False, _weight=None, _freeze: bool = False, device=None,
                 dtype=None):
        super().__init__()
        self.num_embeddings, self.embedding_dim = num_embeddings, embedding_dim
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings
        self.padding_idx, self.max_norm, self.norm_type = padding_idx, max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        self.weight = Parameter(_weight if _weight is not None else
                                creation.zeros(num_embeddings, embedding_dim),
                                requires_grad=not _freeze)
        if _weight is None:
            place(self, device, dtype)
            self.reset_parameters()

    def reset_parameters(self) -> None:
        init.normal_(self.weight)
        if self.padding_idx is not None:
            values = self.weight.detach().numpy().copy()    # numpy() is the weight's memory
            values[self.padding_idx] = 0
            assign(self.weight, creation.tensor(values, dtype=self.weight.dtype,
                                                device=self.weight.device))

    def forward(self, input):
        return F.embedding(input, self.weight, self.padding_idx, self.max_norm, self.norm_type,
                           self.scale_grad_by_freq, self.sparse)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        return s + (f", padding_idx={self.padding_idx}" if self.padding_idx is not None else "")

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx=None, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        sparse: bool = False):
        """An Embedding whose weight is embeddings (frozen unless freeze is False)."""
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx, max_norm, norm_type, scale_grad_by_freq, sparse,
                   embeddings, _freeze=freeze)


class EmbeddingBag(Embedding):
    """Bags of embedding rows reduced to one vector each (sum, mean or max)."""

    def __init__(self, num_embeddings: int, embedding_dim: int, max_norm=None,
                 norm_type: float = 2.0, scale_grad_by_freq: bool = False, mode: str = "mean",
                 sparse: bool = False, _weight=None, include_last_offset: bool = False,
                 padding_idx=None, device=None, dtype=None):
        super().__init__(num_embeddings, embedding_dim, padding_idx, max_norm, norm_type,
                         scale_grad_by_freq, sparse, _weight, device=device, dtype=dtype)
        self.mode, self.include_last_offset = mode, include_last_offset

    def forward(self, input, offsets=None, per_sample_weights=None):
        return F.embedding_bag(input, self.weight, offsets, self.max_norm, self.norm_type,
                             self.scale_grad_by_freq, self.mode, self.sparse,
                             per_sample_weights, self.include_last_offset, self.padding_idx)

    def extra_repr(self) -> str:
        s = f"{self.num_embeddings}, {self.embedding_dim}"
        if self.max_norm is not None:
            s += f", max_norm={self.max_norm}"
        if self.norm_type != 2:
            s += f", norm_type={self.norm_type}"
        if self.scale_grad_by_freq:
            s += f", scale_grad_by_freq={self.scale_grad_by_freq}"
        s += f", mode={self.mode!r}"
        if self.padding_idx is not None:
            s += f", padding_idx={self.padding_idx}"
        return s

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, max_norm=None,
                        norm_type: float = 2.0, scale_grad_by_freq: bool = False,
                        mode: str = "mean", sparse: bool = False,
                        include_last_offset: bool = False, padding_idx=None):
        if embeddings.ndim != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        bag = cls(rows, cols, max_norm, norm_type, scale_grad_by_freq, mode, sparse, embeddings,
                  include_last_offset, padding_idx)
        bag.weight.requires_grad = not freeze
        return bag


class ReLU(FunctionalModule, fn=F.relu):
    def __init__(self, inplace: bool = False):
        super().__init__(inplace=inplace)


class GELU(FunctionalModule, fn=F.gelu):
    def __init__(self, approximate: str = "none"):
        super().__init__(approximate=approximate)


class Sigmoid(Module):
    def forward(self, input):
        return input.sigmoid()


class Tanh(Module):
    def forward(self, input):
        return input.tanh()


class Softmax(FunctionalModule, fn=F.softmax):
    def __init__(self, dim: int | None = None):
        super().__init__(dim=dim)


class LogSoftmax(Softmax, fn=F.log_softmax):
    """log(softmax(x)) along dim."""


class Flatten(FunctionalModule, fn=Tensor.flatten):
    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__(start_dim=start_dim, end_dim=end_dim)
