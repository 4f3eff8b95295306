"""nn.AdaptiveLogSoftmaxWithLoss (Grave et al., 2016): a head over the frequent classes and
one entry per cluster of rarer ones, each cluster a low-rank softmax of its own.

PyTorch picks each cluster's rows with nonzero(), which reads the targets on the host. Here
every cluster's log-softmax is computed for the whole batch and each row takes its own
cluster's through where: no host read in the graph, the same values, and a gradient of zero
for the rows a cluster does not hold."""
from __future__ import annotations

from collections import namedtuple

from ..frontend import joining
from . import functional as F
from .containers import ModuleList, Sequential
from .layers import Linear
from .module import Module

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    def __init__(self, in_features: int, n_classes: int, cutoffs, div_value: float = 4.0,
                 head_bias: bool = False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if not cutoffs:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1 \
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs):
            raise ValueError("cutoffs should be a sequence of unique, positive integers sorted "
                             "in an increasing order, where each value is between 1 and "
                             f"n_classes-1 (got {cutoffs} for n_classes={n_classes})")
        self.in_features, self.n_classes = in_features, n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value, self.head_bias = div_value, head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, device=device,
                           dtype=dtype)
        self.tail = ModuleList(
            Sequential(Linear(in_features, int(in_features // div_value ** (i + 1)), bias=False,
                              device=device, dtype=dtype),
                       Linear(int(in_features // div_value ** (i + 1)),
                              self.cutoffs[i + 1] - self.cutoffs[i], bias=False,
                              device=device, dtype=dtype))
            for i in range(self.n_clusters))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for projection in self.tail:
            for layer in projection:
                layer.reset_parameters()

    def forward(self, input, target):
        _check_shapes(input, target)
        batched = target.ndim > 0
        x, t = (input, target) if batched else (input.unsqueeze(0), target.unsqueeze(0))
        if bool(((t < 0) | (t >= self.n_classes)).any()):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but "
                               f"values in range [{t.min().item()}, {t.max().item()}] were "
                               f"found. ")
        head = F.log_softmax(self.head(x), dim=1)
        # 0 for the shortlist, i + 1 for the i-th cluster
        cluster = sum((t >= low).long() for low in self.cutoffs[:-1])
        column = t.where(cluster == 0, cluster + (self.shortlist_size - 1))
        output = head.gather(1, column.unsqueeze(1)).squeeze(1)
        for i, projection in enumerate(self.tail):
            low, size = self.cutoffs[i], self.cutoffs[i + 1] - self.cutoffs[i]
            local = F.log_softmax(projection(x), dim=1)
            picked = local.gather(1, (t - low).clamp(0, size - 1).unsqueeze(1)).squeeze(1)
            output = output + picked.where(cluster == i + 1, 0.0)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def log_prob(self, input):
        """(N, n_classes): every class's log-probability."""
        head = F.log_softmax(self.head(input), dim=1)
        parts = [head[:, :self.shortlist_size]]
        for i, projection in enumerate(self.tail):
            cluster = head[:, self.shortlist_size + i:self.shortlist_size + i + 1]
            parts.append(F.log_softmax(projection(input), dim=1) + cluster)
        return joining.cat(parts, 1)

    def predict(self, input):
        """(N,): the most probable class of each row (a shortlist class that wins the head
        beats every class of a cluster, whose log-probabilities are the cluster's or less)."""
        return self.log_prob(input).argmax(1)


def _check_shapes(input, target) -> None:
    if target.ndim == 1:
        if input.shape[0] != target.shape[0]:
            raise RuntimeError("Input and target should have the same size in the batch "
                               f"dimension (input {tuple(input.shape)}, target "
                               f"{tuple(target.shape)}).")
        if input.ndim != 2:
            raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs "
                               f"with size {tuple(input.shape)}")
    elif target.ndim == 0:
        if input.ndim != 1:
            raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs "
                               f"with size {tuple(input.shape)}")
    else:
        raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")


__all__ = ["AdaptiveLogSoftmaxWithLoss"]
