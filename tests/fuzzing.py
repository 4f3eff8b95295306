"""A differential fuzzer: random programs of tensor ops, run on clgrad and on PyTorch.

From a seed (or hypothesis' choices) `generate` writes a program as Python text that runs
unchanged with fw = clgrad or fw = torch; `check` runs it on both and compares the outputs and
the gradients of every float input (fuzz_harness.judge). A failing program's text, with the
harness, is a standalone reproducer.

As a command, it runs many graphs in child processes, so that a crash inside an OpenCL compiler
kills one child only; the seed it died on is recorded and the next child goes on:

    python tests/fuzzing.py --device cpu:intel --graphs 5000 --seed 0 [--edges]
        [--early-backward | --replay] [--out /tmp/fuzz-out] [--batch 100] [--triage cpu:pocl]

--early-backward runs every backward() as a large one runs on Intel's runtime, whatever its
size and device (clgrad/frontend/early_backward.py): for even seeds as one whose forward fits
in cache (the forward launched as it begins, its gradients with the step's end), for odd ones
as a larger one (its loss and gradients launched as it ends).

--replay runs each program as a training step under cg.jit against the same step run eagerly
(tests/fuzz_replay.py) instead of against PyTorch.
"""
from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import inspect
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

import fuzz_harness
import fuzz_rounding
from fuzz_gen import Builder, Choices, SeededChoices
from fuzz_ops import FAMILIES
from fuzz_harness import judge, make_inputs, references, run
from fuzz_replay import check_replay

MAX_LINES = 12            # ops per program
CONTINUE = 85             # percent chance of one more line: 6 lines on average
ATTEMPTS = 12             # tries to find a valid op for each line
MAX_OUTPUTS = 4
STARTUP_TIMEOUT = 120     # seconds a child may take to import and start its first graph
FAILURES = ("wrong forward", "wrong gradient", "wrong replay", "exception", "crash", "timeout")


def generate(choices: Choices, edges: bool = False) -> str:
    """A random program's source text (see fuzz_gen.Builder.source for its form)."""
    b = Builder(choices, edges)
    b.new_input(b.shape())
    for _ in range(MAX_LINES):
        for _ in range(ATTEMPTS):
            expr = choices.weighted(FAMILIES)(b)
            if expr is not None and b.emit(expr) is not None:
                break
        # decided line by line (not a count drawn first), so that hypothesis shrinks a
        # program by dropping the decisions of one line
        if not choices.chance(CONTINUE):
            break
    outputs = b.sinks()[-MAX_OUTPUTS:] or [b.emit(f"{b.pool[0].name}.float() * 2.0")]
    return b.source(outputs)


@contextlib.contextmanager
def early_backward_everywhere(at_start: bool = True):
    """Inside: every backward() on the default device launches its work early, as a large one
    does on Intel's runtime: at_start, as one whose forward fits in cache (the forward as it
    begins, the gradients with the step's end); else as a larger one (the loss and the
    gradients as it ends)."""
    import clgrad
    from clgrad.frontend import early_backward
    device = clgrad.device()
    saved = early_backward.EARLY_ELEMENTS, device.starts_backward_early, device.cache_bytes
    early_backward.EARLY_ELEMENTS, device.starts_backward_early = 0, True
    device.cache_bytes = 1 << 62 if at_start else 0
    try:
        yield
    finally:
        early_backward.EARLY_ELEMENTS, device.starts_backward_early, device.cache_bytes = saved


def check(source: str, early: bool = False, at_start: bool = True) -> tuple[str, str]:
    """(status, detail) of one program on clgrad's default device: "ok", "skipped", "wrong
    forward", "wrong gradient" or "exception"; early: inside
    early_backward_everywhere(at_start)."""
    with early_backward_everywhere(at_start) if early else contextlib.nullcontext():
        return _check(source)


def _early_detail(detail: str, seed: int) -> str:
    """detail, naming how --early-backward ran the seed's backward()."""
    return f"{detail} (--early-backward, {'from the start' if _at_start(seed) else 'at the end'})"


def _at_start(seed: int) -> bool:
    """Whether --early-backward runs the seed's backward() as one whose forward fits in cache."""
    return seed % 2 == 0


def _check(source: str) -> tuple[str, str]:
    import clgrad   # here: the runner's parent process never opens an OpenCL device
    space: dict = {}
    exec(source, space)  # noqa: S102 (a program we generated)
    edges = space["EDGES"]
    arrays = make_inputs(space["DATA_SEED"], space["INPUTS"], edges)
    flags = [g for _, _, g in space["INPUTS"]]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")     # var of one element and the like
        try:
            ref, ref64, refused64 = references(torch, space["program"], arrays, flags)
        except Exception as error:  # noqa: BLE001 (its backward may refuse: not our question)
            return "skipped", f"torch refused: {type(error).__name__}: {error}"
    try:
        got = run(clgrad, space["program"], arrays, flags)
    except Exception as error:  # noqa: BLE001 (any exception of clgrad's is a finding)
        if refused64 is not None:   # PyTorch's two paths disagree (a transposed convolution
            # to an empty output: float32 gives one for a batch of 2, float64 refuses)
            return "skipped", f"torch refused it in float64: {refused64}"
        return "exception", f"{type(error).__name__}: {str(error).splitlines()[0][:300]}"
    return judge(got, ref, ref64, edges)


def reproducer(source: str, seed, device: str, status: str, detail: str,
               replay: bool = False) -> str:
    """A standalone script: the harness (fuzz_rounding's text, then fuzz_harness's), the
    program and a call that runs it (for --replay, the program and a call of
    fuzz_replay.check_replay on it)."""
    header = (f"# clgrad fuzz seed {seed} on {device}{' (--replay)' * replay}: {status}\n"
              f"# {detail}\n"
              f"# Run from a clgrad checkout: PYTHONPATH=. CLGRAD_DEVICE={device} python <this>\n")
    if replay:
        return (header + source + "\n\nif __name__ == \"__main__\":\n"
                "    import sys\n    sys.path.insert(0, \"tests\")\n"
                "    from fuzz_replay import check_replay\n"
                "    print(check_replay(open(__file__).read()))\n")
    return (header + inspect.getsource(fuzz_rounding) + "\n\n" + inspect.getsource(fuzz_harness)
            + "\n\n" + source +
            "\n\nif __name__ == \"__main__\":\n    main(program, INPUTS, DATA_SEED, EDGES)\n")


def write_reproducer(out: str, source: str, seed: int | str, device: str, status: str,
                     detail: str, replay: bool = False) -> str:
    kind = "-edges" * ("EDGES = True" in source) + "-replay" * replay
    path = os.path.join(out, f"{device.replace(':', '-')}{kind}-seed{seed}.py")
    with open(path, "w") as f:
        f.write(reproducer(source, seed, device, status, detail, replay))
    return path


# ---- the child: runs a list of seeds, one JSON line per event on its protocol stream ----
def child(seeds: list[int], opts: Options) -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)           # anything else printed goes to the log, not into the protocol
    # pyopencl's note on every build of Intel's would bury the compilers' crash reports
    warnings.filterwarnings("ignore", message="Non-empty compiler output")
    for seed in seeds:
        print(f"== {opts.device} seed {seed}", file=sys.stderr, flush=True)  # marks the log
        protocol.write(json.dumps({"seed": seed, "event": "start"}) + "\n")
        source = generate(SeededChoices(seed), opts.edges)
        if opts.replay:
            status, detail = check_replay(source)
        else:
            status, detail = check(source, opts.early, _at_start(seed))
        if opts.early:
            detail = _early_detail(detail, seed)
        record = {"seed": seed, "status": status, "detail": detail}
        if status in FAILURES:
            record["path"] = write_reproducer(opts.out, source, seed, opts.device, status,
                                              detail, opts.replay)
        protocol.write(json.dumps(record) + "\n")


# ---- the parent: children in batches, crashes and hangs recorded ----
@dataclasses.dataclass
class Options:
    device: str
    edges: bool
    out: str
    batch: int
    timeout: float
    early: bool = False
    replay: bool = False

    def flags(self) -> list[str]:
        """The command-line flags that give these options (but the device and out)."""
        return ["--edges"] * self.edges + ["--early-backward"] * self.early + \
            ["--replay"] * self.replay


def run_seeds(seeds: list[int], opts: Options, log=sys.stderr) -> dict[int, dict]:
    """{seed: record} for every seed, running them in children of opts.batch seeds each; a
    child that dies or hangs is recorded against its current seed and replaced."""
    results: dict[int, dict] = {}
    todo = list(seeds)
    while todo:
        batch, todo = todo[:opts.batch], todo[opts.batch:]
        left = _run_child(batch, opts, results)
        todo = left + todo
        counts = collections.Counter(results[s]["status"] for s in batch if s in results)
        print(f"  {opts.device}: {len(results)}/{len(seeds)} graphs; last batch "
              f"{dict(counts)}", file=log, flush=True)
    return results


def _run_child(batch: list[int], opts: Options, results: dict) -> list[int]:
    """Runs batch in one child; returns the seeds it did not reach."""
    command = [sys.executable, os.path.abspath(__file__), "--child", "--device", opts.device,
               "--out", opts.out, "--seeds", ",".join(map(str, batch)), *opts.flags()]
    env = dict(os.environ, CLGRAD_DEVICE=opts.device)
    with open(os.path.join(opts.out, "children.log"), "a") as log:
        proc = subprocess.Popen(command, env=env,
                                stdout=subprocess.PIPE, stderr=log)
        current, hung = _read_protocol(proc, opts.timeout, results)
        if hung:
            proc.kill()
        code = proc.wait()
    left = [s for s in batch if s not in results]
    if not left:
        return []
    if current is None:
        raise RuntimeError(f"a fuzzing child exited with code {code} before graph {left[0]}; "
                           f"see {log.name}")
    if hung:
        status, detail = "timeout", f"no answer within {opts.timeout:.0f} s"
    elif code < 0:
        status, detail = "crash", signal.Signals(-code).name
    else:
        status, detail = "crash", f"exit code {code}"
    if opts.early:
        detail = _early_detail(detail, current)
    source = generate(SeededChoices(current), opts.edges)
    path = write_reproducer(opts.out, source, current, opts.device, status, detail, opts.replay)
    results[current] = {"seed": current, "status": status, "detail": detail, "path": path}
    return [s for s in left if s != current]


def _read_protocol(proc, timeout: float, results: dict) -> tuple[int | None, bool]:
    """Reads the child's records into results until it exits; returns the seed it started
    and did not finish (None if none) and whether it hung: took longer than timeout on one
    graph, or than STARTUP_TIMEOUT to start."""
    current, pending = None, b""
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        while True:
            if not selector.select(timeout if current is not None else STARTUP_TIMEOUT):
                return current, True
            chunk = os.read(proc.stdout.fileno(), 1 << 16)
            if not chunk:
                return current, False
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                record = json.loads(line)
                if record.get("event") == "start":
                    current = record["seed"]
                else:
                    results[record["seed"]] = record
                    current = None


def summarize(results: dict[int, dict], device: str, triage: dict[int, dict],
              replay: bool = False) -> str:
    counts = collections.Counter(r["status"] for r in results.values())
    exceptions = collections.Counter(r["detail"].split(":")[0] for r in results.values()
                                     if r["status"] == "exception")
    crashes = collections.Counter(r["detail"] for r in results.values()
                                  if r["status"] == "crash")
    lines = [f"device {device}: {len(results)} graphs run",
             f"  ok {counts['ok']}, skipped ("
             f"{'not replayed' if replay else 'no reliable float32 reference'}) "
             f"{counts['skipped']}",
             f"  wrong forward {counts['wrong forward']}, wrong gradients "
             f"{counts['wrong gradient']}, wrong replays {counts['wrong replay']}",
             f"  clgrad exceptions {counts['exception']} {dict(exceptions)}",
             f"  crashed processes {counts['crash']} {dict(crashes)}, timeouts {counts['timeout']}"]
    for seed in sorted(s for s, r in results.items() if r["status"] in FAILURES):
        r = results[seed]
        lines.append(f"  seed {seed}: {r['status']}: {r['detail'][:160]}\n    {r['path']}")
        if seed in triage:
            t = triage[seed]
            lines.append(f"    on {t['device']}: {t['status']} {t['detail'][:120]}")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--graphs", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0, help="the first seed")
    parser.add_argument("--edges", action="store_true", help="NaN, inf, empty and size-1 dims, "
                                                             "int32 extremes")
    parser.add_argument("--early-backward", action="store_true",
                        help="every backward() launched early, whatever its size and device")
    parser.add_argument("--replay", action="store_true",
                        help="each program as a step under cg.jit, against it run eagerly")
    parser.add_argument("--out", default="/tmp/fuzz-out", help="reproducers and logs")
    parser.add_argument("--batch", type=int, default=100, help="graphs per child process")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per graph")
    parser.add_argument("--triage", metavar="DEVICE", help="rerun failures on this device too")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seeds", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    os.makedirs(args.out, exist_ok=True)
    if args.early_backward and args.replay:
        parser.error("--early-backward and --replay are two different runs")
    opts = Options(args.device, args.edges, args.out, args.batch, args.timeout,
                   args.early_backward, args.replay)
    if args.child:
        child([int(s) for s in args.seeds.split(",")], opts)
        return
    started = time.time()
    results = run_seeds(list(range(args.seed, args.seed + args.graphs)), opts)
    triage = {}
    failed = sorted(s for s, r in results.items() if r["status"] in FAILURES)
    if args.triage and failed:
        other = dataclasses.replace(opts, device=args.triage)
        triage = {s: dict(r, device=args.triage) for s, r in run_seeds(failed, other).items()}
    report = summarize(results, args.device, triage, args.replay)
    print(report + f"\n  ({time.time() - started:.0f} s)")
    name = (f"summary-{args.device.replace(':', '-')}{'-edges' if args.edges else ''}"
            f"{'-early' if args.early_backward else ''}{'-replay' if args.replay else ''}.json")
    with open(os.path.join(args.out, name), "w") as f:
        json.dump({"results": results, "triage": triage}, f, indent=1)


if __name__ == "__main__":
    # test the clgrad of the checkout this file is in, not whichever one is installed
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    main()
