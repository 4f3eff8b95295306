"""The engine: runs graphs on devices. It asks the compiler for a schedule and its kernels'
source, has the runtime build and launch them, and decides what only a device can tell: the
codegen target per device, the buffers, and which outputs may take over an input's buffer.

It knows tensors no more than the compiler does; the frontend hands it graphs of IR nodes.
"""
from .plan import Plan
from .run import launch, listen, own_buffer, run, storage, write_through
from .targets import codegen_target

__all__ = ["Plan", "codegen_target", "launch", "listen", "own_buffer", "run", "storage",
           "write_through"]
