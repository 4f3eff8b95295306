"""Kernel times from OpenCL profiling events.

    with profile() as p:
        ...            # every kernel launched here is recorded
    print(p)           # table sorted by total time
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import NamedTuple

import pyopencl as cl

# Profilers inside a `profile()` block; Kernel.__call__ feeds each launch to all of them.
active: list[Profiler] = []


def event_ms(event: cl.Event) -> float:
    """Device time of a finished event, in milliseconds."""
    return (event.profile.end - event.profile.start) * 1e-6


class Row(NamedTuple):
    name: str
    calls: int
    total_ms: float


class Profiler:
    def __init__(self) -> None:
        self._pending: list[tuple[str, tuple[int, ...], cl.Event]] = []
        self.rows: list[Row] = []

    def record(self, kernel_name: str, global_size: tuple[int, ...], event: cl.Event) -> None:
        # Events are only read at finish(), so recording never waits for the device.
        self._pending.append((kernel_name, global_size, event))

    def finish(self) -> None:
        """Wait for the recorded kernels and fold their times into `rows`."""
        totals = {row.name: [row.calls, row.total_ms] for row in self.rows}
        for name, _, event in self._pending:
            event.wait()
            entry = totals.setdefault(name, [0, 0.0])
            entry[0] += 1
            entry[1] += event_ms(event)
        self._pending.clear()
        rows = [Row(name, calls, ms) for name, (calls, ms) in totals.items()]
        self.rows = sorted(rows, key=lambda row: row.total_ms, reverse=True)

    @property
    def total_ms(self) -> float:
        return sum(row.total_ms for row in self.rows)

    def table(self) -> str:
        total = self.total_ms
        width = max([len("kernel")] + [len(row.name) for row in self.rows])
        lines = [f"{'kernel':<{width}}  {'calls':>6}  {'total ms':>10}  {'share':>6}"]
        for row in self.rows:
            share = 100.0 * row.total_ms / total if total else 0.0
            lines.append(f"{row.name:<{width}}  {row.calls:>6}  {row.total_ms:>10.3f}  "
                         f"{share:>5.1f}%")
        lines.append(f"{'total':<{width}}  {sum(r.calls for r in self.rows):>6}  "
                     f"{total:>10.3f}  {'':>6}")
        return "\n".join(lines)

    __str__ = table


@contextlib.contextmanager
def profile() -> Iterator[Profiler]:
    """Record every kernel launched in the block; the table is ready when it exits."""
    profiler = Profiler()
    active.append(profiler)
    try:
        yield profiler
    finally:
        active.remove(profiler)
        profiler.finish()
