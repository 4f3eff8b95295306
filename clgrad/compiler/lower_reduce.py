"""Reduction kernels: one work-item per row, its reductions and the row's elementwise outputs
(softmax's normalised row) in loops along it. (On a GPU, a long row is a work-group's:
lower_reduce_group.py, whose loops are these, strided.)"""
from __future__ import annotations

import math

from . import symbolic as sym
from .addressing import Index
from .dtype import bool_, int32, int64
from .ir import Node
from .kernel_writer import KernelWriter, kernel_graph
from .kernel import KernelSpec
from .ops import ELEMENTWISE, Op
from .render import OPAQUE_ONE, Value
from .row_breaks import pad_breaks


class ReduceWriter(KernelWriter):
    # where the row being reduced passes from padding to data (row_breaks.py): its loops stop
    # and start again there
    breaks: tuple[int, ...] = ()

    def write(self) -> tuple[int, ...]:
        spec = self.spec
        shape, axes = spec.shape, spec.axes
        outer = tuple(s for i, s in enumerate(shape) if i not in axes)
        rows, length = math.prod(outer), row_length(spec)
        trailing = _trailing(spec)
        row = sym.var("row", 0, rows - 1)
        self._start_row()
        outer_dims = self.dim_vars("row", outer)
        row_index = sym.linearize(list(outer_dims), outer)
        at = row_reader(spec, outer_dims)
        width = self.width if trailing and length >= self.width else 1
        element_outputs = [n for n, _ in spec.outputs if n.shape == shape]
        kept = self._kept_source(element_outputs) if trailing else None
        for red in spec.reductions:
            self._saw(red.op)
            keep_in = kept[1] if kept and red is spec.reductions[-1] else None
            self.fused[red] = self.finished(self._reduction(red, at, length, width, keep_in))
        row_outputs = [node for node, _ in spec.outputs if node.shape != shape]
        if row_outputs:
            self._store_row_outputs(row_outputs, row, row_index)
        if element_outputs:
            def write(r: sym.Lin) -> None:
                index = at(r)
                if kept:
                    source, out = kept
                    self.scopes[-1][(source, index.key())] = self._reload(source, out, index)
                for node in element_outputs:
                    self.store(node, index.as_flat(), self.value(node, index))
            self._row_loop(0, length, width, write)
        return (rows,)

    def _start_row(self) -> None:
        self.emit(f"{self.index_type} row = get_global_id(0);")

    def _store_row_outputs(self, nodes: list[Node], row: sym.Lin, row_index: sym.Lin) -> None:
        """Stores the outputs of one value per row (a sum, softmax's max)."""
        for node in nodes:
            self.store(node, row, self.value(node, Index(node.shape, flat=row_index)))

    def _kept_source(self, element_outputs: list[Node]) -> tuple[Node, Node] | None:
        """(source, output) when the last reduction's source is costly to compute and the
        row's element output uses it again at the same index: the reduction's loop then also
        stores the source into the output's buffer and the final loop reads it back, instead of
        computing it twice (softmax: one exp per element, not two)."""
        if not self.spec.reductions or len(element_outputs) != 1:
            return None
        source, out = self.spec.reductions[-1].src[0], element_outputs[0]
        if out is source or source.dtype != out.dtype or source.dtype.itemsize < 4:
            return None
        if not source.dtype.is_float or not _reads_at_same_index(out, source, self.spec):
            return None
        return (source, out) if _is_costly(source, self.spec) else None

    def _reload(self, node: Node, buffer_node: Node, index: Index) -> Value:
        """node's value, stored earlier into buffer_node's buffer at index, loaded back. index
        is a trailing row's (at() in write()): within a vector, its lanes are contiguous."""
        buf = self.param(buffer_node, output=True)
        flat = index.as_flat()
        base = self.lane_base(flat)
        if base is not None:
            return self.tmp(self.r.vload(buf, self.index_code(base), node.dtype), node.dtype, True)
        return self.tmp(self.r.load(buf, self.index_code(flat), node.dtype), node.dtype, False)

    def _row_loop(self, start: int, stop: int, width: int, body, rolled: bool = False) -> None:
        """Runs body(r) over r in [start, stop): vectors of `width` lanes, then a scalar tail."""
        span = self._span(width)
        n_vec = (stop - start) // span
        self._steps("i", start, span, sym.num(0), n_vec, self._vectors(start, width, body), rolled)
        self._tail(start + n_vec * span, stop, body, rolled)

    def _span(self, width: int) -> int:
        """The elements of the row one step of its loops covers."""
        return width

    def _tail(self, start: int, stop: int, body, rolled: bool) -> None:
        """Runs body(r) over the elements in [start, stop) past the row's whole steps."""
        self._steps("t", start, 1, sym.num(0), stop - start,
                    lambda t: body(sym.num(start) + t), rolled)

    def _vectors(self, start: int, width: int, body):
        """body as a function of a step i: body(r) for the `width` elements from
        r = start + i*width on, in one vector where width > 1."""
        def run(i: sym.Lin) -> None:
            if width > 1:
                with self.lanes_on() as lane:
                    body(sym.num(start) + i * width + lane)
            else:
                body(sym.num(start) + i)
        return run

    def _steps(self, name: str, origin: int, size: int, first: sym.Lin, count: int, body,
               rolled: bool = False) -> None:
        """Runs body(s) over the steps s in [first, first + count), step s being the elements
        origin + s*size ... origin + s*size + size - 1 of the row: one loop for each run of
        steps that no break splits (a step a break falls inside is a run of its own)."""
        if not count:
            return
        if first.is_const:
            runs, offset = self._runs(origin, size, first.const, first.const + count), sym.num(0)
        else:
            runs, offset = [(0, count)], first
        for a, b in runs:
            with self.block(f"for ({self.index_type} {name} = {a}; {name} < {b}; {name}++)",
                            rolled):
                body(offset + sym.var(name, a, b - 1))

    def _runs(self, origin: int, size: int, start: int, stop: int) -> list[tuple[int, int]]:
        """[start, stop) cut where the steps' elements meet a break."""
        cuts = {start, stop}
        for point in self.breaks:
            step, inside = divmod(point - origin, size)
            cuts |= {step, step + 1} if inside else {step}
        cuts = sorted(c for c in cuts if start <= c <= stop)
        return list(zip(cuts, cuts[1:]))

    def _reduction(self, red: Node, at, length: int, width: int,
                   keep_in: Node | None = None) -> Value:
        r, dtype = self.r, red.dtype
        op, src = red.op, red.src[0]
        # an integer amin is the max of ~x, inverted: accumulated as the min of x, inverted
        # once at the end. Intel's compiler turned a rolled max of ~x followed by a min of its
        # inverse with x into x itself (minimum(x.amin(-1, keepdim=True), x), fuzz seed
        # 1508309), and ~ of a min of lanes into the min (x.min(2).values.sum(0), 2005240)
        flipped = (op is Op.RMAX and src.op is Op.NOT and dtype in (int32, int64)
                   and keep_in is None)    # (narrower: ~x is cut to the dtype's width)
        if flipped:
            op, src = Op.MIN, src.src[0]
        # PyTorch's product of a 16-bit float rounds each step to the type, in turn (in rows
        # shorter than its four vector accumulators, and across rows)
        stepwise = op is Op.PROD and dtype.is_16_bit_float
        if stepwise:
            width = 1
        init = r.reduce_init(op, dtype)
        n = self.counter
        self.counter += 1
        acc, acc_vec = f"acc{n}", f"acc{n}v"
        self.emit(f"{r.ctype(dtype, False)} {acc} = {init};")
        self.breaks = pad_breaks(red.src[0], self.spec, at, length)
        if width > 1:
            self.emit(f"{r.ctype(dtype, True)} {acc_vec} = ({r.ctype(dtype, True)})({init});")

        def step(pos: sym.Lin, into: str | None = None) -> None:
            v = self.value(src, at(pos))
            if keep_in is not None:
                self.store(keep_in, at(pos).as_flat(), v)
            if self.lane is not None:
                v = Value(r.splat(v), dtype, True)
                into = into or acc_vec
            else:
                into = into or acc
            combined = r.reduce_step(op, into, v)
            if stepwise:
                combined = r.narrow(combined, dtype, False)
            self.emit(f"{into} = {combined};")
        product = red.op is Op.PROD and dtype.is_float and width > 1     # combines its lanes
        steps = length // self._span(width)
        if red.op is Op.SUM and dtype.is_float and steps > _SEQUENTIAL_STEPS:
            self._pairwise_sum(length, width, step, acc_vec if width > 1 else acc, dtype)
        elif product:
            self._float_product(length, width, step, acc, acc_vec, dtype)
        else:
            # Intel's compiler unrolled a 5-step max of ~x over int64 into 0 (x.amin() of
            # [4, 2, 0, -3, -2] was -1; fuzz seed 31952), and the 8-step tail of one over
            # int32 after its vector loop (seed 100705): integer rows stay rolled
            self._row_loop(0, length, width, step, rolled=not dtype.is_float)
        self.breaks = ()
        if width > 1 and not product:
            for lane_code in r.lanes(acc_vec):
                if dtype == bool_:      # a vector's true is -1, a scalar's 1
                    lane_code = f"({lane_code}&1)"
                self.emit(f"{acc} = {r.reduce_step(op, acc, Value(lane_code, dtype, False))};")
        self._across_items(acc, op, dtype)
        if flipped:     # ~acc as an xor with an opaque -1: Intel's compiler dropped a plain ~
            self.emit(f"{acc} = {acc} ^ -({r.ctype(dtype, False)}){OPAQUE_ONE};")
        return Value(acc, dtype, False)

    def _across_items(self, acc: str, op: Op, dtype) -> None:
        """Combines acc, the row's value as far as this work-item has seen it, with the other
        work-items' of its row: none here, where a work-item sees the whole row."""

    def _float_product(self, length: int, width: int, step, acc: str, acc_vec: str,
                       dtype) -> None:
        """A float product in PyTorch's order: the lanes' products, then the elements past the
        last whole vector, in turn. The lanes' products are multiplied as mantissas (in
        [0.5, 1)) and exponents apart, so that they under- or overflow once, at the end.
        Multiplied in turn, lanes of small values reached 0 before a lane that held an inf,
        and the elements past the lanes went first: where no element was 0, 0 * inf made NaN,
        PyTorch inf (fuzz seeds 502066, 506711)."""
        r = self.r
        whole = length - length % width
        self._row_loop(0, whole, width, step)
        exp, exps, mantissas = f"{acc}e", f"{acc_vec}e", f"{acc_vec}m"
        self.emit(f"{r.ctype(int32, True)} {exps};")
        self.emit(f"{r.ctype(dtype, True)} {mantissas} = frexp({acc_vec}, &{exps});")
        lanes = list(zip(r.lanes(mantissas), r.lanes(exps)))
        self.emit(f"{acc} = {lanes[0][0]};")
        self.emit(f"int {exp} = {lanes[0][1]};")
        for mantissa, lane_exp in lanes[1:]:
            self.emit(f"{acc} = {acc} * {mantissa};")
            self.emit(f"{exp} += {lane_exp};")
        self.emit(f"{acc} = ldexp({acc}, {exp});")
        self._row_loop(whole, length, 1, step)

    def _pairwise_sum(self, length: int, width: int, step, total: str, dtype) -> None:
        """A float sum over a long row, with an error that grows like log(length), not like
        length: blocks of _SUM_BLOCK steps are summed in order, and the blocks' sums pairwise,
        in a binary counter (part[l] holds the sum of 2**l blocks; a finished block merges
        with the sums of equal size below it, as carries do). Each step adds one vector of
        `width` lanes (one value when width is 1; in a row's work-group, each work-item's
        own). A long row read in vectors is read as the target's sum_streams equal stretches
        side by side, each with a counter of its own, whose sums of equal size are added
        together. The steps left over past the stretches' whole blocks and a last partial
        vector go into the total directly. As fast as one accumulator: the merges cost one
        addition per block, on average."""
        span = self._span(width)
        steps, tail = divmod(length, span)
        blocks, rest = divmod(steps, _SUM_BLOCK)
        # (a row that padding breaks stays one stretch: its loops are cut at the breaks)
        streams = self.target.sum_streams
        stretch_bytes = blocks // streams * _SUM_BLOCK * width * dtype.itemsize
        if width == 1 or self.breaks or stretch_bytes < _STREAM_MIN_BYTES:
            streams = 1
        per_stream, extra = divmod(blocks, streams)
        n = self.counter
        self.counter += 1
        ctype = self.r.ctype(dtype, width > 1)
        zero = self.r.literal(0, dtype)
        zero = f"({ctype})({zero})" if width > 1 else zero
        part, blk, level = f"part{n}", f"blk{n}", f"level{n}"
        blks = [f"{blk}_{s}" for s in range(streams)]
        self.emit(f"{ctype} {part}[{streams}][{per_stream.bit_length()}];")

        def run(count: int, first: sym.Lin, into: str) -> None:
            """count steps from step `first` on, added to `into`."""
            self._steps("i", 0, span, first, count,
                        self._vectors(0, width, lambda r: step(r, into)))

        def block(ib: sym.Lin) -> None:
            for s, blk_s in enumerate(blks):
                self.emit(f"{ctype} {blk_s} = {zero};")
                run(_SUM_BLOCK, (ib + s * per_stream) * _SUM_BLOCK, blk_s)
            self.emit(f"int {level} = 0;")
            with self.block(f"for (; (ib >> {level}) & 1; {level}++)"):
                for s, blk_s in enumerate(blks):
                    self.emit(f"{blk_s} = {part}[{s}][{level}] + {blk_s};")
            for s, blk_s in enumerate(blks):
                self.emit(f"{part}[{s}][{level}] = {blk_s};")
        self._steps("ib", 0, _SUM_BLOCK * span, sym.num(0), per_stream, block)
        run(extra * _SUM_BLOCK + rest, sym.num(streams * per_stream * _SUM_BLOCK), total)
        for bit in range(per_stream.bit_length()):     # the counters' sums, smallest first
            if per_stream >> bit & 1:
                sums = " + ".join(f"{part}[{s}][{bit}]" for s in range(streams))
                self.emit(f"{total} = {total} + ({sums});")
        self._row_loop(steps * span, length, 1, step)


# Float sums over more steps (vectors, or values in a scalar row) than this go pairwise, in
# blocks of this many steps (_pairwise_sum); shorter rows lose little in a plain running sum.
_SEQUENTIAL_STEPS = 64
_SUM_BLOCK = 16
# A row read in vectors is read as stretches side by side (Target.sum_streams) only where each
# would span at least two 4 KiB pages.
_STREAM_MIN_BYTES = 8192

_COSTLY = frozenset({Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.POW})


def row_length(spec: KernelSpec) -> int:
    return math.prod(spec.shape[a] for a in spec.axes)


def row_reader(spec: KernelSpec, outer_dims: tuple[sym.Lin, ...]):
    """at(r): the index of the r-th element of the row whose outer dimensions are outer_dims."""
    shape, axes = spec.shape, spec.axes
    outer = tuple(s for i, s in enumerate(shape) if i not in axes)
    inner = tuple(shape[a] for a in axes)
    row_index = sym.linearize(list(outer_dims), outer)
    trailing, length = _trailing(spec), row_length(spec)

    def at(r: sym.Lin) -> Index:
        outer_it = iter(outer_dims)
        inner_it = iter(sym.delinearize(r, inner))
        dims = tuple(next(inner_it) if i in axes else next(outer_it)
                     for i in range(len(shape)))
        # a trailing row is contiguous: its flat index is the row's start plus r, which
        # keeps the lanes contiguous where relinearising r's dimensions would not
        # ((r/2)%64*2 + r%2 for r = 16*i + lane: fuzz seed 1501691)
        return Index(shape, flat=row_index * length + r if trailing else None, dims=dims)
    return at


def _trailing(spec: KernelSpec) -> bool:
    """Whether the reduced axes are the last ones."""
    axes = spec.axes
    return axes == tuple(range(len(spec.shape) - len(axes), len(spec.shape)))


def _reads_at_same_index(out: Node, source: Node, spec: KernelSpec) -> bool:
    """Whether out's value uses source through elementwise ops only (so at out's own index)."""
    return source in kernel_graph(out, spec, lambda n: n.op in ELEMENTWISE)


def _is_costly(node: Node, spec: KernelSpec) -> bool:
    return any(n.op in _COSTLY for n in kernel_graph(node, spec, lambda n: True))
