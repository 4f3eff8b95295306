"""The elementwise epilogue of the CPU matmul kernel: its sums finished by the kernel's outputs
and stored, a register tile's rows at a time, with the math library's functions (GELU's erfc)
each called in a loop of its own."""
from __future__ import annotations

import functools
from contextlib import contextmanager
from typing import TYPE_CHECKING

from . import symbolic as sym
from .addressing import Index
from .ir import Node
from .kernel_writer import KernelWriter, kernel_graph
from .ops import ELEMENTWISE, MOVEMENT, Op
from .render import Value

if TYPE_CHECKING:
    from .lower_matmul import MatmulTile

# Functions the math library computes (Intel's SVML, PoCL's builtins), called out of line.
# Called among the epilogue's loads, adds and stores, the GPT MLP's erfc cost about twice what
# it costs alone; called in a loop of nothing else, what it costs alone. Each epilogue on
# 1024x128 @ (512x128)^T + bias, Intel's runtime, two cores (paired medians, new / old):
# GELU 2.35-2.42 ms -> 1.79-1.95 (0.77-0.79x), GELU's tanh form 0.68x, tanh 0.71-0.74x, exp
# 0.94x, sigmoid and SiLU 0.94-1.0x; PoCL: GELU 0.93-0.95x, tanh 0.83-0.87x, exp 0.97-1.01x.
_LIBRARY_CALLS = frozenset({
    Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.ERF, Op.ERFC, Op.TAN, Op.ASIN, Op.ACOS,
    Op.ATAN, Op.SINH, Op.COSH, Op.ASINH, Op.ACOSH, Op.ATANH, Op.LGAMMA})


class MatmulEpilogueWriter(KernelWriter):
    transposed: bool    # the kernel computes C^T = B^T A^T (MatmulWriter)

    def _matmul_epilogue(self, mm: Node, tile: MatmulTile, rows: int, batch_dims,
                         row0: sym.Lin, column) -> None:
        """The sums of rows rows from row0 finished by the kernel's outputs; where the
        epilogue calls the math library and they are more than a register tile's, a tile's
        rows at a time (the calls' arguments are kept for that many rows only)."""
        if not self._library_calls or rows == tile.rows:
            self._finish_rows(mm, tile, rows, batch_dims, row0, column, "")
            return
        chunks = rows // tile.rows
        rc = sym.var("rc", 0, chunks - 1)
        with self.block(f"for ({self.index_type} rc = 0; rc < {chunks}; rc++)", rolled=True):
            self._finish_rows(mm, tile, tile.rows, batch_dims, row0 + rc * tile.rows, column,
                              f"rc*{tile.rows * tile.vectors}+")

    def _finish_rows(self, mm: Node, tile: MatmulTile, rows: int, batch_dims, row0: sym.Lin,
                     column, first: str) -> None:
        """rows rows of sums (from sums[first...]) finished and stored: the epilogue's math
        library calls first, each over all of them, then the outputs, reading their results."""
        r = sym.var("r", 0, rows - 1)
        called: dict[Node, str] = {}

        def fuse(slot: str, part: str) -> None:
            """The sums and the calls made so far at slot (part: a lane, or "" for a vector)."""
            sums = Value(f"sums[{first}{slot}]{part}", mm.dtype, not part)
            self.fused[mm] = self.finished(sums)
            for node, array in called.items():
                self.fused[node] = Value(f"{array}[{slot}]{part}", node.dtype, not part)

        def dims(c: sym.Lin, lane: sym.Lin) -> tuple[sym.Lin, ...]:
            at = (row0 + r, column(c, lane))
            return batch_dims + (at[::-1] if self.transposed else at)

        for node in self._library_calls:
            called[node] = self._call_over_rows(node, f"called{len(called)}", tile, rows,
                                                fuse, dims)

        def store(c: sym.Lin, lane: sym.Lin, slot: str, part: str) -> None:
            fuse(slot, part)
            self._store_outputs(dims(c, lane))
        self._each_sum(tile, rows, store)
        for node in called:
            del self.fused[node]

    def _call_over_rows(self, node: Node, array: str, tile: MatmulTile, rows: int, fuse,
                        dims) -> str:
        """node's argument at each of rows rows' sums into a private array, then node's
        function over the array in a loop of its own; the array's name."""
        count = rows * tile.vectors
        # (a ragged last vector's unused lanes zero, not garbage, going into the call)
        zeros = " = {0}" if tile.tail else ""
        self.emit(f"{self.r.ctype(node.dtype, True)} {array}[{count}]{zeros};")

        def argument(c: sym.Lin, lane: sym.Lin, slot: str, part: str) -> None:
            fuse(slot, part)
            value = self.value(node.src[0], self._element(node, dims(c, lane)))
            self.emit(f"{array}[{slot}]{part} = {value.code if part else self.r.splat(value)};")
        self._each_sum(tile, rows, argument)
        self._saw(node.op)      # (fused where the outputs read it: named here)
        with self.block(f"for ({self.index_type} i = 0; i < {count}; i++)", rolled=True):
            result = self.r.unary(node.op, Value(f"{array}[i]", node.dtype, True), node.dtype)
            self.emit(f"{array}[i] = {result};")
        return array

    def _each_sum(self, tile: MatmulTile, rows: int, visit) -> None:
        """visit(c, lane, slot, part) for each of rows rows' sums, slot indexing the row's
        vector c in `sums`: whole vectors (part ""), then the lanes of a ragged last vector
        one by one (part ".sK")."""
        with self.block(f"for ({self.index_type} r = 0; r < {rows}; r++)", rolled=True):
            if tile.whole:
                with self._each_vector(tile.whole) as c, self.lanes_on() as lane:
                    visit(c, lane, f"r*{tile.vectors}+{c.render()}", "")
            last = tile.vectors - 1
            for k in range(tile.tail):
                visit(sym.num(last), sym.num(k), f"r*{tile.vectors}+{last}", f".s{k:x}")

    @functools.cached_property
    def _library_calls(self) -> list[Node]:
        """The epilogue's math library calls (_LIBRARY_CALLS), sources first: those the
        outputs read at their own element, the product's (through elementwise ops and
        reshapes), and nothing reads elsewhere (through another view), so that their arrays
        hold every value the kernel needs."""
        def same_element(n: Node) -> bool:
            return n.op in ELEMENTWISE or n.op is Op.RESHAPE
        own, viewed = set(), set()
        for root, _ in self.spec.outputs:
            own.update(kernel_graph(root, self.spec, same_element))
        for node in self.spec.nodes():
            if node.op in MOVEMENT and node.op is not Op.RESHAPE:
                viewed.update(kernel_graph(node.src[0], self.spec, lambda n: True))
        return [n for n in self.spec.nodes()
                if n.op in _LIBRARY_CALLS and n in own and n not in viewed]

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
        for node, _ in self.spec.outputs:
            index = self._element(node, dims)
            self.store(node, index.as_flat(), self.value(node, index))

    def _element(self, node: Node, dims: tuple[sym.Lin, ...]) -> Index:
        """node's index of the product's element at dims (the same flat index, where node
        has another shape)."""
        (mm,) = self.spec.reductions
        at = Index(mm.shape, dims=dims)
        return at if node.shape == mm.shape else Index(node.shape, flat=at.as_flat())
