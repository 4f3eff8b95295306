"""Lowers one KernelSpec to OpenCL C.

Every node is evaluated at a symbolic index. Loads pick their form from the index: a
contiguous run of lanes becomes one vector load, an index that ignores the lane a scalar
broadcast, anything else one load per lane. Values are cached per (node, index) and scope,
so a node used twice in a kernel is computed once.
"""
from __future__ import annotations

import functools
import hashlib
import math
from contextlib import contextmanager
from dataclasses import dataclass, replace

from . import symbolic as sym
from .addressing import Index, never_true, source_index
from .ir import Node, structural_key
from .kernel import KernelSpec
from .ops import BINARY, ELEMENTWISE, MOVEMENT, UNARY, Op
from .render import Renderer, Value, unaligned_typedefs
from .target import Target



@dataclass
class LoweredKernel:
    name: str
    source: str
    global_size: tuple[int, ...]
    params: list[tuple[Node, bool]]    # (node, is_output) in argument order
    local_size: tuple[int, ...] | None = None   # work-group shape; None lets the driver pick


@dataclass(frozen=True)
class MatmulTile:
    """The blocking of the CPU matmul kernel (see KernelWriter._matmul_blocked)."""
    rows: int          # R: rows of the register tile
    vectors: int       # vectors of `width` columns in the register tile
    columns: int       # columns per work-item: vectors * width
    block_rows: int    # rows per work-item, a multiple of R

    @staticmethod
    def choose(m: int, n: int, width: int, accumulators: int, cores: int) -> "MatmulTile":
        """As many columns as tile n (up to 4 vectors: 2 x 32 beat 4 x 16 by ~10-25% in CPU
        time at 1024 and 2048), then the register tile's rows (up to the accumulator budget:
        8-10 for 16 AVX2 registers, 16 for 32 AVX-512 ones) and the panel's rows (up to 64)
        that finish soonest on `cores` cores: the busiest core's rows, each row costing more
        in smaller register tiles, plus a panel copy per work-item worth ~16 rows (64x1000x100
        on two cores: two panels of 50 rows in 2-row tiles, 0.11 ms; five of 20 in 4-row
        tiles, 0.20 ms; twenty-five of 4, 0.56 ms)."""
        vectors = next(v for v in (4, 5, 3, 2, 1) if n % (v * width) == 0)
        panels_across = n // (vectors * width)

        def finish(choice: tuple[int, int]) -> tuple:
            rows, block = choice
            rounds = -(-panels_across * (m // block) // cores)
            return (rounds * (block * _ROW_COST[rows] + _PANEL_ROWS), -rows, -block)
        choices = [(r, r * c) for r in (4, 2, 1) if r * vectors <= accumulators and m % r == 0
                   for c in range(1, 65) if r * c <= 64 and m % (r * c) == 0]
        rows, block = min(choices, key=finish)
        return MatmulTile(rows, vectors, vectors * width, block)


# A row's cost in register tiles of 1, 2 and 4 rows (loads per multiply-add fall as tiles
# grow), and a work-item's panel copy in rows: the matmul tile choice's cost model.
_ROW_COST = {4: 1.0, 2: 1.15, 1: 1.5}
_PANEL_ROWS = 16


class KernelWriter:
    def __init__(self, spec: KernelSpec, target: Target, width: int, transposed: bool = False,
                 lane_axis: int | None = None):
        self.spec = spec
        self.target = target
        self.width = width              # the target's, or fewer lanes where a matmul needs
        self.vectorized = False         # whether any value has `width` lanes
        self.transposed = transposed    # a matmul computed as C^T = B^T A^T (see lower())
        self.lane_axis = lane_axis      # an elementwise kernel's lanes down this axis (lower())
        self.r = Renderer(width)
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[dict] = [{}]
        self.params: dict[Node, tuple[str, Node, bool]] = {}
        self.fused: dict[Node, Value] = {}
        self.lane: sym.Var | None = None
        self.ops_seen: list[str] = []
        self.counter = 0
        self.local_size: tuple[int, ...] | None = None

    # ---- emission helpers ----
    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    @contextmanager
    def block(self, header: str, rolled: bool = False):
        """A braced block; a loop's header gets the target's loop hints, and rolled loops
        (outside a register tile, where unrolled copies only cost build time: the W1 step's
        hidden-gradient product built in 1.1 s unrolled, 0.08 s rolled) also unroll(disable)."""
        keyword, loop, rest = header.partition("for (")
        hints = self.target.loop_hints + (("unroll(disable)",) if rolled else ())
        if loop and hints:          # "else for (...)": the pragma goes before the for
            if keyword.strip():
                self.emit(keyword.strip())
            self.emit("#pragma clang loop " + " ".join(hints))
            header = loop + rest
        self.emit(header + " {")
        self.depth += 1
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()
            self.depth -= 1
            self.emit("}")

    @contextmanager
    def lanes_on(self):
        self.vectorized = True
        self.lane = sym.Var("lane", 0, self.width - 1)
        try:
            yield sym.Lin(((self.lane, 1),), 0)
        finally:
            self.lane = None

    def tmp(self, code: str, dtype, vec: bool) -> Value:
        name = f"v{self.counter}"
        self.counter += 1
        self.emit(f"{self.r.ctype(dtype, vec)} {name} = {code};")
        return Value(name, dtype, vec)

    def param(self, node: Node, output: bool) -> str:
        if node not in self.params:
            prefix = "out" if output else "in"
            self.params[node] = (f"{prefix}{len(self.params)}", node, output)
        return self.params[node][0]

    def index_code(self, expr: sym.Lin) -> str:
        assert self.lane is None or not expr.depends_on(self.lane), "lane leaked into C code"
        return expr.render()

    def lane_base(self, flat: sym.Lin) -> sym.Lin | None:
        """flat - lane when flat walks the lanes contiguously, else None."""
        if self.lane is None or flat.coef(self.lane) != 1:
            return None
        base = sym.add(flat, sym.Lin(((self.lane, -1),), 0))
        return None if base.depends_on(self.lane) else base

    # ---- evaluation ----
    def value(self, node: Node, index: Index) -> Value:
        key = (node, index.key())
        for scope in reversed(self.scopes):
            if key in scope:
                return scope[key]
        result = self._compute(node, index)
        self.scopes[-1][key] = result
        return result

    def _compute(self, node: Node, index: Index) -> Value:
        if node in self.fused:
            return self.fused[node]
        if node in self.spec.inputs:
            return self._load(node, index)
        op = node.op
        if op is Op.CONST:
            return Value(self.r.literal(node.arg, node.dtype), node.dtype, False)
        if op is Op.IOTA:
            return self._iota(node, index)
        if op is Op.GATHER:
            return self._gather(node, index)
        if op is Op.PAD:
            return self._pad(node, index)
        if op in MOVEMENT:
            return self.value(node.src[0], source_index(node, index)[0])
        if op is Op.CONTIGUOUS:
            return self.value(node.src[0], index)
        self._saw(op)
        if op in (Op.SIN, Op.COS) and node.src[0] in self._trig_pairs:
            return self._sincos(node, index)
        srcs = [self.value(s, index) for s in node.src]
        vec = any(v.vec for v in srcs)
        if op in UNARY:
            return self.tmp(self.r.unary(op, srcs[0], node.dtype), node.dtype, vec)
        if op in BINARY:
            return self.tmp(self.r.binary(op, *srcs), node.dtype, vec)
        if op is Op.WHERE:
            return self.tmp(self.r.where(*srcs), node.dtype, vec)
        raise AssertionError(f"{op.name} reached codegen unfused: scheduler bug")

    @functools.cached_property
    def _trig_pairs(self) -> dict[Node, tuple[Node, Node]]:
        """Values whose sine and cosine the kernel both computes: source -> (sin, cos)."""
        trig: dict[Node, dict[Op, Node]] = {}
        for root, _ in self.spec.outputs:
            for node in _kernel_graph(root, self.spec, lambda n: True):
                if node.op in (Op.SIN, Op.COS):
                    trig.setdefault(node.src[0], {})[node.op] = node
        return {src: (ops[Op.SIN], ops[Op.COS]) for src, ops in trig.items() if len(ops) == 2}

    def _sincos(self, node: Node, index: Index) -> Value:
        """sin and cos of one value in one call: cheaper than two, and Intel's compiler, which
        pairs them itself, crashes doing so in chains like sin(cos(cos(x)))*sin(cos(x))*sin(x)."""
        sin, cos = self._trig_pairs[node.src[0]]
        v = self.value(node.src[0], index)
        ctype = self.r.ctype(node.dtype, v.vec)
        c = f"v{self.counter}"
        self.counter += 1
        self.emit(f"{ctype} {c};")
        s = self.tmp(f"sincos({v.code},&{c})", node.dtype, v.vec)
        self.scopes[-1][(cos, index.key())] = Value(c, node.dtype, v.vec)
        self.scopes[-1][(sin, index.key())] = s
        return s if node is sin else self.scopes[-1][(cos, index.key())]

    def _saw(self, op: Op) -> None:
        name = op.name.lower()
        if name not in self.ops_seen:
            self.ops_seen.append(name)

    def _load(self, node: Node, index: Index) -> Value:
        buf = self.param(node, output=False)
        flat = index.as_flat()
        if self.lane is None or not flat.depends_on(self.lane):
            return self.tmp(self.r.load(buf, self.index_code(flat), node.dtype), node.dtype, False)
        base = self.lane_base(flat)
        if base is not None:
            return self.tmp(self.r.vload(buf, self.index_code(base), node.dtype), node.dtype, True)
        return self._per_lane(node, index)

    def _iota(self, node: Node, index: Index) -> Value:
        flat = index.as_flat()
        if self.lane is None or not flat.depends_on(self.lane):
            return self.tmp(self.r.iota(self.index_code(flat), node.dtype, False), node.dtype, False)
        base = self.lane_base(flat)
        if base is None:
            return self._per_lane(node, index)
        return self.tmp(self.r.iota(self.index_code(base), node.dtype, True), node.dtype, True)

    def _gather(self, node: Node, index: Index) -> Value:
        src, rows = node.src
        *row_dims, column = index.as_dims()
        row = self.value(rows, Index(rows.shape, dims=tuple(row_dims)))
        if row.vec:
            return self._per_lane(node, index)
        buf = self.param(src, output=False)
        offset = f"(int)({row.code})*{src.shape[1]}"
        if self.lane is None or not column.depends_on(self.lane):
            code = self.r.load(buf, f"{offset}+{self.index_code(column)}", node.dtype)
            return self.tmp(code, node.dtype, False)
        base = self.lane_base(column)
        if base is None:
            return self._per_lane(node, index)
        code = self.r.vload(buf, f"{offset}+{self.index_code(base)}", node.dtype)
        return self.tmp(code, node.dtype, True)

    def _per_lane(self, node: Node, index: Index) -> Value:
        lane = self.lane
        self.lane = None
        try:
            lanes = [self.value(node, index.substitute({lane: sym.num(k)}))
                     for k in range(self.width)]
        finally:
            self.lane = lane
        return self.tmp(self.r.pack(lanes, node.dtype), node.dtype, True)

    def _pad(self, node: Node, index: Index) -> Value:
        src_index, bounds = source_index(node, index)
        fill = Value(self.r.literal(node.arg[1], node.dtype), node.dtype, False)
        if any(never_true(b) for b in bounds):
            return fill
        if not bounds:
            return self.value(node.src[0], src_index)
        if self.lane is not None and any(e.depends_on(self.lane) for e, _, _ in bounds):
            return self._per_lane(node, index)
        conds = []
        for expr, lo, hi in bounds:
            code = self.index_code(expr)
            conds += [f"{code}>={lo}"] if expr.lo < lo else []
            conds += [f"{code}<{hi}"] if expr.hi >= hi else []
        slot = len(self.lines)
        self.lines.append("")          # the declaration goes here once the type is known
        name = f"v{self.counter}"
        self.counter += 1
        with self.block(f"if ({' && '.join(conds)})"):
            inner = self.value(node.src[0], src_index)
            self.emit(f"{name} = {inner.code};")
        init = self.r.splat(fill) if inner.vec else fill.code
        self.lines[slot] = "  " * self.depth + f"{self.r.ctype(node.dtype, inner.vec)} {name} = {init};"
        return Value(name, node.dtype, inner.vec)

    # ---- stores ----
    def store(self, node: Node, flat: sym.Lin, v: Value) -> None:
        buf = self.param(node, output=True)
        base = self.lane_base(flat)
        if self.lane is not None and base is not None:
            self.emit(self.r.vstore(buf, self.index_code(base), v))
        elif self.lane is not None:
            assert flat.depends_on(self.lane), "a vector stored to one address"
            self._store_lanes(buf, flat, v)
        else:
            self.emit(self.r.store(buf, self.index_code(flat), v))

    def _store_lanes(self, buf: str, flat: sym.Lin, v: Value) -> None:
        """One scalar store per lane, for outputs whose lanes are not contiguous (the transposed
        matmul's lanes run down a column of its output)."""
        if v.vec:
            v = self.tmp(v.code, v.dtype, True)
        for k in range(self.width):
            index = sym.substitute(flat, {self.lane: sym.num(k)})
            self.emit(self.r.store_lane(buf, self.index_code(index), v, k))

    # ---- kernel bodies ----
    def dim_vars(self, flat: str, shape: tuple[int, ...]) -> tuple[sym.Lin, ...]:
        """The dimensions of the flat index `flat` into shape, each declared once as a C
        variable with its exact range. Index arithmetic over them simplifies (a reshape's
        divisions cancel) where arithmetic on the flat index would nest divisions of divisions
        in every load."""
        dims, stride, first = [], math.prod(shape), True
        for axis, n in enumerate(shape):
            stride //= n
            if n == 1:
                dims.append(sym.num(0))
                continue
            code = f"{flat}/{stride}" if stride > 1 else flat
            self.emit(f"int {flat}{axis} = {code if first else f'({code})%{n}'};")
            dims.append(sym.var(f"{flat}{axis}", 0, n - 1))
            first = False
        return tuple(dims)

    def elementwise(self) -> tuple[int, ...]:
        shape = self.spec.shape
        n = math.prod(shape)
        width = self.width
        self.emit("int gid = get_global_id(0);")
        if width == 1 or n < width:
            self._elementwise_body(sym.linearize(list(self.dim_vars("gid", shape)), shape))
            return (n,)
        n_vec, tail = divmod(n, width)
        if self.lane_axis is not None:  # lanes down another named axis, stored lane by lane
            axis = self.lane_axis
            grid = shape[:axis] + (shape[axis] // width,) + shape[axis + 1:]
            dims = list(self.dim_vars("gid", grid))
            with self.lanes_on() as lane:
                dims[axis] = dims[axis] * width + lane
                self._elementwise_body(sym.linearize(dims, shape), tuple(dims))
            return (n_vec,)
        if shape[-1] % width == 0:      # whole vectors per row: name every dimension
            *outer, last = self.dim_vars("gid", shape[:-1] + (shape[-1] // width,))
            with self.lanes_on() as lane:
                self._elementwise_body(sym.linearize(outer + [last * width + lane], shape))
            return (n_vec,)
        gid = sym.var("gid", 0, n_vec - 1)
        if tail:
            with self.block(f"if (gid < {n_vec})"):
                self._elementwise_vector(gid)
            with self.block(f"else for (int t = 0; t < {tail}; t++)"):
                self._elementwise_body(sym.num(n_vec * width) + sym.var("t", 0, tail - 1))
        else:
            self._elementwise_vector(gid)
        return (n_vec + (1 if tail else 0),)

    def _elementwise_vector(self, gid: sym.Lin) -> None:
        with self.lanes_on() as lane:
            self._elementwise_body(gid * self.width + lane)

    def _elementwise_body(self, flat: sym.Lin, dims: tuple[sym.Lin, ...] | None = None) -> None:
        for node, _ in self.spec.outputs:
            index = Index(node.shape, flat=flat) if dims is None else Index(node.shape, dims=dims)
            self.store(node, flat, self.value(node, index))

    def reduce(self) -> tuple[int, ...]:
        spec = self.spec
        shape, axes = spec.shape, spec.axes
        outer = tuple(s for i, s in enumerate(shape) if i not in axes)
        inner = tuple(shape[a] for a in axes)
        rows, length = math.prod(outer), math.prod(inner)
        trailing = axes == tuple(range(len(shape) - len(axes), len(shape)))
        row = sym.var("row", 0, rows - 1)
        self.emit("int row = get_global_id(0);")
        outer_dims = self.dim_vars("row", outer)
        row_index = sym.linearize(list(outer_dims), outer)

        def at(r: sym.Lin) -> Index:
            outer_it = iter(outer_dims)
            inner_it = iter(sym.delinearize(r, inner))
            return Index(shape, dims=tuple(next(inner_it) if i in axes else next(outer_it)
                                           for i in range(len(shape))))

        width = self.width if trailing and length >= self.width else 1
        element_outputs = [n for n, _ in spec.outputs if n.shape == shape]
        kept = self._kept_source(element_outputs) if trailing else None
        for red in spec.reductions:
            self._saw(red.op)
            keep_in = kept[1] if kept and red is spec.reductions[-1] else None
            self.fused[red] = self._reduction(red, at, length, width, keep_in)
        for node, _ in spec.outputs:
            if node.shape != shape:
                self.store(node, row, self.value(node, Index(node.shape, flat=row_index)))
        if element_outputs:
            def write(r: sym.Lin) -> None:
                index = at(r)
                if kept:
                    source, out = kept
                    self.scopes[-1][(source, index.key())] = self._reload(source, out, index)
                for node in element_outputs:
                    self.store(node, index.as_flat(), self.value(node, index))
            self._row_loop(length, width, write)
        return (rows,)

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
        """node's value, stored earlier into buffer_node's buffer at index, loaded back."""
        buf = self.param(buffer_node, output=True)
        flat = index.as_flat()
        base = self.lane_base(flat)
        if base is not None:
            return self.tmp(self.r.vload(buf, self.index_code(base), node.dtype), node.dtype, True)
        return self.tmp(self.r.load(buf, self.index_code(flat), node.dtype), node.dtype, False)

    def _row_loop(self, length: int, width: int, body) -> None:
        """Runs body(r) over r in [0, length): vectors of `width` lanes, then a scalar tail."""
        n_vec, tail = divmod(length, width)
        if n_vec:
            with self.block(f"for (int i = 0; i < {n_vec}; i++)"):
                if width > 1:
                    with self.lanes_on() as lane:
                        body(sym.var("i", 0, n_vec - 1) * width + lane)
                else:
                    body(sym.var("i", 0, n_vec - 1))
        if tail:
            with self.block(f"for (int t = 0; t < {tail}; t++)"):
                body(sym.num(n_vec * width) + sym.var("t", 0, tail - 1))

    def _reduction(self, red: Node, at, length: int, width: int,
                   keep_in: Node | None = None) -> Value:
        r, dtype = self.r, red.dtype
        init = r.reduce_init(red.op, dtype)
        n = self.counter
        self.counter += 1
        acc, acc_vec = f"acc{n}", f"acc{n}v"
        self.emit(f"{r.ctype(dtype, False)} {acc} = {init};")
        if width > 1:
            self.emit(f"{r.ctype(dtype, True)} {acc_vec} = ({r.ctype(dtype, True)})({init});")

        def step(pos: sym.Lin) -> None:
            v = self.value(red.src[0], at(pos))
            if keep_in is not None:
                self.store(keep_in, at(pos).as_flat(), v)
            if self.lane is not None:
                v = Value(r.splat(v), dtype, True)
                self.emit(f"{acc_vec} = {r.reduce_step(red.op, acc_vec, v)};")
            else:
                self.emit(f"{acc} = {r.reduce_step(red.op, acc, v)};")
        self._row_loop(length, width, step)
        if width > 1:
            for lane_code in r.lanes(acc_vec):
                self.emit(f"{acc} = {r.reduce_step(red.op, acc, Value(lane_code, dtype, False))};")
        return Value(acc, dtype, False)

    def matmul(self) -> tuple[int, ...]:
        (mm,) = self.spec.reductions
        n = mm.shape[-1]
        if self.width > 1 and (self.transposed or n % self.width == 0) and mm.dtype.is_float:
            return self._matmul_blocked(mm)
        return self._matmul_simple(mm)

    def _matmul_simple(self, mm: Node) -> tuple[int, ...]:
        """One work-item per 4 rows x `width` columns, looping over all of k (GPU path)."""
        a, b = mm.src
        *batch, m, n = mm.shape
        k_len = a.shape[-1]
        rows_per_item = next(t for t in (4, 2, 1) if m % t == 0)
        width = self.width if n % self.width == 0 else 1
        n_batch = math.prod(batch)
        self.emit("int j = get_global_id(0); int mi = get_global_id(1); int b = get_global_id(2);")
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
            with self.block(f"for (int k = 0; k < {k_len}; k++)"):
                bv = self.value(b, Index(b.shape, dims=batch_dims + (kv, column(lane_expr))))
                bv = Value(self.r.splat(bv), mm.dtype, True) if width > 1 else bv
                for i, acc in enumerate(accs):
                    av = self.value(a, Index(a.shape, dims=batch_dims + (row_of(i), kv)))
                    av_code = self.r.splat(av) if width > 1 else av.code
                    step = (f"fma({av_code},{bv.code},{acc})" if mm.dtype.is_float
                            else f"{acc} + {av_code}*{bv.code}")
                    self.emit(f"{acc} = {step};")
            for i, acc in enumerate(accs):
                self.fused[mm] = Value(acc, mm.dtype, width > 1)
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
        accumulators over it. The elementwise epilogue runs once the sums are complete.

        Transposed, it computes C^T = B^T A^T: the same loops over permuted views of the
        operands (index arithmetic, no copies), with the epilogue at the swapped index."""
        a, b = mm.src
        if self.transposed:
            a, b = _swap_last(b), _swap_last(a)
        *batch, m, n = mm.shape[:-2] + (a.shape[-2], b.shape[-1])
        tile = MatmulTile.choose(m, n, self.width, self.target.accumulators, self.target.cores)
        n_batch = math.prod(batch)
        vt = self.r.ctype(mm.dtype, True)
        self.emit("int j = get_global_id(0); int mb = get_global_id(1); int b = get_global_id(2);")
        j = sym.var("j", 0, n // tile.columns - 1)
        mb = sym.var("mb", 0, m // tile.block_rows - 1)
        batch_dims = tuple(sym.delinearize(sym.var("b", 0, n_batch - 1), tuple(batch)))
        self._saw(Op.MATMUL)
        sums = f"{vt} sums[{tile.block_rows * tile.vectors}]"
        length = self._k_block_length(a, b, batch_dims)
        self.emit(f"{sums}; {vt} panel[{length * tile.vectors}];")
        with self.block(f"for (int i = 0; i < {tile.block_rows * tile.vectors}; i++)", rolled=True):
            self.emit(f"sums[i] = ({vt})(0);")

        def column(c: int, lane: sym.Lin) -> sym.Lin:
            return j * tile.columns + c * self.width + lane

        def k_block(k0: sym.Lin, length: int) -> None:
            t = sym.var("t", 0, length - 1)
            t_loop = self.block(f"for (int t = 0; t < {length}; t++)", rolled=True)
            with t_loop, self._each_vector(tile) as c, self.lanes_on() as lane:
                index = Index(b.shape, dims=batch_dims + (k0 + t, column(c, lane)))
                bv = self.value(b, index)
                self.emit(f"panel[t*{tile.vectors}+{c.render()}] = {self.r.splat(bv)};")
            chunks = tile.block_rows // tile.rows
            with self.block(f"for (int rc = 0; rc < {chunks}; rc++)", rolled=True):
                self._matmul_tile(a, mm, tile, batch_dims, mb * tile.block_rows, k0, length)

        full, tail = divmod(a.shape[-1], length)
        if full:
            kb = sym.var("kb", 0, full - 1)
            with self.block(f"for (int kb = 0; kb < {full}; kb++)", rolled=True):
                k_block(kb * length, length)
        if tail:
            k_block(sym.num(full * length), tail)
        self._matmul_epilogue(mm, tile, batch_dims, mb * tile.block_rows, column)
        global_size = (n // tile.columns, m // tile.block_rows, n_batch)
        # One work-item per group: PoCL's own choice (64 items and more) leaves too few groups
        # to balance the cores, and a group of one needs no work-item loop, which PoCL would
        # generate and try to vectorise at the first launch (the 64x100 products of the W1
        # step build 0.36 s each with groups of 2, 0.24 s with groups of 1; no slower to run).
        self.local_size = (1, 1, 1)
        return global_size

    def _k_block_length(self, a: Node, b: Node, batch_dims) -> int:
        """k steps per copied block of B: up to 128, and where k runs over a window or an
        image (conv gradients) a length that keeps each block inside one of its rows, so
        loads inside the block need no division by the row length (conv1's weight gradient:
        blocks of 30, 2.5x faster than 128). A divisor of k also saves a second, tail copy of
        the loop body (less code to build)."""
        k_len = a.shape[-1]
        if k_len <= 128:
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
        return min([128] + [d for d in range(8, 128) if k_len % d == 0], key=cost)

    def _input_flat(self, node: Node, dims: tuple) -> sym.Lin:
        """The flat index that node read at dims loads from its input buffer (where the
        chain of views ends)."""
        index = Index(node.shape, dims=dims)
        while node not in self.spec.inputs and node.op in MOVEMENT:
            index, _ = source_index(node, index)
            node = node.src[0]
        return index.as_flat()

    def _matmul_tile(self, a: Node, mm: Node, tile: "MatmulTile", batch_dims, row0: sym.Lin,
                     k0: sym.Lin, length: int) -> None:
        """R x `vectors` accumulators, loaded from `sums`, run over one k block and put back."""
        vt = self.r.ctype(mm.dtype, True)
        rc = sym.var("rc", 0, tile.block_rows // tile.rows - 1)
        accs = {(r, c): f"acc{r}_{c}" for r in range(tile.rows) for c in range(tile.vectors)}
        for (r, c), acc in accs.items():
            self.emit(f"{vt} {acc} = sums[(rc*{tile.rows}+{r})*{tile.vectors}+{c}];")
        t = sym.var("t", 0, length - 1)
        with self.block(f"for (int t = 0; t < {length}; t++)"):
            for c in range(tile.vectors):
                self.emit(f"{vt} b{c} = panel[t*{tile.vectors}+{c}];")
            for r in range(tile.rows):
                row = row0 + rc * tile.rows + r
                av = self.value(a, Index(a.shape, dims=batch_dims + (row, k0 + t)))
                splat = self.tmp(self.r.splat(av), mm.dtype, True)
                for c in range(tile.vectors):
                    # written as a multiply-add (contracted to fma): PoCL calls fma() out of line
                    self.emit(f"{accs[r, c]} = {accs[r, c]} + {splat.code}*b{c};")
        for (r, c), acc in accs.items():
            self.emit(f"sums[(rc*{tile.rows}+{r})*{tile.vectors}+{c}] = {acc};")

    def _matmul_epilogue(self, mm: Node, tile: "MatmulTile", batch_dims, row0: sym.Lin,
                         column) -> None:
        r = sym.var("r", 0, tile.block_rows - 1)
        r_loop = self.block(f"for (int r = 0; r < {tile.block_rows}; r++)", rolled=True)
        with r_loop, self._each_vector(tile) as c, self.lanes_on() as lane:
            self.fused[mm] = Value(f"sums[r*{tile.vectors}+{c.render()}]", mm.dtype, True)
            at = (row0 + r, column(c, lane))
            at = at[::-1] if self.transposed else at
            self._store_outputs(batch_dims + at)

    @contextmanager
    def _each_vector(self, tile: "MatmulTile"):
        """The tile's column vectors as a C loop, not unrolled: outside the register tile,
        unrolled copies only cost build time. A transposed product stores (and copies into its
        panel) lane by lane, so each vector is 8 scalar accesses; rolled, the W1 step's
        64x100 product builds its work-group code in ~175 ms, not ~295."""
        if tile.vectors == 1:
            yield sym.num(0)
            return
        with self.block(f"for (int c = 0; c < {tile.vectors}; c++)", rolled=True):
            yield sym.var("c", 0, tile.vectors - 1)

    def _store_outputs(self, dims: tuple[sym.Lin, ...]) -> None:
        """A matmul kernel's outputs (the product, finished by its epilogue, and an
        elementwise consumer's result of its shape) stored at dims, the products in `fused`."""
        for node, _ in self.spec.outputs:
            index = Index(node.shape, dims=dims)
            self.store(node, index.as_flat(), self.value(node, index))

    # ---- the whole kernel ----
    def divisions(self) -> int:
        """Integer divisions and remainders in the body: the cost of its index arithmetic."""
        return sum(line.count("/") + line.count("%") for line in self.lines)

    def source(self, name: str) -> str:
        params = []
        for pname, node, output in self.params.values():
            storage = node.dtype.storage
            qual = "" if output else "const "
            params.append(f"__global {qual}{storage}* restrict {pname}")
        # Intel's compiler tries to widen vector code across work-items too, for nothing: the
        # hint says it is vectorised already (the W1 step's hidden-gradient product built in
        # 1.1 s without it, 0.08 s with it)
        hint = (f"__attribute__((vec_type_hint(float{self.width}))) "
                if self.vectorized and self.target.vector_hint else "")
        header = f"__kernel {hint}void {name}({', '.join(params)}) {{"
        prologue = ["  " + line for line in self.r.prologue()]
        body = [header, *prologue, *self.lines, "}"]
        return unaligned_typedefs(self.width) + "\n".join(body) + "\n"


_COSTLY = frozenset({Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.POW})


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


def _transpose_matmul(spec: KernelSpec, width: int) -> bool:
    """Whether a CPU matmul should run as C^T = B^T A^T, its vector lanes down M, not along N:
    when N is narrow or no multiple of 8 (conv channels 6 and 16, the seed MLP's 100) and M is
    a multiple of 8 that offers more columns than N does."""
    (mm,) = spec.reductions
    *_, m, n = mm.shape
    return width > 1 and mm.dtype.is_float and n % 8 != 0 and m % 8 == 0


def _kernel_graph(root: Node, spec: KernelSpec, through) -> list[Node]:
    """Nodes computed in the kernel reachable from root, walking only into nodes where
    through(node) holds and stopping at inputs and fused reductions."""
    seen, stack = set(), [root]
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if node in spec.inputs or node in spec.reductions or not through(node):
            continue
        stack.extend(node.src)
    return list(seen)


def _reads_at_same_index(out: Node, source: Node, spec: KernelSpec) -> bool:
    """Whether out's value uses source through elementwise ops only (so at out's own index)."""
    return source in _kernel_graph(out, spec, lambda n: n.op in ELEMENTWISE)


def _is_costly(node: Node, spec: KernelSpec) -> bool:
    return any(n.op in _COSTLY for n in _kernel_graph(node, spec, lambda n: True))


def _lane_axis(spec: KernelSpec, width: int) -> int | None:
    """For an elementwise kernel whose last axis vectors do not tile, the innermost they do."""
    shape = spec.shape
    if spec.kind != "elementwise" or width == 1 or not shape or shape[-1] % width == 0:
        return None
    return next((a for a in reversed(range(len(shape))) if shape[a] % width == 0), None)


def lower(spec: KernelSpec, target: Target) -> LoweredKernel:
    width = target.width
    transposed = spec.kind == "matmul" and _transpose_matmul(spec, width)
    if spec.kind == "matmul":
        # a matmul's lanes are output columns (rows when transposed): the widest vector that
        # tiles them
        columns = spec.reductions[0].shape[-2 if transposed else -1]
        width = next(w for w in (16, 8, 4, 2, 1) if w <= width and columns % w == 0)
    writer = KernelWriter(spec, target, width, transposed)
    global_size = getattr(writer, spec.kind)()
    axis = _lane_axis(spec, width)
    if axis is not None:
        # rows that vectors do not tile (LeNet's 30, 15, 13): lanes down an axis they do tile,
        # when that leaves less index arithmetic. Through windows, pads and permutes the flat
        # form divides per lane; named dims divide once per vector. A plain contiguous kernel
        # keeps its flat vector loads.
        down = KernelWriter(spec, target, width, lane_axis=axis)
        down_size = down.elementwise()
        if down.divisions() < writer.divisions():
            writer, global_size = down, down_size
    body = writer.source("KERNEL")
    digest = hashlib.sha256(body.encode()).hexdigest()[:6]
    prefix = {"elementwise": "E", "reduce": "R", "matmul": "M"}[spec.kind]
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
