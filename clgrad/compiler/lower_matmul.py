"""Matmul kernels (a batched matmul and its elementwise epilogue): a register-tiled, panel-
copying kernel for CPUs (_matmul_blocked) and a simple one for GPUs (_matmul_simple)."""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import symbolic as sym
from .addressing import Index, source_index
from .ir import Node, reads_absent
from .kernel import KernelSpec
from .lower_matmul_epilogue import MatmulEpilogueWriter
from .ops import MOVEMENT, Op
from .render import Value
from .target import Target


@dataclass(frozen=True)
class MatmulTile:
    """The blocking of the CPU matmul kernel (see MatmulWriter._matmul_blocked)."""
    rows: int          # R: rows of the register tile
    vectors: int       # vectors of `width` columns in the register tile
    columns: int       # columns per work-item: vectors * width
    block_rows: int    # rows per work-item, a multiple of R
    tail: int = 0      # columns in the last vector when it is partly filled (ragged_vectors)

    @property
    def whole(self) -> int:
        """Vectors whose every lane is a column."""
        return self.vectors - (1 if self.tail else 0)

    @staticmethod
    def choose(m: int, n: int, width: int, accumulators: int, cores: int,
               batch: int = 1) -> "MatmulTile":
        """As many columns as tile n (up to 4 vectors: 2 x 32 beat 4 x 16 by ~10-25% in CPU
        time at 1024 and 2048), or all of a ragged n, then the register tile's rows (up to
        the accumulator budget: 8-10 for 16 AVX2 registers, 16 for 32 AVX-512 ones) and the
        panel's rows (up to _BLOCK_ROWS) that finish soonest on `cores` cores running `batch`
        products (or split-k parts) side by side: the busiest core's rows, each row costing
        more in smaller register tiles, plus a panel copy per work-item worth ~16 rows
        (64x1000x100 on two cores: two panels of 50 rows in 2-row tiles, 0.11 ms; five of 20
        in 4-row tiles, 0.20 ms; twenty-five of 4, 0.56 ms; LeNet's conv2 weight gradient,
        16 rows in 16 split-k parts: one panel of 16 rows each, 0.12 ms, not two of 8,
        0.18 ms)."""
        vectors = ragged_vectors(n, width) or next(
            v for v in (4, 5, 3, 2, 1) if n % (v * width) == 0 and v <= accumulators)
        panels_across = -(-n // (vectors * width))

        def finish(choice: tuple[int, int]) -> tuple:
            rows, block = choice
            rounds = -(-panels_across * (m // block) * batch // cores)
            return (rounds * (block * _ROW_COST[rows] + _PANEL_ROWS), -rows, -block)
        # (one row always: a ragged row of more vectors than registers spills, but runs)
        choices = [(r, r * c) for r in (4, 2, 1)
                   if (r * vectors <= accumulators or r == 1) and m % r == 0
                   for c in range(1, _BLOCK_ROWS + 1) if r * c <= _BLOCK_ROWS
                   and m % (r * c) == 0]
        rows, block = min(choices, key=finish)
        return MatmulTile(rows, vectors, vectors * width, block, n % width)


def ragged_vectors(n: int, width: int) -> int | None:
    """For n columns that 8-lane vectors do not tile, when few enough vectors of `width`
    take them all in one register tile, the last one partly filled: their number; else None.
    Such narrow products (conv channels 6 and 16, the seed MLP's 100) then keep the lanes
    along N, with a broadcast of A per row, instead of running transposed (C^T = B^T A^T),
    whose panel copies and stores go lane by lane. Where 8 lanes tile n (40 on 16 lanes),
    whole vectors of 8 are kept."""
    vectors = -(-n // width)
    ragged = width > 1 and n % width and n % 8 and vectors <= _MAX_RAGGED_VECTORS
    return vectors if ragged else None


# A row's cost in register tiles of 1, 2 and 4 rows (loads per multiply-add fall as tiles
# grow), and a work-item's panel copy in rows: the matmul tile choice's cost model.
_ROW_COST = {4: 1.0, 2: 1.15, 1: 1.5}
_PANEL_ROWS = 16
# Each work-item copies its B panel once, for all its rows: 128 rows, not 64, copy B half as
# often (2048^3 on Intel: 145 ms, not 160; the sums, 32 KiB of private array, stay in L2).
_BLOCK_ROWS = 128
# B's panel is read again for every group of rows: kept to two thirds of a 48 KiB L1 data
# cache, next to A's rows and the sums (W1's 64x1000 @ 1000x100 on Intel, 7 vectors of 16
# columns: blocks of 50 k steps, a 22 KiB panel, 0.115 ms; of 125, 56 KiB, 0.160 ms)
_PANEL_BYTES = 32 * 1024
# ... unless all of k fits in one panel of up to this size, read from L2: then every row of A
# is read once, start to end, and each register tile is finished at once. That wins where A
# streams from memory (Zen 3, kernels alone: 65536x288 @ 288x32 20.7-21.5 ms, not 24.7, on
# Intel's runtime, 19.0, not 24.9, on PoCL) and is even where A stays in cache. Not where A's
# k steps lie a multiple of _ALIASED_STRIDE bytes apart (a weight gradient g^T @ x of 128 or
# more columns): a register tile reads a cache line per k step, all in at most 8 of L1's 64
# sets, which evict each other over all of k (g (1024, 512)^T @ x (1024, 128) in blocks of
# 128: 3.1-3.2 ms, not 4.3-5.7, on Intel's runtime; more in commits ec342c8 and a8596ed).
_ONE_PANEL_BYTES = 128 * 1024
# 8 lines of 64 bytes (Zen 3's and Zen 4's L1: 64 sets of 8 ways; the Xeon's: 64 of 12)
_ALIASED_STRIDE = 512
# A ragged row of up to this many vectors runs as one panel across (N = 100: 7 of 16).
_MAX_RAGGED_VECTORS = 8
# A k block of up to this many steps whose A loads divide k is unrolled whole.
_UNROLLED_K = 64


class MatmulWriter(MatmulEpilogueWriter):
    def __init__(self, spec: KernelSpec, target: Target, width: int, transposed: bool = False):
        super().__init__(spec, target, width)
        self.transposed = transposed    # computed as C^T = B^T A^T (see lower())

    def write(self) -> tuple[int, ...]:
        (mm,) = self.spec.reductions
        n = mm.shape[-1]
        whole = n % self.width == 0 or ragged_vectors(n, self.width)
        blocked = (self.transposed or whole) and mm.src[0].shape[-1] > 0   # k = 0: no blocks
        # the blocked kernel skips absent elements of A alone (B's are copied into panels)
        panel = _swap_last(mm.src[0]) if self.transposed else mm.src[1]
        if self.width > 1 and blocked and mm.dtype.is_float and not reads_absent(panel):
            return self._matmul_blocked(mm)
        return self._matmul_simple(mm)

    def _matmul_simple(self, mm: Node) -> tuple[int, ...]:
        """One work-item per 4 rows x `width` columns, looping over all of k (GPU path)."""
        a, b = mm.src
        *batch, m, n = mm.shape
        k_len = a.shape[-1]
        rows_per_item = next(t for t in (4, 2, 1) if m % t == 0)
        # (a lane a column: B's absent elements are skipped one by one, in scalar code)
        width = self.width if n % self.width == 0 and not reads_absent(b) else 1
        n_batch = math.prod(batch)
        ix = self.index_type
        self.emit(f"{ix} j = get_global_id(0); {ix} mi = get_global_id(1); "
                  f"{ix} b = get_global_id(2);")
        j = sym.var("j", 0, n // width - 1)
        mi = sym.var("mi", 0, m // rows_per_item - 1)
        batch_dims = tuple(sym.delinearize(sym.var("b", 0, n_batch - 1), tuple(batch)))
        ctype = self.r.ctype(mm.dtype, width > 1)
        accs = [f"acc{i}" for i in range(rows_per_item)]
        for acc in accs:
            self.emit(f"{ctype} {acc} = ({ctype})(0);")
        self._saw(Op.MATMUL)
        kv = sym.var("k", 0, k_len - 1)

        def column(lane_expr):
            return j * width + lane_expr if width > 1 else j

        def row_of(i: int) -> sym.Lin:
            return mi * rows_per_item + i

        def body(lane_expr):
            with self.block(f"for ({self.index_type} k = 0; k < {k_len}; k++)"):
                b_at = Index(b.shape, dims=batch_dims + (kv, column(lane_expr)))
                with self.present_block(b, b_at):
                    bv = self.value(b, b_at)
                    bv = Value(self.r.splat(bv), mm.dtype, True) if width > 1 else bv
                    for i, acc in enumerate(accs):
                        a_at = Index(a.shape, dims=batch_dims + (row_of(i), kv))
                        with self.present_block(a, a_at):
                            av = self.value(a, a_at)
                            av_code = self.r.splat(av) if width > 1 else av.code
                            step = (f"fma({av_code},{bv.code},{acc})" if mm.dtype.is_float
                                    else f"{acc} + {av_code}*{bv.code}")
                            self.emit(f"{acc} = {step};")
            for i, acc in enumerate(accs):
                self.fused[mm] = self.finished(Value(acc, mm.dtype, width > 1))
                self._store_outputs(batch_dims + (row_of(i), column(lane_expr)))
        if width > 1:
            with self.lanes_on() as lane:
                body(lane)
        else:
            body(None)
        return (n // width, m // rows_per_item, n_batch)

    def _matmul_blocked(self, mm: Node) -> tuple[int, ...]:
        """CPU matmul. A work-item owns a panel of MB rows x `vectors`*width columns and keeps
        its sums in a private array. k goes in blocks: each block of B's panel is first copied
        into a private, contiguous array (B's rows are far apart, so reading them in place
        thrashes the cache), then every group of R rows runs a register tile of R x `vectors`
        accumulators over it. The elementwise epilogue runs once the sums are complete: at
        the end, or after each register tile when k is one block (lower_matmul_epilogue.py).

        Transposed, it computes C^T = B^T A^T: the same loops over permuted views of the
        operands (index arithmetic, no copies), with the epilogue at the swapped index."""
        a, b = mm.src
        if self.transposed:
            a, b = _swap_last(b), _swap_last(a)
        *batch, m, n = mm.shape[:-2] + (a.shape[-2], b.shape[-1])
        n_batch = math.prod(batch)
        tile = MatmulTile.choose(m, n, self.width, self.target.accumulators, self.target.cores,
                                 n_batch)
        vt = self.r.ctype(mm.dtype, True)
        ix = self.index_type
        self.emit(f"{ix} j = get_global_id(0); {ix} mb = get_global_id(1); "
                  f"{ix} b = get_global_id(2);")
        panels_across = -(-n // tile.columns)
        j = sym.var("j", 0, panels_across - 1)
        mb = sym.var("mb", 0, m // tile.block_rows - 1)
        batch_dims = tuple(sym.delinearize(sym.var("b", 0, n_batch - 1), tuple(batch)))
        self._saw(Op.MATMUL)
        # a panel row: `vectors` vectors of floats (halves are computed as floats)
        length = self._k_block_length(a, b, batch_dims, tile.columns * max(mm.dtype.itemsize, 4))
        row0 = mb * tile.block_rows
        # k in one block: each register tile is finished at once, so only its own sums are
        # kept (the W1 step's 1000x100 weight gradient, k = 64: 55.7 us, not 64.8, with 14
        # vectors of sums instead of 700, 45 KiB that pushed the panel out of the L1 cache)
        one_block = length == a.shape[-1]
        kept = tile.rows if one_block else tile.block_rows
        self.emit(f"{vt} sums[{kept * tile.vectors}]; {vt} panel[{length * tile.vectors}];")
        if not one_block:
            clear = f"for ({self.index_type} i = 0; i < {kept * tile.vectors}; i++)"
            with self.block(clear, rolled=True):
                self.emit(f"sums[i] = ({vt})(0);")

        def column(c: int, lane: sym.Lin) -> sym.Lin:
            return j * tile.columns + c * self.width + lane

        def k_block(k0: sym.Lin, length: int) -> None:
            t = sym.var("t", 0, length - 1)

            def at(c: sym.Lin, lane: sym.Lin) -> Index:
                return Index(b.shape, dims=batch_dims + (k0 + t, column(c, lane)))
            across = self.target.transposes_panels and tile.whole and \
                self._reads_along_k(b, at, t, mm)
            if across:
                self._transpose_into_panel(b, tile, length, mm, lambda k, c, lane: Index(
                    b.shape, dims=batch_dims + (k0 + k, column(c, lane))))
            if not across or tile.tail:
                with self.block(f"for ({self.index_type} t = 0; t < {length}; t++)",
                                rolled=True):
                    self._copy_panel_row(b, tile, at, whole=not across)
            chunks = tile.block_rows // tile.rows
            rc = sym.var("rc", 0, chunks - 1)
            with self.block(f"for ({self.index_type} rc = 0; rc < {chunks}; rc++)", rolled=True):
                self._matmul_tile(a, mm, tile, batch_dims, row0, rc, k0, length, one_block)
                if one_block:
                    self._matmul_epilogue(mm, tile, tile.rows, batch_dims,
                                          row0 + rc * tile.rows, column)

        full, tail = divmod(a.shape[-1], length)
        if full:
            kb = sym.var("kb", 0, full - 1)
            with self.block(f"for ({self.index_type} kb = 0; kb < {full}; kb++)", rolled=True):
                k_block(kb * length, length)
        if tail:
            k_block(sym.num(full * length), tail)
        if not one_block:
            self._matmul_epilogue(mm, tile, tile.block_rows, batch_dims, row0, column)
        global_size = (panels_across, m // tile.block_rows, n_batch)
        # One work-item per group: PoCL's own choice (64 items and more) leaves too few groups
        # to balance the cores, and a group of one needs no work-item loop, which PoCL would
        # generate and try to vectorise at the first launch (the 64x100 products of the W1
        # step build 0.36 s each with groups of 2, 0.24 s with groups of 1; no slower to run).
        self.local_size = (1, 1, 1)
        return global_size

    def _k_block_length(self, a: Node, b: Node, batch_dims, panel_row_bytes: int) -> int:
        """k steps per copied block of B: as many as keep the panel in the L1 cache (up to
        128), or all of k where its panel fits _ONE_PANEL_BYTES (unless A's k steps alias), and
        where k runs over a window or an image (convolutions) a length that keeps each block
        inside one of its rows, so loads inside the block need no division by the row length
        (conv1's weight gradient: blocks of 30, 2.5x faster than 128; the small ResNet's
        step with its convolutions' k in one block, 450-520 ms, not 300). A divisor of k
        also saves a second, tail copy of the loop body (less code to build)."""
        k_len = a.shape[-1]
        longest = min(128, max(8, _PANEL_BYTES // panel_row_bytes))
        if k_len <= longest:
            return k_len
        m, n = a.shape[-2], b.shape[-1]
        row, col = sym.var("row_", 0, m - 1), sym.var("col_", 0, n - 1)

        def cost(length: int) -> tuple:
            full = k_len // length
            t = sym.Var("t", 0, length - 1)
            k = sym.var("kb", 0, full - 1) * length + sym.Lin(((t, 1),), 0)
            divisions = sum(_divisions_by(self._input_flat(node, batch_dims + dims), t)
                            for node, dims in ((a, (row, k)), (b, (k, col))))
            return divisions, k_len % length != 0, -length
        lengths = [longest] + [d for d in range(8, longest) if k_len % d == 0]
        if k_len * panel_row_bytes <= _ONE_PANEL_BYTES and not self._aliased_along_k(
                a, batch_dims, row):
            lengths.append(k_len)
        return min(lengths, key=cost)

    def _aliased_along_k(self, a: Node, batch_dims, row: sym.Lin) -> bool:
        """Whether A's k steps lie a multiple of _ALIASED_STRIDE bytes apart (A read as a
        transpose), each in its own cache line and all in a few sets (see _ONE_PANEL_BYTES)."""
        k = sym.Var("k_", 0, a.shape[-1] - 1)
        flat = self._input_flat(a, batch_dims + (row, sym.Lin(((k, 1),), 0)))
        stride = flat.coef(k) * a.dtype.itemsize
        return stride != 0 and stride % _ALIASED_STRIDE == 0 and not _divisions_by(flat, k)

    def _input_flat(self, node: Node, dims: tuple) -> sym.Lin:
        """The flat index that node read at dims loads from its input buffer (where the
        chain of views ends)."""
        return self._view_source(node, Index(node.shape, dims=dims))[1].as_flat()

    def _view_source(self, node: Node, index: Index) -> tuple[Node, Index]:
        """Where node's chain of views ends (an input, or a node the kernel computes) and the
        index read there for node's index."""
        while node not in self.spec.inputs and node.op in MOVEMENT:
            index, _ = source_index(node, index)
            node = node.src[0]
        return node, index

    def _matmul_tile(self, a: Node, mm: Node, tile: "MatmulTile", batch_dims, row0: sym.Lin,
                     rc: sym.Lin, k0: sym.Lin, length: int, one_block: bool) -> None:
        """R x `vectors` accumulators for rows row0 + rc * R on, run over one k block: loaded
        from `sums` and put back, or, when k is one block, started at zero and left in `sums`
        for the epilogue."""
        vt = self.r.ctype(mm.dtype, True)
        accs = {(r, c): f"acc{r}_{c}" for r in range(tile.rows) for c in range(tile.vectors)}
        first = "" if one_block else f"rc*{tile.rows}*{tile.vectors}+"
        for (r, c), acc in accs.items():
            start = f"({vt})(0)" if one_block else f"sums[{first}{r * tile.vectors + c}]"
            self.emit(f"{vt} {acc} = {start};")
        t = sym.var("t", 0, length - 1)
        unroll = self._tile_unroll(a, batch_dims, row0, k0, length)
        with self.block(f"for ({self.index_type} t = 0; t < {length}; t++)", unroll=unroll):
            for c in range(tile.vectors):
                self.emit(f"{vt} b{c} = panel[t*{tile.vectors}+{c}];")
            for r in range(tile.rows):
                row = row0 + rc * tile.rows + r
                at = Index(a.shape, dims=batch_dims + (row, k0 + t))
                with self.present_block(a, at):
                    av = self.value(a, at)
                    splat = self.tmp(self.r.splat(av), mm.dtype, True)
                    for c in range(tile.vectors):
                        # a multiply-add (contracted to fma): PoCL calls fma() out of line
                        self.emit(f"{accs[r, c]} = {accs[r, c]} + {splat.code}*b{c};")
        for (r, c), acc in accs.items():
            self.emit(f"sums[{first}{r * tile.vectors + c}] = {acc};")

    def _tile_unroll(self, a: Node, batch_dims, row0: sym.Lin, k0: sym.Lin, length: int) -> int:
        """Copies of the register tile's body per k step loop iteration: all of a short block
        whose A loads divide k (an im2col view: conv forward, k = (channel, kernel row,
        kernel column)), so that the divisions fold into constant offsets (LeNet's conv2,
        10816x16 by k = 54: 0.32 ms rolled, 0.19 ms unrolled on Intel's runtime), else the
        target's count where it divides the block."""
        t = sym.Var("t", 0, length - 1)
        k = k0 + sym.Lin(((t, 1),), 0)
        if length <= _UNROLLED_K and self._divides(a, batch_dims + (row0, k), t):
            return length
        return self.target.tile_unroll if length % self.target.tile_unroll == 0 else 1

    def _copy_panel_row(self, b: Node, tile: MatmulTile, at, whole: bool = True) -> None:
        """One k step of B's panel (at(c, lane) indexes B): its whole vectors (unless not
        whole), then a ragged last one lane by lane, zero past the last column (sums no
        output takes)."""
        vectors = tile.vectors

        def copy(c: sym.Lin) -> None:
            with self.lanes_on() as lane:
                bv = self.value(b, at(c, lane))
                self.emit(f"panel[t*{vectors}+{c.render()}] = {self.r.splat(bv)};")
        if whole and tile.whole and self._gathered(b, at, tile.whole):
            for c in range(tile.whole):
                copy(sym.num(c))
        elif whole and tile.whole:
            with self._each_vector(tile.whole) as c:
                copy(c)
        if tile.tail:
            last = sym.num(vectors - 1)
            lanes = [self.value(b, at(last, sym.num(k))) for k in range(tile.tail)]
            zero = Value(self.r.literal(0, b.dtype), b.dtype, False)
            packed = self.r.pack(lanes + [zero] * (self.width - tile.tail), b.dtype)
            self.emit(f"panel[t*{vectors}+{vectors - 1}] = {packed};")

    def _reads_along_k(self, b: Node, at, t: sym.Lin, mm: Node) -> bool:
        """Whether B's panel is copied a column at a time (_transpose_into_panel): B is an
        input read through views whose k steps lie next to each other in memory and whose
        columns do not (a Linear's weight (N, K), read as its transpose). Copied a k step at a
        time, each vector would gather `width` columns K floats apart, whose cache lines share
        a few sets of the L1 cache and evict each other: x @ w.T on the AMD EPYC took 22-24 ms
        at 1024^3 (x @ w: 10-14), 1.2-1.4 ms for 1024x512 @ (128x512)^T; transposed in
        registers 10.3-12.6 and 0.66-0.77 ms."""
        if t.is_const or mm.dtype.itemsize < 4 or not mm.dtype.is_float:
            return False
        lane = sym.Var("l", 0, self.width - 1)
        node, index = self._view_source(b, at(sym.num(0), sym.Lin(((lane, 1),), 0)))
        if node not in self.spec.inputs:
            return False
        flat, ((step, _),) = index.as_flat(), t.terms
        return flat.coef(step) == 1 and flat.coef(lane) not in (0, 1) and \
            not _divisions_by(flat, step) and not _divisions_by(flat, lane)

    def _transpose_into_panel(self, b: Node, tile: MatmulTile, length: int, mm: Node,
                              at) -> None:
        """A k block of B's whole panel vectors, for a B read along k (_reads_along_k;
        at(k, c, lane) indexes B at the block's step k): squares of `width` columns by
        `width` k steps, loaded a column at a time as vectors along k and transposed in
        registers (_transposed); the block's last steps short of a square element by element
        down each column."""
        ix, w = self.index_type, self.width
        squares, rest = divmod(length, w)
        c = sym.var("c", 0, tile.whole - 1)
        with self.block(f"for ({ix} c = 0; c < {tile.whole}; c++)", rolled=True):
            if squares:
                tb = sym.var("tb", 0, squares - 1)
                with self.block(f"for ({ix} tb = 0; tb < {squares}; tb++)", rolled=True):
                    rows = []
                    for r in range(w):
                        with self.lanes_on() as lane:
                            rows.append(self.value(b, at(tb * w + lane, c, sym.num(r))).code)
                    rows = self._transposed(rows, mm)
                    for r in range(w):
                        self.emit(f"panel[(tb*{w}+{r})*{tile.vectors}+c] = {rows[r]};")
            if rest:
                scalar = self.r.ctype(mm.dtype, False)
                lane = sym.var("l", 0, w - 1)
                t = sym.var("t", squares * w, length - 1)
                with self.block(f"for ({ix} l = 0; l < {w}; l++)", rolled=True), \
                        self.block(f"for ({ix} t = {squares * w}; t < {length}; t++)",
                                   rolled=True):
                    value = self.value(b, at(t, c, lane))
                    self.emit(f"((__private {scalar}*)panel)[(t*{tile.vectors}+c)*{w}+l] = "
                              f"{value.code};")

    def _transposed(self, rows: list[str], mm: Node) -> list[str]:
        """The columns of a square of `width` vectors (C expressions), as vectors: each round
        of shuffles swaps one bit of the row number with the same bit of the lane number."""
        w = self.width
        mask = f"{'uint' if mm.dtype.itemsize == 4 else 'ulong'}{w}"
        bit = 1
        while bit < w:
            low = [x if not x & bit else w + x - bit for x in range(w)]
            high = [x + bit if not x & bit else w + x for x in range(w)]
            swapped = list(rows)
            for r in (r for r in range(w) if not r & bit):
                for out, picks in ((r, low), (r + bit, high)):
                    code = (f"shuffle2({rows[r]}, {rows[r + bit]}, "
                            f"({mask})({','.join(map(str, picks))}))")
                    swapped[out] = self.tmp(code, mm.dtype, True).code
            rows, bit = swapped, bit * 2
        return rows

    def _gathered(self, b: Node, at, count: int) -> bool:
        """Whether the panel's vectors are read through divisions of their number (an im2col
        view of B: conv weight gradients), which a rolled copy computes at run time for every
        lane and an unrolled one folds into constant offsets (LeNet's conv2 weight gradient,
        16x54 by k = 10816: 0.91 ms rolled, 0.18 ms unrolled on Intel's runtime)."""
        if count == 1:
            return False
        c = sym.Var("c", 0, count - 1)
        return self._divides(b, at(sym.Lin(((c, 1),), 0), sym.num(0)).as_dims(), c)

    def _divides(self, node: Node, dims: tuple, v: sym.Var) -> bool:
        """Whether node's load at dims divides an expression of v (an index unrolling folds)."""
        return _divisions_by(self._input_flat(node, dims), v) > 0


def _divisions_by(expr: sym.Lin, v: sym.Var) -> int:
    """How many divisions and remainders in expr take v in their argument."""
    return sum(1 + _divisions_by(atom.arg, v) for atom, _ in expr.terms
               if isinstance(atom, sym.Quotient) and atom.arg.depends_on(v))


def _swap_last(node: Node) -> Node:
    """node with its last two axes swapped, as a view. Built as a node of its own: ir.permute
    would fold a transposed operand back into its source, which the kernel may not load."""
    order = tuple(range(len(node.shape)))
    order = order[:-2] + (order[-1], order[-2])
    return Node(Op.PERMUTE, node.dtype, tuple(node.shape[i] for i in order), (node,), order)
