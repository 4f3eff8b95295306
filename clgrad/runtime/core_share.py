"""Each process of an MPI job its share of the machine's cores.

An OpenCL CPU runtime starts a worker thread per core it may use. When `mpiexec -n 2` starts
two processes on one machine, each runtime would take every core, and the two sets of workers
(which spin while they wait for work) fight over them: a DDP step of the digits CNN took 6.7
ms against 5.7 with a worker a process (W9's step on a 2-core EPYC, medians of five runs
alternating). So, as torchrun sets OMP_NUM_THREADS=1 for its processes, a
process started by an MPI launcher that says how many of its processes share this machine
gives each runtime its share of the cores, unless the user chose a number. The variables stay
set: the runtimes read them when they start their workers, and a child process belongs to the
same share.
"""
from __future__ import annotations

import os
from collections.abc import Mapping

# how many processes of the job run on this machine, as each launcher says it
LOCAL_RANKS = ("MPI_LOCALNRANKS",               # MPICH's and Intel MPI's Hydra
               "OMPI_COMM_WORLD_LOCAL_SIZE")    # Open MPI
# each runtime's limit on its worker threads
WORKER_LIMITS = {"intel": ("CL_CONFIG_CPU_TBB_NUM_WORKERS", "DPCPP_CPU_NUM_CUS"),
                 "pocl": ("POCL_MAX_PTHREAD_COUNT",)}


def worker_limits(environ: Mapping[str, str], cores: int) -> dict[str, str]:
    """The variables to set: each runtime's first limit, to cores / local processes, for each
    runtime none of whose limits the user set; nothing outside a launcher of several local
    processes."""
    local = next((environ[name] for name in LOCAL_RANKS if name in environ), "")
    if not local.isdigit() or int(local) < 2:
        return {}
    share = str(max(1, cores // int(local)))
    return {names[0]: share for names in WORKER_LIMITS.values()
            if not any(name in environ for name in names)}


def usable_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        os.cpu_count() or 1


def share_cores() -> None:
    """Before the first platform query: limits the runtimes' workers to this process's share."""
    os.environ.update(worker_limits(os.environ, usable_cores()))
