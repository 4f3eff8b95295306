"""FunctionalModule: the base of the layers that are one functional with its hyperparameters
bound, as most of PyTorch's layers without weights are."""
from __future__ import annotations

from collections.abc import Callable

from .module import Module


class FunctionalModule(Module):
    """A layer that calls one functional with the hyperparameters it was built with.

    A subclass names the functional in its class statement and keeps PyTorch's constructor,
    which hands the hyperparameters on by keyword, in the order the functional takes them
    after its inputs:

        class Softplus(FunctionalModule, fn=A.softplus):
            def __init__(self, beta: float = 1.0, threshold: float = 20.0):
                super().__init__(beta=beta, threshold=threshold)

    They become attributes of those names, forward passes them, and extra_repr lists them as
    PyTorch's layers do: `name=value`, with `inplace` shown only when it is set.
    """
    _fn: Callable

    def __init_subclass__(cls, fn: Callable | None = None, **kwargs):
        super().__init_subclass__(**kwargs)
        if fn is not None:
            cls._fn = staticmethod(fn)

    def __init__(self, **hyperparameters):
        super().__init__()
        self._hyperparameters = tuple(hyperparameters)
        for name, value in hyperparameters.items():
            setattr(self, name, value)

    def hyperparameters(self) -> list:
        """The hyperparameters' current values, in the functional's order."""
        return [getattr(self, name) for name in self._hyperparameters]

    def forward(self, *inputs):
        return self._fn(*inputs, *self.hyperparameters())

    def extra_repr(self) -> str:
        return ", ".join(f"{name}={value!r}"
                         for name, value in zip(self._hyperparameters, self.hyperparameters())
                         if name != "inplace" or value)

