"""Where an eager training step's host time goes: W1 (the seed MLP) and W2 (LeNet with SGD)
from bench/train.py, and TINY (bench/loops.py's 30,000-step loop), stepped many times with every kernel cached, timed per phase (forward,
backward, optimizer, realize and launch, device wait) and profiled with cProfile.

    python tools/profile_step.py [--steps 200] [--top 25] [--only W1|W2|TINY] [--phases]

The machine may be shared: compare cProfile's call counts and cumulative times, or runs
taken alternately, rather than single wall-clock figures.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # bench

import clgrad as cg  # noqa: E402
from clgrad import nn, optim  # noqa: E402
import clgrad.nn.functional as F  # noqa: E402

from bench.registry import example, randn, rng  # noqa: E402
from bench.train import seed_arrays  # noqa: E402


def w1_phases():
    """W1's step split in phases: each a function, run in order."""
    x, y, w1, w2 = (cg.from_numpy(a) for a in seed_arrays())
    w1.requires_grad_()
    w2.requires_grad_()
    relu = example("custom_relu").MyReLU.apply
    held = {}

    def forward():
        held["loss"] = (relu(x.mm(w1)).mm(w2) - y).pow(2).sum()

    def backward():
        held["loss"].backward()

    def optimizer():
        with cg.no_grad():
            w1.sub_(1e-6 * w1.grad)
            w2.sub_(1e-6 * w2.grad)
            w1.grad.zero_()
            w2.grad.zero_()

    def realize():
        cg.realize(held["loss"], w1, w2)

    def wait():
        w1.device.synchronize()
    return [("forward", forward), ("backward", backward), ("optimizer", optimizer),
            ("realize+launch", realize), ("device wait", wait)]


def w2_phases():
    x = cg.from_numpy(randn(64, 1, 32, 32))
    target = cg.from_numpy(rng.integers(0, 10, 64))
    net = example("lenet").Net()
    opt = optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    held = {}

    def forward():
        opt.zero_grad()
        held["loss"] = F.cross_entropy(net(x), target)

    def backward():
        held["loss"].backward()

    def optimizer():        # SGD.step realizes what it assigns: its launches are in here
        opt.step()

    def realize():
        cg.realize(held["loss"], *net.parameters())

    def wait():
        x.device.synchronize()
    return [("forward", forward), ("backward", backward), ("optimizer+launch", optimizer),
            ("realize", realize), ("device wait", wait)]


def tiny_phases():
    """bench/loops.py's 30,000-step loop: a tiny MLP stepped by SGD with momentum, nothing
    read (so the optimizer's step realizes and launches)."""
    x, y = cg.from_numpy(randn(16, 8)), cg.from_numpy(randn(16, 1))
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    held = {}

    def forward():
        opt.zero_grad()
        held["loss"] = nn.MSELoss()(model(x), y)

    def backward():
        held["loss"].backward()

    def optimizer():
        opt.step()
    return [("forward", forward), ("backward", backward), ("optimizer+launch", optimizer)]


def measure(name: str, phases, steps: int, top: int, profile: bool = True) -> None:
    for _ in range(5):                      # compiles, fills caches
        for _, fn in phases:
            fn()
    times = {label: ([], []) for label, _ in phases}
    for _ in range(steps):
        for label, fn in phases:
            start, cpu = time.perf_counter(), time.thread_time()
            fn()
            times[label][0].append(time.perf_counter() - start)
            times[label][1].append(time.thread_time() - cpu)
    print(f"\n== {name}: median us per phase over {steps} steps (wall, this thread's CPU) ==")
    totals = [0.0, 0.0]
    for label, (wall, cpu) in times.items():
        meds = [statistics.median(wall) * 1e6, statistics.median(cpu) * 1e6]
        totals = [t + m for t, m in zip(totals, meds)]
        print(f"  {label:18s} {meds[0]:8.1f} {meds[1]:8.1f}")
    print(f"  {'total':18s} {totals[0]:8.1f} {totals[1]:8.1f}")
    if not profile:
        return
    # this thread's CPU time, not wall (nor the runtime's worker threads'): figures that
    # stay comparable on a machine other work shares
    profiler = cProfile.Profile(time.thread_time)
    profiler.enable()
    for _ in range(steps):
        for _, fn in phases:
            fn()
    profiler.disable()
    print(f"\n== {name}: cProfile over {steps} steps (cumulative) ==")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--only", choices=["W1", "W2", "TINY"])
    parser.add_argument("--phases", action="store_true", help="the phase times only, no cProfile")
    args = parser.parse_args()
    for name, phases in (("W1", w1_phases), ("W2", w2_phases), ("TINY", tiny_phases)):
        if args.only in (None, name):
            measure(name, phases(), args.steps, args.top, not args.phases)


if __name__ == "__main__":
    main()
