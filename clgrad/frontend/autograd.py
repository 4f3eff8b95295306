"""Reverse-mode autograd over frontend ops.

Each op that touches a tensor requiring grad gets a grad_fn node (PyTorch's names:
MulBackward0, ...) remembering its inputs and the IR node it produced. Backward derives the
gradient of that IR subgraph from the primitive rules in compiler.gradients, so gradients are
lazy graphs that fuse like any other. With create_graph=True the derived gradient is recorded
as an op too, which gives higher derivatives.
"""
from __future__ import annotations

from ..compiler import gradients, ir
from ..compiler.ir import Node
from ..compiler.ops import Op
from .grad_mode import enable_grad, is_grad_enabled, no_grad

_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True "
          "if you need to backward through the graph a second time or if you need to access "
          "saved tensors after calling backward.")


class GradFn:
    """A node of the backward graph."""

    def __init__(self, name: str, inputs: list, output: Node):
        self._name = name
        self.inputs = inputs
        self.versions = tuple(t._version for t in inputs)
        self.input_nodes = tuple(t.node for t in inputs)
        self.output = output
        self.next_functions = tuple((edge_of(t), 0) for t in inputs)
        self.retained = None          # a tensor that asked to retain_grad()
        self.freed = False

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {id(self):#x}>"

    def apply(self, grad, create_graph: bool) -> list:
        if self.freed:
            raise RuntimeError(_FREED)
        nodes = gradients.derive(self.output, self.input_nodes, grad.node)
        self._check_versions(nodes)
        from .tensor import Tensor
        results = []
        for t, node in zip(self.inputs, nodes):
            if node is None:
                results.append(None)
                continue
            node = ir.cast(node, t.dtype) if node.dtype != t.dtype else node
            if create_graph:
                results.append(record(f"{self._name[:-1]}Backward", node, t.device,
                                      [grad, *self.inputs]))
            else:
                results.append(Tensor(node, t.device))
        return results

    def _check_versions(self, grad_nodes) -> None:
        changed = [i for i, t in enumerate(self.inputs) if t._version != self.versions[i]]
        if not changed:
            return
        used = set(ir.toposort([n for n in grad_nodes if n is not None]))
        for i in changed:
            if self.input_nodes[i] in used:
                t = self.inputs[i]
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.dtype.name} {list(t.shape)}], which is input {i} "
                    f"of {self._name}, is at version {t._version}; expected version "
                    f"{self.versions[i]} instead.")

    def release(self) -> None:
        self.freed = True
        self.output = None
        self.input_nodes = ()


class AccumulateGrad:
    """Where a leaf's gradient lands."""

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"


def edge_of(t):
    """The backward node a gradient for t flows into."""
    if not t.requires_grad:
        return None
    if t.grad_fn is not None:
        return t.grad_fn
    if t._accumulator is None:
        t._accumulator = AccumulateGrad(t)
    return t._accumulator


def record(name: str, node: Node, device, inputs):
    """The tensor holding node, with a grad_fn when autograd should see this op."""
    from .tensor import Tensor
    out = Tensor(node, device)
    if is_grad_enabled() and any(t.requires_grad for t in inputs):
        out.requires_grad = True
        out.grad_fn = GradFn(name, list(inputs), node)
    return out


def _graph_order(roots) -> list:
    """Backward nodes reachable from roots, each before the nodes it feeds."""
    order, seen = [], set()
    for root in roots:
        stack = [(root, False)]
        while stack:
            fn, done = stack.pop()
            if done:
                order.append(fn)
            elif fn is not None and id(fn) not in seen:
                seen.add(id(fn))
                stack.append((fn, True))
                stack.extend((nxt, False) for nxt, _ in fn.next_functions)
    return order[::-1]


def _add(a, b):
    return b if a is None else a + b


def run_backward(outputs, grad_outputs, retain_graph: bool, create_graph: bool, inputs=None):
    """Propagates grad_outputs from outputs. Accumulates into leaves' .grad, or, when inputs is
    given, returns the gradients of those tensors instead."""
    roots = [edge_of(t) for t in outputs]
    grads: dict[int, object] = {}
    for fn, g in zip(roots, grad_outputs):
        if fn is not None:
            grads[id(fn)] = _add(grads.get(id(fn)), g)
    wanted = {id(edge_of(t)): t for t in inputs} if inputs is not None else None
    captured: dict[int, object] = {}
    with enable_grad() if create_graph else no_grad():
        for fn in _graph_order(roots):
            g = grads.pop(id(fn), None)
            if g is None:
                continue
            if wanted is not None and id(fn) in wanted:
                captured[id(fn)] = g
                if isinstance(fn, AccumulateGrad):
                    continue
            if isinstance(fn, AccumulateGrad):
                _accumulate(fn.variable, g, create_graph)
                continue
            if fn.retained is not None and wanted is None:
                _accumulate(fn.retained, g, create_graph)
            for (nxt, _), ng in zip(fn.next_functions, fn.apply(g, create_graph)):
                if nxt is not None and ng is not None:
                    grads[id(nxt)] = _add(grads.get(id(nxt)), ng)
            if not retain_graph:
                fn.release()
    if wanted is not None:
        return [captured.get(id(edge_of(t))) for t in inputs]
    return None


def _accumulate(t, g, create_graph: bool) -> None:
    if not create_graph:
        g = g.detach()
    t.grad = g if t.grad is None else (t.grad + g if create_graph else (t.grad + g).detach())
