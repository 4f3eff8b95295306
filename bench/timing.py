"""Median wall-clock times of several runners, one after another: each gets warm-up calls
first (compiles, fills the buffer pool, and lets the previous runner's worker threads stop
spinning: OpenMP and OpenBLAS pools busy-wait after a call, which would steal the cores from
whatever runs next), then several timed calls. Each runner forces its own completion."""
from __future__ import annotations

import statistics
import time

import clgrad as cg


def median_seconds(runners: dict[str, object], repeats: int, warmup: int = 2,
                   budget_s: float = 5.0) -> dict[str, float]:
    result = {}
    for name, run in runners.items():
        for _ in range(warmup):
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
