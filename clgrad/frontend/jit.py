"""`cg.jit`: a training step replayed without the Python that builds its graph.

The first call of a jitted function runs it eagerly, which builds its kernels. The next calls
also run it eagerly, while every schedule they launch is recorded as a trace: the plans, and
the buffers they read and write, named by role. A buffer is an argument's, or a tensor's that
existed before the call (by that tensor), or one the call wrote. Once two calls in a row give
the same trace, later calls replay it. A replay launches the same plans over the arguments'
and tensors' current buffers, with fresh buffers for what it writes (a changed tensor's new
value goes over its old buffer where nothing else holds that, as eagerly). Tensors the step
changed take their new values, parameters' `.grad` too, and the returned tensors are new
objects. A value an earlier call computed and a tensor still holds is found again by a call
over the same buffers (nodes are interned); a replay reads it only while those are the
buffers it was computed from.

A step keeps running eagerly, with a warning that says why, when its calls do not repeat, or
when it reads a value on the host (`item()`), uploads data, or keeps a computed tensor
anywhere but in its return value, a `.grad` or a tensor it changed in place.

What a replay cannot see is Python: control flow and Python numbers are those of the captured
calls, as with tinygrad's TinyJit or CUDA graphs. Code can declare the Python values it built
kernels from with `guard()` (frontend/jit_protocol.py, which nn and optim use): a replay that
finds one changed captures anew. It can also hand host work to `each_call()`, which replays
redo before their kernels (optimizers compute each step's learning rate, bias corrections and
step counts there), and to `on_host()`, which replays redo at its place between their
kernels, on the values of that replay (DDP sums gradients over MPI there). For the rest, call
`reset()`.
"""
from __future__ import annotations

import functools
import warnings

from ..compiler.ir import made_count
from .capture import STALE, Trace, capture, detached, flatten, restore
from .grad_mode import is_grad_enabled
from .jit_protocol import capturing, running_step
from .operands import is_tensor
from .tensor import realize

_ATTEMPTS = 4           # calls that may capture without settling before a step is left eager


def jit(fn) -> JitFunction:
    """Wraps a step function: `step = cg.jit(step)`, or as a decorator."""
    return JitFunction(fn)


class JitFunction:
    """A jitted function. Calls whose tensor arguments differ in shape, dtype, device or
    requires_grad, whose other arguments differ, or made in another grad mode, are captured
    apart."""

    def __init__(self, fn):
        functools.update_wrapper(self, fn)
        self.fn = fn
        self._steps: dict[tuple, _Step] = {}

    def __call__(self, *args, **kwargs):
        key = _signature(args, kwargs)
        step = self._steps.get(key)
        if step is None:
            step = self._steps[key] = _Step(self.fn)
        return step(args, kwargs)

    def reset(self) -> None:
        """Forgets every capture: the next calls run eagerly and capture anew."""
        self._steps.clear()

    @property
    def replaying(self) -> bool:
        """Whether some call signature is being replayed."""
        return any(step.trace is not None for step in self._steps.values())


def _signature(args, kwargs) -> tuple:
    def part(value):
        if is_tensor(value):
            return ("tensor", value.shape, value.dtype, value.device.spec, value.requires_grad)
        try:
            hash(value)
        except TypeError:
            raise TypeError(f"jit: arguments must be tensors or hashable values, got "
                            f"{type(value).__name__}") from None
        return value
    return (tuple(part(a) for a in args), is_grad_enabled(),
            tuple((name, part(value)) for name, value in sorted(kwargs.items())))


class _Step:
    """One call signature of a jitted function: its captures so far, then its trace."""

    def __init__(self, fn):
        self.fn = fn
        self.calls = 0
        self.last: Trace | None = None     # the previous capture, to compare with the next
        self.trace: Trace | None = None    # what calls replay, once two captures agree
        self.eager = False
        self._first: int | None = None     # the IR nodes made before the first call

    def _made_since_first_call(self, node) -> bool:
        return node.serial > self._first

    def __call__(self, args, kwargs):
        if capturing():      # inside another step's capture: be part of it
            return self._eager(args, kwargs)
        named = [value for _, value in sorted(kwargs.items())]    # in the signature's order
        inputs = [a for a in (*args, *named) if is_tensor(a)]
        realize(*inputs)        # also computes tensors changed in place before this call
        if self.trace is not None:
            result = self.trace.replay(inputs)
            if result is not STALE:
                return result
            self.trace, self.last, self.calls = None, None, 0   # state moved: capture anew
        self.calls += 1
        if self.eager or self.calls == 1:
            return self._eager(args, kwargs)
        with running_step():
            trace, result = capture(self.fn, args, kwargs, inputs, self._made_since_first_call)
        if isinstance(trace, str):          # may be a first call's setup: try again
            why, self.last = trace, None
        elif self.last is not None and trace.signature() == self.last.signature():
            self.trace = trace
            return result
        else:
            why, self.last = ("launches different kernels or touches different tensors each "
                              "call"), trace
        if self.calls > _ATTEMPTS:
            self._give_up(why)
        return result

    def _eager(self, args, kwargs):
        if self._first is None:
            self._first = made_count()
        with running_step():
            return restore(*flatten(self.fn(*args, **kwargs)), detached)

    def _give_up(self, why: str) -> None:
        self.eager, self.last = True, None
        name = getattr(self.fn, "__name__", repr(self.fn))
        warnings.warn(f"jit({name}) runs eagerly: the step {why}", RuntimeWarning, stacklevel=4)


