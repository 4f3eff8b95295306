"""Lowers one KernelSpec to OpenCL C: picks the kernel writer for its kind (elementwise,
reduce, matmul, scan, sort, scatter, linalg, recurrence) and the layout of its vector lanes,
names the kernel, and caches lowered kernels by kernel structure."""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, replace

from .ir import Node, reads_absent, structural_key
from .kernel import KernelSpec
from .lower_elementwise import ElementwiseWriter
from .lower_ldl import LdlWriter
from .lower_linalg import LinalgWriter
from .lower_matmul import MatmulWriter, ragged_vectors
from .lower_recurrence import RecurrenceWriter
from .lower_reduce import ReduceWriter
from .lower_reduce_group import GroupReduceWriter, group_size
from .lower_scan import ScanWriter
from .lower_scatter import ScatterWriter
from .lower_sort import SortWriter
from .ops import Op
from .target import Target


@dataclass
class LoweredKernel:
    name: str
    source: str
    global_size: tuple[int, ...]
    params: list[tuple[Node, bool]]    # (node, is_output) in argument order
    local_size: tuple[int, ...] | None = None   # work-group shape; None lets the driver pick


def _transpose_matmul(spec: KernelSpec, width: int) -> bool:
    """Whether a CPU matmul should run as C^T = B^T A^T, its vector lanes down M, not along N:
    when N is no multiple of 8 nor few enough vectors for a ragged last one (see
    ragged_vectors) and M is a multiple of 8; or when B alone has ABSENT elements, which the
    kernel skips in A only."""
    (mm,) = spec.reductions
    *_, m, n = mm.shape
    a, b = mm.src
    if width == 1 or not mm.dtype.is_float or reads_absent(a):
        return False        # (A's absent elements are skipped row by row: see MatmulWriter)
    return m % 8 == 0 and (reads_absent(b) or (n % 8 != 0 and not ragged_vectors(n, width)))


def _lane_axis(spec: KernelSpec, width: int) -> int | None:
    """For an elementwise kernel whose last axis vectors do not tile, the innermost they do."""
    shape = spec.shape
    if spec.kind != "elementwise" or width == 1 or not shape or shape[-1] % width == 0:
        return None
    return next((a for a in reversed(range(len(shape))) if shape[a] % width == 0), None)


# Elementwise kernels of fewer elements run in scalar code: their vectors save nothing
# measurable, and where a pad or gather's index crosses rows of fewer elements than lanes,
# vector code takes every lane apart (a 3x3x3 window's max_pool3d gradient of 72 elements was
# 80 KB of C, a second to write and more to compile; scalar, 7 KB)
_SCALAR_ELEMENTS = 4096


def _lanes(spec: KernelSpec, target: Target, vectors=None) -> int:
    """The target's vector width, narrowed so that a vector of the widest element among
    `vectors` (the kernel's nodes by default) fits the target's vector register
    (vector_bits); 1 for a small elementwise kernel."""
    if spec.kind == "elementwise" and math.prod(spec.shape) < _SCALAR_ELEMENTS:
        return 1
    if target.vector_bits is None:
        return target.width
    widest = max(n.dtype.itemsize for n in vectors or [*spec.nodes(), *spec.inputs])
    return max(1, min(target.width, target.vector_bits // (8 * widest)))


def lower(spec: KernelSpec, target: Target) -> LoweredKernel:
    width = _lanes(spec, target)
    transposed = spec.kind == "matmul" and _transpose_matmul(spec, width)
    if spec.kind == "matmul":
        # a matmul's lanes are output columns (rows when transposed): the widest vector that
        # tiles them, or the target's own where a ragged last vector takes the rest
        mm = spec.reductions[0]
        columns = mm.shape[-2 if transposed else -1]
        if not (mm.dtype.is_float and ragged_vectors(columns, width)):
            width = next(w for w in (16, 8, 4, 2, 1) if w <= width and columns % w == 0)
        writer = MatmulWriter(spec, target, width, transposed)
    elif spec.kind == "reduce":
        group = group_size(spec, target)
        writer = GroupReduceWriter(spec, target, group) if group > 1 else \
            ReduceWriter(spec, target, width)
    elif spec.kind == "scan":
        writer = ScanWriter(spec, target, 1)
    elif spec.kind == "sort":
        # (a topk's row is read in vectors of its values: lower_sort)
        writer = SortWriter(spec, target, _lanes(spec, target, spec.inputs))
    elif spec.kind == "scatter":
        writer = ScatterWriter(spec, target)
    elif spec.kind == "linalg":
        ldl = spec.outputs[0][0].op in (Op.LDL, Op.LDL_SOLVE)
        writer = (LdlWriter if ldl else LinalgWriter)(spec, target, 1)
    elif spec.kind == "recurrence":
        writer = RecurrenceWriter(spec, target, width)
    else:
        writer = ElementwiseWriter(spec, target, width)
    global_size = writer.write()
    axis = _lane_axis(spec, width)
    if axis is not None:
        # rows that vectors do not tile (LeNet's 30, 15, 13): lanes down an axis they do tile,
        # when that leaves less index arithmetic. Through windows, pads and permutes the flat
        # form divides per lane; named dims divide once per vector. A plain contiguous kernel
        # keeps its flat vector loads.
        down = ElementwiseWriter(spec, target, width, lane_axis=axis)
        down_size = down.write()
        if down.divisions() < writer.divisions():
            writer, global_size = down, down_size
    body = writer.source("KERNEL")
    digest = hashlib.sha256(body.encode()).hexdigest()[:6]
    prefix = {"elementwise": "E", "reduce": "R", "matmul": "M", "scan": "S", "sort": "Q",
              "scatter": "X", "linalg": "L", "recurrence": "T"}[spec.kind]
    shape = "x".join(map(str, spec.shape)) or "1"
    name = "_".join([prefix, shape, *writer.ops_seen[:3], digest])
    params = [(node, output) for _, node, output in writer.params.values()]
    return LoweredKernel(name, writer.source(name), global_size, params, writer.local_size)


_lowered: dict[tuple, tuple[LoweredKernel, list[tuple[int, bool]]]] = {}


def structure(spec: KernelSpec) -> tuple[tuple, list[Node]]:
    """A key equal for kernels that differ only in which buffers they read, and the input
    nodes in the order the key numbers them."""
    outputs = [node for node, _ in spec.outputs]
    key, _, inputs = structural_key(outputs, lambda n: n if n in spec.inputs else None)
    return (spec.kind, spec.shape, spec.axes, key), inputs


def lowered(spec: KernelSpec, target: Target) -> tuple[LoweredKernel, list]:
    """The kernel for spec and its arguments, as buffer references."""
    key, inputs = structure(spec)
    key = (key, target)
    if key not in _lowered:
        kernel = lower(spec, target)
        outputs = [n for n, _ in spec.outputs]
        positions = [(outputs.index(n) if out else inputs.index(n), out) for n, out in kernel.params]
        # The cache must not hold graph nodes: they would keep every first result realized
        # (and its buffer allocated) for the life of the process.
        _lowered[key] = (replace(kernel, params=[]), positions)
    kernel, positions = _lowered[key]
    refs = [spec.outputs[i][1] if out else spec.inputs[inputs[i]] for i, out in positions]
    return kernel, refs
