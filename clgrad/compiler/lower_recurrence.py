"""Recurrence kernels (compiler/recurrences.py): a GRU layer's loop over time, forward
(GRU_STATES) or backward (GRU_GRADIENTS), a work-item per batch row. The state carried from
step to step lives in the output: each step reads the slab the previous one wrote, which the
same work-item wrote, so no private array bounds the hidden size. Sources are read through
their views.

A step's product with weight_hh is most of the work: where the hidden size is a multiple of
the target's vector width it is written in vectors of its outputs, each a sum of rows of
weight_hh (transposed, forward) scaled by one element of the state (or of its gradient).
Summing the lanes of one vector per output instead made the forward kernel 3x slower than
the backward one."""
from __future__ import annotations

from . import symbolic as sym
from .addressing import Index
from .ir import Node
from .kernel_writer import KernelWriter
from .ops import Op
from .render import Value


class RecurrenceWriter(KernelWriter):
    def write(self) -> tuple[int, ...]:
        ((node, _),) = self.spec.outputs
        self._saw(node.op)
        length, batch, columns = node.shape
        self.node, self.hidden = node, columns // 4
        self.vectors = self.width > 1 and self.hidden % self.width == 0
        self.emit(f"{self.index_type} n = get_global_id(0);")
        self.row = sym.var("n", 0, batch - 1) if batch > 1 else sym.num(0)
        self.out = self.param(node, output=True)
        self.emit(f"#define OUT(s, c) {self.out}[{self._at('s', 'c')}]")
        self.ctype = node.dtype.ctype
        if node.op is Op.GRU_STATES:
            self._states(node, length - 1)
        else:
            self._gradients(node, length - 1)
        self.emit("#undef OUT")
        return (batch,)

    def _at(self, slab: str, column: str) -> str:
        """The output's index of (slab, this work-item's row, column), C expressions."""
        _, batch, columns = self.node.shape
        return f"(({slab}) * {batch} + n) * {columns} + ({column})"

    def _loop(self, var: str, start, end, rolled: bool = True):
        return self.block(f"for ({self.index_type} {var} = {start}; {var} < {end}; {var}++)",
                          rolled=rolled)

    def _read(self, src: Node, *dims) -> str:
        """src at dims: C variable names (each with its range), numbers, or (name, offset)
        for the variable plus a constant; the batch row's dim is `self.row`."""
        def lin(d, n: int) -> sym.Lin:
            if isinstance(d, sym.Lin):
                return d
            if isinstance(d, int):
                return sym.num(d)
            name, offset = d if isinstance(d, tuple) else (d, 0)
            return sym.add(sym.var(name, 0, n - 1 - offset), sym.num(offset)) \
                if n - offset > 1 else sym.num(offset)
        index = Index(src.shape, dims=tuple(lin(d, n) for d, n in zip(dims, src.shape)))
        return self.value(src, index).code

    def _step(self, length: int, first_to_last: bool) -> None:
        """Declares the step t of the loop counter k."""
        self.emit(f"{self.index_type} t = {'k' if first_to_last else f'{length - 1} - k'};")

    def _states(self, node: Node, length: int) -> None:
        gates, h0, w_hh_t, b_hh = node.src
        reverse, hidden, ct = node.arg, self.hidden, self.ctype
        initial = length if reverse else 0
        with self._loop("j", 0, hidden):
            self.emit(f"OUT({initial}, j) = {self._read(h0, self.row, 'j')};")
        with self._loop("j", hidden, 4 * hidden):
            self.emit(f"OUT({initial}, j) = 0;")
        with self._loop("k", 0, length):
            self._step(length, not reverse)
            # the slab the previous state is in, and this step's
            self.emit(f"{self.index_type} prev = t{' + 1' if reverse else ''};")
            self.emit(f"{self.index_type} cur = t{'' if reverse else ' + 1'};")
            if self.vectors:
                self._projection_vectors(w_hh_t, b_hh)
            else:
                with self._loop("i", 0, 3 * hidden):
                    self.emit(f"{ct} acc = {self._read(b_hh, 'i')};")
                    with self._loop("j", 0, hidden, rolled=False):
                        self.emit(f"acc += {self._read(w_hh_t, 'j', 'i')} * OUT(prev, j);")
                    self.emit(f"OUT(cur, {hidden} + i) = acc;")
            self._new_state(gates)

    def _new_state(self, gates: Node) -> None:
        """Step t's state from its gates and projection (slab cur) and the previous state
        (slab prev), element by element or a vector at a time: exp and tanh are most of a
        step's time in scalar code."""
        hidden, dtype = self.hidden, self.node.dtype
        one = f"(({dtype.ctype})1)"
        if self.vectors:
            blocks, width = hidden // self.width, self.width
            loop, kind = self._loop("jb", 0, blocks), self.r.ctype(dtype, True)
        else:
            loop, kind = self._loop("j", 0, hidden), dtype.ctype
        with loop:
            if self.vectors:
                with self.lanes_on() as lane:
                    columns = self._lanes_of("jb", blocks, lane)
                    g = [self._read(gates, "t", self.row, sym.add(columns, sym.num(p * hidden)))
                         for p in range(3)]

                def out(slab: str, first: int) -> str:
                    return self.r.vload(self.out, self._at(slab, f"{first} + jb * {width}"), dtype)
            else:
                g = [self._read(gates, "t", self.row, ("j", p * hidden)) for p in range(3)]

                def out(slab: str, first: int) -> str:
                    return f"OUT({slab}, {first} + j)"
            self.emit(f"{kind} r = {one} / ({one} + exp(-({g[0]} + {out('cur', hidden)})));")
            self.emit(f"{kind} z = {one} / ({one} + exp(-({g[1]} + {out('cur', 2 * hidden)})));")
            self.emit(f"{kind} c = tanh({g[2]} + r * {out('cur', 3 * hidden)});")
            self.emit(f"{kind} h = c + z * ({out('prev', 0)} - c);")
            if self.vectors:
                self.emit(self.r.vstore(self.out, self._at("cur", f"jb * {width}"),
                                        Value("h", dtype, True)))
            else:
                self.emit("OUT(cur, j) = h;")

    def _gradients(self, node: Node, length: int) -> None:
        to_hidden, z, d_out, d_h, w_hh = node.src
        reverse, hidden, ct = node.arg, self.hidden, self.ctype
        first = 0 if reverse else length - 1
        with self._loop("j", 0, hidden):
            self.emit(f"OUT({length}, j) = {self._read(d_h, self.row, 'j')} + "
                      f"{self._read(d_out, first, self.row, 'j')};")
        with self._loop("j", hidden, 4 * hidden):
            self.emit(f"OUT({length}, j) = 0;")
        with self._loop("k", 0, length):
            self._step(length, reverse)
            with self._loop("j", 0, hidden):
                self.emit(f"{ct} d = OUT({length}, j);")
                self.emit(f"OUT(t, {3 * hidden} + j) = d;")
                for part in range(3):
                    factor = self._read(to_hidden, "t", self.row, ("j", part * hidden))
                    self.emit(f"OUT(t, {part * hidden} + j) = d * {factor};")
            if self.vectors:
                self._carried_vectors(z, d_out, w_hh, length, reverse)
                return
            with self._loop("j", 0, hidden):
                self.emit(f"{ct} acc = OUT({length}, j) * {self._read(z, 't', self.row, 'j')};")
                with self._loop("i", 0, 3 * hidden, rolled=False):
                    self.emit(f"acc += OUT(t, i) * {self._read(w_hh, 'i', 'j')};")
                with self.block(f"if (k + 1 < {length})"):
                    self.emit(f"{self.index_type} next = t {'+' if reverse else '-'} 1;")
                    self.emit(f"acc += {self._read(d_out, 'next', self.row, 'j')};")
                self.emit(f"OUT({length}, j) = acc;")

    def _projection_vectors(self, w_hh_t: Node, b_hh: Node) -> None:
        """The state's projection, a vector of its columns at a time: bias_hh + the previous
        state times weight_hh transposed."""
        blocks, dtype = 3 * self.hidden // self.width, self.node.dtype
        vec = self.r.ctype(dtype, True)
        with self._loop("ib", 0, blocks):
            with self.lanes_on() as lane:
                columns = self._lanes_of("ib", blocks, lane)
                self.emit(f"{vec} acc = {self._read(b_hh, columns)};")
                with self._loop("j", 0, self.hidden, rolled=False):
                    self.emit(f"acc += ({vec})(OUT(prev, j)) * {self._read(w_hh_t, 'j', columns)};")
            self.emit(self.r.vstore(self.out, self._at("cur", f"{self.hidden} + ib * {self.width}"),
                                    Value("acc", dtype, True)))

    def _carried_vectors(self, z: Node, d_out: Node, w_hh: Node, length: int,
                         reverse: bool) -> None:
        """The gradient carried to the previous step, a vector of its columns at a time:
        d * z + d_hidden w_hh (+ the previous step's output gradient)."""
        blocks, dtype = self.hidden // self.width, self.node.dtype
        vec = self.r.ctype(dtype, True)
        with self._loop("jb", 0, blocks):
            carried = self._at(str(length), f"jb * {self.width}")
            with self.lanes_on() as lane:
                columns = self._lanes_of("jb", blocks, lane)
                self.emit(f"{vec} acc = {self.r.vload(self.out, carried, dtype)} * "
                          f"{self._read(z, 't', self.row, columns)};")
                with self._loop("i", 0, 3 * self.hidden, rolled=False):
                    self.emit(f"acc += ({vec})(OUT(t, i)) * {self._read(w_hh, 'i', columns)};")
                with self.block(f"if (k + 1 < {length})"):
                    self.emit(f"{self.index_type} next = t {'+' if reverse else '-'} 1;")
                    self.emit(f"acc += {self._read(d_out, 'next', self.row, columns)};")
            self.emit(self.r.vstore(self.out, carried, Value("acc", dtype, True)))

    def _lanes_of(self, block: str, blocks: int, lane: sym.Lin) -> sym.Lin:
        """Column block * width + lane, for the C variable block in 0..blocks-1."""
        first = sym.mul(sym.var(block, 0, blocks - 1), self.width) if blocks > 1 else sym.num(0)
        return sym.add(first, lane)
