"""Reverse-mode autograd over frontend ops, and its entry points backward() and grad().

Each op that touches a tensor requiring grad gets a grad_fn node (PyTorch's names, from
grad_fn_names: MulBackward0, ...) remembering its inputs and the IR node it produced.
Backward derives the gradient of that IR subgraph from the primitive rules in
compiler.gradients, so gradients are lazy graphs that fuse like any other. With
create_graph=True the derived gradient is recorded as an op too, which gives higher
derivatives.
"""
from __future__ import annotations

from ..compiler import derived, ir
from ..compiler.ir import Node
from ..engine.donation import keep_graph
from .grad_fn_names import grad_fn_name
from . import early_backward, jit_protocol
from .grad_mode import enable_grad, is_grad_enabled, no_grad
from .operands import is_tensor

_FREED = ("Trying to backward through the graph a second time (or directly access saved "
          "tensors after they have already been freed). Saved intermediate values of the graph "
          "are freed when you call .backward() or autograd.grad(). Specify retain_graph=True "
          "if you need to backward through the graph a second time or if you need to access "
          "saved tensors after calling backward.")


class RemovableHandle:
    """What register_hook returns: `remove()` takes the hook out again (also on leaving a
    `with` block)."""

    _ids = 0

    def __init__(self, hooks: dict):
        RemovableHandle._ids += 1
        self.id = RemovableHandle._ids
        self._hooks = hooks

    def remove(self) -> None:
        self._hooks.pop(self.id, None)

    def __enter__(self) -> RemovableHandle:
        return self

    def __exit__(self, *exc) -> None:
        self.remove()


class BackwardNode:
    """What every backward node shares: a name, the edges its gradients flow along
    (next_functions, as (node, output index) pairs), tensors that asked to retain their
    gradient, and whether its saved values were freed."""
    num_outputs = 1
    hooks: dict[int, dict] | None = None    # output index -> {handle id: hook}, once registered

    def __init__(self, name: str, next_functions: tuple):
        self._name = name
        self.next_functions = next_functions
        self.retained: dict[int, object] = {}     # output index -> tensor that retains grad
        self.freed = False

    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<{self._name} object at {id(self):#x}>"

    def retain(self, tensor) -> None:
        self.retained[output_nr(tensor)] = tensor

    def apply(self, grads: list, create_graph: bool) -> list:
        """One gradient per next_functions edge, from one gradient (or None) per output."""
        raise NotImplementedError

    def release(self) -> None:
        self.freed = True

    def held(self) -> tuple:
        """The forward's tensors this node reads when applied."""
        return ()

    def elements_touched(self) -> int:
        """The elements its forward op read and wrote (0 where that is not known cheaply)."""
        return 0


class GradFn(BackwardNode):
    """The backward node of a frontend op: differentiates the op's IR subgraph."""

    def __init__(self, name: str, inputs: list, output: Node):
        edges, versions, nodes = [], [], []
        for t in inputs:        # one pass: every op recorded for autograd makes a GradFn
            fn = t.grad_fn      # edge_of(t), without its call in the common cases
            edges.append((fn if fn is not None and t.requires_grad else edge_of(t),
                          t._output_nr))
            if t._view is None:     # a view's version and node may need its base read first
                versions.append(t._counter)
                nodes.append(t._node)
            else:
                versions.append(t._version)
                nodes.append(t.node)
        super().__init__(name, tuple(edges))
        self.inputs = inputs
        self.versions = tuple(versions)
        self.input_nodes = tuple(nodes)
        self.output = output
        keep_graph(output)      # _derive reads output's graph, after output is computed too

    def held(self) -> tuple:
        return self.inputs

    def elements_touched(self) -> int:
        if self.freed:      # (it raises when applied)
            return 0
        return self.output.numel + sum(n.numel for n in self.input_nodes)

    def apply(self, grads: list, create_graph: bool) -> list:
        if self.freed:
            raise RuntimeError(_FREED)
        grad = grads[0]
        nodes = self._derive(grad.node)
        self._check_versions(nodes, grad.node)
        results = []
        for t, node in zip(self.inputs, nodes):
            if node is None:
                results.append(None)
                continue
            node = node.cast(t.dtype)
            result = tensor.Tensor(node, t.device)
            if create_graph:    # the gradient is an op of its own, differentiable again
                inputs = [grad, *self.inputs]
                if any(x.requires_grad for x in inputs):
                    result.requires_grad = True
                    result.grad_fn = GradFn(f"{self._name[:-1]}Backward", inputs, node)
            results.append(result)
        return results

    def _derive(self, grad: Node) -> list:
        """The input gradients, None for inputs that do not require grad (not built at all)."""
        needed = [edge is not None for edge, _ in self.next_functions]
        if all(needed):
            return derived.derive(self.output, self.input_nodes, grad)
        pairs = list(zip(self.input_nodes, needed))
        wrt = tuple(n for n, k in pairs if k)
        found = iter(derived.derive(self.output, wrt, grad, [n for n, k in pairs if not k]))
        return [next(found) if k else None for k in needed]

    def _check_versions(self, grad_nodes, incoming: Node) -> None:
        """Raises when an input this op's gradient reads has changed in place since. What the
        incoming gradient read is its own ops' concern: a sigmoid_ on a view of t reads the
        view (a slice of t) in the gradient it passes to the slice, which reads nothing. (That
        graph is walked whole, as the rule's views of it fold into views of its sources.) An
        input read by both passes unrefused; its node holds the value before the change, so
        the gradient is still right."""
        changed = [i for i, t in enumerate(self.inputs) if t._version != self.versions[i]]
        if not changed:
            return
        upstream = set(ir.toposort([incoming]))
        used = set(ir.toposort([n for n in grad_nodes if n is not None],
                               stop=upstream.__contains__)) - upstream
        for i in changed:
            if self.input_nodes[i] in used:
                t = self.inputs[i]
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.dtype.name} {list(t.shape)}], which is input {i} "
                    f"of {self._name}, is at version {t._version}; expected version "
                    f"{self.versions[i]} instead.")

    def release(self) -> None:
        super().release()
        self.output = None
        self.input_nodes = ()


class AccumulateGrad:
    """Where a leaf's gradient lands."""
    num_outputs = 1
    hooks: dict[int, dict] | None = None

    def __init__(self, variable):
        self.variable = variable
        self.next_functions = ()

    def name(self) -> str:
        return "torch::autograd::AccumulateGrad"

    def __repr__(self) -> str:
        return f"<AccumulateGrad object at {id(self):#x}>"

    def held(self) -> tuple:
        return ()

    def elements_touched(self) -> int:
        return 0


def output_nr(t) -> int:
    """Which output of its grad_fn t is (custom Functions may have several)."""
    return t._output_nr


def edge_of(t):
    """The backward node a gradient for t flows into."""
    if not t.requires_grad:
        return None
    if t.grad_fn is not None:
        return t.grad_fn
    if t._accumulator is None:
        t._accumulator = AccumulateGrad(t)
    return t._accumulator


def register_hook(t, hook) -> RemovableHandle:
    """hook(grad) runs when t's gradient is computed, before it flows on (or lands in a
    leaf's .grad); a tensor it returns replaces the gradient."""
    if not t.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    fn = edge_of(t)
    if fn.hooks is None:
        fn.hooks = {}
    hooks = fn.hooks.setdefault(output_nr(t), {})
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    return handle


def _run_hooks(fn, slot: list) -> list:
    slot = list(slot)
    for nr, hooks in fn.hooks.items():
        g = slot[nr]
        if g is None:
            continue
        for hook in list(hooks.values()):
            new = hook(g)
            if new is None:
                continue
            if new.shape != g.shape:
                name = getattr(hook, "__name__", repr(hook))
                raise RuntimeError(f"hook {name!r} has changed the size of value: expected "
                                   f"shape {g.shape}, got {new.shape}")
            g = new
        slot[nr] = g
    return slot


def record(op: str, node: Node, device, inputs, derivation: Node | None = None):
    """The tensor holding node, the result of op (grad_fn_names names its grad_fn), with a grad_fn
    when autograd should see this op. derivation, when given, is what the gradients are
    derived from instead of node: a graph of the same inputs and shape whose derivative is the
    op's (PyTorch's formula, often through ir.sloped), where the graph that computes the
    value accurately has another (log1p's correction of rounding) or none (a quotient read
    detached). It is never computed, only differentiated."""
    if jit_protocol.capturing():
        jit_protocol.reading(inputs)
    for t in inputs:                # (a loop, not any(): this runs for every op recorded)
        if t.requires_grad:
            break
    else:
        return tensor.Tensor(node, device)
    if not node.dtype.is_float:     # only floating results take part in autograd (PyTorch's)
        return tensor.Tensor(node, device)
    if not is_grad_enabled():
        return tensor.Tensor(node.detach(), device)   # else the same node as its grad twin
    out = tensor.Tensor(node, device, True)
    derived_from = node if derivation is None else derivation
    out.grad_fn = GradFn(grad_fn_name(op), list(inputs), derived_from)
    return out


def _graph_order(roots) -> list:
    """Backward nodes reachable from roots, each before the nodes it feeds."""
    order, seen = [], set()
    for root in roots:
        stack = [(root, False)]
        pop, push = stack.pop, stack.append
        while stack:
            fn, done = pop()
            if done:
                order.append(fn)
            elif fn is not None and id(fn) not in seen:
                seen.add(id(fn))
                push((fn, True))
                for nxt, _ in fn.next_functions:
                    push((nxt, False))
    return order[::-1]


def _add(a, b):
    return b if a is None else a + b


# one list per backward pass running: what queue_callback asked to run at its end
_pass_callbacks: list[list] = []


def queue_callback(callback) -> None:
    """callback() runs once the backward pass running now has propagated every gradient, as
    PyTorch's engine.queue_callback: a hook that sees one gradient can act on all of them
    (DistributedDataParallel averages them across processes)."""
    if not _pass_callbacks:
        raise RuntimeError("queue_callback: no backward pass is running")
    _pass_callbacks[-1].append(callback)


def run_backward(outputs, grad_outputs, retain_graph: bool, create_graph: bool, inputs=None):
    """Propagates grad_outputs from outputs. Accumulates into leaves' .grad, or, when inputs is
    given, returns the gradients of those tensors instead (and touches no .grad); then runs
    the callbacks the pass queued."""
    _pass_callbacks.append([])
    try:
        result = _run_backward(outputs, grad_outputs, retain_graph, create_graph, inputs)
    finally:
        callbacks = _pass_callbacks.pop()
    for callback in callbacks:
        callback()
    return result


def _run_backward(outputs, grad_outputs, retain_graph: bool, create_graph: bool, inputs):
    # Steps stay steps: values changed in place since the last schedule (the previous step's
    # parameter updates, optimizer state, running statistics) are computed now, so this
    # step's graph starts from their buffers instead of growing the previous step's graph.
    tensor.realize()
    roots = [edge_of(t) for t in outputs]
    order = _graph_order(roots)
    # runs of plain GradFns from templates (backward_segments), where nothing but the
    # leaves' gradients is wanted
    templated = inputs is None and not create_graph and not jit_protocol.capturing()
    early = early_backward.when(order, outputs) if templated else early_backward.NOT_EARLY
    if early is early_backward.FROM_START:
        tensor.realize(*early_backward.forward_values(order, outputs))
    result = _propagate(order, outputs, roots, grad_outputs, retain_graph, create_graph, inputs,
                        templated)
    if inputs is None:
        if early is early_backward.AT_END:
            tensor.realize(*outputs, *[fn.variable.grad for fn in order if isinstance(
                fn, AccumulateGrad) and fn.variable.grad is not None])
        inplace.backward_ran(outputs)       # (after: a realize ends what a step began)
    return result


def _propagate(order, outputs, roots, grad_outputs, retain_graph: bool, create_graph: bool,
               inputs, templated: bool = False):
    """run_backward's walk, one backward node (or, when templated, one run of plain nodes) at a
    time. Returns the gradients of inputs when given."""
    grads: dict[int, list] = {}     # id(node) -> one pending gradient per output of the node

    def push(fn, nr: int, g) -> None:
        slot = grads.setdefault(id(fn), [None] * fn.num_outputs)
        slot[nr] = _add(slot[nr], g)

    for t, fn, g in zip(outputs, roots, grad_outputs):
        if fn is not None:
            push(fn, output_nr(t), g)
    wanted = None
    if inputs is not None:
        wanted = {(id(edge_of(t)), output_nr(t)) for t in inputs}
    captured: dict[tuple, object] = {}
    with enable_grad() if create_graph else no_grad():
        i = 0
        while i < len(order):
            end = backward_segments.segment_end(order, i) if templated else i
            if end > i:
                backward_segments.run_segment(order[i:end], grads, push, retain_graph)
                i = end
                continue
            fn = order[i]
            i += 1
            slot = grads.pop(id(fn), None)
            if slot is None:
                continue
            if fn.hooks:
                slot = _run_hooks(fn, slot)
            if wanted is not None:
                for nr, g in enumerate(slot):
                    if (id(fn), nr) in wanted:
                        captured[(id(fn), nr)] = g
            if isinstance(fn, AccumulateGrad):
                if wanted is None:
                    _accumulate(fn.variable, slot[0], create_graph)
                continue
            if wanted is None:
                for nr, t in fn.retained.items():
                    if slot[nr] is not None:
                        _accumulate(t, slot[nr], create_graph)
            for (nxt, nr), ng in zip(fn.next_functions, fn.apply(slot, create_graph)):
                if nxt is not None and ng is not None:
                    push(nxt, nr, ng)
            if not retain_graph:
                fn.release()
    if wanted is not None:
        return [captured.get((id(edge_of(t)), output_nr(t))) for t in inputs]
    return None


def _accumulate(t, g, create_graph: bool) -> None:
    if create_graph:
        t.grad = g if t.grad is None else t.grad + g
    elif t.grad is None:
        _set_grad(t, g.detach())    # g may be the caller's (a hook's result): a view of it
    else:
        _set_grad(t, _detached(t.grad + _detached(g)))


def accumulate_node(t, node: Node) -> None:
    """_accumulate of a gradient no tensor holds (a template's): .grad gets a tensor of its
    own rather than a detached view of a tensor made for the purpose, whose reads and
    in-place changes (zero_) would go through the view at every step."""
    g = tensor.Tensor(node.detach(), t.device)
    _set_grad(t, g if t.grad is None else _detached(t.grad + g))


def _set_grad(t, grad) -> None:
    """t.grad = grad, computed by the next schedule even if nothing reads it: gradients
    accumulated over steps and read only now and then (or never: a layer's other parameters)
    would otherwise chain every step's backward pass into one growing graph."""
    t.grad = grad
    inplace.remember(grad)


def _detached(t):
    """t.detach() for a tensor no one else holds: the same node, not a view of t."""
    return tensor.Tensor(t.node.detach(), t.device)


# ---- the entry points: Tensor.backward, cg.autograd.backward and cg.autograd.grad ----

def _grad_outputs(outputs, grad_outputs, op: str) -> list:
    result = []
    for i, out in enumerate(outputs):
        g = grad_outputs[i] if grad_outputs is not None else None
        if g is None:
            if out.numel() != 1:
                raise RuntimeError(f"{op}: grad can be implicitly created only for scalar outputs "
                                   f"(output {i} has shape {tuple(out.shape)})")
            # ones_like(out), without its argument handling: every backward() makes one
            g = tensor.Tensor(ir.const(1, out.dtype, out.node.shape), out.device)
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


# last: tensor.py and backward_segments import this module, and a function-level import costs
# ~1 us per call
from . import backward_segments, inplace, tensor  # noqa: E402
