"""The rest of torch.distributed's calls on tensors and objects: a reduction to one rank,
gathering into and reduce-scattering from one tensor, point-to-point send and recv, and
Python objects all-gathered or broadcast. Tensors go as in collectives.py: host work between
kernels (jit_protocol.on_host), so a jitted step replays them."""
from __future__ import annotations

import numpy as np

from ..frontend.jit_protocol import on_host
from ..frontend.operands import is_tensor
from .collectives import (ReduceOp, check_rank, check_sendable, done, finish, host_call,
                          mpi_op_of, write)
from .group import mpi, world


def _rank(op: str, name: str, rank, group_rank, comm) -> int:
    """A call's root or peer rank, given as rank or group_rank (the same in the one group)."""
    if rank is not None and group_rank is not None and rank != group_rank:
        raise ValueError(f"{op}: {name}={rank} and group_{name}={group_rank} disagree")
    rank = rank if rank is not None else group_rank
    if rank is None:
        raise ValueError(f"{op}: either {name} or group_{name} must be given")
    check_rank(op, name, rank, comm)
    return rank


def reduce(tensor, dst: int | None = None, op=ReduceOp.SUM, group=None,
           async_op: bool = False, group_dst: int | None = None):
    """Rank dst's tensor becomes op over every rank's tensor; the others' stay as they were."""
    comm, mpi_op = world(group), mpi_op_of("reduce", op)
    dst = _rank("reduce", "dst", dst, group_dst, comm)
    check_sendable("reduce", tensor)
    MPI, mine = mpi(), comm.Get_rank() == dst
    results = host_call(("reduce", id(comm), dst, op), tensor, lambda values: comm.Ireduce(
        MPI.IN_PLACE if mine else values, values, op=mpi_op, root=dst))
    if mine:
        write([tensor], results)
    return done(async_op)


def _check_stacked(op: str, whole, part, size: int) -> None:
    """whole must hold size parts: part's shape concatenated along dim 0, or stacked
    (PyTorch's backends raise RuntimeError otherwise)."""
    stacked = (size,) + tuple(part.shape)
    joined = (size * part.shape[0],) + tuple(part.shape[1:]) if part.ndim else stacked
    if not (is_tensor(whole) and is_tensor(part)) or whole.dtype != part.dtype or \
            tuple(whole.shape) not in (stacked, joined):
        raise RuntimeError(f"{op}: expected a {part.dtype} tensor of shape {joined} or "
                           f"{stacked} ({size} ranks' {tuple(part.shape)} {part.dtype} "
                           f"tensors), got {tuple(whole.shape)} {whole.dtype}")


def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op: bool = False):
    """output_tensor becomes every rank's input_tensor, rank order, concatenated along its
    first dimension or stacked."""
    comm = world(group)
    check_sendable("all_gather_into_tensor", input_tensor)
    _check_stacked("all_gather_into_tensor", output_tensor, input_tensor, comm.Get_size())

    def gather(arrays):
        mine, whole = arrays
        finish(comm.Iallgather(mine, whole.reshape(comm.Get_size(), -1)))
        return arrays
    results = on_host(("all_gather_into_tensor", id(comm)), gather,
                      [input_tensor, output_tensor])
    write([output_tensor], results[1:])
    return done(async_op)


def reduce_scatter_tensor(output, input, op=ReduceOp.SUM, group=None, async_op: bool = False):
    """output becomes op over every rank's input, of which it keeps its rank's part (input
    holds one part of output's shape per rank, concatenated along dim 0 or stacked)."""
    comm, mpi_op = world(group), mpi_op_of("reduce_scatter_tensor", op)
    check_sendable("reduce_scatter_tensor", input)
    _check_stacked("reduce_scatter_tensor", input, output, comm.Get_size())

    def scatter(arrays):
        mine, whole = arrays
        finish(comm.Ireduce_scatter_block(whole.reshape(comm.Get_size(), -1), mine.reshape(-1),
                                          op=mpi_op))
        return arrays
    results = on_host(("reduce_scatter_tensor", id(comm), op), scatter, [output, input])
    write([output], results[:1])
    return done(async_op)


def send(tensor, dst: int | None = None, group=None, tag: int = 0,
         group_dst: int | None = None) -> None:
    """Sends tensor to rank dst, which takes it with recv; returns once it is sent."""
    comm = world(group)
    dst = _rank("send", "dst", dst, group_dst, comm)
    if dst == comm.Get_rank():
        raise ValueError(f"send: invalid destination rank {dst}: a process does not send "
                         f"to itself")
    check_sendable("send", tensor)
    host_call(("send", id(comm), dst, tag), tensor,
              lambda values: comm.Isend(values, dest=dst, tag=tag))


def recv(tensor, src: int | None = None, group=None, tag: int = 0,
         group_src: int | None = None) -> int:
    """tensor becomes what rank src (any rank if None) sent with send; returns the sender."""
    comm, MPI = world(group), mpi()
    if src is not None or group_src is not None:
        src = _rank("recv", "src", src, group_src, comm)
    check_sendable("recv", tensor)
    status, source = MPI.Status(), MPI.ANY_SOURCE if src is None else src
    write([tensor], host_call(("recv", id(comm), src, tag), tensor,
                              lambda values: comm.Irecv(values, source=source, tag=tag), status))
    return status.Get_source()


def all_gather_object(object_list: list, obj, group=None) -> None:
    """object_list[i] becomes rank i's obj (any picklable object), on every rank; a list
    shorter than the group raises IndexError, as PyTorch's does."""
    for i, theirs in enumerate(world(group).allgather(obj)):
        object_list[i] = theirs


def broadcast_object_list(object_list: list, src: int | None = None, group=None,
                          device=None, group_src: int | None = None) -> None:
    """object_list's items become rank src's (picklable objects), on every rank."""
    comm = world(group)
    src = _rank("broadcast_object_list", "src", src, group_src, comm)
    theirs = comm.bcast(list(object_list), root=src)
    if len(theirs) != len(object_list):
        raise ValueError(f"broadcast_object_list: rank {src} sent {len(theirs)} objects "
                         f"into a list of {len(object_list)}")
    object_list[:] = theirs
