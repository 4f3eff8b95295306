"""einsum: an equation's operands as views, a batched matmul for each pair, sums for the rest.

Each operand's subscripts become a list of labels (an ellipsis becomes labels of its own,
right-aligned across operands). A label repeated in one operand takes that diagonal; a label
no later operand or the output needs is summed out first; two operands then contract as
(batch, rows, k) @ (batch, k, columns), so the work lands in clgrad's matmul kernel and the
gradient comes from the primitive rules.
"""
from __future__ import annotations

import math
import string

from .tensor import Tensor

_LETTERS = set(string.ascii_letters)


def einsum(equation: str, *operands) -> Tensor:
    """The sum over the equation's repeated indices of the products of the operands, as
    torch.einsum("ij,jk->ik", a, b); "..." broadcasts; without "->" the output is the
    ellipsis then the indices seen once, in alphabetical order."""
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError("einsum(): must provide at least one operand")
    for k, t in enumerate(operands):
        if not isinstance(t, Tensor):
            raise TypeError(f"einsum(): operand {k} must be a Tensor, not {type(t).__name__}")
    inputs, output = _parse(equation.replace(" ", ""), operands)
    sizes = _label_sizes(equation, inputs, operands)
    terms = [_diagonals(t, labels) for t, labels in zip(operands, inputs)]
    result, labels = terms[0]
    for k, (t, t_labels) in enumerate(terms[1:], 1):
        later = set(output).union(*(term[1] for term in terms[k + 1:]))
        result, labels = _contract(result, labels, t, t_labels, later, sizes)
    result, labels = _sum_out(result, labels, set(output))
    result = result.permute(*[labels.index(label) for label in output]) if output else result
    return result.expand(*[sizes[label] for label in output]) if output else result


def _parse(equation: str, operands) -> tuple[list[list[str]], list[str]]:
    lhs, arrow, rhs = equation.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum(): {len(terms)} subscript terms in {equation!r} for "
                         f"{len(operands)} operands")
    widest = max(t.ndim - len(term.replace("...", "")) for term, t in zip(terms, operands)
                 if "..." in term) if "..." in lhs else 0
    ellipsis = [f"...{k}" for k in range(widest)]
    inputs = [_labels(term, t.ndim, ellipsis, k) for k, (term, t) in enumerate(zip(terms, operands))]
    if arrow:
        output = _labels(rhs, None, ellipsis, "output")
        for label in output:
            if output.count(label) > 1:
                raise ValueError(f"einsum(): output subscript {label} appears more than once")
            if not any(label in labels for labels in inputs):
                raise ValueError(f"einsum(): output subscript {label} does not appear in the "
                                 f"equation for any input operand")
    else:
        seen = [label for labels in inputs for label in labels]
        output = ellipsis + sorted(l for l in set(seen) if seen.count(l) == 1 and l in _LETTERS)
    return inputs, output


def _labels(term: str, ndim: int | None, ellipsis: list[str], which) -> list[str]:
    head, dots, tail = term.partition("...")
    for c in head + tail:
        if c not in _LETTERS:
            raise ValueError(f"einsum(): invalid subscript given at index {term.index(c)} in "
                             f"{term!r}: subscripts must be letters")
    if not dots:
        if ndim is not None and len(term) != ndim:
            raise RuntimeError(f"einsum(): the number of subscripts in the equation ({len(term)})"
                               f" does not match the number of dimensions ({ndim}) for operand "
                               f"{which} and no ellipsis was given")
        return list(term)
    covered = len(ellipsis) if ndim is None else ndim - len(head) - len(tail)
    if covered < 0:
        raise RuntimeError(f"einsum(): the number of subscripts in the equation "
                           f"({len(head) + len(tail)}) is more than the number of dimensions "
                           f"({ndim}) for operand {which}")
    return list(head) + ellipsis[len(ellipsis) - covered:] + list(tail)


def _label_sizes(equation, inputs, operands) -> dict[str, int]:
    """Each label's size; a size-1 dimension broadcasts against the others."""
    sizes: dict[str, int] = {}
    for labels, t in zip(inputs, operands):
        for label, n in zip(labels, t.shape):
            known = sizes.get(label, 1)
            if n != known and 1 not in (n, known):
                raise RuntimeError(f"einsum(): operands do not broadcast: subscript {label} has "
                                   f"size {n} in one operand and {known} in another in "
                                   f"{equation!r} (shapes {[tuple(t.shape) for t in operands]})")
            sizes[label] = max(n, known) if n and known else 0
    return sizes


def _diagonals(t: Tensor, labels: list[str]) -> tuple[Tensor, list[str]]:
    """Labels repeated within one operand: their diagonal, one axis per label."""
    labels = list(labels)
    for label in dict.fromkeys(labels):
        while labels.count(label) > 1:
            i = labels.index(label)
            j = labels.index(label, i + 1)
            n, m = t.shape[i], t.shape[j]
            if n != m:
                raise RuntimeError(f"einsum(): subscript {label} is repeated for operand of "
                                   f"shape {tuple(t.shape)} but the sizes don't match, {n} != {m}")
            t = t.diagonal(0, i, j)         # the diagonal becomes the last axis
            labels = [lab for a, lab in enumerate(labels) if a not in (i, j)] + [label]
    return t, labels


def _sum_out(t: Tensor, labels: list[str], keep: set) -> tuple[Tensor, list[str]]:
    gone = tuple(a for a, label in enumerate(labels) if label not in keep)
    if not gone:
        return t, labels
    return t.sum(gone), [label for label in labels if label in keep]


def _contract(a: Tensor, la: list[str], b: Tensor, lb: list[str], later: set,
              sizes: dict[str, int]) -> tuple[Tensor, list[str]]:
    a, la = _sum_out(a, la, later | set(lb))
    b, lb = _sum_out(b, lb, later | set(la))
    batch = [label for label in la if label in lb and label in later]
    summed = [label for label in la if label in lb and label not in later]
    rows = [label for label in la if label not in lb]
    columns = [label for label in lb if label not in la]

    def arranged(t, labels, order):
        t = t.permute(*[labels.index(label) for label in order]) if order else t
        return t.expand(*[sizes[label] for label in order]) if order else t

    def count(group):
        return math.prod(sizes[label] for label in group)

    left = arranged(a, la, batch + rows + summed).reshape(count(batch), count(rows), count(summed))
    right = arranged(b, lb, batch + summed + columns).reshape(count(batch), count(summed),
                                                              count(columns))
    # one term per output (k = 1) is the product itself, its sign kept, as PyTorch's einsum
    # multiplies such operands without a sum
    out = left * right if count(summed) == 1 else left @ right
    out = out.reshape(*[sizes[label] for label in batch + rows + columns])
    return out, batch + rows + columns
