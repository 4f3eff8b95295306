"""What PyTorch cannot differentiate. Ops it records without a derivative formula (heaviside,
floor_divide): a result that needs grad gets a grad_fn, torch::autograd::NotImplemented, and
backward raises on reaching it (leaving such an op outside autograd would give no gradient
at all, or, in place, pass the incoming one on as if the op were not there). Arguments it
has no derivative for (a loss's weights): refused when the op is recorded."""
from __future__ import annotations

from ..compiler.ir import Node
from .backward import GradFn, record
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
