"""The kernels of compiler/ldl.py: LDL, LAPACK's sytf2 (lower) with Bunch-Kaufman pivoting, a
work-item per matrix in place in its output; LDL_SOLVE, LAPACK's sytrs, a work-item per
right-hand column. The same steps, in the same order, as ldl.py's NumPy meaning."""
from __future__ import annotations

import math

from . import symbolic as sym
from .addressing import Index
from .ldl import alpha_of
from .ir import Node
from .lower_linalg import LinalgWriter
from .ops import Op


class LdlWriter(LinalgWriter):
    # no multiply and add fused into one rounding: pivots are chosen by comparing values
    # rounded as LAPACK rounds them (twice), and a tie decides between rows
    contracts = False

    def write(self) -> tuple[int, ...]:
        ((node, _),) = self.spec.outputs
        self._saw(node.op)
        return self._ldl(node) if node.op is Op.LDL else self._ldl_solve(node)

    def _swap(self, ctype: str, a: str, b: str) -> None:
        self.emit(f"{{ const {ctype} t = {a}; {a} = {b}; {b} = t; }}")

    def _largest(self, var: str, start: str, end: str, at, ctype: str) -> None:
        """var = the first NaN of at(i) for i in [start, end), else the first of the largest
        magnitude (MKL's i?amax); start < end."""
        self.emit(f"{self.index_type} {var} = {start};")
        with self.block("", rolled=False):
            self.emit(f"{ctype} best = fabs({at(start)});")
            with self.block(f"for ({self.index_type} i = {start} + 1; i < {end} && best == best; "
                            f"i++)", rolled=True):
                self.emit(f"const {ctype} size = fabs({at('i')});")
                self.emit(f"if (size != size || size > best) {{ best = size; {var} = i; }}")

    def _ldl(self, node: Node) -> tuple[int, ...]:
        (x,) = node.src
        n, idx = x.shape[-1], self.index_type
        batch, ctype = self._matrices(node)
        alpha = repr(alpha_of(node.dtype.np)) + ("" if ctype == "double" else "f")
        with self._loop("i", 0, n):
            with self._loop("j", 0, n):
                self.emit(f"AT(i, j) = j <= i ? {self._read(x, batch, 'i', 'j', n)} : 0;")
            self.emit(f"AT(i, {n}) = 0;")
            self.emit(f"AT(i, {n + 1}) = 0;")
        self.emit(f"const {ctype} alpha = {alpha};")
        self.emit(f"{idx} kstep = 1;")
        with self.block(f"for ({idx} k = 0; k < {n}; k += kstep)", rolled=True):
            self.emit("kstep = 1;")
            self.emit(f"{idx} kp = k, imax = k;")
            self.emit(f"const {ctype} absakk = fabs(AT(k, k));")
            self.emit(f"{ctype} colmax = 0;")
            with self.block(f"if (k < {n - 1})"):
                self._largest("first", "k + 1", str(n), lambda i: f"AT({i}, k)", ctype)
                self.emit("imax = first;")
                self.emit("colmax = fabs(AT(imax, k));")
            with self.block("if ((absakk > colmax ? absakk : colmax) == 0)"):
                self.emit(f"AT(k, {n + 1}) = 1;")       # a zero column: info, no step
            with self.block("else"):
                with self.block("if (!(absakk >= alpha * colmax))"):
                    self._choose(n, ctype)
                self._interchange(n, ctype)
                self._eliminate(n, ctype)
            self.emit(f"const {ctype} p = kstep == 1 ? kp + 1 : -(kp + 1);")
            self.emit(f"AT(k, {n}) = p;")
            self.emit(f"if (kstep == 2) AT(k + 1, {n}) = p;")
        self.emit("#undef AT")
        return (math.prod(node.shape[:-2]),)

    def _choose(self, n: int, ctype: str) -> None:
        """kp and kstep where column k's diagonal is small: row imax's largest off-diagonal
        magnitude (rowmax) decides between a 1x1 pivot (k or imax) and a 2x2 one."""
        self._largest("jmax", "k", "imax", lambda j: f"AT(imax, {j})", ctype)
        self.emit(f"{ctype} rowmax = fabs(AT(imax, jmax));")
        with self.block(f"if (imax < {n - 1})"):
            self._largest("below", "imax + 1", str(n), lambda i: f"AT({i}, imax)", ctype)
            self.emit(f"const {ctype} other = fabs(AT(below, imax));")
            self.emit("rowmax = rowmax > other ? rowmax : other;")
        self.emit("if (absakk >= alpha * colmax * (colmax / rowmax)) kp = k;")
        self.emit("else if (fabs(AT(imax, imax)) >= alpha * rowmax) kp = imax;")
        self.emit("else { kp = imax; kstep = 2; }")

    def _interchange(self, n: int, ctype: str) -> None:
        """Rows and columns kk and kp of the trailing lower triangle swapped."""
        self.emit(f"const {self.index_type} kk = k + kstep - 1;")
        with self.block("if (kp != kk)"):
            with self._loop("i", "kp + 1", n):
                self._swap(ctype, "AT(i, kk)", "AT(i, kp)")
            with self._loop("j", "kk + 1", "kp"):
                self._swap(ctype, "AT(j, kk)", "AT(kp, j)")
            self._swap(ctype, "AT(kk, kk)", "AT(kp, kp)")
            with self.block("if (kstep == 2)"):
                self._swap(ctype, "AT(k + 1, k)", "AT(kp, k)")

    def _eliminate(self, n: int, ctype: str) -> None:
        """The trailing update of the 1x1 or 2x2 block at k, its multipliers stored (dsyr's
        quick return when 1/D is 0, and its skip of columns whose multiplier is 0)."""
        with self.block("if (kstep == 1)"):
            self.emit(f"const {ctype} d11 = 1 / AT(k, k);")
            with self.block(f"if (d11 != 0) for ({self.index_type} j = k + 1; j < {n}; j++)",
                            rolled=True):
                self.emit(f"const {ctype} xj = AT(j, k);")
                self.emit("if (xj == 0) continue;")
                self.emit(f"const {ctype} temp = -d11 * xj;")
                with self._loop("i", "j", n):
                    self.emit("AT(i, j) += AT(i, k) * temp;")
            with self._loop("i", "k + 1", n):
                self.emit("AT(i, k) *= d11;")
        with self.block(f"else if (k < {n - 2})"):
            self.emit(f"{ctype} d21 = AT(k + 1, k);")
            self.emit(f"const {ctype} d11 = AT(k + 1, k + 1) / d21, d22 = AT(k, k) / d21;")
            self.emit("d21 = (1 / (d11 * d22 - 1)) / d21;")
            with self._loop("j", "k + 2", n):
                self.emit(f"const {ctype} wk = d21 * (d11 * AT(j, k) - AT(j, k + 1));")
                self.emit(f"const {ctype} wkp1 = d21 * (d22 * AT(j, k + 1) - AT(j, k));")
                with self._loop("i", "j", n):
                    self.emit("AT(i, j) = AT(i, j) - AT(i, k) * wk - AT(i, k + 1) * wkp1;")
                self.emit("AT(j, k) = wk;")
                self.emit("AT(j, k + 1) = wkp1;")

    def _ldl_solve(self, node: Node) -> tuple[int, ...]:
        ld, pivots, b = node.src
        *batch_shape, n, k = node.shape
        idx, ctype = self.index_type, node.dtype.ctype
        self.emit(f"{idx} w = get_global_id(0), m = w / {k}, c = w % {k};")
        batch = self.dim_vars("m", tuple(batch_shape))
        out = self.param(node, output=True)
        self.emit(f"#define X(i) {out}[m * {n * k} + (i) * {k} + c]")
        column = sym.var("c", 0, k - 1)
        with self._loop("i", 0, n):
            b_dims = (*batch, sym.var("i", 0, n - 1), column)
            self.emit(f"X(i) = {self.value(b, Index(b.shape, dims=b_dims)).code};")

        def ld_at(row: str, col: str) -> str:
            return self._read(ld, batch, row, col, n)

        def pivot() -> str:
            dims = (*batch, sym.var("k", 0, n - 1))
            return self.value(pivots, Index(pivots.shape, dims=dims)).code

        self.emit(f"{idx} step = 1;")
        with self.block(f"for ({idx} k = 0; k < {n}; k += step)", rolled=True):
            self.emit(f"const {idx} p = {pivot()};")
            with self.block("if (p > 0)"):
                self.emit("step = 1;")
                self.emit(f"if (p - 1 != k) {{ const {ctype} t = X(k); X(k) = X(p - 1); "
                          f"X(p - 1) = t; }}")
                self._less_multiples("k", "k + 1", n, ctype, ld_at)
                self.emit(f"X(k) *= 1 / {ld_at('k', 'k')};")
            with self.block("else"):
                self.emit(f"if (k + 1 >= {n}) break;")
                self.emit("step = 2;")
                self.emit(f"const {idx} k1 = k + 1, kp = -p - 1;")
                self.emit(f"if (kp != k1) {{ const {ctype} t = X(k1); X(k1) = X(kp); "
                          f"X(kp) = t; }}")
                self._less_multiples("k", "k + 2", n, ctype, ld_at)
                self._less_multiples("k1", "k + 2", n, ctype, ld_at)
                self.emit(f"const {ctype} akm1k = {ld_at('k1', 'k')};")
                self.emit(f"const {ctype} akm1 = {ld_at('k', 'k')} / akm1k, "
                          f"ak = {ld_at('k1', 'k1')} / akm1k, denom = akm1 * ak - 1;")
                self.emit(f"const {ctype} bkm1 = X(k) / akm1k, bk = X(k1) / akm1k;")
                self.emit("X(k) = (ak * bkm1 - bk) / denom;")
                self.emit("X(k1) = (akm1 * bk - bkm1) / denom;")
        with self.block(f"for ({idx} k = {n - 1}; k >= 0; k -= step)", rolled=True):
            self.emit(f"const {idx} p = {pivot()};")
            self.emit("step = p < 0 && k > 0 ? 2 : 1;")
            self._less_dot("k", n, ctype, ld_at)
            with self.block("if (step == 2)"):
                self.emit(f"const {idx} k0 = k - 1;")
                self._less_dot("k0", n, ctype, ld_at)
            self.emit(f"const {idx} kp = (p > 0 ? p : -p) - 1;")
            self.emit(f"if (kp != k) {{ const {ctype} t = X(k); X(k) = X(kp); X(kp) = t; }}")
        self.emit("#undef X")
        return (math.prod(node.shape[:-2]) * k,)

    def _less_multiples(self, row: str, start: str, n: int, ctype: str, ld_at) -> None:
        """X[start:] -= L[start:, row] X[row], skipped where X[row] is 0 (dger)."""
        with self.block(""):
            self.emit(f"const {ctype} scale = X({row});")
            with self.block(f"if (scale != 0) for ({self.index_type} i = {start}; i < {n}; "
                            f"i++)", rolled=True):
                self.emit(f"X(i) += {ld_at('i', row)} * -scale;")

    def _less_dot(self, row: str, n: int, ctype: str, ld_at) -> None:
        """X[row] -= L[k+1:, row] . X[k+1:] (dgemv)."""
        with self.block(""):
            self.emit(f"{ctype} dot = 0;")
            with self._loop("i", "k + 1", n):
                self.emit(f"dot += X(i) * {ld_at('i', row)};")
            self.emit(f"X({row}) -= dot;")
