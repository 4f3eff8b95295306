"""Collectives on tensors, in place and outside autograd as PyTorch's: each rank's tensor is
read into host memory, MPI combines the ranks' arrays, and the result is written back
(inplace.overwrite)."""
from __future__ import annotations

import functools
import time

import numpy as np

from ..frontend import inplace
from ..frontend.jit_protocol import on_host
from ..frontend.operands import is_tensor
from .group import mpi, world

# dtypes every MPI reduces as numbers (bool and bfloat16 have no MPI type mpi4py maps)
_MPI_DTYPES = frozenset({"float32", "float64", "int8", "uint8", "int16", "int32", "int64"})


class ReduceOp:
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"


_MPI_OPS = {ReduceOp.SUM: "SUM", ReduceOp.PRODUCT: "PROD", ReduceOp.MIN: "MIN",
            ReduceOp.MAX: "MAX"}


class _Done:
    """The Work an async_op=True call returns: clgrad's collectives finish before returning."""

    def wait(self, timeout=None) -> bool:
        return True

    def is_completed(self) -> bool:
        return True


# A rank that arrives at a collective tests it in a loop for a while: when the others are
# there too, each step of MPI's exchange needs a test on both sides, and sleeping between them
# made a 33,000-float all_reduce take 640 us instead of 35. Past that, a partner still
# computing needs this core, so the rank sleeps between tests (MPI's own wait would spin).
_SPIN_S = 200e-6
_POLL_S = 50e-6


def finish(request, status=None) -> None:
    """Waits for a nonblocking MPI call (its status into status, if given): tests it in a loop
    for _SPIN_S, then sleeping _POLL_S between tests."""
    spin_until = time.perf_counter() + _SPIN_S
    while not request.Test(status):
        if time.perf_counter() > spin_until:
            time.sleep(_POLL_S)


def done(async_op: bool):
    return _Done() if async_op else None


@functools.cache
def _sendable_dtypes() -> frozenset[str]:
    """_MPI_DTYPES, and float16 where this MPI has a type for it (MPICH's extension)."""
    from mpi4py.util import dtlib
    try:
        half = dtlib.from_numpy_dtype(np.float16) != mpi().DATATYPE_NULL
    except (KeyError, ValueError):
        half = False
    return _MPI_DTYPES | {"float16"} if half else _MPI_DTYPES


def check_sendable(op: str, t) -> None:
    if not is_tensor(t):
        raise TypeError(f"{op}: expected a Tensor, got {type(t).__name__}")
    if t.dtype.name not in _sendable_dtypes():
        raise TypeError(f"{op}: tensors of dtype {t.dtype} cannot be sent over MPI "
                        f"(expected one of {', '.join(sorted(_sendable_dtypes()))})")


def write(tensors: list, values: list) -> None:
    for t, value in zip(tensors, values):
        inplace.overwrite(t, value)


def mpi_op_of(name: str, op):
    """MPI's operation for a ReduceOp."""
    if op not in _MPI_OPS:
        raise ValueError(f"{name}: unknown reduce op {op!r} (expected a ReduceOp: SUM, "
                         f"PRODUCT, MIN or MAX)")
    return getattr(mpi(), _MPI_OPS[op])


def check_rank(op: str, which: str, rank: int, comm) -> None:
    if not 0 <= rank < comm.Get_size():
        raise ValueError(f"{op}: {which} rank {rank} is not in the group of "
                         f"{comm.Get_size()} processes")


# Each collective is host work between kernels (jit_protocol.on_host): the tensors' values
# come to the host, MPI combines them there, and the results come back as new buffers, which
# the tensors take in place. Under cg.jit, a replay runs the same exchange at the same point.

def host_call(key, tensor, start, status=None) -> list:
    """tensor's new values, as a list of one tensor: on_host work in which start(values)
    begins a nonblocking MPI call on the host array of tensor's values, in place, and which
    waits for it (status, if given, gets the call's)."""
    def run(arrays):
        finish(start(arrays[0]), status)
        return arrays
    return on_host(key, run, [tensor])


def all_reduce(tensor, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """tensor becomes op over every rank's tensor (their sum by default), on every rank."""
    comm, mpi_op = world(group), mpi_op_of("all_reduce", op)
    check_sendable("all_reduce", tensor)
    MPI = mpi()
    write([tensor], host_call(("all_reduce", id(comm), op), tensor,
                              lambda values: comm.Iallreduce(MPI.IN_PLACE, values, op=mpi_op)))
    return done(async_op)


def broadcast(tensor, src: int, group=None, async_op: bool = False):
    """tensor becomes rank src's tensor, on every rank."""
    comm = world(group)
    check_rank("broadcast", "src", src, comm)
    check_sendable("broadcast", tensor)
    write([tensor], host_call(("broadcast", id(comm), src), tensor,
                              lambda values: comm.Ibcast(values, root=src)))
    return done(async_op)


def all_gather(tensor_list: list, tensor, group=None, async_op: bool = False):
    """tensor_list[i] becomes rank i's tensor, on every rank (tensor_list holds one tensor of
    tensor's shape and dtype per rank)."""
    comm = world(group)
    check_sendable("all_gather", tensor)
    if len(tensor_list) != comm.Get_size() or any(
            not is_tensor(t) or t.shape != tensor.shape or t.dtype != tensor.dtype
            for t in tensor_list):
        raise ValueError(f"all_gather: tensor_list must hold {comm.Get_size()} tensors of shape "
                         f"{tuple(tensor.shape)} and dtype {tensor.dtype}, one per rank")

    def gather(arrays):     # tensor's values, then tensor_list's (replaced)
        mine = arrays[0]
        gathered = np.empty((comm.Get_size(),) + mine.shape, mine.dtype)
        finish(comm.Iallgather(mine, gathered))
        return [mine, *gathered]
    results = on_host(("all_gather", id(comm)), gather, [tensor, *tensor_list])
    write(tensor_list, results[1:])
    return done(async_op)


def barrier(group=None, async_op: bool = False, device_ids=None):
    """Returns once every rank has called it."""
    finish(world(group).Ibarrier())
    return done(async_op)
