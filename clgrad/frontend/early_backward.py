"""When a backward() starts the device's work before the step ends, and what it launches.

On a device that starts a large backward early (Device.starts_backward_early, Intel's
runtime), the device computes the loss and the gradients as backward() ends, while Python
records the optimizer's step. A forward whose values fit in a core's cache is launched even
earlier, as backward() begins, so that the device works on it while Python derives the
gradients (the seed MLP's step, whose two products are most of its device time); its
gradients then wait for the step's end, whose updates fuse into their kernels (a schedule of
the gradients alone, with the updates in one of their own, cost more host time than the
device's work beside the optimizer's recording saved). A larger forward is not launched at
the start: its kernels, streaming activations through the cache Python shares, slowed the
recording of LeNet's backward by 300-500 us a step and saved no device time.

A forward launched at the start also stores each value a backward node holds whose
recomputation would take a product or a reduction, so that the gradients' schedule reads it:
the seed MLP's pre-ReLU product, fused away in a schedule of the loss alone, was otherwise
computed again by its gradient's kernel (140 us a step instead of 4).
"""
from __future__ import annotations

from ..compiler.ops import ELEMENTWISE, MOVEMENT, SOURCE

NOT_EARLY, AT_END, FROM_START = "not early", "at the end", "from the start"

# From this many elements read and written by the forward's ops, a step's backward is worth
# a second schedule (the tiny loop's step, 2,546, is not).
EARLY_ELEMENTS = 1 << 16
# A forward whose elements take no more than the cache the device reports (Intel's runtime
# reports a core's L2, 1 MB on the AMD EPYC) runs beside Python: the seed MLP's 182,281
# (0.7 MB as floats) do, LeNet's 2,595,115 do not.
_ELEMENT_BYTES = 4

_CHEAP = ELEMENTWISE | MOVEMENT | SOURCE
# How far below a held value the walk looks for a product or a reduction; a value further
# from its buffers than this is stored (which costs a write, never a wrong result).
_DEPTH = 64


def when(order, outputs) -> str:
    """When the backward of outputs, whose backward nodes are order, launches its work."""
    if not outputs or not outputs[0].device.starts_backward_early:
        return NOT_EARLY
    elements = sum(fn.elements_touched() for fn in order)
    if elements < EARLY_ELEMENTS:
        return NOT_EARLY
    fits = elements * _ELEMENT_BYTES <= outputs[0].device.cache_bytes
    return FROM_START if fits else AT_END


def forward_values(order, outputs) -> list:
    """outputs, and the tensors the backward nodes in order hold that are not computed yet and
    would cost a product or a reduction to compute again."""
    known: dict = {}
    held = {}
    for fn in order:
        for t in fn.held():
            if t is not None and id(t) not in held:
                node = t.node
                if node.buffer is None and _is_costly(node, known, _DEPTH):
                    held[id(t)] = t
    return [*outputs, *held.values()]


def _is_costly(node, known: dict, depth: int) -> bool:
    """Whether computing node again takes a node other than elementwise, movement and source
    ones, above the buffers already computed. known: the answers so far, by node."""
    found = known.get(node)
    if found is None:
        if node.buffer is not None:
            found = False
        elif node.op not in _CHEAP or depth == 0:
            found = True
        else:
            found = False
            for s in node.src:
                if _is_costly(s, known, depth - 1):
                    found = True
                    break
        known[node] = found
    return found
