"""W9: one DistributedDataParallel training step of the digits example's CNN over 2 processes
(a batch of 64, 32 on each, Adam, the loss read), clgrad's over MPI, eagerly and under
cg.jit, against PyTorch's over gloo, each pair of processes started by `mpiexec -n 2`
(PyTorch's with one thread each, as torchrun starts them). Rank 0 reports the mean step over 200 after 20 of warm-up."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS, WARMUP = 200, 20
TIME_LIMIT_S = 600

_SCRIPT = """
import os, sys, time
import numpy as np
sys.path.insert(0, {root!r})
from bench.registry import example
digits = example("train_digits", {module!r})
fw, dist, F, optim = digits.cg, digits.dist, digits.F, digits.optim
{start}
rank = dist.get_rank()
fw.manual_seed(0)
model = digits.nn.parallel.DistributedDataParallel(digits.DigitsCNN())
opt = optim.Adam(model.parameters(), lr=1e-3)
rng = np.random.default_rng(rank)
x = fw.tensor(rng.random((32, 1, 8, 8), dtype=np.float32))
y = fw.tensor(rng.integers(0, 10, 32))
def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss
{wrap}
for _ in range({warmup}):
    step().item()
dist.barrier()
t0 = time.perf_counter()
for _ in range({steps}):
    step().item()
dist.barrier()
if rank == 0:
    print((time.perf_counter() - t0) / {steps})
"""

_STARTS = {
    "clgrad": 'dist.init_process_group("mpi")',
    "torch": 'fw.set_num_threads(1)\n'
             'dist.init_process_group("gloo", init_method="tcp://127.0.0.1:{port}", '
             'rank=int(os.environ["PMI_RANK"]), world_size=int(os.environ["PMI_SIZE"]))',
}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def step_seconds(module: str, jit: bool = False) -> float | None:
    """The mean DDP step of module's pair of processes (clgrad's under cg.jit if jit); None
    past the time limit, or without mpiexec (pip install 'clgrad[distributed]')."""
    mpiexec = Path(sys.executable).with_name("mpiexec")
    mpiexec = str(mpiexec) if mpiexec.exists() else shutil.which("mpiexec")
    if mpiexec is None:
        return None
    start = _STARTS[module].format(port=_free_port())
    script = _SCRIPT.format(root=str(ROOT), module=module, start=start, steps=STEPS,
                            warmup=WARMUP, wrap="step = fw.jit(step)" if jit else "")
    try:
        out = subprocess.run([mpiexec, "-n", "2", sys.executable, "-c", script],
                             env=dict(os.environ), capture_output=True, text=True, check=True,
                             timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        return None
    return float(out.stdout.split()[-1])


def rows(has_torch: bool) -> list[tuple[str, float | None, float | None]]:
    eager, jitted = step_seconds("clgrad"), step_seconds("clgrad", jit=True)
    theirs = step_seconds("torch") if has_torch else None
    return [("DDP step, digits CNN, 2 processes x 32, Adam", eager, theirs),
            ("the same step, replayed by cg.jit", jitted, theirs)]
