"""The process group: MPI's world communicator once init_process_group has run."""
from __future__ import annotations

import importlib.util

_world = None       # mpi4py's COMM_WORLD, from init_process_group until destroy_process_group

_INSTALL = "clgrad.distributed runs over MPI through mpi4py: pip install 'clgrad[distributed]'"


def mpi():
    """mpi4py's MPI module (importing it starts MPI in this process)."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ModuleNotFoundError(f"{_INSTALL} ({error})") from error
    return MPI


def is_available() -> bool:
    """Whether mpi4py can be imported (without starting MPI)."""
    return importlib.util.find_spec("mpi4py") is not None


def init_process_group(backend: str | None = "mpi", init_method=None, timeout=None,
                       world_size: int = -1, rank: int = -1, store=None,
                       group_name: str = "", pg_options=None, device_id=None) -> None:
    """Joins this process to MPI's world (the processes mpiexec started). Rank and world size
    are MPI's; ones given must agree with them."""
    global _world
    if backend not in ("mpi", None):
        raise ValueError(f"init_process_group: clgrad's processes talk over MPI; backend "
                         f"{backend!r} is not available (use 'mpi' and launch with mpiexec)")
    if _world is not None:
        raise ValueError("trying to initialize the default process group twice!")
    comm = mpi().COMM_WORLD
    for what, given, actual in (("world_size", world_size, comm.Get_size()),
                                ("rank", rank, comm.Get_rank())):
        if given not in (-1, actual):
            raise ValueError(f"init_process_group: {what}={given}, but MPI started this "
                             f"process with {what} {actual} (mpiexec -n sets them)")
    _world = comm


def destroy_process_group(group=None) -> None:
    global _world
    world(group)        # (raises as the collectives do without a group, or with another)
    _world = None


def is_initialized() -> bool:
    return _world is not None


def world(group=None):
    """The communicator collectives use: the default group's (the only one clgrad has)."""
    if group is not None:
        raise ValueError("clgrad has one process group, the default one: pass group=None")
    if _world is None:
        raise ValueError("Default process group has not been initialized, please make sure "
                         "to call init_process_group.")
    return _world


def get_rank(group=None) -> int:
    return world(group).Get_rank()


def get_world_size(group=None) -> int:
    return world(group).Get_size()
