"""Recurrence kernels (compiler/recurrences.py): a GRU's or an LSTM's loop over time,
forward or backward, a work-item per batch row (or per 2 or 4, below). The state carried
from step to step lives in the output: each step reads the slab the previous one wrote,
which the same work-item wrote, so no private array bounds the hidden size. Sources are
read through their views.

Where the hidden size is a multiple of the target's vector width, every loop over a step's
columns runs a vector at a time: the products with weight_hh as vectors of their outputs,
each a sum of rows of weight_hh (transposed, forward) scaled by one element of the state or
of its gradient, and the gates' exp and tanh too. Summing the lanes of one vector per output
instead made the GRU's forward kernel 3x slower than its backward one, and its gates in
scalar code took most of a step. A work-item runs 4 or 2 batch rows side by side where they
divide the batch and leave each core a work-item: each vector of weight_hh is loaded once for
all of them (W7's LSTM forward kernel 0.33-0.37 -> 0.22 ms, the GRU's 0.27 -> 0.16)."""
from __future__ import annotations

from contextlib import contextmanager

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
        self.node = node
        length, batch, _ = node.shape
        ix = self.index_type
        self.vectors = self.width > 1 and self._hidden() % self.width == 0
        # rows a work-item runs side by side, each vector of weight_hh loaded once for all
        self.rows = next(r for r in (4, 2, 1) if r == 1 or self.vectors and batch % r == 0
                         and batch // r >= self.target.cores)
        if self.rows == 1:
            self.emit(f"{ix} n = get_global_id(0);")
        else:
            self.emit(f"{ix} nb = get_global_id(0);")
            for r in range(self.rows):
                self.emit(f"{ix} n{r} = nb * {self.rows} + {r};")
        self._on_row("n")
        self.out = self.param(node, output=True)
        self.emit(f"#define OUT(s, c) {self.out}[{self._at('s', 'c')}]")
        {Op.GRU_STATES: self._gru_states, Op.GRU_GRADIENTS: self._gru_gradients,
         Op.LSTM_STATES: self._lstm_states,
         Op.LSTM_GRADIENTS: self._lstm_gradients}[node.op](node, length - 1)
        self.emit("#undef OUT")
        return (batch // self.rows,)

    def _on_row(self, name: str) -> None:
        """Addresses the batch row the C variable `name` holds from now on."""
        batch = self.node.shape[1]
        self.row_name = name
        self.row = sym.var(name, 0, batch - 1) if batch else sym.num(0)

    @contextmanager
    def _each_row(self):
        """The block inside once for each of the work-item's rows, as row `n`."""
        if self.rows == 1:
            yield
            return
        with self._loop("r", 0, self.rows):
            self.emit(f"{self.index_type} n = nb * {self.rows} + r;")
            yield

    def _hidden(self) -> int:
        """H, the state's size: the last dim of every node's second source."""
        return self.node.src[1].shape[-1]

    # ---- indexing ----
    def _at(self, slab: str, column: str) -> str:
        """The output's index of (slab, this work-item's row, column), C expressions."""
        _, batch, columns = self.node.shape
        return f"(({slab}) * {batch} + {self.row_name}) * {columns} + ({column})"

    def _loop(self, var: str, start, end, rolled: bool = True):
        return self.block(f"for ({self.index_type} {var} = {start}; {var} < {end}; {var}++)",
                          rolled=rolled)

    def _read(self, src: Node, *dims) -> str:
        """src at dims: sym expressions, numbers, or C variable names (each ranging over its
        dim); the batch row's dim is `self.row`."""
        def lin(d, n: int) -> sym.Lin:
            if isinstance(d, sym.Lin):
                return d
            return sym.num(d) if isinstance(d, int) else sym.var(d, 0, n - 1)
        index = Index(src.shape, dims=tuple(lin(d, n) for d, n in zip(dims, src.shape)))
        return self.value(src, index).code

    def _step(self, length: int, first_to_last: bool) -> None:
        """Declares the step t of the loop counter k."""
        self.emit(f"{self.index_type} t = {'k' if first_to_last else f'{length - 1} - k'};")

    # ---- a step's columns, one or a vector at a time ----
    @contextmanager
    def _columns(self, count: int):
        """A loop over columns 0..count-1 of a step, element by element or a vector at a
        time; inside, _col, _get and _put address column `first` + the loop's."""
        if self.vectors:
            blocks = count // self.width
            with self._each_row(), self._loop("jb", 0, blocks):
                with self.lanes_on() as lane:
                    first = sym.mul(sym.var("jb", 0, blocks - 1), self.width)
                    self._base, self._offset = sym.add(first, lane), f"jb * {self.width}"
                    yield self.r.ctype(self.node.dtype, True)
        else:
            with self._loop("j", 0, count):
                self._base, self._offset = sym.var("j", 0, count - 1), "j"
                yield self.node.dtype.ctype

    def _col(self, first: int) -> sym.Lin:
        """The loop's columns plus first, for reading a source."""
        return sym.add(self._base, sym.num(first))

    def _get(self, slab: str, first: int) -> str:
        """The output at slab, the loop's columns plus first."""
        index = self._at(slab, f"{first} + {self._offset}")
        if self.vectors:
            return self.r.vload(self.out, index, self.node.dtype)
        return f"{self.out}[{index}]"

    def _put(self, slab: str, first: int, value: str) -> None:
        index = self._at(slab, f"{first} + {self._offset}")
        if self.vectors:
            self.emit(self.r.vstore(self.out, index, Value(value, self.node.dtype, True)))
        else:
            self.emit(f"{self.out}[{index}] = {value};")

    def _sigmoid(self, x: str) -> str:
        one = f"(({self.node.dtype.ctype})1)"
        return f"{one} / ({one} + exp(-({x})))"

    # ---- the products with weight_hh ----
    def _product(self, count: int, rows: int, w: Node, source: str, init, slab: str,
                 first: int, finish=None) -> None:
        """Columns first..first+count-1 of slab: init(C type) at the columns, + the sum over
        i < rows of OUT(source, i) times w[i, column] (w: (rows, count)), then finish(acc)
        adds what else it adds. In vectors, up to four of them at once for each of the
        work-item's rows (at most eight sums): each vector's sum is a chain of rows dependent
        additions, which four chains hide the latency of (the LSTM's forward kernel took 0.63
        ms with one)."""
        if not self.vectors:
            with self._columns(count) as kind:
                self.emit(f"{kind} acc = {init(kind)};")
                with self._loop("i", 0, rows, rolled=False):
                    self.emit(f"acc += OUT({source}, i) * {self._read(w, 'i', self._col(0))};")
                if finish:
                    finish("acc")
                self._put(slab, first, "acc")
            return
        blocks, width, rows_side = count // self.width, self.width, self.rows
        chains = next(u for u in (4, 2, 1) if blocks % u == 0 and u * rows_side <= 8)
        kind = self.r.ctype(self.node.dtype, True)
        names = ["n"] if rows_side == 1 else [f"n{r}" for r in range(rows_side)]
        with self.block(f"for ({self.index_type} jb = 0; jb < {blocks}; jb += {chains})",
                        rolled=True):
            with self.lanes_on() as lane:
                def at(u: int, r: int) -> None:
                    """Sets _col, _get and _put to vector jb + u of row r."""
                    self._on_row(names[r])
                    first_column = sym.mul(sym.var("jb", 0, blocks - chains), width)
                    self._base = sym.add(sym.add(first_column, sym.num(u * width)), lane)
                    self._offset = f"(jb + {u}) * {width}"
                tiles = [(u, r) for u in range(chains) for r in range(rows_side)]
                for u, r in tiles:
                    at(u, r)
                    self.emit(f"{kind} acc{u}_{r} = {init(kind)};")
                with self._loop("i", 0, rows, rolled=False):
                    for r in range(rows_side):
                        self._on_row(names[r])
                        self.emit(f"{self.node.dtype.ctype} s{r} = "
                                  f"{self.out}[{self._at(source, 'i')}];")
                    for u in range(chains):
                        at(u, 0)
                        self.emit(f"{kind} w{u} = {self._read(w, 'i', self._col(0))};")
                        for r in range(rows_side):
                            self.emit(f"acc{u}_{r} += s{r} * w{u};")
                for u, r in tiles:
                    at(u, r)
                    if finish:
                        finish(f"acc{u}_{r}")
                    self._put(slab, first, f"acc{u}_{r}")
                self._on_row("n")

    def _next_output_gradient(self, d_out: Node, length: int, reverse: bool):
        """finish for _product: acc += the output gradient of the step the loop runs next, if
        one does."""
        def finish(acc: str) -> None:
            with self.block(f"if (k + 1 < {length})"):
                self.emit(f"{self.index_type} next = t {'+' if reverse else '-'} 1;")
                self.emit(f"{acc} += {self._read(d_out, 'next', self.row, self._col(0))};")
        return finish

    def _initial(self, slab: int, parts: list, width: int) -> None:
        """Slab's columns: the given sources (N, H) one after another, then zeros."""
        hidden = self._hidden()
        with self._each_row():
            for p, src in enumerate(parts):
                with self._loop("j", 0, hidden):
                    self.emit(f"OUT({slab}, {p * hidden} + j) = "
                              f"{self._read(src, self.row, 'j')};")
            with self._loop("j", len(parts) * hidden, width):
                self.emit(f"OUT({slab}, j) = 0;")

    def _first_output_gradient(self, d_out: Node, length: int, reverse: bool) -> None:
        """Slab L's columns 0..H-1 (the gradient carried) += the first step's output's."""
        first = 0 if reverse else length - 1
        with self._each_row(), self._loop("j", 0, self._hidden()):
            self.emit(f"OUT({length}, j) += {self._read(d_out, first, self.row, 'j')};")

    def _slabs(self, reverse: bool) -> None:
        """prev and cur: the slabs of the state step t starts from and of its own."""
        self.emit(f"{self.index_type} prev = t{' + 1' if reverse else ''};")
        self.emit(f"{self.index_type} cur = t{'' if reverse else ' + 1'};")

    # ---- GRU ----
    def _gru_states(self, node: Node, length: int) -> None:
        gates, h0, w_hh_t, b_hh = node.src
        reverse, hidden = node.arg, self._hidden()
        self._initial(length if reverse else 0, [h0], 4 * hidden)
        with self._loop("k", 0, length):
            self._step(length, not reverse)
            self._slabs(reverse)
            self._product(3 * hidden, hidden, w_hh_t, "prev",
                          lambda kind: self._read(b_hh, self._col(0)), "cur", hidden)
            with self._columns(hidden) as kind:
                g = [self._read(gates, "t", self.row, self._col(p * hidden)) for p in range(3)]
                self.emit(f"{kind} r = {self._sigmoid(g[0] + ' + ' + self._get('cur', hidden))};")
                self.emit(f"{kind} z = "
                          f"{self._sigmoid(g[1] + ' + ' + self._get('cur', 2 * hidden))};")
                self.emit(f"{kind} c = tanh({g[2]} + r * {self._get('cur', 3 * hidden)});")
                self._put("cur", 0, f"c + z * ({self._get('prev', 0)} - c)")

    def _gru_gradients(self, node: Node, length: int) -> None:
        to_hidden, z, d_out, d_h, w_hh = node.src
        reverse, hidden = node.arg, self._hidden()
        self._initial(length, [d_h], 4 * hidden)
        self._first_output_gradient(d_out, length, reverse)
        with self._loop("k", 0, length):
            self._step(length, reverse)
            with self._columns(hidden) as kind:
                self.emit(f"{kind} d = {self._get(str(length), 0)};")
                self._put("t", 3 * hidden, "d")
                for p in range(3):
                    factor = self._read(to_hidden, "t", self.row, self._col(p * hidden))
                    self._put("t", p * hidden, f"d * {factor}")
            self._product(hidden, 3 * hidden, w_hh, "t",
                          lambda kind: f"{self._get(str(length), 0)} * "
                                       f"{self._read(z, 't', self.row, self._col(0))}",
                          str(length), 0, self._next_output_gradient(d_out, length, reverse))

    # ---- LSTM ----
    def _lstm_states(self, node: Node, length: int) -> None:
        gates, h0, c0, w_hh_t, b_hh = node.src
        reverse, hidden = node.arg, self._hidden()
        self._initial(length if reverse else 0, [h0, c0], 6 * hidden)
        with self._loop("k", 0, length):
            self._step(length, not reverse)
            self._slabs(reverse)
            # the gates' pre-activations in columns 2H..6H, then each its activation
            self._product(4 * hidden, hidden, w_hh_t, "prev",
                          lambda kind: self._read(b_hh, self._col(0)), "cur", 2 * hidden)
            with self._columns(hidden) as kind:
                pre = [f"{self._read(gates, 't', self.row, self._col(p * hidden))} + "
                       f"{self._get('cur', (p + 2) * hidden)}" for p in range(4)]
                self.emit(f"{kind} i = {self._sigmoid(pre[0])};")
                self.emit(f"{kind} f = {self._sigmoid(pre[1])};")
                self.emit(f"{kind} g = tanh({pre[2]});")
                self.emit(f"{kind} o = {self._sigmoid(pre[3])};")
                self.emit(f"{kind} c = f * {self._get('prev', hidden)} + i * g;")
                for p, v in enumerate("ifgo"):
                    self._put("cur", (p + 2) * hidden, v)
                self._put("cur", hidden, "c")
                self._put("cur", 0, "o * tanh(c)")

    def _lstm_gradients(self, node: Node, length: int) -> None:
        states, d_out, d_h, d_c, w_hh = node.src
        reverse, hidden = node.arg, self._hidden()
        # slab L: the gradients carried, of h (columns 0..H-1) and c (H..2H-1)
        self._initial(length, [d_h, d_c], 4 * hidden)
        self._first_output_gradient(d_out, length, reverse)
        with self._loop("k", 0, length):
            self._step(length, reverse)
            self._slabs(reverse)

            def state(slab: str, column: int) -> str:
                return self._read(states, slab, self.row, self._col(column))
            with self._columns(hidden) as kind:
                i, f, g, o = (state("cur", (p + 2) * hidden) for p in range(4))
                self.emit(f"{kind} dh = {self._get(str(length), 0)};")
                self.emit(f"{kind} tc = tanh({state('cur', hidden)});")
                self.emit(f"{kind} dc = {self._get(str(length), hidden)} + "
                          f"dh * {o} * (1 - tc * tc);")
                self._put("t", 0, f"dc * {g} * {i} * (1 - {i})")
                self._put("t", hidden, f"dc * {state('prev', hidden)} * {f} * (1 - {f})")
                self._put("t", 2 * hidden, f"dc * {i} * (1 - {g} * {g})")
                self._put("t", 3 * hidden, f"dh * tc * {o} * (1 - {o})")
                self._put(str(length), hidden, f"dc * {f}")
            self._product(hidden, 4 * hidden, w_hh, "t", lambda kind: f"({kind})(0)",
                          str(length), 0, self._next_output_gradient(d_out, length, reverse))
