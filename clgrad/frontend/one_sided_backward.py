"""The backward node of an op PyTorch differentiates in only one of its tensor inputs: igamma
and igammac (in x, not a), zeta (in q, not x). The other input's gradient is refused when
backward reaches it, with PyTorch's NotImplementedError, as PyTorch refuses it."""
from __future__ import annotations

from .backward import _FREED, GradFn


class OneSidedBackward(GradFn):
    """inputs are the op's tensor inputs; `refused` is the position of the one whose
    derivative PyTorch does not implement (None when that operand was a Python number) and
    `what` how PyTorch's message names it; slope() is the derivative of the op in the other
    input, a tensor of the output's shape built from the inputs when backward runs (so that
    create_graph records it)."""

    def __init__(self, name: str, inputs: list, output, refused: int | None, what: str,
                 slope):
        super().__init__(name, inputs, output)
        self.refused = refused
        self.what = what
        self.slope = slope

    def apply(self, grads: list, create_graph: bool) -> list:
        if self.freed:
            raise RuntimeError(_FREED)
        results = [None] * len(self.inputs)
        for i, (edge, _) in enumerate(self.next_functions):
            if edge is None:
                continue
            if i == self.refused:
                raise NotImplementedError(f"the derivative for '{self.what}' is not implemented.")
            t = self.inputs[i]
            results[i] = (grads[0] * self.slope()).sum_to_size(t.shape).to(t.dtype)
        self._check_versions([r.node for r in results if r is not None], grads[0].node)
        return results
