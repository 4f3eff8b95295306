"""`python -m bench [--only W4] [--quick] [--device cpu:pocl]`: one table, a row per workload,
with clgrad, NumPy and PyTorch eager times measured in this run and their ratios to clgrad,
under a line naming the device, its runtime and the CPU; then the cold start (--only COLD),
plain training loops (--only LOOPS) and a data-parallel step over two processes (--only W9),
timed in fresh processes."""
from __future__ import annotations

import argparse
import importlib
import os
import sys

import clgrad as cg
from clgrad.config import config
from clgrad.runtime.host import cpu_name

from . import coldstart, distributed, loops
from .registry import WORKLOADS, try_torch
from .timing import median_seconds

# Each module registers its workloads on import; a new group is one more name here.
MODULES = ["ops", "train", "generate"]


def _ms(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds * 1e3:.2f}"


def _ratio(other: float | None, ours: float) -> str:
    return "-" if other is None else f"{other / ours:.2f}x"


def _gflops(flop: float | None, seconds: float | None) -> str:
    return "-" if flop is None or seconds is None else f"{flop / seconds / 1e9:.0f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--only", action="append", default=[],
                        help="run only these workload ids (W1 ... W10, COLD, LOOPS); repeatable")
    parser.add_argument("--quick", action="store_true", help="fewer timed repeats")
    parser.add_argument("--device", help="clgrad device: cpu, cpu:intel, cpu:pocl, gpu, cl:P:D")
    args = parser.parse_args(argv)
    if args.device:
        config.DEVICE = os.environ["CLGRAD_DEVICE"] = args.device   # cold-start children too
    device = cg.device()
    print(f"device: {device.spec} {device.runtime} ({device.name}, {device.driver_version}); "
          f"CPU: {cpu_name()}")
    for module in MODULES:
        importlib.import_module(f".{module}", __package__)
    wanted = {w.upper() for w in args.only}
    chosen = [w for w in WORKLOADS if not wanted or w.id in wanted]
    if not chosen and not wanted & {"COLD", "LOOPS", "W9"}:
        parser.error(f"no workload matches {sorted(wanted)}")

    has_torch = try_torch() is not None
    if has_torch:
        import torch
        torch.set_grad_enabled(False)
    repeats = 5 if args.quick else 11
    header = ["id", "workload", "clgrad ms", "numpy ms"]
    header += ["torch ms", "torch/clgrad"] if has_torch else []
    header += ["numpy/clgrad", "GFLOP/s cg", "np", *(["torch"] if has_torch else [])]
    rows = []
    for w in chosen:
        case = w.build(args.quick)
        runners = {"clgrad": case.clgrad, "numpy": case.numpy,
                   "torch": case.torch if has_torch else None}
        times = median_seconds({k: r for k, r in runners.items() if r is not None}, repeats)
        ours, np_s, torch_s = times["clgrad"], times.get("numpy"), times.get("torch")
        row = [w.id, w.name, _ms(ours), _ms(np_s)]
        row += [_ms(torch_s), _ratio(torch_s, ours)] if has_torch else []
        row += [_ratio(np_s, ours), _gflops(case.flop, ours), _gflops(case.flop, np_s)]
        row += [_gflops(case.flop, torch_s)] if has_torch else []
        rows.append(row)
        print(f"  done {w.id} {w.name}", file=sys.stderr, flush=True)
        del case
    if chosen:
        _print_table(header, rows)
    if not wanted or "COLD" in wanted:
        print("\ncold start: first W1 step in a fresh process")
        cold = [[what, f"{imp:.2f}", f"{first:.2f}"] for what, imp, first in coldstart.rows(has_torch)]
        _print_table(["process", "import s", "first step s"], cold)
    if not wanted or "LOOPS" in wanted:
        print("\nplain training loops, each in a fresh process")
        found = loops.k_steps_rows(has_torch, args.quick) + \
            loops.long_loop_rows(has_torch, args.quick)
        _print_table(["loop", "clgrad s", "torch s", "torch/clgrad"],
                     [[what, _s(ours), _s(theirs), "-" if ours is None or theirs is None
                       else _ratio(theirs, ours)] for what, ours, theirs in found])
    if not wanted or "W9" in wanted:
        print("\nW9: a data-parallel step, two processes under mpiexec")
        _print_table(["step", "clgrad ms", "torch ms", "torch/clgrad"],
                     [[what, _ms(ours), _ms(theirs), "-" if ours is None or theirs is None
                       else _ratio(theirs, ours)]
                      for what, ours, theirs in distributed.rows(has_torch)])
    return 0


def _s(seconds: float | None) -> str:
    return f">{loops.TIME_LIMIT_S}" if seconds is None else f"{seconds:.2f}"


def _print_table(header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    left = {0, 1}

    def line(cells):
        return "  ".join(c.ljust(w) if i in left else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(header))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print(line(r))


if __name__ == "__main__":
    sys.exit(main())
