"""CatTransform and StackTransform: transforms applied to the parts of a tensor along one
dimension, as torch.cat and torch.stack join them."""
from __future__ import annotations

from .. import frontend as ops
from . import constraints
from .transform import Transform
from .utils import lazy_property, sum_rightmost


class _Joined(Transform):
    """Transforms tseq, one per part of a value along dim; bijective when every one is."""

    def __init__(self, tseq, dim: int = 0, cache_size: int = 0):
        if not all(isinstance(t, Transform) for t in tseq):
            raise AssertionError("All elements of tseq must be Transform instances")
        if cache_size:
            tseq = [t.with_cache(cache_size) for t in tseq]
        super().__init__(cache_size=cache_size)
        self.transforms = list(tseq)
        self.dim = dim

    @property
    def bijective(self) -> bool:
        return all(t.bijective for t in self.transforms)

    def _expected_size(self) -> tuple:
        """(the size along dim a value must have, what PyTorch calls it)."""
        raise NotImplementedError

    def _parts(self, value) -> list:
        """(transform, the part of value it applies to) for each transform."""
        raise NotImplementedError

    def _join(self, parts: list):
        """The tensor the parts make, joined along dim."""
        raise NotImplementedError

    def _call(self, x):
        self._check(x, "x")
        return self._join([t(part) for t, part in self._parts(x)])

    def _inverse(self, y):
        self._check(y, "y")
        return self._join([t.inv(part) for t, part in self._parts(y)])

    def _check(self, value, name: str, subject: str = "tensor") -> None:
        """PyTorch's AssertionError unless dim is one of value's and value has the expected
        size along it."""
        if not -value.dim() <= self.dim < value.dim():
            raise AssertionError(f"dim {self.dim} out of range for {subject} with "
                                 f"{value.dim()} dimensions")
        size, label = self._expected_size()
        if value.size(self.dim) != size:
            raise AssertionError(f"{name}.size({self.dim}) = {value.size(self.dim)} must equal "
                                 f"{label} {size}")


class CatTransform(_Joined):
    """tseq applied to consecutive slices along dim of lengths (1 each unless given), as
    torch.cat joins them.

        t = CatTransform([ExpTransform(), identity_transform], dim=0, lengths=[10, 10])
    """

    def __init__(self, tseq, dim: int = 0, lengths=None, cache_size: int = 0):
        super().__init__(tseq, dim, cache_size)
        self.lengths = [1] * len(self.transforms) if lengths is None else list(lengths)
        if len(self.lengths) != len(self.transforms):
            raise AssertionError(f"lengths ({len(self.lengths)}) must match transforms "
                                 f"({len(self.transforms)})")

    @lazy_property
    def event_dim(self) -> int:
        return max(t.event_dim for t in self.transforms)

    @lazy_property
    def length(self) -> int:
        return sum(self.lengths)

    def _expected_size(self) -> tuple:
        return self.length, "length"

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return CatTransform(self.transforms, self.dim, self.lengths, cache_size)

    def _parts(self, value) -> list:
        starts = [sum(self.lengths[:k]) for k in range(len(self.lengths))]
        return [(t, value.narrow(self.dim, start, length))
                for t, start, length in zip(self.transforms, starts, self.lengths)]

    def _join(self, parts: list):
        return ops.cat(parts, self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", subject="x")
        self._check(y, "y", subject="y")
        terms = []
        for (transform, x_part), (_, y_part) in zip(self._parts(x), self._parts(y)):
            term = transform.log_abs_det_jacobian(x_part, y_part)
            terms.append(sum_rightmost(term, self.event_dim - transform.event_dim))
        # a dim inside the batch joins the parts' terms; one inside the event sums them
        dim = self.dim - x.dim() if self.dim >= 0 else self.dim
        dim += self.event_dim
        return ops.cat(terms, dim) if dim < 0 else sum(terms)

    @constraints.dependent_property
    def domain(self):
        return constraints.cat([t.domain for t in self.transforms], self.dim, self.lengths)

    @constraints.dependent_property
    def codomain(self):
        return constraints.cat([t.codomain for t in self.transforms], self.dim, self.lengths)


class StackTransform(_Joined):
    """tseq applied to the slices of a value along dim, one each, as torch.stack joins them.

        t = StackTransform([ExpTransform(), identity_transform], dim=1)
    """

    def _expected_size(self) -> tuple:
        return len(self.transforms), "len(transforms)"

    def with_cache(self, cache_size: int = 1):
        if self._cache_size == cache_size:
            return self
        return StackTransform(self.transforms, self.dim, cache_size)

    def _parts(self, value) -> list:
        return [(t, value.select(self.dim, i)) for i, t in enumerate(self.transforms)]

    def _join(self, parts: list):
        return ops.stack(parts, self.dim)

    def log_abs_det_jacobian(self, x, y):
        self._check(x, "x", subject="x")
        self._check(y, "y", subject="y")
        pairs = zip(self._parts(x), self._parts(y))
        return self._join([t.log_abs_det_jacobian(x_part, y_part)
                           for (t, x_part), (_, y_part) in pairs])

    @constraints.dependent_property
    def domain(self):
        return constraints.stack([t.domain for t in self.transforms], self.dim)

    @constraints.dependent_property
    def codomain(self):
        return constraints.stack([t.codomain for t in self.transforms], self.dim)
