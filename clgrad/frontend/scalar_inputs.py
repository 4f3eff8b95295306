"""Python numbers in a float tensor's arithmetic (x * 0.9, lr * g, 1 - t), read by kernels
from small device buffers rather than written into their sources.

Kernels are compiled per source, and a plan per graph structure: a number written into the
source makes every new value a new kernel, so a loop whose number changes at each step (a
decaying step size, a sampler's per-step coefficients, a running mean's 1 / (i + 1))
compiled a kernel at every step, 0.1-0.4 s each. Read from a buffer, the number is a leaf
like any tensor's and the graph keeps its structure; only the buffer changes.

The buffers are kept per (value, dtype, device), the latest _KEPT of them, so that a number
used at every step is uploaded once. A kept buffer is never given to an output (its node's
references here make it look shared to engine/donation.py) nor counted as an upload by
cg.jit: a replay reads the number of the captured call, as it would a number in the source
(frontend/jit.py)."""
from __future__ import annotations

import numpy as np

from .. import engine
from ..compiler import dtype as dt
from ..compiler import ir
from .operands import broadcast_to

_KEPT = 1024
_kept: dict[tuple, ir.Node] = {}        # (value key, dtype, device) -> its 0-d buffer node


def number_node(value, dtype: dt.DType, shape: tuple[int, ...], device) -> ir.Node:
    """The Python number value as a node of dtype and shape, read from a buffer."""
    # 0.0 and -0.0 are equal keys, and NaN is no key: their reprs tell them apart
    key = (value if value == value and value != 0 else repr(value), dtype, device)
    node = _kept.get(key)
    if node is None:
        node = _kept[key] = _uploaded(value, dtype, device)
        if len(_kept) > _KEPT:
            del _kept[next(iter(_kept))]    # the oldest
    return broadcast_to(node, shape)


def _uploaded(value, dtype: dt.DType, device) -> ir.Node:
    with np.errstate(over="ignore"):     # a number past the type's range is its infinity
        stored = dt.encode(np.array(dt.scalar(value, dtype)), dtype).reshape(())
    ref = ir.BufferRef(device, stored.nbytes)
    engine.storage(ref).write(stored)
    return ir.buffer(ref, dtype, ())
