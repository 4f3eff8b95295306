"""nn.parallel: DistributedDataParallel (processes training one model over MPI,
distributed_parallel.py), and nn.DataParallel and nn.parallel.data_parallel as PyTorch's
behave on a machine without CUDA devices, which is every machine to clgrad: the module runs
as it is, on the whole batch."""
from __future__ import annotations

from .distributed_parallel import DistributedDataParallel
from .module import Module


class DataParallel(Module):
    """Wraps module (its parameters appear as module.*); forward calls it unchanged."""

    def __init__(self, module, device_ids=None, output_device=None, dim: int = 0):
        super().__init__()
        self.module = module
        self.device_ids: list = []      # no CUDA device to split the batch over

    def forward(self, *inputs, **kwargs):
        return self.module(*inputs, **kwargs)


def data_parallel(module, inputs, device_ids=None, output_device=None, dim: int = 0,
                  module_kwargs=None):
    """module(*inputs, **module_kwargs), as PyTorch's functional form without CUDA devices."""
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    return module(*inputs, **(module_kwargs or {}))


__all__ = ["DataParallel", "DistributedDataParallel"]
