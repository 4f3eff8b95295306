"""skip_init, as torch.nn.utils.init."""
from __future__ import annotations

import inspect

from ..module import Module


def skip_init(module_cls, *args, **kwargs):
    """module_cls(*args, **kwargs) whose parameters and buffers the caller is to fill: their
    values are unspecified, as in PyTorch. (PyTorch builds the module on its meta device to
    skip the initialisers; clgrad's run on the host and lazily, so the module is built as is.)"""
    if not (inspect.isclass(module_cls) and issubclass(module_cls, Module)):
        raise RuntimeError(f"Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise RuntimeError("Module must support a 'device' arg to skip initialization")
    return module_cls(*args, **kwargs)
