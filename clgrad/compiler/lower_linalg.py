"""Dense factorization kernels (compiler/factorizations.py): LU with partial pivoting,
Cholesky, Householder QR and the Jacobi methods (eigenvalues, one-sided for singular
values) run one work-item per matrix of the batch, in place in the output matrix;
TRISOLVE runs one work-item per right-hand column, by substitution. O(n^3) and O(n^2) per
work-item: meant for the small matrices of a batch, as LAPACK's unblocked routines. Sources
are read through their views (a transpose costs no copy)."""
from __future__ import annotations

import math
from dataclasses import replace

from . import symbolic as sym
from .addressing import Index
from .ir import Node
from .kernel import KernelSpec
from .kernel_writer import KernelWriter
from .ops import Op
from .target import Target


_JACOBI_SWEEPS = 60     # a bound only: sweeps stop once the off-diagonal part is rounding


class LinalgWriter(KernelWriter):
    # A factorization's updates (d -= l * l) are fused multiply-adds, as LAPACK's and
    # cuSOLVER's are on FMA hardware and as a CPU's OpenCL compiler fuses them: a GPU's
    # kernels otherwise say FP_CONTRACT OFF (target.py), and on an H200 a rank-deficient
    # Wishart draw's Cholesky residual was then always 0 (singular, drawn again in vain)
    # where LAPACK's is a rounding error of either sign.
    contracts = True

    def __init__(self, spec: KernelSpec, target: Target, width: int):
        super().__init__(spec, replace(target, no_contraction=not self.contracts), width)

    def write(self) -> tuple[int, ...]:
        ((node, _),) = self.spec.outputs
        self._saw(node.op)
        write = {Op.LU: self._lu, Op.CHOLESKY: self._cholesky, Op.TRISOLVE: self._trisolve,
                 Op.QR: self._qr, Op.EIGH: self._eigh, Op.SVD: self._svd}
        return write[node.op](node)

    def _read(self, src: Node, batch: tuple[sym.Lin, ...], row: str, col: str, n: int) -> str:
        """src[batch..., row, col] for C variables row and col in 0..n-1."""
        dims = (*batch, sym.var(row, 0, n - 1), sym.var(col, 0, src.shape[-1] - 1))
        return self.value(src, Index(src.shape, dims=dims)).code

    def _loop(self, var: str, start, end):
        """for (var = start; var < end; var++), rolled: these loops' bounds are not tiles."""
        return self.block(f"for ({self.index_type} {var} = {start}; {var} < {end}; {var}++)",
                          rolled=True)

    def _copy_in(self, x: Node, batch, at: str) -> None:
        """Writes this work-item's matrix of x through the macro `at`."""
        m = x.shape[-2]
        with self._loop("i", 0, m):
            with self._loop("j", 0, x.shape[-1]):
                self.emit(f"{at}(i, j) = {self._read(x, batch, 'i', 'j', m)};")

    def _identity(self, at: str, n: int) -> None:
        """Writes the n x n identity through the macro `at`."""
        with self._loop("i", 0, n):
            with self._loop("j", 0, n):
                self.emit(f"{at}(i, j) = i == j;")

    def _sort_columns(self, key, before: str, n: int, rows: int, ctype: str) -> None:
        """Selection sort of the n columns of AT's first `rows` rows by key(j) (C, where the
        keys live: swapped along), key(j) first when `key(j) before key(first)`."""
        with self._loop("i", 0, n):
            self.emit(f"{self.index_type} first = i;")
            with self._loop("j", "i + 1", n):
                self.emit(f"if ({key('j')} {before} {key('first')}) first = j;")
            self.emit("if (first == i) continue;")
            self.emit(f"{ctype} t = {key('i')}; {key('i')} = {key('first')}; "
                      f"{key('first')} = t;")
            with self._loop("k", 0, rows):
                self.emit("t = AT(k, i); AT(k, i) = AT(k, first); AT(k, first) = t;")

    def _matrices(self, node: Node) -> tuple[tuple[sym.Lin, ...], str]:
        """The batch dims of this work-item's matrix, and the output's C macro AT(i, j)."""
        idx, n, width = self.index_type, node.shape[-2], node.shape[-1]
        self.emit(f"{idx} m = get_global_id(0);")
        batch = self.dim_vars("m", node.shape[:-2])
        out = self.param(node, output=True)
        self.emit(f"#define AT(i, j) {out}[m * {n * width} + (i) * {width} + (j)]")
        return batch, node.dtype.ctype

    def _lu(self, node: Node) -> tuple[int, ...]:
        """Doolittle elimination with partial pivoting, as LAPACK's getf2: the first largest
        magnitude pivots; a zero pivot column is left as it is (U singular)."""
        (x,) = node.src
        n, idx = x.shape[-1], self.index_type
        batch, ctype = self._matrices(node)
        with self._loop("i", 0, n):
            with self._loop("j", 0, n):
                self.emit(f"AT(i, j) = {self._read(x, batch, 'i', 'j', n)};")
            self.emit(f"AT(i, {n}) = 0;")
            self.emit(f"AT(i, {n + 1}) = i;")
        with self._loop("k", 0, n):
            self.emit(f"{idx} p = k;")
            self.emit(f"{ctype} best = fabs(AT(k, k));")
            with self._loop("i", "k + 1", n):
                self.emit(f"{ctype} size = fabs(AT(i, k));")
                self.emit("if (size > best) { best = size; p = i; }")
            # every column swaps, the permutation's too (the pivot column is written next)
            with self._loop("j", 0, n + 2):
                self.emit(f"{ctype} t = AT(k, j); AT(k, j) = AT(p, j); AT(p, j) = t;")
            self.emit(f"AT(k, {n}) = p;")
            self.emit(f"{ctype} pivot = AT(k, k);")
            self.emit("if (pivot == 0) continue;")
            with self._loop("i", "k + 1", n):
                self.emit(f"{ctype} l = AT(i, k) / pivot;")
                self.emit("AT(i, k) = l;")
                with self._loop("j", "k + 1", n):
                    self.emit("AT(i, j) -= l * AT(k, j);")
        self.emit("#undef AT")
        return (math.prod(node.shape[:-2]),)

    def _cholesky(self, node: Node) -> tuple[int, ...]:
        """Cholesky-Banachiewicz, column by column from the source's lower triangle; a
        matrix that is not positive-definite gets NaN (or inf) from the square root on."""
        (x,) = node.src
        n = x.shape[-1]
        batch, ctype = self._matrices(node)
        with self._loop("j", 0, n):
            self.emit(f"{ctype} d = {self._read(x, batch, 'j', 'j', n)};")
            with self._loop("k", 0, "j"):
                self.emit("d -= AT(j, k) * AT(j, k);")
                self.emit("AT(k, j) = 0;")
            self.emit("d = sqrt(d);")
            self.emit("AT(j, j) = d;")
            with self._loop("i", "j + 1", n):
                self.emit(f"{ctype} s = {self._read(x, batch, 'i', 'j', n)};")
                with self._loop("k", 0, "j"):
                    self.emit("s -= AT(i, k) * AT(j, k);")
                self.emit("AT(i, j) = s / d;")
        self.emit("#undef AT")
        return (math.prod(node.shape[:-2]),)

    def _qr(self, node: Node) -> tuple[int, ...]:
        """Householder reflections as LAPACK's geqr2 and org2r: for each column j, v and tau
        with H = I - tau v v^T taking R's column j to (beta, 0, ...), beta of the opposite
        sign to the diagonal (no reflection when the column below it is already 0); R <- H R,
        Q <- Q H. v lives under R's diagonal until Q has used it."""
        (x,) = node.src
        m, n = x.shape[-2:]
        batch, ctype = self._matrices(node)
        self.emit(f"#define R(i, j) AT(i, {m} + (j))")
        self._copy_in(x, batch, "R")
        self._identity("AT", m)
        with self._loop("j", 0, min(m, n)):
            self.emit(f"{ctype} alpha = R(j, j), below = 0;")
            with self._loop("i", "j + 1", m):
                self.emit("below += R(i, j) * R(i, j);")
            self.emit("if (below == 0) continue;")
            self.emit(f"const {ctype} beta = -copysign(hypot(alpha, sqrt(below)), alpha);")
            self.emit(f"const {ctype} tau = (beta - alpha) / beta, scale = 1 / (alpha - beta);")
            with self._loop("i", "j + 1", m):
                self.emit("R(i, j) *= scale;")
            with self._loop("c", "j + 1", n):
                self._reflect("R(j, c)", "R(i, c)", ctype, m)
            with self._loop("r", 0, m):
                self._reflect("AT(r, j)", "AT(r, i)", ctype, m)
            self.emit("R(j, j) = beta;")
            with self._loop("i", "j + 1", m):
                self.emit("R(i, j) = 0;")
        self.emit("#undef R")
        self.emit("#undef AT")
        return (math.prod(node.shape[:-2]),)

    def _eigh(self, node: Node) -> tuple[int, ...]:
        """Cyclic Jacobi: rotations zero each off-diagonal pair of D = V^T A V in turn (A read
        from its lower triangle), sweeps until what is off the diagonal is below rounding
        (quadratic convergence: a handful of sweeps), then the eigenvalues sorted ascending
        with their vectors."""
        (x,) = node.src
        n = x.shape[-1]
        batch, ctype = self._matrices(node)
        eps = "DBL_EPSILON" if ctype == "double" else "FLT_EPSILON"
        self.emit(f"#define D(i, j) AT(i, {n} + (j))")
        with self._loop("i", 0, n):
            with self._loop("j", 0, "i + 1"):
                self.emit(f"D(i, j) = D(j, i) = {self._read(x, batch, 'i', 'j', n)};")
        self._identity("AT", n)
        with self.block(f"for (int sweep = 0; sweep < {_JACOBI_SWEEPS}; sweep++)", rolled=True):
            self.emit(f"{ctype} off = 0, all = 0;")
            with self._loop("i", 0, n):
                with self._loop("j", 0, n):
                    self.emit("all += D(i, j) * D(i, j);")
                    self.emit("if (i != j) off += D(i, j) * D(i, j);")
            self.emit(f"if (!(off > {eps} * {eps} * all)) break;")
            with self._loop("p", 0, n):
                with self._loop("q", "p + 1", n):
                    self._rotation(ctype, n)
        self._sort_columns(lambda j: f"D({j}, {j})", "<", n, n, ctype)
        self.emit("#undef D")
        self.emit("#undef AT")
        return (math.prod(node.shape[:-2]),)

    def _svd(self, node: Node) -> tuple[int, ...]:
        """One-sided Jacobi (Hestenes): rotations of U's column pairs (U = A V, V = I at
        first) until every pair is orthogonal to rounding; then S = the column norms, U's
        columns normalized, all sorted by S descending."""
        (x,) = node.src
        m, n = x.shape[-2:]
        batch, ctype = self._matrices(node)
        eps = "DBL_EPSILON" if ctype == "double" else "FLT_EPSILON"
        self.emit(f"#define V(i, j) AT({m} + (i), j)")
        self._copy_in(x, batch, "AT")
        with self._loop("i", 0, m + n):
            self.emit(f"AT(i, {n}) = 0;")
        self._identity("V", n)
        with self.block(f"for (int sweep = 0; sweep < {_JACOBI_SWEEPS}; sweep++)", rolled=True):
            self.emit("int rotated = 0;")
            with self._loop("p", 0, n):
                with self._loop("q", "p + 1", n):
                    self.emit(f"{ctype} alpha = 0, beta = 0, gamma = 0;")
                    with self._loop("k", 0, m):
                        self.emit("alpha += AT(k, p) * AT(k, p);")
                        self.emit("beta += AT(k, q) * AT(k, q);")
                        self.emit("gamma += AT(k, p) * AT(k, q);")
                    self.emit(f"if (!(fabs(gamma) > {eps} * sqrt(alpha * beta))) continue;")
                    self.emit("rotated = 1;")
                    self.emit(f"const {ctype} zeta = (beta - alpha) / (2 * gamma);")
                    self._rotate(ctype, "zeta", ((m, "AT(k, p)", "AT(k, q)"),
                                                 (n, "V(k, p)", "V(k, q)")))
            self.emit("if (!rotated) break;")
        with self._loop("j", 0, n):
            self.emit(f"{ctype} norm = 0;")
            with self._loop("k", 0, m):
                self.emit("norm += AT(k, j) * AT(k, j);")
            self.emit("norm = sqrt(norm);")
            self.emit(f"AT(j, {n}) = norm;")
            self.emit("if (norm == 0) continue;")
            with self._loop("k", 0, m):
                self.emit("AT(k, j) /= norm;")
        self._sort_columns(lambda j: f"AT({j}, {n})", ">", n, m + n, ctype)
        self.emit("#undef V")
        self.emit("#undef AT")
        return (math.prod(node.shape[:-2]),)

    def _rotate(self, ctype: str, ratio: str, pairs) -> None:
        """The Jacobi rotation (c, s) of tangent t = sign(ratio) / (|ratio| + sqrt(ratio^2 + 1))
        applied to each (length, column p, column q): p <- c p - s q, q <- s p + c q."""
        self.emit(f"const {ctype} t = ({ratio} < 0 ? -1 : 1) / (fabs({ratio}) + "
                  f"sqrt({ratio} * {ratio} + 1));")
        self.emit(f"const {ctype} c = 1 / sqrt(t * t + 1), s = t * c;")
        for length, a, b in pairs:
            with self._loop("k", 0, length):
                self.emit(f"const {ctype} first = {a}, second = {b};")
                self.emit(f"{a} = c * first - s * second;")
                self.emit(f"{b} = s * first + c * second;")

    def _rotation(self, ctype: str, n: int) -> None:
        """The rotation J with (J^T D J)[p, q] = 0, applied: D <- J^T D J, V <- V J."""
        self.emit(f"const {ctype} apq = D(p, q);")
        self.emit("if (apq == 0) continue;")
        self.emit(f"const {ctype} theta = (D(q, q) - D(p, p)) / (2 * apq);")
        self._rotate(ctype, "theta", ((n, "D(k, p)", "D(k, q)"), (n, "D(p, k)", "D(q, k)"),
                                      (n, "AT(k, p)", "AT(k, q)")))

    def _reflect(self, first: str, rest: str, ctype: str, m: int) -> None:
        """One vector y (first element `first`, the others `rest` at i) becomes y - tau v
        (v . y), v = (1, R(j+1, j), ...)."""
        self.emit(f"{ctype} dot = {first};")
        with self._loop("i", "j + 1", m):
            self.emit(f"dot += R(i, j) * {rest};")
        self.emit(f"{first} -= tau * dot;")
        with self._loop("i", "j + 1", m):
            self.emit(f"{rest} -= tau * dot * R(i, j);")

    def _trisolve(self, node: Node) -> tuple[int, ...]:
        """Forward (or back) substitution down one column c of B: X's rows in the order
        op(A)'s triangle allows, each from the rows solved before it."""
        a, b = node.src
        upper, unit, transposed = node.arg
        backward = upper != transposed          # op(A) upper: the last row first
        *batch_shape, n, k = node.shape
        idx, ctype = self.index_type, node.dtype.ctype
        self.emit(f"{idx} w = get_global_id(0), m = w / {k}, c = w % {k};")
        batch = (*self.dim_vars("m", tuple(batch_shape)), sym.var("c", 0, k - 1))
        out = self.param(node, output=True)
        self.emit(f"#define X(i) {out}[m * {n * k} + (i) * {k} + c]")
        order = (lambda step: f"{n - 1} - {step}") if backward else (lambda step: step)
        rows, cols = ("j", "i") if transposed else ("i", "j")
        with self._loop("s", 0, n):
            self.emit(f"{idx} i = {order('s')};")
            b_dims = (*batch[:-1], sym.var("i", 0, n - 1), batch[-1])
            self.emit(f"{ctype} acc = {self.value(b, Index(b.shape, dims=b_dims)).code};")
            with self._loop("t", 0, "s"):
                self.emit(f"{idx} j = {order('t')};")
                self.emit(f"acc -= {self._read(a, batch[:-1], rows, cols, n)} * X(j);")
            divisor = "" if unit else f" / {self._read(a, batch[:-1], 'i', 'i', n)}"
            self.emit(f"X(i) = acc{divisor};")
        self.emit("#undef X")
        return (math.prod(node.shape[:-2]) * k,)
