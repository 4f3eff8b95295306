"""What PyTorch cannot differentiate. Ops it records without a derivative formula (heaviside,
floor_divide): a result that needs grad gets a grad_fn, torch::autograd::NotImplemented, and
backward raises on reaching it (leaving such an op outside autograd would give no gradient
at all, or, in place, pass the incoming one on as if the op were not there). Arguments it
has no derivative for (a loss's weights): refused when the op is recorded. Ops it
differentiates in one of their inputs only (igamma and igammac in x, zeta in q): the other
input's gradient refused when backward reaches it (OneSidedBackward)."""
from __future__ import annotations

from ..compiler.ir import Node
from .backward import _FREED, GradFn, record
from .grad_mode import is_grad_enabled


class NotImplementedBackward(GradFn):
    def __init__(self, op: str, inputs: list, output: Node):
        super().__init__("torch::autograd::NotImplemented", inputs, output)
        self.op = op

    def apply(self, grads: list, create_graph: bool) -> list:
        raise RuntimeError(f"derivative for aten::{self.op} is not implemented")


def record_without_derivative(op: str, node: Node, device, inputs):
    """record's tensor, whose grad_fn (where it has one) refuses to differentiate op."""
    out = record(op, node, device, inputs)
    if out.grad_fn is not None:
        out.grad_fn = NotImplementedBackward(op, list(inputs), node)
    return out


def named_in_place(result, op: str):
    """result of x.op_(...) computed out of place: a refusal names the in-place op."""
    if isinstance(result.grad_fn, NotImplementedBackward):
        result.grad_fn.op = op
    return result


def refuse_gradient(function: str, argument: str, tensor) -> None:
    """PyTorch's refusal, when the op is recorded under grad mode, of an argument it has no
    derivative for that requires grad (a loss's class weights, soft_margin_loss's target)."""
    if tensor is not None and tensor.requires_grad and is_grad_enabled():
        raise RuntimeError(f"The function '{function}' is not differentiable with respect to "
                           f"argument '{argument}'. This input cannot have requires_grad True.")


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
