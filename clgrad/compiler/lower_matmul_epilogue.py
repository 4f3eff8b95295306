"""The elementwise epilogue of the CPU matmul kernel: its sums finished by the kernel's outputs
and stored."""
from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING

from . import symbolic as sym
from .addressing import Index
from .ir import Node
from .kernel_writer import KernelWriter
from .render import Value

if TYPE_CHECKING:
    from .lower_matmul import MatmulTile


class MatmulEpilogueWriter(KernelWriter):
    transposed: bool    # the kernel computes C^T = B^T A^T (MatmulWriter)

    def _matmul_epilogue(self, mm: Node, tile: MatmulTile, rows: int, batch_dims,
                         row0: sym.Lin, column) -> None:
        """The sums of rows rows from row0 finished by the kernel's outputs: whole vectors,
        then the columns of a ragged last vector one by one."""
        r = sym.var("r", 0, rows - 1)

        def store(c: sym.Lin, lane: sym.Lin, sums: Value) -> None:
            self.fused[mm] = self.finished(sums)
            at = (row0 + r, column(c, lane))
            self._store_outputs(batch_dims + (at[::-1] if self.transposed else at))
        with self.block(f"for ({self.index_type} r = 0; r < {rows}; r++)", rolled=True):
            if tile.whole:
                with self._each_vector(tile.whole) as c, self.lanes_on() as lane:
                    store(c, lane, Value(f"sums[r*{tile.vectors}+{c.render()}]", mm.dtype, True))
            last = tile.vectors - 1
            for k in range(tile.tail):
                lane_sum = f"sums[r*{tile.vectors}+{last}].s{k:x}"
                store(sym.num(last), sym.num(k), Value(lane_sum, mm.dtype, False))

    @contextmanager
    def _each_vector(self, count: int):
        """The tile's first `count` column vectors as a C loop, not unrolled: outside the
        register tile, unrolled copies only cost build time. A transposed product stores (and
        copies into its panel) lane by lane, so each vector is 8 scalar accesses; rolled, the
        W1 step's 64x100 product builds its work-group code in ~175 ms, not ~295."""
        if count == 1:
            yield sym.num(0)
            return
        with self.block(f"for ({self.index_type} c = 0; c < {count}; c++)", rolled=True):
            yield sym.var("c", 0, count - 1)

    def _store_outputs(self, dims: tuple[sym.Lin, ...]) -> None:
        """A matmul kernel's outputs (the product, finished by its epilogue, and an
        elementwise consumer's result of as many elements, at the same flat index) stored at
        dims of the product, the products in `fused`."""
        (mm,) = self.spec.reductions
        at = Index(mm.shape, dims=dims)
        for node, _ in self.spec.outputs:
            index = at if node.shape == mm.shape else Index(node.shape, flat=at.as_flat())
            self.store(node, index.as_flat(), self.value(node, index))
