"""Scatter kernels: one work-item per source element, which combines its value into the
element of the result its index names. The scheduler has filled the result with the mode's
identity first (ir.scatter_identity), so the kernel costs one pass over the source, however
many rows the result has.

Values landing on one element combine through atomics: integer add, max and min with the
native ones, everything else with a compare-and-swap loop on the value's bit pattern (OpenCL
1.2 has 32-bit integer atomics on global memory; 64-bit values use cl_khr_int64_base_atomics
and _extended_atomics, which both CPU runtimes have). Float results therefore depend on the
order the work-items ran in, as PyTorch's CUDA index_add does: tests compare with a tolerance.
"replace" is a plain store: one of the values written wins, as in PyTorch's scatter.
"""
from __future__ import annotations

from . import symbolic as sym
from .addressing import Index
from .dtype import DType
from .kernel import KernelSpec
from .kernel_writer import KernelWriter
from .ops import Op
from .render import Value
from .target import Target

_COMBINE = {"add": Op.ADD, "add_to": Op.ADD, "prod": Op.MUL, "amax": Op.MAX, "amin": Op.MIN}
_NATIVE = {"add": "add", "add_to": "add", "amax": "max", "amin": "min"}  # OpenCL int atomics
_MIN_ITEMS = 1024     # indices enough to give a work-item a whole row each
_EXTENSIONS = ("#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n"
               "#pragma OPENCL EXTENSION cl_khr_int64_extended_atomics : enable\n")


class ScatterWriter(KernelWriter):
    def __init__(self, spec: KernelSpec, target: Target):
        super().__init__(spec, target, 1)
        self.helper = ""        # the compare-and-swap function the kernel calls, if any

    def write(self) -> tuple[int, ...]:
        ((root, _),) = self.spec.outputs
        index, src = root.src
        rows, row_len = root.shape
        self.ops_seen.append(root.arg)      # the mode first in the kernel's name
        self.emit(f"{self.index_type} gid = get_global_id(0);")
        whole_rows = index.numel >= _MIN_ITEMS and row_len > 1
        dims = self.dim_vars("gid", index.shape if whole_rows else src.shape)
        row = self.value(index, Index(index.shape, dims=dims[:len(index.shape)]))
        out = self.param(root, output=True)
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
        if not dtype.is_float and mode in _NATIVE:
            prefix = "atomic_" if dtype.itemsize == 4 else "atom_"
            return f"{prefix}{_NATIVE[mode]}({out}+{at}, {v.code});"
        name, self.helper = _compare_and_swap(dtype, mode, self.r)
        return f"{name}({out}+{at}, {v.code});"

    def source(self, name: str) -> str:
        # (one lane: the kernel itself starts with no vector typedefs)
        return _EXTENSIONS + self.helper + super().source(name)


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
