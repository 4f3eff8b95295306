"""Reduction kernels for one-lane targets (GPUs): a work-group of G work-items per row.

Work-item `item` of a row's group reads the row's elements item, item + G, item + 2G, ...:
neighbouring work-items read neighbouring addresses, which a GPU serves in one memory
transaction, and the rows' length, not only their number, fills the device. Each work-item
accumulates every reduction of the kernel over its elements (a long float sum pairwise, as
ReduceWriter does along a whole row); the group then combines its G partials in __local
memory, halving them between barriers, and every work-item reads the total: a later reduction
of the row needs it (softmax's sum of exp(x - max) needs the max), and the row's elementwise
outputs (softmax's normalised row) are written by all G work-items, strided again. Outputs of
one value per row are stored by work-item 0.

Kernels that do not fit keep ReduceWriter's work-item per row (group_size says which).
"""
from __future__ import annotations

from . import symbolic as sym
from .kernel import KernelSpec
from .lower_reduce import ReduceWriter, row_length, row_reader
from .ops import Op
from .row_breaks import pad_breaks
from .target import Target

# NVIDIA's warp: a group of fewer work-items would leave lanes of its warp idle, and a row
# shorter than this is few loads for its one work-item
_GROUP_MIN = 32
_ITEM = "item"      # the work-item's place in its row's group, in C
_BARRIER = "barrier(CLK_LOCAL_MEM_FENCE);"


def group_size(spec: KernelSpec, target: Target) -> int:
    """Work-items per row of the reduction kernel spec: the target's row_group, or the largest
    power of two within the row where the row is shorter (every work-item reads an element);
    1 (ReduceWriter's kernel) on a target of vectors, for rows shorter than _GROUP_MIN, and
    where:
    - the last axis is kept (a reduction over a middle axis): neighbouring rows, one per
      work-item, are then the neighbouring addresses already;
    - a float product: its partials would meet as 0 * inf where PyTorch's lanes give inf
      (ReduceWriter multiplies its lanes' mantissas and exponents apart), and a 16-bit one
      rounds each step in the row's order;
    - padding breaks the row (row_breaks.py): its loops are split at the breaks, which a
      strided walk crosses at every step."""
    length = row_length(spec)
    if target.row_group == 1 or target.width != 1 or length < _GROUP_MIN:
        return 1
    if not _reads_along_last_axis(spec) or _has_breaks(spec):
        return 1
    if any(red.op is Op.PROD and red.dtype.is_float for red in spec.reductions):
        return 1
    return min(target.row_group, 1 << (length.bit_length() - 1))


def _reads_along_last_axis(spec: KernelSpec) -> bool:
    """Whether the row's last axis is the iteration's last axis longer than 1."""
    last = next((a for a in reversed(range(len(spec.shape))) if spec.shape[a] > 1), None)
    return last in spec.axes


def _has_breaks(spec: KernelSpec) -> bool:
    outer = [n for a, n in enumerate(spec.shape) if a not in spec.axes]
    dims = tuple(sym.var(f"row{a}", 0, n - 1) if n > 1 else sym.num(0)
                 for a, n in enumerate(outer))
    at, length = row_reader(spec, dims), row_length(spec)
    return any(pad_breaks(red.src[0], spec, at, length) for red in spec.reductions)


class GroupReduceWriter(ReduceWriter):
    # Intel's CPU compiler, given restrict, read a row's elements in the loop after a barrier
    # as values loaded before it, of other work-items: the count of a row's elements equal to
    # its max was 0 (amin's gradient NaN in 2 rows of 3)
    restricts = False

    def __init__(self, spec: KernelSpec, target: Target, group: int):
        super().__init__(spec, target, 1)
        self.group = group
        self.local_size = (group,)
        self.item = sym.var(_ITEM, 0, group - 1)
        self.filled: set[str] = set()       # the __local arrays a total was read from

    def write(self) -> tuple[int, ...]:
        (rows,) = super().write()
        return (rows * self.group,)

    def _start_row(self) -> None:
        self.emit(f"{self.index_type} row = get_group_id(0);")
        self.emit(f"int {_ITEM} = get_local_id(0);")
        ctypes = dict.fromkeys(self.r.ctype(red.dtype, False) for red in self.spec.reductions)
        for ctype in ctypes:
            self.emit(f"__local {ctype} {_shared(ctype)}[{self.group}];")

    def _kept_source(self, element_outputs):
        """None: a GPU's row kernel is bound by memory, where computing the source again (an
        exp) costs less than storing it and reading it back."""
        return None

    def _store_row_outputs(self, nodes, row, row_index) -> None:
        with self.block(f"if ({_ITEM} == 0)"):
            super()._store_row_outputs(nodes, row, row_index)

    def _span(self, width: int) -> int:
        return width * self.group

    def _vectors(self, start: int, width: int, body):
        """body as a function of a step i: body(r) for this work-item's element of the step,
        r = start + i*G + item."""
        def run(i: sym.Lin) -> None:
            body(sym.num(start) + i * self.group + self.item)
        return run

    def _tail(self, start: int, stop: int, body, rolled: bool) -> None:
        """The elements past the whole steps, fewer than G: one for each of the first
        work-items."""
        if stop > start:
            with self.block(f"if ({_ITEM} < {stop - start})"):
                body(sym.num(start) + sym.var(_ITEM, 0, stop - start - 1))

    def _across_items(self, acc: str, op: Op, dtype) -> None:
        """acc becomes the group's total: the work-items' partials halve in __local memory, the
        first half combining the second's into its own, with a barrier after each step."""
        ctype = self.r.ctype(dtype, False)
        shared = _shared(ctype)
        if shared in self.filled:       # work-items may be reading an earlier total from it
            self.emit(_BARRIER)
        self.filled.add(shared)
        self.emit(f"{shared}[{_ITEM}] = {acc};")
        self.emit(_BARRIER)
        with self.block(f"for (int apart = {self.group // 2}; apart > 0; apart >>= 1)"):
            with self.block(f"if ({_ITEM} < apart)"):
                other = self.tmp(f"{shared}[{_ITEM} + apart]", dtype, False)
                self.emit(f"{acc} = {self.r.reduce_step(op, acc, other)};")
                self.emit(f"{shared}[{_ITEM}] = {acc};")
            self.emit(_BARRIER)
        self.emit(f"{acc} = {shared}[0];")


def _shared(ctype: str) -> str:
    """The __local array of a group's partials of C type ctype."""
    return f"partials_{ctype}"
