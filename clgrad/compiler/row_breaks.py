"""Where a reduction's row passes from padding to data: the positions at which a padded read's
bound flips, known at build time. The reduction writes one loop per stretch between them, in
which every bound is decided, so no loop tests a bound at all.

Intel's CPU compiler turned a loop whose first iterations read only padding into an infinite
loop (`for i < 60: if (i >= 30) acc -= x[i - 30]`: its split of the iterations it saw as no-ops,
acc - 0, acc + -0.0, acc * 1, max(acc, -inf), never reached the exit test; fuzz seed 403506).
Split here, the padding's stretch is a loop of no-ops it drops, and the data's stretch loads
without a test: vectors where the test made one load per lane.
"""
from __future__ import annotations

from . import symbolic as sym
from .addressing import Index, source_index
from .ir import Node
from .kernel import KernelSpec
from .ops import MOVEMENT, Op

# More breaks than this (a pad of an inner axis, repeated along the row) are left to the
# loop's tests: each break costs a loop.
_MOST = 8


def pad_breaks(source: Node, spec: KernelSpec, at, length: int) -> tuple[int, ...]:
    """The positions r in (0, length) of a row of `length` elements where a padding bound on
    the value `source` flips (at(r) is source's index at position r). Only bounds that vary
    with r alone, monotonically, are counted (one of a row's other indices varies per
    work-item, and a remainder repeats)."""
    if length < 2:
        return ()
    r = sym.var("r", 0, length - 1)
    (rvar,) = sym.variables(r)
    points = set()
    for expr, lo, hi in _bounds(source, at(r), spec):
        if sym.variables(expr) != {rvar}:
            continue
        rising = _direction(expr, rvar)
        if rising is None:
            continue
        for threshold in (lo, hi):
            def flipped(x: int) -> bool:
                value = sym.substitute(expr, {rvar: sym.num(x)}).const
                return value >= threshold if rising else value < threshold
            point = _first(flipped, length)
            if 0 < point < length:
                points.add(point)
    return tuple(sorted(points)) if len(points) <= _MOST else ()


def _bounds(root: Node, index: Index, spec: KernelSpec):
    """The padding bounds met computing root at index, walking as the kernel writer does."""
    seen, stack = set(), [(root, index)]
    while stack:
        node, index = stack.pop()
        key = (node, index.key())
        if key in seen:
            continue
        seen.add(key)
        if node in spec.inputs or node in spec.reductions:
            continue
        if node.op is Op.GATHER:
            rows = node.src[1]
            stack.append((rows, Index(rows.shape, dims=index.as_dims()[:-1])))
        elif node.op in MOVEMENT:
            src_index, bounds = source_index(node, index)
            yield from bounds
            stack.append((node.src[0], src_index))
        else:
            stack.extend((src, index) for src in node.src)


def _direction(expr: sym.Lin, var: sym.Var) -> bool | None:
    """True where expr never falls as var grows, False where it never rises, None where it
    may do both (or is constant)."""
    signs = set()
    for atom, coef in expr.terms:
        if atom == var:
            rising = True
        elif isinstance(atom, sym.Quotient) and atom.op == "/":
            rising = _direction(atom.arg, var)
        else:
            return None
        if rising is None:
            return None
        signs.add(rising == (coef > 0))
    return signs.pop() if len(signs) == 1 else None


def _first(flipped, length: int) -> int:
    """The least x in [0, length) where flipped(x), for flipped false then true; length if
    none."""
    lo, hi = 0, length
    while lo < hi:
        mid = (lo + hi) // 2
        if flipped(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo

