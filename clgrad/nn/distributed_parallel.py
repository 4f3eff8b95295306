"""DistributedDataParallel: one model trained by several processes, each on its share of every
batch. Its parameters and buffers start as rank 0's; every backward pass through its output
ends with each parameter's .grad averaged over the processes, so each optimizer then takes
the same step (PyTorch's semantics). clgrad averages them in one MPI call per dtype: a hook
on the output queues the work for the end of the pass (frontend.backward.queue_callback),
where the gradients are computed into one bucket, which all_reduce sums on the host, and each
.grad becomes a view of its mean. The summing is host work between the step's kernels
(jit_protocol.on_host), so a step under cg.jit replays it."""
from __future__ import annotations

import contextlib

from ..distributed.collectives import all_reduce, broadcast
from ..distributed.group import world
from ..frontend import creation
from ..frontend.backward import queue_callback
from ..frontend.grad_mode import is_grad_enabled, no_grad
from ..frontend.jit_protocol import guard, in_jit
from ..frontend.operands import is_tensor
from ..frontend.joining import cat
from ..frontend.tensor import realize
from .module import Module


class DistributedDataParallel(Module):
    def __init__(self, module: Module, device_ids=None, output_device=None, dim: int = 0,
                 broadcast_buffers: bool = True, process_group=None, bucket_cap_mb=None,
                 find_unused_parameters: bool = False, check_reduction: bool = False,
                 gradient_as_bucket_view: bool = False, static_graph: bool = False):
        super().__init__()
        self._comm = world(process_group)
        self.module = module
        self.broadcast_buffers = broadcast_buffers
        self.require_backward_grad_sync = True
        self._queued = False
        with no_grad():
            for t in [*module.parameters(), *module.buffers()]:
                broadcast(t, 0)

    def forward(self, *inputs, **kwargs):
        if self.broadcast_buffers and self.training:     # running statistics as rank 0's
            with no_grad():
                for b in self.module.buffers():
                    broadcast(b, 0)
        out = self.module(*inputs, **kwargs)
        # a replay of a synced pass must not run for a no_sync one, nor the other way round
        guard(lambda: self.require_backward_grad_sync)
        if is_grad_enabled() and self.require_backward_grad_sync:
            for t in _tensors(out):
                if t.requires_grad:
                    t.register_hook(self._queue_average)
        return out

    @contextlib.contextmanager
    def no_sync(self):
        """Backward passes inside keep their gradients local (accumulating them); the first
        synced pass after averages the sums."""
        before, self.require_backward_grad_sync = self.require_backward_grad_sync, False
        try:
            yield
        finally:
            self.require_backward_grad_sync = before

    def _queue_average(self, grad) -> None:
        if not self._queued:        # once per pass, whichever outputs it reaches
            self._queued = True
            queue_callback(self._average_gradients)

    def _average_gradients(self) -> None:
        self._queued = False
        params = [p for p in self.module.parameters() if p.requires_grad]
        grads = [creation.zeros_like(p) if p.grad is None else p.grad for p in params]
        for dtype in dict.fromkeys(g.dtype for g in grads):    # the same order on every rank
            mine = [(p, g) for p, g in zip(params, grads) if g.dtype == dtype]
            bucket = cat([g.reshape(-1) for _, g in mine])
            all_reduce(bucket)      # on the host, between the kernels (the one group there is)
            bucket = bucket / self._comm.Get_size()
            start = 0
            for p, g in mine:
                p.grad = bucket[start:start + g.numel()].view(g.shape)
                start += g.numel()
            if in_jit():    # a replay gives each .grad a buffer of its own (not the bucket's)
                realize(*(p.grad for p, _ in mine))


def _tensors(out) -> list:
    """The tensors in a forward's output (a tensor, or lists, tuples and dicts of them)."""
    if is_tensor(out):
        return [out]
    if isinstance(out, dict):
        out = list(out.values())
    return [t for item in out for t in _tensors(item)] if isinstance(out, (list, tuple)) else []
