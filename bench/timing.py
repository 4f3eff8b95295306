"""Median wall-clock times of several runners, one after another: each starts after a pause
that lets the previous runner's worker threads stop spinning (OpenBLAS's busy-wait for
~0.1 s after a call: a PyTorch matmul timed right after NumPy's took 10-20 ms instead of 6),
then gets warm-up calls for a while (compiles, fills the buffer pool, and brings the cores
back up to speed after the pause: two calls of W1's jitted step were not enough on PoCL,
0.53-0.83 ms a step timed after them against 0.38-0.42 without the pause), then several
timed calls. Each runner forces its own completion."""
from __future__ import annotations

import statistics
import time

import clgrad as cg

SETTLE_S = 0.25     # past OpenBLAS's spin (2**28 cycles) and libgomp's
WARM_S = 0.1        # of warm-up calls, at least


def median_seconds(runners: dict[str, object], repeats: int, warmup: int = 2,
                   budget_s: float = 5.0) -> dict[str, float]:
    result = {}
    for name, run in runners.items():
        time.sleep(SETTLE_S)
        warm_until = time.perf_counter() + WARM_S
        for _ in range(warmup):
            run()
        while time.perf_counter() < warm_until:
            run()
        times = []
        deadline = time.perf_counter() + budget_s
        for i in range(repeats):
            start = time.perf_counter()
            run()
            times.append(time.perf_counter() - start)
            if i >= 2 and time.perf_counter() > deadline:
                break
        result[name] = statistics.median(times)
    return result


def synced(*tensors) -> None:
    """Realizes clgrad tensors in one schedule and waits for their device, without copying
    them back."""
    cg.realize(*tensors)
    tensors[0].device.synchronize()
