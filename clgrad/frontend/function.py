"""Custom operations: cg.autograd.Function, as torch.autograd.Function.

    class Exp(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x.exp()
            ctx.save_for_backward(result)     # d exp(x) / dx is exp(x): keep the output
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result

    y = Exp.apply(x)

forward runs under no_grad on the lazy tensors it is given, so its body is recorded as
ordinary IR and fuses with the ops around it; so does backward. The outputs get a
backward node named `<ClassName>Backward` that calls the user's backward.
"""
from __future__ import annotations

import inspect
import weakref

from . import views
from .backward import _FREED, BackwardNode, edge_of, output_nr
from .grad_mode import is_grad_enabled, no_grad
from .operands import is_tensor


class _NamedFlags(tuple):
    """A tuple of flags, one per forward argument, also readable by argument name:
    `flags[0]`, `flags["weight"]`, `flags.weight`."""

    def __new__(cls, flags, names):
        obj = super().__new__(cls, flags)
        obj._names = tuple(names)
        return obj

    def __getitem__(self, key):
        if isinstance(key, str):
            return super().__getitem__(self._index(key))
        return super().__getitem__(key)

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return self[self._index(name)]

    def _index(self, name: str) -> int:
        if name not in self._names:
            raise AttributeError(f"needs_input_grad: forward has no argument named {name!r} "
                                 f"(arguments: {', '.join(self._names)})")
        return self._names.index(name)


class FunctionCtx:
    """The `ctx` handed to forward and backward."""

    def __init__(self, fn_name: str, arg_names, needs_input_grad):
        self._fn_name = fn_name
        self.needs_input_grad = _NamedFlags(needs_input_grad, arg_names)
        self._saved: list = []               # (tensor or None, version when saved)
        self._saved_named: dict = {}
        self._dirty: list = []
        self._non_differentiable: list = []
        self.materialize_grads = True
        self._freed = False

    def save_for_backward(self, *tensors, **named) -> None:
        """Keeps tensors for backward: positional ones come back as ctx.saved_tensors, named
        ones as ctx.saved_variables[name] and ctx.<name>. Each is checked, when read, not
        to have been modified in place since it was saved."""
        for i, t in enumerate(tensors):
            if t is not None and not is_tensor(t):
                raise TypeError(f"{self._fn_name}: save_for_backward can only save tensors "
                                f"(or None), but argument {i} is a {type(t).__name__}")
        for name, t in named.items():
            if t is not None and not is_tensor(t):
                raise TypeError(f"{self._fn_name}: save_for_backward can only save tensors "
                                f"(or None), but {name!r} is a {type(t).__name__}")
        self._saved = [(t, None if t is None else t._version) for t in tensors]
        self._saved_named = {k: (t, None if t is None else t._version) for k, t in named.items()}

    @property
    def saved_tensors(self) -> tuple:
        return tuple([self._unpack(t, v, i) for i, (t, v) in enumerate(self._saved)])

    @property
    def saved_variables(self) -> dict:
        return {k: self._unpack(t, v, k) for k, (t, v) in self._saved_named.items()}

    def __getattr__(self, name):
        saved = self.__dict__.get("_saved_named", {})
        if name in saved:
            t, version = saved[name]
            return self._unpack(t, version, name)
        raise AttributeError(f"'{type(self).__name__}' object has no attribute {name!r}")

    def _unpack(self, t, version, key: int | str):
        """The saved tensor t, checked; key is its position, or its name when saved by name
        (named in the message only when it fails: backward reads these at every step)."""
        if self._freed:
            raise RuntimeError(_FREED)
        if t is not None and t._version != version:
            raise RuntimeError(
                "one of the variables needed for gradient computation has been modified by an "
                f"inplace operation: [{t.dtype.name} {list(t.shape)}], which is saved tensor "
                f"{key if isinstance(key, int) else repr(key)} of "
                f"{self._fn_name}Backward, is at version {t._version}; expected version "
                f"{version} instead.")
        return t

    def mark_dirty(self, *tensors) -> None:
        """Declares inputs that forward modified in place (and returns)."""
        self._dirty = list(tensors)

    def mark_non_differentiable(self, *tensors) -> None:
        """Declares outputs that get no gradient (indices, masks)."""
        self._non_differentiable = list(tensors)

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)


class CustomBackward(BackwardNode):
    """The backward node of one Function.apply: runs the user's backward."""

    def __init__(self, fn_cls, ctx: FunctionCtx, args: list, names: list, tensor_positions):
        edges = tuple((edge_of(args[i]), output_nr(args[i])) if args[i].requires_grad
                      else (None, 0) for i in tensor_positions)
        super().__init__(f"{fn_cls.__name__}Backward", edges)
        self.fn_cls = fn_cls
        self.ctx = ctx
        self.names = names
        self.n_args = len(args)
        self.tensor_positions = tensor_positions
        self.input_meta = {i: (args[i].node.shape, args[i].dtype, args[i].device)
                           for i in tensor_positions}
        self.output_meta: list = []          # (shape, dtype, device) per output, None if no tensor

    @property
    def num_outputs(self) -> int:
        return len(self.output_meta)

    def apply(self, grads: list, create_graph: bool) -> list:
        if self.freed:
            raise RuntimeError(_FREED)
        if self.ctx.materialize_grads:
            grads = [_zeros(meta) if g is None and meta is not None else g
                     for g, meta in zip(grads, self.output_meta)]
        result = self.fn_cls.backward(self.ctx, *grads)
        per_arg = self._per_argument(result)
        for i, g in enumerate(per_arg):
            if g is not None and i not in self.input_meta:
                raise RuntimeError(f"function {self._name} returned a gradient different from "
                                   f"None for input {i} ({self.names[i]!r}), but that forward "
                                   "argument is not a tensor")
        return [self._checked(i, per_arg[i]) for i in self.tensor_positions]

    def _per_argument(self, result) -> list:
        """backward's result as one entry per forward argument."""
        if isinstance(result, dict):
            unknown = [k for k in result if k not in self.names]
            if unknown:
                raise RuntimeError(f"function {self._name} returned gradients for {unknown}, "
                                   f"which are not arguments of forward ({', '.join(self.names)})")
            return [result.get(name) for name in self.names]
        if not isinstance(result, (tuple, list)):
            result = (result,)
        result = list(result)
        if len(result) > self.n_args and all(g is None for g in result[self.n_args:]):
            result = result[:self.n_args]        # PyTorch tolerates trailing Nones
        if len(result) != self.n_args:
            raise RuntimeError(f"function {self._name} returned an incorrect number of gradients "
                               f"(expected {self.n_args}, got {len(result)})")
        return result

    def _checked(self, i: int, g):
        """The gradient for argument i, checked against the input it belongs to."""
        if g is None:
            return None
        name = self.names[i]
        if not is_tensor(g):
            raise RuntimeError(f"function {self._name} returned a {type(g).__name__} as the "
                               f"gradient of input {i} ({name!r}); expected a Tensor or None")
        shape, dtype, device = self.input_meta[i]
        if g.device is not device and g.device != device:
            raise RuntimeError(f"function {self._name} returned a gradient on {g.device.spec} "
                               f"for input {i} ({name!r}), which is on {device.spec}")
        if g.node.shape != shape:
            if not _expandable(shape, g.shape):
                raise RuntimeError(f"function {self._name} returned an invalid gradient for input "
                                   f"{i} ({name!r}): got shape {list(g.shape)} but expected a "
                                   f"shape compatible with {list(shape)}")
            g = _sum_to(g, shape)
        if g.dtype != dtype:
            g = g.to(dtype)
        return g

    def held(self) -> tuple:
        return (*[t for t, _ in self.ctx._saved], *[t for t, _ in self.ctx._saved_named.values()])

    def release(self) -> None:
        super().release()
        self.ctx._freed = True
        self.ctx._saved, self.ctx._saved_named = [], {}     # let the saved values go


def _zeros(meta):
    from .creation import zeros
    shape, dtype, device = meta
    return zeros(*shape, dtype=dtype, device=device)


def _expandable(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s in (1, t) for s, t in zip(shape[::-1], target[::-1]))


def _sum_to(g, shape):
    lead = len(g.shape) - len(shape)
    if lead:
        g = g.sum(dim=tuple(range(lead)))
    axes = tuple(i for i, (s, t) in enumerate(zip(shape, g.shape)) if s == 1 and t != 1)
    return g.sum(dim=axes, keepdim=True) if axes else g


class Function:
    """Subclass with static forward(ctx, ...) and backward(ctx, *grad_outputs); call .apply."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("a Function subclass must define a static forward(ctx, ...)")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("a Function subclass must define a static backward(ctx, ...) "
                                  "to be differentiated")

    @classmethod
    def apply(cls, *args, **kwargs):
        names, values = _bind(cls, args, kwargs)
        positions = [i for i, v in enumerate(values) if is_tensor(v)]
        needs = [False] * len(values)
        if is_grad_enabled():
            for i in positions:
                needs[i] = values[i].requires_grad
        ctx = FunctionCtx(cls.__name__, names, needs)
        node = CustomBackward(cls, ctx, values, names, positions) if any(needs) else None
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outputs = (outputs,) if single else outputs
        _check_dirty(cls, ctx, values)
        if single:
            return _attach(node, ctx, values, outputs[0])
        return tuple([_attach(node, ctx, values, out) for out in outputs])


# forward -> (its signature, its parameter names after ctx when all are plain positional
# ones, else None): inspect.signature costs tens of microseconds a call
_signatures: "weakref.WeakKeyDictionary[object, tuple]" = weakref.WeakKeyDictionary()


def _signature(forward) -> tuple[inspect.Signature, tuple[str, ...] | None]:
    cached = _signatures.get(forward)
    if cached is None:
        signature = inspect.signature(forward)
        params = list(signature.parameters.values())[1:]
        plain = all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
                    for p in params)
        cached = _signatures[forward] = (signature, tuple(p.name for p in params) if plain else None)
    return cached


def _bind(cls, args, kwargs) -> tuple[list[str], list]:
    """forward's arguments (after ctx) in order, with their names; *args are numbered."""
    signature, plain = _signature(cls.forward)
    if plain is not None and not kwargs and len(args) == len(plain):
        return list(plain), list(args)
    try:
        bound = signature.bind(None, *args, **kwargs)
    except TypeError as e:
        raise TypeError(f"{cls.__name__}.apply: {e}") from None
    bound.apply_defaults()
    names, values = [], []
    for k, (name, value) in enumerate(bound.arguments.items()):
        if k == 0:
            continue                          # ctx
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            names += [f"{name}{i}" for i in range(len(value))]
            values += list(value)
        elif kind is inspect.Parameter.VAR_KEYWORD:
            names += list(value)
            values += list(value.values())
        else:
            names.append(name)
            values.append(value)
    return names, values


def _check_dirty(cls, ctx: FunctionCtx, values) -> None:
    for t in ctx._dirty:
        if not any(t is v for v in values):
            raise RuntimeError(f"{cls.__name__}: mark_dirty was given a tensor that is not an "
                               "input of forward")
        if t.requires_grad and t.is_leaf and is_grad_enabled():
            raise RuntimeError(f"{cls.__name__}: a leaf Variable that requires grad is being "
                               "used in an in-place operation.")


def _attach(node, ctx: FunctionCtx, values, out):
    """The tensor apply returns for one forward output, with node as its grad_fn."""
    if not is_tensor(out):
        if node is not None:
            node.output_meta.append(None)
        return out
    # (most forwards mark nothing: no generator for an empty list)
    dirty = bool(ctx._dirty) and any(out is t for t in ctx._dirty)
    non_differentiable = bool(ctx._non_differentiable) and \
        any(out is t for t in ctx._non_differentiable)
    base = None
    if not dirty:
        for v in values:
            if out is v:
                base = v
                break
    if base is not None:
        from .tensor import Tensor
        out = Tensor(out.node, out.device)    # an input returned as is: a new alias of it
    if node is None:
        return out
    node.output_meta.append((out.node.shape, out.dtype, out.device))
    if non_differentiable or not out.dtype.is_float:
        return out                            # integer outputs never require grad
    out._output_nr = len(node.output_meta) - 1
    out.grad_fn, out.requires_grad = node, True
    if base is not None or (not dirty and out._view is not None):
        views.function_output(out, base, out._output_nr, node.name())
    return out


def function(forward, backward, name: str | None = None) -> type:
    """A Function class built from two plain functions, forward(ctx, ...) and
    backward(ctx, *grad_outputs). Its name (and so its node's, `<name>Backward`) comes from
    `name` or forward's own name: `relu_forward` gives `Relu`."""
    if name is None:
        base = forward.__name__.removesuffix("forward").strip("_") or "Custom"
        name = "".join(part.capitalize() for part in base.split("_"))
    return type(name, (Function,), {"forward": staticmethod(forward),
                                    "backward": staticmethod(backward),
                                    "__doc__": forward.__doc__})
