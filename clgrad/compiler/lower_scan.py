"""Scan kernels (cumsum, cumprod, cummax, cummin, logcumsumexp): one work-item per row, a
loop along the scanned axis carrying the running value, storing it at every step: O(n) per
row. The scanned node's source is computed inside the loop, at each element's index."""
from __future__ import annotations

import math

from . import dtype as dt
from . import symbolic as sym
from .addressing import Index
from .kernel_writer import KernelWriter
from .ops import Op
from .render import Value


class ScanWriter(KernelWriter):
    def write(self) -> tuple[int, ...]:
        ((node, _),) = self.spec.outputs
        axis, combine = node.arg
        shape, dtype = node.shape, node.dtype
        n = shape[axis]
        outer = shape[:axis] + shape[axis + 1:]
        # rows along the last axis (past it only 1s): each a stretch of memory of its own
        self.items_apart = math.prod(shape[axis + 1:]) == 1 and n > 1
        self.emit(f"{self.index_type} row = get_global_id(0);")
        outer_dims = list(self.dim_vars("row", outer))
        self._saw(Op.SCAN)
        self.ops_seen.append(combine)
        ctype = dtype.ctype
        wide = self._accumulator(combine, dtype)
        acc = Value("acc", wide, False)
        # without doubles, a float32 sum or product carries its rounding error instead
        compensated = combine in ("add", "mul") and dtype == dt.float32 and wide is dtype
        # a sum starts at +0.0, as PyTorch's (so a leading -0.0 becomes +0.0)
        start = {"add": "0", "mul": "1", "logaddexp": "-INFINITY"}
        self.emit(f"{wide.ctype} acc = {start.get(combine, '0')};")
        if compensated:
            self.emit(f"{ctype} lost = 0;")
        position = sym.var("i", 0, n - 1)
        with self.block(f"for ({self.index_type} i = 0; i < {n}; i++)", rolled=True):
            index = Index(shape, dims=tuple(outer_dims[:axis] + [position] + outer_dims[axis:]))
            v = self.value(node.src[0], index)
            if compensated and combine == "add":
                self._compensated_add(v)
            elif compensated:
                self._compensated_product(v)
            else:
                v = Value(self.r.cast(v, wide), wide, v.vec)
                self.emit(f"acc = {self._combined(combine, acc, v)};")
            self.store(node, index.as_flat(), self.finished(Value("acc", dtype, False)))
        return (math.prod(outer),)

    def _accumulator(self, combine: str, dtype: dt.DType) -> dt.DType:
        """The type of the running value, as PyTorch's CPU scans' (at::acc_type): float for a
        16-bit float, rounded where stored; double for a float32 sum, product or
        logcumsumexp, whose range keeps a running product that float32 takes to 0 or inf
        (1e-30 * 1e-30 * -inf is -inf there, NaN in float32: edge seed 100100456)."""
        if dtype.is_16_bit_float:
            return dt.float32
        if dtype == dt.float32 and combine in ("add", "mul", "logaddexp") and self.target.fp64:
            return dt.float64
        return dtype

    def _compensated_add(self, v: Value) -> None:
        """Kahan's running sum: `lost` holds what rounding dropped from the last addition and
        is added back with the next, so a prefix of 100,000 floats is as accurate as one
        addition. Once the sum is infinite or NaN the correction is meaningless (inf - inf)
        and stays 0."""
        self.emit(f"{v.dtype.ctype} y = {v.code} - lost;")
        self.emit(f"{v.dtype.ctype} t = acc + y;")
        self.emit("lost = isfinite(t) ? (t - acc) - y : 0;")
        self.emit("acc = t;")

    def _compensated_product(self, v: Value) -> None:
        """A running product carrying its rounding error (acc + lost is the product): fma
        gives each multiplication's error exactly, so 100,000 factors lose no more than a few
        roundings, as PyTorch's double accumulator. An infinite or NaN product has no error
        to carry (fma(inf, x, -inf) is NaN)."""
        ctype = v.dtype.ctype
        self.emit(f"{ctype} p = acc * {v.code};")
        self.emit(f"{ctype} e = isfinite(p) ? fma(acc, {v.code}, -p) + lost * {v.code} : 0;")
        # an exact product (e == 0) is p, whose sign of zero p + e could lose (-0.0 + 0.0)
        self.emit(f"{ctype} s = e == 0 ? p : p + e;")
        self.emit("lost = isfinite(s) ? e - (s - p) : 0;")
        self.emit("acc = s;")

    def _combined(self, combine: str, acc: Value, v: Value) -> str:
        r = self.r
        if combine == "add":
            return r.binary(Op.ADD, acc, v)
        if combine == "mul":
            return r.binary(Op.MUL, acc, v)
        if combine == "logaddexp":
            # log(e^a + e^b) = hi + log1p(e^(lo - hi)); an infinite hi is the answer itself
            # (inf - inf would be NaN), and a NaN on either side makes hi NaN
            hi = self.tmp(r.binary(Op.MAX, acc, v), v.dtype, False).code
            lo = f"fmin({acc.code},{v.code})"
            return f"(isinf({hi}) ? {hi} : {hi} + log1p(exp({lo} - {hi})))"
        # max / min: the first element starts the row (no identity needed for any dtype)
        op = Op.MAX if combine == "max" else Op.MIN
        if not v.dtype.is_float:
            return f"(i == 0 ? {v.code} : {r.binary(op, acc, v)})"
        # PyTorch's: an element equal to the running value replaces it (-0.0 after +0.0), and a
        # NaN replaces it and stays
        order = ">=" if combine == "max" else "<="
        takes = f"i == 0 || {v.code} {order} {acc.code} || isnan({v.code})"
        return f"(({takes}) ? {v.code} : {acc.code})"
