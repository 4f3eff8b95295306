"""Median wall-clock times of several runners, measured in interleaved rounds: the machines
this runs on drift in speed by up to 2x within minutes (a VM's neighbours), so each runner is
timed a little in every round rather than all at once, and each median pools all its rounds.
In each round a runner starts after a pause that lets the previous runner's worker threads
stop spinning (OpenBLAS's busy-wait for ~0.1 s after a call: a PyTorch matmul timed right
after NumPy's took 10-20 ms instead of 6), then gets warm-up calls for a while (compiles in
the first round, fills the buffer pool, and brings the cores back up to speed after the
pause: two calls of W1's jitted step were not enough on PoCL, 0.53-0.83 ms a step timed
after them against 0.38-0.42 without the pause), then timed calls for a while. The order of
the runners turns each round, so that none always follows the same neighbour. Each runner
forces its own completion."""
from __future__ import annotations

import itertools
import statistics
import time

import clgrad as cg

SETTLE_S = 0.25     # past OpenBLAS's spin (2**28 cycles) and libgomp's
WARM_S = 0.1        # of warm-up calls a round, at least
TIMED_S = 0.2       # of timed calls a round, at least (a fast step: hundreds of calls)
ROUNDS = 3


def median_seconds(runners: dict[str, object], repeats: int, warmup: int = 2,
                   budget_s: float = 5.0) -> dict[str, float]:
    """At least `repeats` timed calls of each runner over the rounds, more while a round's
    TIMED_S lasts; a round stops after its share of budget_s once it has two calls."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    per_round = -(-repeats // ROUNDS)
    names = list(runners)
    for round_ in range(ROUNDS):
        order = names[round_ % len(names):] + names[:round_ % len(names)]
        for name in order:
            _time_round(runners[name], times[name], per_round, warmup if round_ == 0 else 0,
                        budget_s / ROUNDS)
    return {name: statistics.median(ts) for name, ts in times.items()}


def _time_round(run, times: list[float], calls: int, warmup: int, budget_s: float) -> None:
    time.sleep(SETTLE_S)
    warm_until = time.perf_counter() + WARM_S
    for _ in range(warmup):
        run()
    while time.perf_counter() < warm_until:
        run()
    begin = time.perf_counter()
    for i in itertools.count():
        start = time.perf_counter()
        run()
        end = time.perf_counter()
        times.append(end - start)
        enough = i + 1 >= calls and end - begin >= TIMED_S
        if enough or (i >= 1 and end - begin > budget_s):
            return


def synced(*tensors) -> None:
    """Realizes clgrad tensors in one schedule and waits for their device, without copying
    them back."""
    cg.realize(*tensors)
    tensors[0].device.synchronize()
