"""Cold start: the first W1 step in a fresh process, with an empty kernel cache and with a
warm one, beside PyTorch's first step in a fresh process. Each figure is measured inside the
child process, from after `import` to the first step's results being ready."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile

_STEP = """
import time
t0 = time.perf_counter()
import {module} as fw
from bench.registry import example
from bench.train import seed_arrays
train_step = example("custom_relu", "{module}").train_step
t1 = time.perf_counter()
x, y, w1, w2 = seed_arrays()
convert = fw.from_numpy
x, y = convert(x), convert(y)
w1, w2 = convert(w1).requires_grad_(), convert(w2).requires_grad_()
loss = train_step(x, y, w1, w2)
loss.item(); w1.sum().item()
print(t1 - t0, time.perf_counter() - t1)
"""


def _child(module: str, env: dict) -> tuple[float, float]:
    """(import seconds, first step seconds) in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _STEP.format(module=module)], env=env,
                         capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    imported, step = out.stdout.split()
    return float(imported), float(step)


def rows(has_torch: bool) -> list[tuple[str, float, float]]:
    """(what, import s, first step s) rows."""
    result = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, CLGRAD_CACHE_DIR=cache)
        result.append(("clgrad, empty kernel cache", *_child("clgrad", env)))
        result.append(("clgrad, warm kernel cache", *_child("clgrad", env)))
    if has_torch:
        result.append(("torch eager", *_child("torch", dict(os.environ))))
    return result
