"""Slices for a loop over steps, each in a buffer of its own.

A recurrent layer reads x[t] at step t. Slices of one buffer put each step's offset into the
source of the kernel that reads it, so a loop of T steps compiles T kernels that differ in one
number. Copied into buffers of their own (one device copy each, no kernel), the slices are
leaves like any input: every step's kernels are the same, compiled once, whatever T is."""
from __future__ import annotations

from .. import engine
from ..compiler.ir import BufferRef
from . import jit_protocol
from .backward import record


def step_slices(x) -> tuple:
    """x.unbind(0), each slice's value held in a buffer of its own (autograd sees the slices
    of x as usual). Inside a jit capture, whose replays relaunch kernels only, the slices stay
    views of x."""
    if jit_protocol.capturing() or not x.numel():
        return x.unbind(0)
    x.realize()
    # kept: each slice's gradient is computed into a buffer of its own too, so that x's
    # gradient loads the steps' gradients rather than computing all of them in one kernel
    slices = tuple(kept(part) for part in x.unbind(0))
    source = engine.storage(x.node.arg)
    nbytes = slices[0].numel() * x.dtype.itemsize
    for t, part in enumerate(slices):
        node = part.node
        if node.buffer is None:
            ref = BufferRef(x.device, nbytes)
            engine.storage(ref).copy_from(source, offset=t * nbytes)
            node.buffer = ref
    return slices


def kept(x):
    """x (a clone, for autograd), computed into a buffer of its own wherever it is computed,
    and so is its gradient: a value that chains elementwise from step to step (a recurrent
    layer's state, forward and backward) is then loaded by the next step's kernels, not
    recomputed in each of them from the first step on."""
    return record("clone", x.node.contiguous(), x.device, [x])
