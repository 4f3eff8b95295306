"""Scatter kernels, which combine each source value into the element of the result its index
names. The scheduler has filled the result with the mode's identity first
(ir.scatter_identity), so a kernel costs one pass over the source, however many rows the
result has. Two kinds:

- ordered, for floats (every mode but "replace"; 16-bit ones arrive in float32 unless their
  steps round to the type, ir.scatter): the values landing on one element combine in the
  order of their positions in the index, as
  PyTorch's CPU kernels combine them (index_add_, scatter_add_, scatter_reduce_, index_put_
  with accumulate in its deterministic mode, the gradients of indexing and embedding). A
  result is then the same at every run, and PyTorch's bit for bit where both start from the
  identity (a gradient, a sum into zeros; a sum onto a tensor is added to it afterwards,
  frontend/scatter.py). A work-item takes one column of the rows, and one position along each
  index axis whose positions never share an element (scatter_order.py: the axes after the
  scattered dim, as the frontend lays them out), and walks the rest of the index in order.
  Where nothing tells positions apart (a 1-d scatter into a few bins, a scatter along the
  last dim), one work-item a column walks every index, as PyTorch's CPU does.
- atomic, for integers, whose sums, products, max and min are exact in any order, and for
  "replace": one work-item per source element (or per index row, given enough indices),
  combining through atomics: integer add, max and min with the native ones, a product with a
  compare-and-swap loop on the value's bit pattern (OpenCL 1.2 has 32-bit integer atomics on
  global memory; 64-bit values use cl_khr_int64_base_atomics and _extended_atomics, which both
  CPU runtimes have). "replace" is a plain store: one of the values written wins, as in
  PyTorch's scatter.
"""
from __future__ import annotations

import math
from contextlib import ExitStack

from . import symbolic as sym
from .addressing import Index
from .dtype import DType
from .ir import Node
from .kernel import KernelSpec
from .kernel_writer import KernelWriter
from .ops import Op
from .render import Value
from .scatter_order import Walk, walk
from .target import Target

_COMBINE = {"add": Op.ADD, "add_to": Op.ADD, "prod": Op.MUL, "amax": Op.MAX, "amin": Op.MIN}
_NATIVE = {"add": "add", "add_to": "add", "amax": "max", "amin": "min"}  # OpenCL int atomics
_MIN_ITEMS = 1024     # indices enough to give a work-item a whole row each
_CACHE_LINE = 64      # bytes
_EXTENSIONS = ("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
               "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable\n")


def ordered(root: Node) -> bool:
    """Whether scatter root combines its values in index order (else through atomics)."""
    return root.dtype.is_float and root.arg != "replace"


class ScatterWriter(KernelWriter):
    def __init__(self, spec: KernelSpec, target: Target):
        super().__init__(spec, target, 1)
        self.atomics = False    # whether the kernel combines through atomics
        self.helper = ""        # the compare-and-swap function the kernel calls, if any

    def write(self) -> tuple[int, ...]:
        ((root, _),) = self.spec.outputs
        self.ops_seen.append(root.arg)      # the mode first in the kernel's name
        return self._write_ordered(root) if ordered(root) else self._write_atomic(root)

    # ---- ordered ----
    def _write_ordered(self, root: Node) -> tuple[int, ...]:
        index, src = root.src
        rows, row_len = root.shape
        order = walk(index, lambda node: node in self.spec.inputs)
        extents = [order.shape[a] for a in order.parallel] + [row_len]
        # the innermost of the work-items' axes that has positions: the columns, or else the
        # last parallel axis; a work-item takes `run` positions side by side along it
        inner = max((k for k, n in enumerate(extents) if n > 1), default=len(extents) - 1)
        run = self._run(extents[inner], root.dtype)
        items = extents.copy()
        items[inner] = -(-extents[inner] // run)
        self.emit(f"{self.index_type} gid = get_global_id(0);")
        item_dims = list(self.dim_vars("gid", tuple(items)))
        with ExitStack() as blocks:
            dims = self._walk_in_order(blocks, order)
            if run > 1:
                item_dims[inner] = self._take_run(blocks, item_dims[inner], run, extents[inner])
            *parallel, column = item_dims
            dims.update(zip(order.parallel, parallel))
            positions = [dims[a] for a in range(len(order.shape))]
            if order.shape == index.shape:
                at = Index(index.shape, dims=tuple(positions))
                at_src = Index(src.shape, dims=(*positions, column))
            else:
                flat = sym.linearize(positions, order.shape)
                at = Index(index.shape, flat=flat)
                at_src = Index(src.shape, flat=flat * row_len + column)
            row = self.value(index, at)
            # indices were checked when recorded; the test keeps a wrong one from writing
            # elsewhere
            with self.block(f"if ({row.code} >= 0 && {row.code} < {rows})"):
                self._combine_in_place(root, row, column, self.value(src, at_src))
        return (math.prod(items),)

    def _walk_in_order(self, blocks: ExitStack, order: Walk) -> dict[int, sym.Lin]:
        """Opens a loop over each sequential axis, outermost first; their positions."""
        dims = {}
        for axis in order.sequential:
            n, name = order.shape[axis], f"s{axis}"
            dims[axis] = sym.var(name, 0, n - 1)
            if n > 1:
                header = f"for ({self.index_type} {name} = 0; {name} < {n}; {name}++)"
                blocks.enter_context(self.block(header, rolled=True))
        return dims

    def _take_run(self, blocks: ExitStack, item: sym.Lin, run: int, extent: int) -> sym.Lin:
        """Opens the loop over a work-item's run of positions; the position it is at."""
        header = f"for ({self.index_type} r = 0; r < {run}; r++)"
        blocks.enter_context(self.block(header, rolled=True))
        position = item * run + sym.var("r", 0, run - 1)
        if extent % run:        # the last work-item's run is shorter
            blocks.enter_context(self.block(f"if ({self.index_code(position)} < {extent})"))
        return position

    def _run(self, extent: int, dtype: DType) -> int:
        """How many positions side by side a work-item takes: on a CPU (a target of vectors),
        a cache line of them, which it then reads whole; on a GPU one, its neighbours reading
        the rest of the line at the same time."""
        if self.target.width == 1:
            return 1
        return min(extent, _CACHE_LINE // dtype.itemsize)

    def _combine_in_place(self, root: Node, row: Value, column: sym.Lin, v: Value) -> None:
        out = self.param(root, output=True)
        at = f"({self.index_type})({row.code})*{root.shape[1]}+{self.index_code(column)}"
        held = self.tmp(self.r.load(out, at, root.dtype), root.dtype, False)
        combined = Value(self.r.binary(_COMBINE[root.arg], held, v), root.dtype, False)
        self.emit(self.r.store(out, at, combined))

    # ---- atomic ----
    def _write_atomic(self, root: Node) -> tuple[int, ...]:
        index, src = root.src
        rows, row_len = root.shape
        self.emit(f"{self.index_type} gid = get_global_id(0);")
        whole_rows = index.numel >= _MIN_ITEMS and row_len > 1
        dims = self.dim_vars("gid", index.shape if whole_rows else src.shape)
        row = self.value(index, Index(index.shape, dims=dims[:len(index.shape)]))
        # indices were checked when recorded; the test keeps a wrong one from writing elsewhere
        with self.block(f"if ({row.code} >= 0 && {row.code} < {rows})"):
            if not whole_rows:
                self._combine_at(root, row, dims)
                return (src.numel,)
            # enough indices to fill the device: each work-item does a whole row, and
            # computes its index once
            with self.block(f"for ({self.index_type} c = 0; c < {row_len}; c++)", rolled=True):
                self._combine_at(root, row, dims + (sym.var("c", 0, row_len - 1),))
        return (index.numel,)

    def _combine_at(self, root, row: Value, dims: tuple) -> None:
        """Combines src at dims into the output's row `row`, at dims' last (the column)."""
        out, src = self.param(root, output=True), root.src[1]
        value = self.value(src, Index(src.shape, dims=tuple(dims)))
        at = f"({self.index_type})({row.code})*{root.shape[1]}+{self.index_code(dims[-1])}"
        self.emit(self._combine(root.arg, out, at, value))

    def _combine(self, mode: str, out: str, at: str, v: Value) -> str:
        dtype = v.dtype
        if mode == "replace":
            return self.r.store(out, at, v)
        self.atomics = True
        if not dtype.is_float and mode in _NATIVE:
            prefix = "atomic_" if dtype.itemsize == 4 else "atom_"
            return f"{prefix}{_NATIVE[mode]}({out}+{at}, {v.code});"
        name, self.helper = _compare_and_swap(dtype, mode, self.r)
        return f"{name}({out}+{at}, {v.code});"

    def source(self, name: str) -> str:
        # (one lane: the kernel itself starts with no vector typedefs)
        return (_EXTENSIONS if self.atomics else "") + self.helper + super().source(name)


def _compare_and_swap(dtype: DType, mode: str, renderer) -> tuple[str, str]:
    """The name and definition of a function combining a value into *p by mode, retried until
    no other work-item changed *p in between. Bit patterns are compared, so a NaN held in *p
    does not loop forever. Guarded: a program holds many kernels, the function is defined once."""
    name = f"clgrad_{mode}_{dtype.short}"
    bits = "uint" if dtype.itemsize == 4 else "ulong"
    cas = "atomic_cmpxchg" if dtype.itemsize == 4 else "atom_cmpxchg"
    ctype = dtype.ctype
    combined = renderer.binary(_COMBINE[mode], Value(f"as_{ctype}(expected)", dtype, False),
                               Value("v", dtype, False))
    guard = "CLGRAD_" + name.upper()
    text = f"""#ifndef {guard}
#define {guard}
void {name}(volatile __global {dtype.storage}* p, {ctype} v) {{
  {bits} seen = as_{bits}(*p), expected;
  do {{
    expected = seen;
    seen = {cas}((volatile __global {bits}*)p, expected, as_{bits}(({ctype})({combined})));
  }} while (seen != expected);
}}
#endif
"""
    return name, text
