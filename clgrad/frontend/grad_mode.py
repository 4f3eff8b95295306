"""Whether operations are recorded for autograd: cg.no_grad(), cg.enable_grad()."""
from __future__ import annotations

import copy
import functools
import threading

class _State(threading.local):
    enabled = True      # each thread starts with grad on: a plain read, not getattr's default
    leaf_writes = 0     # in-place writes to leaves that require grad, made with grad off


_state = _State()

# Called when a block that turned grad off ends having changed leaves that require grad in
# place (inplace.py sets it: the end of a hand-written optimizer step).
on_leaf_updates = None


def note_leaf_write() -> None:
    _state.leaf_writes += 1


def is_grad_enabled() -> bool:
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradMode:
    """A context manager that is also a decorator, like torch.no_grad."""
    enabled: bool

    def __enter__(self):
        self._previous = is_grad_enabled()
        self._leaf_writes = _state.leaf_writes
        _set_enabled(self.enabled)
        return self

    def __exit__(self, exc_type, *exc) -> None:
        _set_enabled(self._previous)
        if self._previous and _state.leaf_writes != self._leaf_writes and exc_type is None:
            on_leaf_updates()

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():      # a fresh one per call: each saves its own previous mode
                return fn(*args, **kwargs)
        return wrapper

    def clone(self):
        return copy.copy(self)


class no_grad(_GradMode):
    enabled = False


class enable_grad(_GradMode):
    enabled = True


class inference_mode(_GradMode):
    """no_grad under PyTorch's other name (clgrad has no separate inference tensors);
    inference_mode(False) records as usual."""

    def __init__(self, mode: bool = True):
        self.enabled = not mode


class set_grad_enabled(_GradMode):
    """Sets grad mode on or off now; as a context manager or decorator, until the block ends."""

    def __init__(self, mode: bool):
        self._previous, self.enabled = is_grad_enabled(), bool(mode)
        self._leaf_writes = _state.leaf_writes
        _set_enabled(mode)

    def __enter__(self):
        return self

    def clone(self):
        return set_grad_enabled(self.enabled)

    def __call__(self, fn):
        _set_enabled(self._previous)    # decorating changes nothing until fn runs
        return super().__call__(fn)
