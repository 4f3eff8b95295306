"""Sort kernels: one work-item per row of a contiguous source, sorting along its last axis with
heapsort, in place in the output row: O(n log n), no scratch memory. SORT sorts the values
themselves; ARGSORT sorts the positions 0..n-1 by the values they hold, ties broken by the
position, so its order is the stable one (the keys are all distinct) whatever the algorithm.
ARGTOPK keeps ARGSORT's first k positions only, by insertion into a sorted list of k as the
row passes: O(n) where few values enter it (topk of a small k), O(n k) at worst.
A NaN sorts as the largest value, as in PyTorch."""
from __future__ import annotations

import math

from .kernel_writer import KernelWriter
from .ops import Op
from .render import Value


class SortWriter(KernelWriter):
    def write(self) -> tuple[int, ...]:
        ((node, _),) = self.spec.outputs
        self.items_apart = True     # a work-item's row each: not widened across work-items
        if node.op is Op.ARGTOPK:
            return self._select(node)
        (src,) = node.src
        n = node.shape[-1]
        rows = math.prod(node.shape[:-1])
        descending = node.arg
        self._saw(node.op)
        out, x = self.param(node, output=True), self.param(src, output=False)
        dtype, ctype, idx = src.dtype, src.dtype.ctype, self.index_type
        r = self.r
        self.emit(f"{idx} base = ({idx})get_global_id(0) * {n};")
        if node.op is Op.ARGSORT:
            self.emit(f"for ({idx} i = 0; i < {n}; i++) {out}[base + i] = i;")
            key = f"{r.load(x, f'base + {out}[base + (k)]', dtype)}"
            swap = (f"{{ long t = {out}[base + (a)]; {out}[base + (a)] = {out}[base + (b)]; "
                    f"{out}[base + (b)] = t; }}")
            tie = f"({out}[base + (a)] < {out}[base + (b)])"
        else:
            with self.block(f"for ({idx} i = 0; i < {n}; i++)"):
                element = Value(r.load(x, "base + i", dtype), dtype, False)
                self.emit(r.store(out, "base + i", element))
            key = r.load(out, "base + (k)", dtype)
            load = {k: r.load(out, f"base + ({k})", dtype) for k in "ab"}
            swap = (f"{{ {ctype} t = {load['a']}; "
                    f"{r.store(out, 'base + (a)', Value(load['b'], dtype, False))} "
                    f"{r.store(out, 'base + (b)', Value('t', dtype, False))} }}")
            tie = "0"       # equal values are interchangeable
        self.emit(f"#define KEY(k) ({key})")
        self.emit(f"#define SWAP(a, b) {swap}")
        self.emit(f"#define BEFORE(a, b) ({_order(dtype.is_float, descending, tie)})")
        self._heapsort(n)
        self.emit("#undef KEY")
        self.emit("#undef SWAP")
        self.emit("#undef BEFORE")
        return (rows,)

    def _select(self, node) -> tuple[int, ...]:
        """Position i of the row enters the list of the k first so far where it comes before
        the last held (or the list is not full), moving the later ones up a slot. A later
        position never goes before an equal value: ties keep ARGSORT's order. The last held
        value stays in a register, and on a target of vectors the row passes a vector at a
        time while none of its values would enter (most of a long row, for a small k)."""
        (src,) = node.src
        n, (k, descending) = src.shape[-1], node.arg
        self._saw(node.op)
        out, x = self.param(node, output=True), self.param(src, output=False)
        idx, dtype = self.index_type, src.dtype
        self.emit(f"{idx} base = ({idx})get_global_id(0) * {n}, top = ({idx})get_global_id(0) * {k};")
        self.emit(f"#define KEY(p) ({self.r.load(x, 'base + (p)', dtype)})")
        self.emit(f"#define BEFORE(a, b) ({_order(dtype.is_float, descending, '0')})")
        self.emit(f"#define AHEAD(u, t) ({_order(dtype.is_float, descending, '0', '(u)', '(t)')})")
        self.emit(f"{dtype.ctype} last = 0;")
        w = self.width if n >= k + self.width else 1
        with self.block(f"for ({idx} c = 0; c < {n}; c += {w})"):
            if w > 1:       # a whole vector none of whose values enters is passed at once
                vector = self.r.ctype(dtype, True)
                with self.block(f"if (c >= {k} && c + {w} <= {n})"):
                    self.emit(f"{vector} v = {self.r.vload(x, 'base + c', dtype)};")
                    self.emit(f"if (!any(AHEAD(v, ({vector})(last)))) continue;")
            with self.block(f"for ({idx} i = c; i < c + {w} && i < {n}; i++)"):
                self.emit(f"if (i >= {k} && !AHEAD(KEY(i), last)) continue;")
                self.emit(f"{idx} j = i < {k} ? i : {k - 1};")
                with self.block(f"for (; j > 0 && BEFORE(i, {out}[top + j - 1]); j--)"):
                    self.emit(f"{out}[top + j] = {out}[top + j - 1];")
                self.emit(f"{out}[top + j] = i;")
                self.emit(f"if (i >= {k - 1}) last = KEY({out}[top + {k - 1}]);")
        for macro in ("KEY", "BEFORE", "AHEAD"):
            self.emit(f"#undef {macro}")
        return (math.prod(node.shape[:-1]),)

    def _heapsort(self, n: int) -> None:
        """One loop: steps n + n/2 - 2 down to n - 1 build the heap (sifting down from each
        parent), steps n - 2 down to 0 move its top, the last in order, to the end and sift
        the new top down. Both phases share the sift."""
        idx = self.index_type
        with self.block(f"for ({idx} step = {n + n // 2 - 2}; step >= 0; step--)"):
            self.emit(f"{idx} root = step - {n - 1}, end = {n};")
            with self.block(f"if (step < {n - 1})"):
                self.emit("end = step + 1;")
                self.emit("SWAP(0, end);")
                self.emit("root = 0;")
            with self.block("while (2 * root + 1 < end)"):
                self.emit(f"{idx} child = 2 * root + 1;")
                self.emit("if (child + 1 < end && BEFORE(child, child + 1)) child++;")
                self.emit("if (!BEFORE(root, child)) break;")
                self.emit("SWAP(root, child);")
                self.emit("root = child;")


def _order(is_float: bool, descending: bool, tie: str, ka: str = "KEY(a)",
           kb: str = "KEY(b)") -> str:
    """C for `slot a comes before slot b`, from their keys ka and kb: by value (a NaN the
    largest), equal values by `tie`."""
    if not is_float:
        first = f"({ka} > {kb})" if descending else f"({ka} < {kb})"
        return f"{first} || ({ka} == {kb} && {tie})"
    if descending:
        first = f"({ka} > {kb}) || (isnan({ka}) && !isnan({kb}))"
    else:
        first = f"({ka} < {kb}) || (isnan({kb}) && !isnan({ka}))"
    same = f"({ka} == {kb}) || (isnan({ka}) && isnan({kb}))"
    return f"{first} || (({same}) && {tie})"
