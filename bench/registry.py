"""The workload registry. A workload is one function that builds its inputs and returns a
`Case`: a runner per framework (each forcing completion) and the work it does.

    @workload("W4", "8-op chain, 2^24 floats")
    def chain(quick):
        x = ...
        return Case(clgrad=lambda: ..., numpy=lambda: ..., torch=lambda: ...)
"""
from __future__ import annotations

import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

rng = np.random.default_rng(0)      # every workload's inputs, reproducibly


def randn(*shape) -> np.ndarray:
    return rng.standard_normal(shape, dtype=np.float32)


@dataclass
class Case:
    clgrad: Callable[[], object]
    numpy: Callable[[], object] | None = None
    torch: Callable[[], object] | None = None
    flop: float | None = None        # floating-point operations per run, for GFLOP/s


@dataclass
class Workload:
    id: str                          # "W3", matched by --only
    name: str
    build: Callable[[bool], Case]    # build(quick) -> Case


WORKLOADS: list[Workload] = []


def workload(id: str, name: str):
    """Registers the decorated function as a workload; several may share an id (W3: two sizes)."""
    def register(build: Callable[[bool], Case]) -> Callable[[bool], Case]:
        WORKLOADS.append(Workload(id, name, build))
        return build
    return register


def try_torch():
    """PyTorch if it is installed (as a reference only), else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def example(name: str, framework: str = "clgrad") -> types.ModuleType:
    """examples/NAME.py as a module (its main not run), so that the bench times the examples'
    own models and steps. The examples are PyTorch programs written against clgrad, so
    framework="torch" loads the same source with every `clgrad` in it read as `torch`."""
    path = EXAMPLES / f"{name}.py"
    module = types.ModuleType(f"{name}_on_{framework}")
    module.__file__ = str(path)
    source = path.read_text().replace("clgrad", framework)
    exec(compile(source, str(path), "exec"), module.__dict__)
    return module


def same_weights(torch_model, model, torch):
    """torch_model (the same example's model loaded on PyTorch) with model's state."""
    torch_model.load_state_dict({name: torch.from_numpy(value.numpy().copy())
                                 for name, value in model.state_dict().items()})
    return torch_model
