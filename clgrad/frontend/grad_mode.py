"""Whether operations are recorded for autograd: cg.no_grad(), cg.enable_grad()."""
from __future__ import annotations

import functools
import threading

_state = threading.local()


def is_grad_enabled() -> bool:
    return getattr(_state, "enabled", True)


def set_grad_enabled(mode: bool) -> None:
    _state.enabled = bool(mode)


class _GradMode:
    """A context manager that is also a decorator, like torch.no_grad."""
    enabled: bool

    def __enter__(self):
        self._previous = is_grad_enabled()
        set_grad_enabled(self.enabled)
        return self

    def __exit__(self, *exc) -> None:
        set_grad_enabled(self._previous)

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with type(self)():
                return fn(*args, **kwargs)
        return wrapper


class no_grad(_GradMode):
    enabled = False


class enable_grad(_GradMode):
    enabled = True
