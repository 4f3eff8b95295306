"""cg.distributed and DistributedDataParallel: two MPI processes (mpiexec, tests/mpi_ranks.py)
agree with one process; the digits example trains data-parallel; DistributedSampler shares out
indices as PyTorch's; errors before a process group exists are PyTorch's."""
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch.utils.data

import clgrad as cg
import clgrad.distributed as dist
from clgrad import nn
from clgrad.frontend.backward import queue_callback
from clgrad.utils.data import DistributedSampler

ROOT = Path(__file__).resolve().parent.parent


def _mpiexec(*args, timeout=300) -> str:
    mpiexec = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    assert mpiexec, "mpiexec not found: pip install 'clgrad[distributed]' brings MPICH's"
    done = subprocess.run([mpiexec, "-n", "2", sys.executable, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_two_processes_reduce_broadcast_gather_and_average_gradients():
    out = _mpiexec(ROOT / "tests" / "mpi_ranks.py")
    assert "rank 0 ok" in out and "rank 1 ok" in out


def test_digits_example_trains_data_parallel_over_mpi(tmp_path):
    out = _mpiexec(ROOT / "examples" / "train_digits.py", "--distributed", "--epochs", "4",
                   "--out", tmp_path)
    found = re.search(r"trained 4 epochs on 2 processes in [\d.]+ s: test accuracy ([\d.]+)",
                      out)
    assert found and float(found[1]) > 0.9, out[-2000:]
    assert f"reloaded model accuracy {found[1]}" in out
    assert (tmp_path / "digits_cnn.safetensors").stat().st_size > 0


@pytest.mark.parametrize("n", [0, 1, 5, 7, 10])
@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
@pytest.mark.parametrize("drop_last", [False, True])
def test_distributed_sampler_shares_indices_as_pytorch(n, replicas, drop_last):
    for rank in range(replicas):
        ours = DistributedSampler(range(n), replicas, rank, shuffle=False, drop_last=drop_last)
        theirs = torch.utils.data.DistributedSampler(range(n), replicas, rank, shuffle=False,
                                                     drop_last=drop_last)
        assert list(ours) == list(theirs) and len(ours) == len(theirs)


def test_distributed_sampler_shuffles_the_same_order_on_every_rank_each_epoch():
    shares = [DistributedSampler(range(11), 3, rank, seed=4) for rank in range(3)]
    first = [list(s) for s in shares]
    assert sorted(sum(first, [])) == sorted(list(range(11)) + [first[0][0]])   # one repeat
    for s in shares:
        s.set_epoch(1)
    assert [list(s) for s in shares] != first
    assert [list(s) for s in shares] == [list(s) for s in shares]


def test_without_a_process_group_the_errors_are_pytorchs():
    assert not dist.is_initialized() and dist.is_available()
    message = "Default process group has not been initialized"
    for call in (dist.get_rank, dist.get_world_size, dist.barrier,
                 lambda: dist.all_reduce(cg.ones(2)),
                 lambda: nn.parallel.DistributedDataParallel(nn.Linear(2, 2)),
                 lambda: DistributedSampler(range(4))):
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(ValueError, match="backend 'gloo' is not available"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="Invalid rank 2"):
        DistributedSampler(range(4), num_replicas=2, rank=2)
    with pytest.raises(RuntimeError, match="no backward pass is running"):
        queue_callback(print)


def test_a_callback_queued_during_backward_runs_after_every_gradient_landed():
    w = cg.tensor(np.arange(3.0, dtype=np.float32), requires_grad=True)
    seen = []
    y = (w * 2).sum()
    y.register_hook(lambda g: queue_callback(lambda: seen.append(w.grad.numpy().copy())))
    y.backward()
    np.testing.assert_array_equal(seen, [[2, 2, 2]])
