"""Building OpenCL programs (through the program cache) and launching their kernels."""

from __future__ import annotations

import os
import warnings
from operator import itemgetter
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyopencl as cl

from ..config import config
from . import cache, profiler
from .buffer import Buffer, is_out_of_memory

if TYPE_CHECKING:
    from .device import Device


class CompileError(RuntimeError):
    """An OpenCL program failed to build; the message holds its source and build log."""


def dump_source(name: str, source: str) -> None:
    """Write `source` to CLGRAD_DUMP/<name>.cl when dumping is on."""
    if not config.DUMP:
        return
    os.makedirs(config.DUMP, exist_ok=True)
    with open(os.path.join(config.DUMP, name.replace(os.sep, "_") + ".cl"), "w") as f:
        f.write(source)


def get_program(device: Device, name: str, source: str, options: Sequence[str] = ()) -> Program:
    """The built program for (source, options, device), built at most once per process."""
    options = tuple(options)
    key = cache.memory_key(device, source, options)
    program = cache.memory.get(key)
    if program is None:
        program = cache.memory[key] = Program(device, name, source, options)
    return program


def get_kernels(device: Device, sources: dict[str, str]) -> dict[str, Kernel]:
    """Kernels by name; the new ones are built as one program, which the cache then indexes
    by each kernel's name (a name carries a hash of its source)."""
    fresh = {name: source for name, source in sources.items()
             if (device.spec, name) not in cache.kernels}
    if fresh:
        for name, source in fresh.items():
            dump_source(name, source)
        program = get_program(device, "_".join(sorted(fresh))[:80], "\n".join(fresh.values()),
                              device.build_options)
        for name in fresh:
            cache.kernels[(device.spec, name)] = program[name]
    return {name: cache.kernels[(device.spec, name)] for name in sources}


def build_log(error: cl.Error) -> str:
    """The compiler's log from a failed build's error: pyopencl puts it after "Build on
    <device>:" and before its own "(options: ...)" note; every runtime's log is there."""
    text = str(error)
    _, found, rest = text.partition("Build on ")
    if not found:
        return text.strip()
    log = rest.partition(":\n")[2]
    return log.partition("\n(options:")[0].strip()


class Program:
    def __init__(self, device: Device, name: str, source: str, options: Sequence[str] = ()):
        self.device = device
        self.name = name
        self.source = source
        self.options = tuple(options)
        self.cl_program = cache.fetch(device, source, self.options,
                                      self._build_from_source, self._build_from_binary)
        self._kernels: dict[str, Kernel] = {}

    def __getitem__(self, kernel_name: str) -> Kernel:
        kernel = self._kernels.get(kernel_name)
        if kernel is None:
            kernel = self._kernels[kernel_name] = Kernel(self, kernel_name)
        return kernel

    def _build_from_source(self) -> cl.Program:
        program = cl.Program(self.device.context, self.source)
        try:
            return self._quiet_build(program)
        except cl.Error as error:
            raise CompileError(self._failure_message(error)) from None

    def _build_from_binary(self, binary: bytes) -> cl.Program:
        return self._quiet_build(cl.Program(self.device.context, [self.device.cl_device], [binary]))

    def _quiet_build(self, program: cl.Program) -> cl.Program:
        with warnings.catch_warnings():
            # Intel's compiler always prints a log; a failure's log goes into CompileError
            warnings.simplefilter("ignore", cl.CompilerWarning)
            # cache_dir=False: the clgrad disk cache already stores this binary.
            return program.build(options=list(self.options), devices=[self.device.cl_device],
                                 cache_dir=False)

    def _failure_message(self, error: cl.Error) -> str:
        numbered = "\n".join(f"{i:4d} | {line}"
                             for i, line in enumerate(self.source.splitlines(), start=1))
        return (f"OpenCL build of program {self.name!r} failed on {self.device!r} "
                f"(options: {' '.join(self.options) or 'none'})\n"
                f"--- source ---\n{numbered}\n--- build log ---\n{build_log(error)}")

    def __repr__(self) -> str:
        return f"<Program {self.name!r} on {self.device.spec}>"


class Kernel:
    """One kernel of a built program, created once and relaunched with new arguments."""

    __slots__ = ("name", "program", "cl_kernel", "_queue")

    def __init__(self, program: Program, name: str):
        self.name = name
        self.program = program
        try:
            self.cl_kernel = cl.Kernel(program.cl_program, name)
        except cl.Error as error:
            raise KeyError(f"program {program.name!r} has no kernel {name!r}: {error}") from None
        self._queue = program.device.queue

    def __call__(self, global_size: Sequence[int], local_size: Sequence[int] | None = None,
                 args: Sequence[object] = ()) -> cl.Event:
        """Enqueue without waiting; args are Buffers or numpy scalars (np.int32, ...)."""
        if isinstance(global_size, int):
            global_size = (global_size,)
        if isinstance(local_size, int):
            local_size = (local_size,)
        return self.enqueue(global_size, local_size,
                            [arg.mem if isinstance(arg, Buffer) else arg for arg in args])

    def enqueue(self, global_size: tuple[int, ...], local_size: tuple[int, ...] | None,
                raw: list) -> cl.Event:
        """__call__ for the engine's replays, which keep sizes as tuples and hand the
        buffers' cl memory (Buffer.mem) directly."""
        try:
            self.cl_kernel.set_args(*raw)
            event = cl.enqueue_nd_range_kernel(self._queue, self.cl_kernel,
                                               global_size, local_size)
        except (cl.Error, TypeError, ValueError) as error:
            raise self._failed(global_size, local_size, len(raw), error) from error
        for active in profiler.active:
            active.record(self.name, global_size, event)
        if config.DEBUG >= 1:
            event.wait()  # deliberately serialises: debug mode shows per-kernel times
            print(f"*** {self.name} global={global_size} {profiler.event_ms(event):.3f} ms")
        return event

    def _failed(self, global_size, local_size, args: int, error: Exception) -> RuntimeError:
        what = f"launch of kernel {self.name!r} (global={global_size}, local={local_size}, " \
               f"{args} args)"
        if is_out_of_memory(error):     # a runtime that allocates a buffer at its first use
            return self.program.device.pool.out_of_memory(f"out of memory at the {what}", error)
        return RuntimeError(f"{what} failed: {error}")

    def __repr__(self) -> str:
        return f"<Kernel {self.name!r} of {self.program!r}>"


def bind(launches) -> tuple[list, list[int]]:
    """launches, each (Kernel, global size, local size, indices of its arguments into a list
    of buffers), as enqueue_all takes them, and the numbers 0..k-1 (k: the most arguments
    of one launch) that begin the list of slots it reads: buffer i's memory sits in slot
    k + i, so that one itemgetter per launch picks the (argument number, memory, ...) tuple
    that pyopencl's Kernel._set_arg_multi sets in one call (its generated set_args calls it
    so, and loopy's generated code directly)."""
    width = max((len(args) for *_, args in launches), default=0)
    bound = []
    for kernel, global_size, local_size, args in launches:
        assert args, kernel         # a kernel writes at least one buffer
        pick = itemgetter(*[slot for n, i in enumerate(args) for slot in (n, width + i)])
        bound.append((kernel, kernel.cl_kernel, kernel._queue, global_size, local_size, pick))
    return bound, list(range(width))


def enqueue_all(bound: list, slots: list) -> None:
    """Enqueues a plan's launches (bind's) over slots (bind's numbers, then the memory of
    each buffer the launches read or write) without waiting: Kernel.enqueue's work in one
    loop, its checks for a profiler or debug output made once per plan rather than once per
    kernel. Each kernel may start as it is enqueued. (Holding the later ones behind a gate
    until all were in once made a tiny model's step on Intel's runtime 4-5% faster; since
    reads wait with clFinish it gains nothing there, and a GPT's one-character step of 55
    small launches took 20% longer behind it.)"""
    if profiler.active or config.DEBUG >= 1:    # (these wait for each kernel)
        for kernel, _, _, global_size, local_size, pick in bound:
            kernel.enqueue(global_size, local_size, list(pick(slots)[1::2]))
        return
    for launch in bound:
        _launch(launch, slots)


def _launch(launch: tuple, slots: list) -> None:
    kernel, cl_kernel, queue, global_size, local_size, pick = launch
    try:
        cl_kernel._set_arg_multi(pick(slots))
        cl.enqueue_nd_range_kernel(queue, cl_kernel, global_size, local_size)
    except (cl.Error, TypeError, ValueError) as error:
        raise kernel._failed(global_size, local_size, len(pick(slots)) // 2, error) from error
