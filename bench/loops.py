"""Plain training loops as PyTorch tutorials write them, timed whole, beside PyTorch's:

- K steps: a 64x1000x100x10 MLP (nn.Sequential, MSELoss) stepped K times by hand
  (`model.zero_grad()`, `p -= lr * p.grad` under no_grad) with nothing read until the loss
  after the K-th step; K = 1, 10, 100, each in a fresh process with an empty kernel cache and
  again with the cache the first one left, the median of three such pairs (a fresh process's
  compiles vary by a tenth of a second). A graph that spans the steps makes the first read
  cost grow with K.
- 30,000 steps of a tiny model with optim.SGD and momentum, the loss read every 100 steps:
  the cost per eager step when every kernel is cached.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile

_INPUTS = """
import time
import numpy as np
import {module} as fw
rng = np.random.default_rng(0)
x = fw.from_numpy(rng.standard_normal(({rows}, {features}), dtype=np.float32))
y = fw.from_numpy(rng.standard_normal(({rows}, {outputs}), dtype=np.float32))
fw.manual_seed(0)
"""

_K_STEPS = _INPUTS.format(module="{module}", rows=64, features=1000, outputs=10) + """
model = fw.nn.Sequential(fw.nn.Linear(1000, 100), fw.nn.ReLU(), fw.nn.Linear(100, 10))
loss_fn = fw.nn.MSELoss()
t0 = time.perf_counter()
for _ in range({k}):
    loss = loss_fn(model(x), y)
    model.zero_grad()
    loss.backward()
    with fw.no_grad():
        for p in model.parameters():
            p -= 1e-3 * p.grad
loss.item()
print(time.perf_counter() - t0)
"""

_LONG_LOOP = _INPUTS.format(module="{module}", rows=16, features=8, outputs=1) + """
model = fw.nn.Sequential(fw.nn.Linear(8, 32), fw.nn.ReLU(), fw.nn.Linear(32, 1))
opt = fw.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
loss_fn = fw.nn.MSELoss()
t0 = time.perf_counter()
for step in range({steps}):
    opt.zero_grad()
    loss = loss_fn(model(x), y)
    loss.backward()
    opt.step()
    if step % 100 == 99:
        loss.item()
print(time.perf_counter() - t0)
"""

TIME_LIMIT_S = 300
_K_TRIALS = 3


def _child(script: str, env: dict) -> float | None:
    """Seconds the script reports, run in a fresh interpreter; None past the time limit."""
    try:
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True, timeout=TIME_LIMIT_S)
    except subprocess.TimeoutExpired:
        return None
    return float(out.stdout.split()[-1])


def k_steps_rows(has_torch: bool, quick: bool) -> list[tuple[str, float | None, float | None]]:
    """(what, clgrad s, torch s) for the first read after K manual steps."""
    rows = []
    trials = 1 if quick else _K_TRIALS
    for k in (1, 10) if quick else (1, 10, 100):
        torch_s = _median([_child(_K_STEPS.format(module="torch", k=k), dict(os.environ))
                           for _ in range(trials)]) if has_torch else None
        empty, warm = [], []
        for _ in range(trials):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, CLGRAD_CACHE_DIR=cache)
                for times in (empty, warm):
                    times.append(_child(_K_STEPS.format(module="clgrad", k=k), env))
        rows += [(f"K={k}, empty kernel cache", _median(empty), torch_s),
                 (f"K={k}, warm kernel cache", _median(warm), torch_s)]
    return rows


def _median(seconds: list[float | None]) -> float | None:
    """The median of runs that all finished; None if one ran past the time limit."""
    return None if None in seconds else statistics.median(seconds)


def long_loop_rows(has_torch: bool, quick: bool) -> list[tuple[str, float | None, float | None]]:
    steps = 3000 if quick else 30000
    env = dict(os.environ)
    ours = _child(_LONG_LOOP.format(module="clgrad", steps=steps), env)
    theirs = _child(_LONG_LOOP.format(module="torch", steps=steps), env) if has_torch else None
    return [(f"{steps} SGD-momentum steps, tiny MLP", ours, theirs)]
