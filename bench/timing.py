"""Median wall-clock times of several runners measured side by side: warm-up calls first
(compiles, fills the buffer pool), then rounds in which every runner runs once, so that a
busy machine slows them all alike. Each runner forces its own completion."""
from __future__ import annotations

import statistics
import time


def median_seconds(runners: dict[str, object], repeats: int, warmup: int = 2,
                   budget_s: float = 6.0) -> dict[str, float]:
    for run in runners.values():
        for _ in range(warmup):
            run()
    times: dict[str, list[float]] = {name: [] for name in runners}
    deadline = time.perf_counter() + budget_s
    for i in range(repeats):
        for name, run in runners.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
        if i >= 2 and time.perf_counter() > deadline:
            break
    return {name: statistics.median(ts) for name, ts in times.items()}


def synced(tensor) -> None:
    """Realizes a clgrad tensor and waits for its device, without copying it back."""
    tensor.realize()
    tensor.device.synchronize()
