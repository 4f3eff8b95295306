"""Module: the base of every layer. Parameters, buffers and submodules are registered
explicitly in __setattr__, so named_parameters() and state_dict() need no introspection."""
from __future__ import annotations

from collections import OrderedDict
from typing import Iterator

from ..frontend.grad_mode import no_grad
from ..frontend.inplace import assign, move
from ..frontend.tensor import Tensor
from . import module_hooks
from .parameter import Parameter


class Module:
    training: bool

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "training", True)
        for name, table in module_hooks.tables().items():
            object.__setattr__(self, name, table)

    # ---- registration ----
    def __setattr__(self, name: str, value) -> None:
        if "_parameters" not in self.__dict__:
            if isinstance(value, (Parameter, Module)):
                raise AttributeError(f"cannot assign {type(value).__name__} '{name}' before "
                                     "Module.__init__() call")
            object.__setattr__(self, name, value)
            return
        # a Parameter or Module value registers; None clears a name registered as one
        for table, kind, role in (("_parameters", Parameter, "parameter"),
                                  ("_modules", Module, "child module")):
            if isinstance(value, kind):
                self._forget(name)
                self.__dict__[table][name] = value
                return
            if name in self.__dict__[table]:
                if value is not None:
                    raise TypeError(f"cannot assign '{type(value).__name__}' as {role} "
                                    f"'{name}' (nn.{kind.__name__} or None expected)")
                self.__dict__[table][name] = None
                return
        if name in self._buffers:
            if value is not None and not isinstance(value, Tensor):
                raise TypeError(f"cannot assign '{type(value).__name__}' as buffer '{name}' "
                                "(a Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str) -> None:
        self.__dict__.pop(name, None)
        for table in ("_parameters", "_buffers", "_modules"):
            self.__dict__[table].pop(name, None)
        self._non_persistent.discard(name)

    def __getattr__(self, name: str):
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for table in ("_parameters", "_buffers", "_modules"):
            if name in self.__dict__.get(table, {}):
                del self.__dict__[table][name]
                self._non_persistent.discard(name)
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign '{type(param).__name__}' as parameter '{name}' "
                            "(a Parameter or None is expected)")
        self._check_name(name, "_parameters")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' as buffer '{name}' "
                            "(a Tensor or None is expected)")
        self._check_name(name, "_buffers")
        self._buffers[name] = tensor
        if not persistent:
            self._non_persistent.add(name)

    def register_module(self, name: str, module: Module | None) -> None:
        self._check_name(name, "_modules")
        self._modules[name] = module

    add_module = register_module

    def _check_name(self, name: str, table: str) -> None:
        if not isinstance(name, str) or not name or "." in name:
            raise KeyError(f"attribute name must be a non-empty string without '.', got {name!r}")
        if name in self.__dict__ and name not in getattr(self, table):
            raise KeyError(f"attribute '{name}' already exists")

    # ---- calling ----
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"Module [{type(self).__name__}] is missing the required "
                                  "\"forward\" function")

    def __call__(self, *args, **kwargs):
        if self._forward_pre_hooks or self._forward_hooks:
            return module_hooks.call(self, args, kwargs)
        return self.forward(*args, **kwargs)

    # ---- hooks ----
    def register_forward_pre_hook(self, hook, *, prepend: bool = False,
                                  with_kwargs: bool = False):
        """hook(module, args) (hook(module, args, kwargs) with_kwargs) runs before forward;
        what it returns, if not None, replaces the arguments. Returns a handle to remove it."""
        flags = [self._forward_pre_hooks_with_kwargs] if with_kwargs else []
        return module_hooks.add(self._forward_pre_hooks, hook, prepend, *flags)

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False,
                              always_call: bool = False):
        """hook(module, args, output) (hook(module, args, kwargs, output) with_kwargs) runs
        after forward (with always_call, also when forward raised); what it returns, if not
        None, replaces the output. Returns a handle to remove it."""
        flags = [table for table, wanted in ((self._forward_hooks_with_kwargs, with_kwargs),
                                             (self._forward_hooks_always_called, always_call))
                 if wanted]
        return module_hooks.add(self._forward_hooks, hook, prepend, *flags)

    def _register_load_state_dict_pre_hook(self, hook, with_module: bool = False):
        """hook(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
        error_msgs) (module first, with_module) runs before load_state_dict reads this
        module's entries, and may rename them in state_dict."""
        if with_module:
            plain, hook = hook, lambda *args: plain(self, *args)
        return module_hooks.add(self._load_state_dict_pre_hooks, hook)

    def register_load_state_dict_pre_hook(self, hook):
        return self._register_load_state_dict_pre_hook(hook, with_module=True)

    # ---- traversal ----
    def named_modules(self, memo=None, prefix: str = "") -> Iterator[tuple[str, Module]]:
        memo = set() if memo is None else memo
        if id(self) in memo:
            return
        memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is not None:
                yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen = set()
        for name, m in self._modules.items():
            if m is not None and id(m) not in seen:
                seen.add(id(m))
                yield name, m

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool = True):
        seen = set()
        modules = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for module_prefix, module in modules:
            for name, value in getattr(module, table).items():
                if value is None or remove_duplicate and id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{module_prefix}.{name}" if module_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True):
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Parameter]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True):
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Tensor]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def apply(self, fn) -> Module:
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # ---- modes ----
    def train(self, mode: bool = True) -> Module:
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.parameters():
            if p.grad is None:
                continue
            if set_to_none:
                p.grad = None
            else:
                from ..frontend.creation import zeros_like
                p.grad = zeros_like(p.grad)

    def to(self, *args, **kwargs) -> Module:
        """Moves (or casts) every parameter and buffer in place; the Parameters stay the same
        objects, so an optimizer built before .to() still holds them."""
        with no_grad():
            for p in self.parameters():
                moved = p.detach().to(*args, **kwargs).realize()
                move(p, moved)
                if p.grad is not None:
                    p.grad = p.grad.to(*args, **kwargs)
            for m in self.modules():
                for name, b in m._buffers.items():
                    if b is not None:
                        m._buffers[name] = b.to(*args, **kwargs) if b.dtype.is_float or \
                            not _only_dtype(args, kwargs) else b
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def float(self) -> Module:
        from ..compiler import dtype as dt
        return self.to(dt.float32)

    def double(self) -> Module:
        from ..compiler import dtype as dt
        return self.to(dt.float64)

    def half(self) -> Module:
        from ..compiler import dtype as dt
        return self.to(dt.float16)

    def bfloat16(self) -> Module:
        from ..compiler import dtype as dt
        return self.to(dt.bfloat16)

    # ---- state ----
    def state_dict(self, destination=None, prefix: str = "", keep_vars: bool = False):
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copies values into this module's parameters and buffers. Returns (missing_keys,
        unexpected_keys); with strict=True any of those, or a shape mismatch, is an error."""
        state_dict, missing, unexpected, errors = OrderedDict(state_dict), [], [], []
        for prefix, module in self.named_modules():
            for hook in list(module._load_state_dict_pre_hooks.values()):
                hook(state_dict, prefix + "." if prefix else "", {}, strict, missing,
                     unexpected, errors)
        own = self.state_dict(keep_vars=True)
        missing += [k for k in own if k not in state_dict]
        unexpected += [k for k in state_dict if k not in own]
        if strict:
            if missing:
                errors.append("Missing key(s) in state_dict: " + ", ".join(
                    f'"{k}"' for k in missing) + ". ")
            if unexpected:
                errors.append("Unexpected key(s) in state_dict: " + ", ".join(
                    f'"{k}"' for k in unexpected) + ". ")
        for key, target in own.items():
            if key not in state_dict:
                continue
            value = _as_tensor(state_dict[key], target)
            if value.shape != target.shape:
                errors.append(f"size mismatch for {key}: copying a param with shape "
                              f"{_size(value.shape)} from checkpoint, the shape in current model "
                              f"is {_size(target.shape)}.")
        if errors:
            raise RuntimeError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t"
                               + "\n\t".join(errors))
        with no_grad():
            for key, target in own.items():
                if key in state_dict:
                    _copy_into(target, _as_tensor(state_dict[key], target))
        from ..frontend.tensor import realize
        realize(*[t for k, t in own.items() if k in state_dict])
        return _IncompatibleKeys(missing, unexpected)

    # ---- repr ----
    def extra_repr(self) -> str:
        return ""

    def __repr__(self) -> str:
        lines = []
        extra = self.extra_repr()
        if extra:
            lines = extra.split("\n")
        for name, m in self._modules.items():
            body = repr(m).replace("\n", "\n  ")
            lines.append(f"({name}): {body}")
        head = type(self).__name__ + "("
        if not self._modules:
            return head + (lines[0] if len(lines) == 1 else "\n  " + "\n  ".join(lines) + "\n"
                           if lines else "") + ")"
        return head + "\n  " + "\n  ".join(lines) + "\n)"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers)
                      | set(self._modules))


class _IncompatibleKeys(tuple):
    def __new__(cls, missing_keys, unexpected_keys):
        obj = super().__new__(cls, (missing_keys, unexpected_keys))
        obj.missing_keys, obj.unexpected_keys = missing_keys, unexpected_keys
        return obj

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return (f"_IncompatibleKeys(missing_keys={self.missing_keys}, "
                f"unexpected_keys={self.unexpected_keys})")


def _size(shape) -> str:
    return f"clgrad.Size({list(shape)})"


def _only_dtype(args, kwargs) -> bool:
    from ..compiler import dtype as dt
    return any(isinstance(a, dt.DType) for a in args) or "dtype" in kwargs


def _as_tensor(value, like: Tensor) -> Tensor:
    if isinstance(value, Tensor):
        return value
    from ..frontend.creation import tensor
    return tensor(value, dtype=like.dtype, device=like.device)


def _copy_into(target: Tensor, value: Tensor) -> None:
    """target takes value's data in place (bumping its version, as copy_ does)."""
    assign(target, value.detach().to(target.device).to(target.dtype))


def place(module: Module, device=None, dtype=None) -> None:
    """Moves a newly built layer to the device and dtype its constructor was given, if any."""
    if device is not None or dtype is not None:
        module.to(*(a for a in (device, dtype) if a is not None))
