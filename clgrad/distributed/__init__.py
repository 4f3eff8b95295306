"""cg.distributed: processes that train one model together over MPI, as torch.distributed.

    mpiexec -n 2 python train.py      # each process: init_process_group("mpi"), then as usual

One process group (MPI's world communicator, through mpi4py: `pip install
'clgrad[distributed]'`), collectives on tensors (collectives.py) and the rest of
torch.distributed's calls on tensors and objects (exchanges.py);
nn.parallel.DistributedDataParallel (nn/distributed_parallel.py) averages the gradients of
every backward pass across the processes.
"""
from .collectives import ReduceOp, all_gather, all_reduce, barrier, broadcast
from .exchanges import (all_gather_into_tensor, all_gather_object, broadcast_object_list,
                        recv, reduce, reduce_scatter_tensor, send)
from .group import (destroy_process_group, get_rank, get_world_size, init_process_group,
                    is_available, is_initialized)

__all__ = ["init_process_group", "destroy_process_group", "is_available", "is_initialized",
           "get_rank", "get_world_size", "ReduceOp", "all_reduce", "broadcast", "all_gather",
           "barrier", "reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "send", "recv",
           "all_gather_object", "broadcast_object_list"]
