"""What a jit capture learns from the code it runs, in one place.

nn and optim talk to the jit through four functions, and nothing else:
- `in_jit()`: whether a jitted step's Python is running; code that would read tensor values
  on the host to pick its graph builds the graph that fits every value instead.
- `guard(value_of)`: Python values a capture's kernels were built from (an optimizer's
  hyperparameters); a replay that finds one changed captures anew.
- `each_call(key, work)`: host inputs every replay computes again before its kernels (an
  optimizer's per-step scalars, a batch count).
- `on_host(key, work, tensors)`: host code between a step's kernels that computes tensors'
  new values from their values (DDP summing gradients over MPI); replays run it there.

The rest of the frontend reports what a capture must know without looking at the heap:
tensors holding a buffer (`holds_buffer`, which names the buffers a trace reads by the
tensors holding them), tensors made during a capture (`made`), tensors about to change in
place (`changing`), and copies between host and device (`uploaded`, `downloaded`).
"""
from __future__ import annotations

import contextlib
import weakref

from ..compiler import ir
from ..compiler.ops import Op


class Recording:
    """What one capture gathers while its step runs."""

    def __init__(self, holders: list):
        self.guards: list[tuple] = []            # (value_of, value) pairs
        self.prologue: list[tuple] = []          # (key, work, host transfers) per each_call
        self.owned: set[int] = set()             # ids of tensors the prologue's work changes
        self.made: list[weakref.ref] = []        # tensors made during the capture
        self.made_ids: set[int] = set()
        self.before: dict[int, tuple] = {id(t): state(t) for t in holders}
        self.transfers = 0                       # copies between host and device
        self.uploads: set[int] = set()           # ids of the buffers uploaded
        self.log: list = []                      # the schedules run (engine.listen's list)


_BUFFER = Op.BUFFER     # a global reads faster than an Enum member, and every tensor made asks
_recording: Recording | None = None     # while a capture runs
_steps_running = 0      # jitted steps whose Python runs now (a warm-up, capture or eager call)


class _Held(weakref.ref):
    """A weak reference that knows its key: one callback serves every entry."""
    __slots__ = ("key",)


# id -> weak reference, for the tensors that held a buffer node when told (a WeakSet would
# compare tensors with ==, which is elementwise; a WeakValueDictionary's methods are all
# Python, and parameters are told at every step)
_holders: dict[int, _Held] = {}


def _let_go(dead: _Held) -> None:
    if _holders.get(dead.key) is dead:      # not a newer tensor under the same id
        del _holders[dead.key]


def state(t) -> tuple:
    """What a capture compares before and after its step."""
    return (t, t._node, t.grad, t._counter, t.grad_fn, t.requires_grad)


# ---- for nn and optim ----

def in_jit() -> bool:
    """Whether a jitted step's Python is running: code that would read tensor values on the
    host to pick its graph builds the graph that fits every value instead, so the step's
    eager calls, captures and replays share one set of kernels."""
    return _steps_running > 0


def guard(value_of) -> None:
    """Declares, to a capture running now, Python values its kernels were built from (an
    optimizer's hyperparameters): a replay that finds value_of() changed captures anew.
    Outside a capture it does nothing."""
    if _recording is not None:
        _recording.guards.append((value_of, value_of()))


def each_call(key, work) -> None:
    """Runs work: host-side preparation of the kernels a step launches after it, such as an
    optimizer writing this step's scalars into a buffer it keeps. work returns the tensors
    it changes (step counts). Under a capture, every replay runs work again before its
    kernels, and the tensors work changes are left to it; key names work when two captures
    are compared."""
    recording = _recording
    if recording is None:
        work()
        return
    transfers = recording.transfers
    recording.owned.update(id(t) for t in work())
    recording.prologue.append((key, work, recording.transfers - transfers))


class HostWork:
    """on_host's work as a capture logs it among its schedules: the buffers it read and the
    ones it wrote, with the (dtype, shape) of each, for a replay to run it over the buffers
    of that replay."""
    donors = ()     # (a plan's outputs that may write over its inputs: host work has none)

    def __init__(self, key, work, tensors, results, transfers: int):
        self.key, self.work, self.transfers = key, work, transfers
        self.reads = [t.node.arg for t in tensors]
        self.writes = [t.node.arg for t in results]
        self.layouts = [(t.dtype, t.shape) for t in tensors]

    def run(self, reads, writes) -> None:
        _run_on_host(self.work, reads, writes, self.layouts)


def _run_on_host(work, reads, writes, layouts) -> None:
    from .host_copies import read_host, write_host
    arrays = [read_host(ref, dtype, shape) for ref, (dtype, shape) in zip(reads, layouts)]
    for ref, values, (dtype, _) in zip(writes, work(arrays), layouts):
        write_host(ref, values, dtype)


def on_host(key, work, tensors: list) -> list:
    """Host code between a step's kernels: work gets the tensors' values as NumPy arrays and
    returns their new values (DDP sums gradients over MPI), which come back as new tensors
    of the same dtypes, shapes and devices. Under a capture, every replay runs work at the
    same point between its kernels; key names work when two captures are compared."""
    from .tensor import Tensor, realize
    realize(*tensors)
    recording = _recording
    transfers = recording.transfers if recording is not None else 0
    writes = [ir.BufferRef(t.device, t.node.arg.nbytes) for t in tensors]
    _run_on_host(work, [t.node.arg for t in tensors], writes,
                 [(t.dtype, t.shape) for t in tensors])
    results = [Tensor(ir.buffer(ref, t.dtype, t.shape), t.device)
               for ref, t in zip(writes, tensors)]
    if recording is not None:
        recording.log.append(HostWork(key, work, tensors, results,
                                      recording.transfers - transfers))
    return results


# ---- from the frontend ----

def holds_buffer(t) -> None:
    """t holds a buffer node: a capture names that buffer by t."""
    key = id(t)
    held = _holders.get(key)
    if held is None or held() is not t:
        held = _holders[key] = _Held(t, _let_go)
        held.key = key


def made(t) -> None:
    """t is a new tensor: one holding a buffer node is told (holds_buffer), and a capture
    running now learns of it."""
    if t._node.op is _BUFFER:
        holds_buffer(t)
    if _recording is not None:
        _recording.made.append(weakref.ref(t))
        _recording.made_ids.add(id(t))


def changing(t) -> None:
    """t is about to take a new value in place."""
    recording = _recording
    if recording is not None and id(t) not in recording.before \
            and id(t) not in recording.made_ids:
        recording.before[id(t)] = state(t)


def reading(tensors) -> None:
    """tensors are inputs of an op being recorded. One made before the capture and still a
    lazy graph is computed now, outside the trace: the trace then reads the value it has,
    not a graph of the buffers its sources held then (which it would name by the tensors
    holding them at each replay)."""
    recording = _recording
    lazy = [t for t in tensors if id(t) not in recording.made_ids and id(t) not in
            recording.before and t._node.op not in (Op.BUFFER, Op.CONST)]
    if lazy:
        from .tensor import compute
        launched = len(recording.log)
        compute(lazy)       # only them: what the step changed so far stays in the trace
        del recording.log[launched:]
        for t in lazy:
            recording.before[id(t)] = state(t)


def uploaded(ref) -> None:
    """Host data was copied into the buffer ref names (a new one, or one rewritten)."""
    if _recording is not None:
        _recording.transfers += 1
        _recording.uploads.add(id(ref))


def downloaded() -> None:
    """A value was copied back to the host."""
    if _recording is not None:
        _recording.transfers += 1


# ---- for capture.py and jit.py ----

def capturing() -> bool:
    """Whether a capture is running."""
    return _recording is not None


def holders() -> list:
    """The live tensors that hold a buffer node (those that held one when told and still do)."""
    live = (held() for held in list(_holders.values()))
    return [t for t in live if t is not None and t._node.op is Op.BUFFER]


@contextlib.contextmanager
def recording(holders_now: list):
    """Makes a capture's Recording current for the block."""
    global _recording
    _recording = Recording(holders_now)
    try:
        yield _recording
    finally:
        _recording = None


@contextlib.contextmanager
def running_step():
    global _steps_running
    _steps_running += 1
    try:
        yield
    finally:
        _steps_running -= 1
