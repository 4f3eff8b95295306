"""The kernel writer every kind of kernel is written with: values, loads, stores, blocks and
parameters, and the finished source.

Every node is evaluated at a symbolic index. Loads pick their form from the index: a
contiguous run of lanes becomes one vector load, an index that ignores the lane a scalar
broadcast, anything else one load per lane. Values are cached per (node, index) and scope,
so a node used twice in a kernel is computed once. Each kind of kernel (lower_elementwise.py,
lower_reduce.py, lower_matmul.py) is a subclass whose write() emits the body and returns
the global size.
"""
from __future__ import annotations

import functools
import math
from contextlib import contextmanager

from . import symbolic as sym
from .addressing import Index, never_true, source_index
from .ir import ABSENT, Node, reshaped_from
from .kernel import KernelSpec
from .ops import BINARY, MOVEMENT, UNARY, Op
from .render import Renderer, Value, unaligned_typedefs
from .target import Target


class KernelWriter:
    restricts = True        # whether the buffer parameters are restrict

    def __init__(self, spec: KernelSpec, target: Target, width: int):
        self.spec = spec
        self.target = target
        self.width = width              # the target's, or fewer lanes where a matmul needs
        self.vectorized = False         # whether any value has `width` lanes
        self.items_apart = False        # whether neighbouring work-items' accesses lie far
                                        # apart (rows of a scan along its last axis)
        self.r = Renderer(width, target)
        self.lines: list[str] = []
        self.depth = 1
        self.scopes: list[dict] = [{}]
        self.params: dict[Node, tuple[str, Node, bool]] = {}
        self.fused: dict[Node, Value] = {}
        self.present: set = set()       # (absent pad, index key)s a present_block has tested
        self.lane: sym.Var | None = None
        self.ops_seen: list[str] = []
        self.counter = 0
        self.local_size: tuple[int, ...] | None = None
        # C type of indices, work-item ids and loop counters: 64-bit where an index may pass
        # 2**31 - 1 (int arithmetic would wrap, and read or write outside the buffer)
        self.index_type = "long" if _largest(spec) > _INT_MAX else "int"

    # ---- emission helpers ----
    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line)

    @contextmanager
    def block(self, header: str, rolled: bool = False, unroll: int = 1):
        """A braced block; a loop's header gets the target's loop hints, and rolled loops
        (outside a register tile, where unrolled copies only cost build time: the W1 step's
        hidden-gradient product built in 1.1 s unrolled, 0.08 s rolled) also unroll(disable);
        `unroll` > 1 asks for that many copies of the body per iteration."""
        keyword, loop, rest = header.partition("for (")
        hints = self.target.loop_hints + (("unroll(disable)",) if rolled else ()) \
            + ((f"unroll_count({unroll})",) if unroll > 1 else ())
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

    def finished(self, value: Value) -> Value:
        """A reduction's or product's value as its dtype holds it: 16-bit floats accumulate in
        float registers (PyTorch's float accumulation) and are rounded once, here."""
        if not value.dtype.is_16_bit_float:
            return value
        return self.tmp(self.r.narrow(value.code, value.dtype, value.vec), value.dtype, value.vec)

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
        negated = _negation_of(node)
        if negated is not None:
            v = self.value(negated, index)
            return self.tmp(self.r.unary(Op.NEG, v, node.dtype), node.dtype, v.vec)
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
        """Values whose sine and cosine the kernel both computes: source -> (sin, cos). None
        on a target whose vector sin and cos need their far lanes taken apart (PoCL's): a
        sincos would skip that (a sin's gradient, fuzz seed 19410532)."""
        if self.target.far_trig:
            return {}
        trig: dict[Node, dict[Op, Node]] = {}
        for root, _ in self.spec.outputs:
            for node in kernel_graph(root, self.spec, lambda n: True):
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
        cos_value = Value(c, node.dtype, v.vec)
        if node.dtype.is_16_bit_float:      # each rounded, as a lone sin or cos is
            s = self.tmp(self.r.narrow(s.code, node.dtype, v.vec), node.dtype, v.vec)
            cos_value = self.tmp(self.r.narrow(c, node.dtype, v.vec), node.dtype, v.vec)
        self.scopes[-1][(cos, index.key())] = cos_value
        self.scopes[-1][(sin, index.key())] = s
        return s if node is sin else self.scopes[-1][(cos, index.key())]

    def _saw(self, op: Op) -> None:
        """Notes op for the kernel's name (lower() names kernels by their first ops)."""
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
        rows_buffer = reshaped_from(src)        # read at the same flat offsets
        if rows_buffer not in self.spec.inputs:
            return self._gathered_through_view(src, row, column)
        buf = self.param(rows_buffer, output=False)
        offset = f"({self.index_type})({row.code})*{src.shape[1]}"
        if self.lane is None or not column.depends_on(self.lane):
            code = self.r.load(buf, f"{offset}+{self.index_code(column)}", node.dtype)
            return self.tmp(code, node.dtype, False)
        base = self.lane_base(column)
        if base is None:
            return self._per_lane(node, index)
        code = self.r.vload(buf, f"{offset}+{self.index_code(base)}", node.dtype)
        return self.tmp(code, node.dtype, True)

    def _gathered_through_view(self, src: Node, row: Value, column: sym.Lin) -> Value:
        """src[row, column], src a view of a buffer (schedule.py: rows across it, x[:, i]),
        read through its index arithmetic with the row a variable of the kernel's."""
        name = f"g{self.counter}"
        self.counter += 1
        self.emit(f"{self.index_type} {name} = ({self.index_type})({row.code});")
        at = Index(src.shape, dims=(sym.var(name, 0, src.shape[0] - 1), column))
        return self.value(src, at)

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
        value = 0 if node.arg[1] == ABSENT else node.arg[1]
        fill = Value(self.r.literal(value, node.dtype), node.dtype, False)
        if any(never_true(b) for b in bounds):
            return fill
        if not bounds or (node, index.key()) in self.present:
            return self.value(node.src[0], src_index)
        if self.lane is not None and any(e.depends_on(self.lane) for e, _, _ in bounds):
            return self._per_lane(node, index)
        slot = len(self.lines)
        self.lines.append("")          # the declaration goes here once the type is known
        name = f"v{self.counter}"
        self.counter += 1
        with self.block(f"if ({self._inside(bounds)})"):
            inner = self.value(node.src[0], src_index)
            self.emit(f"{name} = {inner.code};")
        init = self.r.splat(fill) if inner.vec else fill.code
        self.lines[slot] = "  " * self.depth + f"{self.r.ctype(node.dtype, inner.vec)} {name} = {init};"
        return Value(name, node.dtype, inner.vec)

    def _inside(self, bounds) -> str:
        """C for: every index of bounds lies inside its range."""
        conds = []
        for expr, lo, hi in bounds:
            code = self.index_code(expr)
            conds += [f"{code}>={lo}"] if expr.lo < lo else []
            conds += [f"{code}<{hi}"] if expr.hi >= hi else []
        return " && ".join(conds)

    @contextmanager
    def present_block(self, node: Node, index: Index):
        """A block run only where node's element at index is no ABSENT fill (no block where it
        never is one), inside which reads of those absent pads skip their own test."""
        tested: list = []
        cond = self._presence(node, index, tested)
        if cond is None:
            yield
            return
        with self.block(f"if ({cond})"):
            self.present.update(tested)
            try:
                yield
            finally:
                self.present.difference_update(tested)

    def _presence(self, node: Node, index: Index, tested: list) -> str | None:
        """C for: node's element at index is no ABSENT fill (None: it never is one), seen
        through the views down to where node's value is loaded or computed."""
        while node not in self.spec.inputs and node.op in MOVEMENT:
            src_index, bounds = source_index(node, index)
            if node.op is Op.PAD and bounds:
                absent = node.arg[1] == ABSENT
                if any(never_true(b) for b in bounds):     # the fill everywhere
                    return "0" if absent else None
                inside = self._inside(bounds)
                below = self._presence(node.src[0], src_index, tested)
                if absent:
                    tested.append((node, index.key()))
                    return inside if below is None else f"{inside} && {below}"
                return None if below is None else f"(!({inside}) || ({below}))"
            node, index = node.src[0], src_index
        return None

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
            value = code if first else f"({code})%{n}"
            self.emit(f"{self.index_type} {flat}{axis} = {value};")
            dims.append(sym.var(f"{flat}{axis}", 0, n - 1))
            first = False
        return tuple(dims)
    def write(self) -> tuple[int, ...]:
        """Emits the kernel's body; returns its global size."""
        raise NotImplementedError

    # ---- the whole kernel ----
    def divisions(self) -> int:
        """Integer divisions and remainders in the body: the cost of its index arithmetic."""
        return sum(line.count("/") + line.count("%") for line in self.lines)

    def source(self, name: str) -> str:
        # an elementwise output may be given the buffer of an input it reads at its own index
        # (engine/donation.py). With one output its store comes after every load; with several,
        # one's store can precede another's use of the input, which restrict lets the compiler
        # load again after the store (Intel's did: fuzz seed 2408861)
        aliased = self.spec.kind == "elementwise" and len(self.spec.outputs) > 1
        restrict = "" if aliased or not self.restricts else " restrict"
        params = []
        for pname, node, output in self.params.values():
            storage = node.dtype.storage
            qual = "" if output else "const "
            params.append(f"__global {qual}{storage}*{restrict} {pname}")
        # Intel's compiler tries to widen vector code across work-items too, for nothing: the
        # hint says it is vectorised already (the W1 step's hidden-gradient product built in
        # 1.1 s without it, 0.08 s with it); and work-items far apart in memory widened
        # read and write with gathers and scatters (a cumsum along the rows of a (4096, 1024)
        # float32 tensor: 20-23 ms widened, 2.1-2.5 ms not, on an EPYC Zen 4)
        hint = (f"__attribute__((vec_type_hint(float{self.target.width}))) "
                if (self.vectorized or self.items_apart) and self.target.vector_hint else "")
        header = f"__kernel {hint}void {name}({', '.join(params)}) {{"
        prologue = ["  " + line for line in self.r.prologue()]
        if self.target.no_contraction:      # (before any declaration, as OpenCL C asks)
            prologue.insert(0, "#pragma OPENCL FP_CONTRACT OFF")
        body = [header, *prologue, *self.lines, "}"]
        return unaligned_typedefs(self.width) + self.r.definitions() + "\n".join(body) + "\n"


_INT_MAX = 2 ** 31 - 1


def _negation_of(node: Node) -> Node | None:
    """x where node is a signed integer x * -1, -1 * x or 0 - x, else None. Written as a
    negation (from an opaque 0): Intel's compiler turns each into 0 - x and then folds
    comparisons of that with 0 into comparisons of x, in vector code, as it did a plain
    negation's, so that sign(x * -1) was INT_MIN at INT_MIN, whose negation wraps to itself."""
    if node.op not in (Op.MUL, Op.SUB) or not node.dtype.is_signed or node.dtype.is_float:
        return None
    a, b = node.src
    if node.op is Op.SUB:
        return b if a.op is Op.CONST and a.arg == 0 else None
    if b.op is Op.CONST and b.arg == -1:
        return a
    if a.op is Op.CONST and a.arg == -1:
        return b
    return None


def _largest(spec: KernelSpec) -> int:
    """The most elements of any value the kernel indexes: its own shape's, its inputs' and
    every node's it computes, through its reductions (a reduction's source and a matmul's
    operands are indexed in full)."""
    seen, stack, largest = set(), [node for node, _ in spec.outputs], math.prod(spec.shape)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        largest = max(largest, math.prod(node.shape))
        if node not in spec.inputs:
            stack.extend(node.src)
    return largest


def kernel_graph(root: Node, spec: KernelSpec, through) -> list[Node]:
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

