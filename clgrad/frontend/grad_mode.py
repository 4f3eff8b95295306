"""Whether operations are recorded for autograd: cg.no_grad(), cg.enable_grad()."""
from __future__ import annotations

import copy
import functools
import threading

class _State(threading.local):
    enabled = True      # each thread starts with grad on: a plain read, not getattr's default


_state = _State()


def is_grad_enabled() -> bool:
    return _state.enabled


def _set_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradMode:
    """A context manager that is also a decorator, like torch.no_grad."""
    enabled: bool

    def __enter__(self):
        self._previous = is_grad_enabled()
        _set_enabled(self.enabled)
        return self

    def __exit__(self, *exc) -> None:
        _set_enabled(self._previous)

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
        _set_enabled(mode)

    def __enter__(self):
        return self

    def clone(self):
        return set_grad_enabled(self.enabled)

    def __call__(self, fn):
        _set_enabled(self._previous)    # decorating changes nothing until fn runs
        return super().__call__(fn)
