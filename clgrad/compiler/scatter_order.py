"""How an ordered scatter (lower_scatter.py) walks its index: which of the index's axes may run
in parallel, a work-item per position along them walking the other axes in order, so that no
element of the result is ever written by two work-items.

The index is read as a sum of terms: coordinates made by iota through views, times their
strides (affine in the positions), coordinates read from data, each times its multiplier, and
terms equal at every position (a constant, an offset read from a buffer), which shift every
element alike and so never bring two positions together. frontend/scatter.py's _destinations
writes `index * stride_d + sum over a != d of p_a * stride_a`. The parallel axes are those
whose terms stay below g, the gcd of every other varying term's multiplier, and tell their
positions apart (their coefficients a mixed radix): an element's index modulo g is theirs, so
positions that differ along them never meet. scatter_add along dim 0 of (n, m),
`index * m + j`: the axis of j (g = m); along the last dim, `i * m + index`: none, since
nothing in the index keeps `index` below m (the frontend's checks are not in the IR).

The positions may be walked in any shape of the index's size, their flat order the same: an
index computed in one shape and flattened (scans.added_along's) is affine in that shape only.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import symbolic as sym
from .addressing import Index, source_index
from .ir import Node
from .ops import ELEMENTWISE, MOVEMENT, Op


@dataclass(frozen=True)
class Walk:
    shape: tuple[int, ...]          # the positions' shape (as many as the index has)
    parallel: tuple[int, ...]       # axes of shape given to separate work-items

    @property
    def sequential(self) -> tuple[int, ...]:
        return tuple(a for a in range(len(self.shape)) if a not in self.parallel)


def walk(index: Node, loaded) -> Walk:
    """The walk of index's positions with the most work-items, over index's own shape and
    those of the nodes it is computed from (loaded(node): whether the kernel reads node from
    a buffer, where its value is data)."""
    walks = [_walk_over(shape, index, loaded) for shape in _shapes(index, loaded)]
    return max(walks, key=lambda w: math.prod(w.shape[a] for a in w.parallel))


def _shapes(index: Node, loaded) -> list[tuple[int, ...]]:
    """index's shape, then the other shapes of its size among the nodes it is computed from."""
    shapes, stack, seen = [index.shape], [index], set()
    while stack:
        node = stack.pop()
        if node in seen or loaded(node):
            continue
        seen.add(node)
        if math.prod(node.shape) == index.numel and node.shape not in shapes:
            shapes.append(node.shape)
        stack.extend(node.src)
    return shapes


def _walk_over(shape: tuple[int, ...], index: Node, loaded) -> Walk:
    dims = [sym.var(f"p{a}", 0, n - 1) for a, n in enumerate(shape)]
    at = Index(index.shape, dims=tuple(dims)) if shape == index.shape else \
        Index(index.shape, flat=sym.linearize(dims, shape))
    affine, multipliers = [], []
    _terms(index, at, 1, loaded, affine, multipliers)
    axis_of = {lin.terms[0][0]: a for a, lin in enumerate(dims) if lin.terms}
    coefs = {a: 0 for a in range(len(shape))}
    for lin in affine:
        for atom, c in lin.terms:
            coefs[axis_of[atom]] += c
    return Walk(shape, tuple(sorted(_parallel_axes(coefs, multipliers, shape))))


def _terms(node: Node, at: Index, scale: int, loaded, affine: list, multipliers: list) -> None:
    """Adds node * scale, read at `at`, to the sum: an iota through views to affine (a
    sym.Lin in the position variables), the multiplier of any other term that varies with the
    position to multipliers."""
    if not loaded(node):
        if node.op in (Op.ADD, Op.SUB):
            a, b = node.src
            _terms(a, at, scale, loaded, affine, multipliers)
            _terms(b, at, -scale if node.op is Op.SUB else scale, loaded, affine, multipliers)
            return
        if node.op is Op.MUL and any(s.op is Op.CONST for s in node.src):
            factor, other = node.src if node.src[0].op is Op.CONST else node.src[::-1]
            if int(factor.arg):
                _terms(other, at, scale * int(factor.arg), loaded, affine, multipliers)
            return
        if node.op in MOVEMENT:
            inner, bounds = source_index(node, at)
            if not bounds:
                _terms(node.src[0], inner, scale, loaded, affine, multipliers)
                return
        if node.op is Op.IOTA:
            lin = at.as_flat()
            if all(isinstance(atom, sym.Var) for atom, _ in lin.terms):
                affine.append(lin * scale)
                return
    if _varies(node, at, loaded):
        multipliers.append(scale)


def _varies(node: Node, at: Index, loaded) -> bool:
    """Whether node's value, read at `at`, may differ from one position to another."""
    if loaded(node) or node.op is Op.IOTA:
        return bool(sym.variables(at.as_flat()))
    if node.op is Op.CONST:
        return False
    if node.op in MOVEMENT:
        inner, bounds = source_index(node, at)
        return any(sym.variables(expr) for expr, _, _ in bounds) or \
            _varies(node.src[0], inner, loaded)
    if node.op in ELEMENTWISE:
        return any(_varies(s, at, loaded) for s in node.src)
    return True


def _parallel_axes(coefs: dict[int, int], multipliers: list[int], shape) -> list[int]:
    """The most axes, smallest coefficients first, that form a mixed radix below the gcd of
    every other term's multiplier (0 where there is none: no bound)."""
    chain, span = [], 0         # span: the largest value the chain's terms sum to
    for c, a in sorted((c, a) for a, c in coefs.items() if c > 0):
        if c <= span:
            break
        chain.append(a)
        span += c * (shape[a] - 1)
    while chain:
        others = [c for a, c in coefs.items() if c and a not in chain] + multipliers
        g = math.gcd(*others) if others else 0
        if g == 0 or sum(coefs[a] * (shape[a] - 1) for a in chain) < g:
            return chain
        chain.pop()
    return chain
