"""The autograd entry points: backward, grad, and custom Functions."""
from __future__ import annotations

from .autograd import run_backward
from .operands import is_tensor


def _grad_outputs(outputs, grad_outputs, op: str) -> list:
    from .creation import ones_like
    result = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar outputs "
                                   f"(output {i} has shape {tuple(out.shape)})")
            g = ones_like(out)
        elif not is_tensor(g):
            raise TypeError(f"{op}: gradient must be a Tensor, got {type(g).__name__}")
        elif g.shape != out.shape:
            raise RuntimeError(f"{op}: mismatch in shape: grad_output[{i}] has a shape of "
                               f"{tuple(g.shape)} and output[{i}] has a shape of {tuple(out.shape)}")
        result.append(g)
    return result


def _check_outputs(outputs, op: str) -> None:
    for i, out in enumerate(outputs):
        if not out.requires_grad:
            raise RuntimeError(f"{op}: element {i} of tensors does not require grad and does "
                               "not have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    tensors = [tensors] if is_tensor(tensors) else list(tensors)
    if grad_tensors is not None and is_tensor(grad_tensors):
        grad_tensors = [grad_tensors]
    _check_outputs(tensors, "backward")
    grads = _grad_outputs(tensors, grad_tensors, "backward")
    retain = create_graph if retain_graph is None else retain_graph
    if inputs is not None:
        inputs = [inputs] if is_tensor(inputs) else list(inputs)
        for t, g in zip(inputs, run_backward(tensors, grads, retain, create_graph, inputs)):
            if g is not None:
                t.grad = g if t.grad is None else t.grad + g
        return
    run_backward(tensors, grads, retain, create_graph)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         allow_unused=False):
    """The gradients of outputs with respect to inputs, without touching .grad."""
    outputs = [outputs] if is_tensor(outputs) else list(outputs)
    single = is_tensor(inputs)
    inputs = [inputs] if single else list(inputs)
    if grad_outputs is not None and is_tensor(grad_outputs):
        grad_outputs = [grad_outputs]
    _check_outputs(outputs, "grad")
    for i, t in enumerate(inputs):
        if not t.requires_grad:
            raise RuntimeError(f"grad: input {i} does not require grad")
    grads = _grad_outputs(outputs, grad_outputs, "grad")
    retain = create_graph if retain_graph is None else retain_graph
    result = run_backward(outputs, grads, retain, create_graph, inputs)
    for i, g in enumerate(result):
        if g is None and not allow_unused:
            raise RuntimeError(f"grad: one of the differentiated Tensors (input {i}) appears to "
                               "not have been used in the graph. Set allow_unused=True if this "
                               "is the desired behavior.")
    return tuple(result)
