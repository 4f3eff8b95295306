"""Slices for a loop over steps, each in a buffer of its own.

A recurrent layer reads x[t] at step t. Slices of one buffer put each step's offset into the
source of the kernel that reads it, so a loop of T steps compiles T kernels that differ in one
number. Copied into buffers of their own (one device copy each, no kernel), the slices are
leaves like any input: every step's kernels are the same, compiled once, whatever T is."""
from __future__ import annotations

from .. import engine
from ..compiler import ir
from ..compiler.ir import BufferRef
from . import jit_protocol
from .backward import record
from .grad_mode import is_grad_enabled
from .tensor import Tensor


def step_slices(x) -> tuple:
    """x.unbind(0), each slice's value held in a buffer of its own (autograd sees the slices
    of x as usual, when it records). Inside a jit capture, whose replays relaunch kernels only,
    the slices stay views of x."""
    if jit_protocol.capturing() or not x.numel():
        return x.unbind(0)
    x.realize()
    source = engine.storage(x.node.arg)
    nbytes = x.numel() // x.shape[0] * x.dtype.itemsize

    def copy(t: int) -> BufferRef:
        ref = BufferRef(x.device, nbytes)
        engine.storage(ref).copy_from(source, offset=t * nbytes)
        return ref
    if not (x.requires_grad and is_grad_enabled()):
        # nothing to differentiate: the copies are leaves, with no views of x recorded
        return tuple(Tensor(ir.buffer(copy(t), x.dtype, x.shape[1:]), x.device)
                     for t in range(x.shape[0]))
    # kept: each slice's gradient is computed into a buffer of its own too, so that x's
    # gradient loads the steps' gradients rather than computing all of them in one kernel
    slices = tuple(kept(part) for part in x.unbind(0))
    for t, part in enumerate(slices):
        if part.node.buffer is None:
            part.node.buffer = copy(t)
    return slices


def kept(x):
    """x (a clone, for autograd), computed into a buffer of its own wherever it is computed,
    and so is its gradient: a value that chains elementwise from step to step (a recurrent
    layer's state, forward and backward) is then loaded by the next step's kernels, not
    recomputed in each of them from the first step on."""
    return record("clone", x.node.contiguous(), x.device, [x])
