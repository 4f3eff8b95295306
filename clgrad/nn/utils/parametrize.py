"""Parametrizations, as torch.nn.utils.parametrize: module.weight computed from tensors kept
elsewhere (module.parametrizations.weight.original) by a chain of modules, each time it is read.

As in PyTorch, a parametrized module's class becomes a subclass of its own ("ParametrizedLinear")
on which each parametrized name is a property: reading it runs the chain, assigning it runs the
chain's right_inverse into the originals.
"""
from __future__ import annotations

import collections.abc
import copy
from contextlib import contextmanager

from ...frontend.grad_mode import no_grad
from ...frontend.inplace import assign
from ...frontend.tensor import Tensor
from ..containers import ModuleDict, ModuleList
from ..module import Module
from ..parameter import Parameter

_cache_depth = 0
_cache: dict = {}


@contextmanager
def cached():
    """Within it, each parametrized tensor is computed once, at its first read."""
    global _cache_depth, _cache
    _cache_depth += 1
    try:
        yield
    finally:
        _cache_depth -= 1
        if not _cache_depth:
            _cache = {}


def _register_parameter_or_buffer(module: Module, name: str, value: Tensor) -> None:
    if isinstance(value, Parameter):
        module.register_parameter(name, value)
    else:
        module.register_buffer(name, value)


def _set(dest: Tensor, src: Tensor) -> None:
    """dest takes src's value in place, outside autograd (PyTorch's dest.set_(src))."""
    with no_grad():
        assign(dest, src.detach(), "set_")


def _check_like(what: str, value, original_dtype, original_shape, name: str = "tensor") -> None:
    if not isinstance(value, Tensor):
        raise ValueError(f"A parametrization must return a tensor. Got {type(value).__name__}.")
    if value.dtype != original_dtype:
        raise ValueError(f"Registering a parametrization may not change the dtype of the "
                         f"{name}, unless the `unsafe` flag is enabled.\n{what} dtype: "
                         f"{original_dtype}\nparametrized dtype: {value.dtype}")
    if value.shape != original_shape:
        raise ValueError(f"Registering a parametrization may not change the shape of the "
                         f"{name}, unless the `unsafe` flag is enabled.\n{what} shape: "
                         f"{original_shape}\nparametrized shape: {value.shape}")


class ParametrizationList(ModuleList):
    """The chain of parametrizations of one tensor, and its originals: `original`, or
    `original0`, `original1`, ... when the first parametrization's right_inverse returns
    several tensors (weight_norm's g and v)."""

    def __init__(self, modules, original: Tensor, unsafe: bool = False) -> None:
        if len(modules) == 0:
            raise ValueError("ParametrizationList requires one or more modules.")
        super().__init__(modules)
        self.unsafe = unsafe
        with no_grad():
            new = original
            for module in reversed(list(self)):
                if hasattr(module, "right_inverse"):
                    try:
                        new = module.right_inverse(new)
                    except NotImplementedError:
                        pass
        if not isinstance(new, (Tensor, collections.abc.Sequence)):
            raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                             f"(list, tuple...). Got {type(new).__name__}")
        self.is_tensor = isinstance(new, Tensor)
        self.ntensors = 1 if self.is_tensor else len(new)
        if self.is_tensor:
            self._register_original(original, new)
        else:
            self._register_originals(original, new)
        if not unsafe:
            _check_like("unparametrized", self(), original.dtype, original.shape)

    def _register_original(self, original: Tensor, new: Tensor) -> None:
        for what in ("dtype", "device"):
            if getattr(original, what) != getattr(new, what):
                raise ValueError(f"When `right_inverse` outputs one tensor, it may not change "
                                 f"the {what}.\noriginal.{what}: {getattr(original, what)}\n"
                                 f"right_inverse(original).{what}: {getattr(new, what)}")
        if new is not original:
            _set(original, new)
        _register_parameter_or_buffer(self, "original", original)

    def _register_originals(self, original: Tensor, new) -> None:
        for i, value in enumerate(new):
            if not isinstance(value, Tensor):
                raise ValueError("'right_inverse' must return a Tensor or a Sequence of tensors "
                                 f"(list, tuple...). Got element {i} of the sequence with type "
                                 f"{type(value).__name__}.")
            if isinstance(original, Parameter):
                value = Parameter(value.detach(), original.requires_grad)
            value.requires_grad_(original.requires_grad)
            _register_parameter_or_buffer(self, f"original{i}", value)

    def right_inverse(self, value: Tensor) -> None:
        """Sets the originals so that the chain gives value (assigning module.weight)."""
        with no_grad():
            for module in reversed(list(self)):
                if not hasattr(module, "right_inverse"):
                    raise RuntimeError(f"parametrization {type(module).__name__} does not "
                                       "implement right_inverse.")
                value = module.right_inverse(value)
            if self.is_tensor:
                if not isinstance(value, Tensor):
                    raise ValueError("`right_inverse` should return a tensor. Got "
                                     f"{type(value).__name__}")
                if value.dtype != self.original.dtype:
                    raise ValueError(f"The tensor returned by `right_inverse` has dtype "
                                     f"{value.dtype} while `original` has dtype "
                                     f"{self.original.dtype}")
                _set(self.original, value)
                return
            self._set_originals(value)

    def _set_originals(self, values) -> None:
        if not isinstance(values, collections.abc.Sequence):
            raise ValueError("'right_inverse' must return a sequence of tensors. Got "
                             f"{type(values).__name__}.")
        if len(values) != self.ntensors:
            raise ValueError("'right_inverse' must return a sequence of tensors of length "
                             f"{self.ntensors}. Got a sequence of length {len(values)}.")
        for i, value in enumerate(values):
            original = getattr(self, f"original{i}")
            if not isinstance(value, Tensor):
                raise ValueError("'right_inverse' must return a sequence of tensors or "
                                 f"reference-type opaques. Got element {i} of type "
                                 f"{type(value).__name__}.")
            if original.dtype != value.dtype:
                raise ValueError(f"Tensor {i} returned by `right_inverse` has dtype "
                                 f"{value.dtype} while `original{i}` has dtype {original.dtype}")
            _set(original, value)

    def forward(self) -> Tensor:
        chain = list(self)
        if self.is_tensor:
            x = chain[0](self.original)
        else:
            x = chain[0](*(getattr(self, f"original{i}") for i in range(self.ntensors)))
        for module in chain[1:]:
            x = module(x)
        return x


def _refuse_pickling(self):
    raise RuntimeError("Serialization of parametrized modules is only supported through "
                       "state_dict(). See:\nhttps://pytorch.org/tutorials/beginner/"
                       "saving_loading_models.html#saving-loading-a-general-checkpoint-for-"
                       "inference-and-or-resuming-training")


def _copy_instance(self, memo):
    """deepcopy of a parametrized module: its __dict__ copied, its class (which holds the
    properties) shared."""
    if id(self) in memo:
        return memo[id(self)]
    replica = self.__new__(type(self))
    memo[id(self)] = replica
    replica.__dict__ = copy.deepcopy(self.__dict__, memo)
    return replica


def _inject_new_class(module: Module) -> None:
    cls = type(module)
    namespace = {"__getstate__": _refuse_pickling}
    if not hasattr(cls, "__deepcopy__"):
        namespace["__deepcopy__"] = _copy_instance
    module.__class__ = type(f"Parametrized{cls.__name__}", (cls,), namespace)


def _inject_property(module: Module, name: str) -> None:
    if hasattr(module, name):
        raise AssertionError(f"Module already has an attribute named '{name}'")

    def get_parametrized(self) -> Tensor:
        parametrization = self.parametrizations[name]
        if not _cache_depth:
            return parametrization()
        key = (id(self), name)
        if _cache.get(key) is None:
            _cache[key] = parametrization()
        return _cache[key]

    def set_original(self, value: Tensor) -> None:
        self.parametrizations[name].right_inverse(value)

    setattr(type(module), name, property(get_parametrized, set_original))


def _check_added(module: Module, name: str, parametrization: Module) -> None:
    """A parametrization added to a chain keeps module.name's dtype and shape, and so does its
    right_inverse."""
    current = getattr(module, name)
    new = parametrization(current)
    _check_like(f"module.{name}", new, current.dtype, current.shape)
    if not hasattr(parametrization, "right_inverse"):
        return
    try:
        back = parametrization.right_inverse(new)
    except NotImplementedError:
        return
    if not isinstance(back, Tensor):
        raise ValueError("parametrization.right_inverse must return a tensor. Got: "
                         f"{type(back).__name__}")
    _check_like(f"module.{name}", back, current.dtype, current.shape,
                name="tensor returned by parametrization.right_inverse")


def register_parametrization(module: Module, tensor_name: str, parametrization: Module, *,
                             unsafe: bool = False) -> Module:
    """Makes module.<tensor_name> parametrization(original); registered again, the new
    parametrization is applied after the others."""
    parametrization.train(module.training)
    if is_parametrized(module, tensor_name):
        if not unsafe:
            _check_added(module, tensor_name, parametrization)
        chain = module.parametrizations[tensor_name]
        chain.append(parametrization)
        chain.unsafe |= unsafe
    elif tensor_name in module._buffers or tensor_name in module._parameters:
        original = getattr(module, tensor_name)
        chain = ParametrizationList([parametrization], original, unsafe=unsafe)
        delattr(module, tensor_name)
        if not is_parametrized(module):
            _inject_new_class(module)
            module.parametrizations = ModuleDict()
        _inject_property(module, tensor_name)
        module.parametrizations[tensor_name] = chain
    else:
        raise ValueError(f"Module '{module}' does not have a parameter, a buffer, or a "
                         f"parametrized element with name '{tensor_name}'")
    return module


def is_parametrized(module: Module, tensor_name: str | None = None) -> bool:
    """Whether module has a parametrization (on tensor_name, when given)."""
    parametrizations = getattr(module, "parametrizations", None)
    if not isinstance(parametrizations, ModuleDict):
        return False
    return len(parametrizations) > 0 if tensor_name is None else tensor_name in parametrizations


def remove_parametrizations(module: Module, tensor_name: str,
                            leave_parametrized: bool = True) -> Module:
    """Makes module.<tensor_name> a plain parameter or buffer again: its parametrized value
    (leave_parametrized) or its original."""
    if not is_parametrized(module, tensor_name):
        raise ValueError(f"Module {module} does not have a parametrization on {tensor_name}")
    chain = module.parametrizations[tensor_name]
    if chain.is_tensor:
        original = chain.original
        if leave_parametrized:
            with no_grad():
                _set(original, getattr(module, tensor_name))
    elif leave_parametrized:
        value = getattr(module, tensor_name)
        original = Parameter(value.detach()) if value.requires_grad else value
    else:
        raise ValueError("Cannot leave unparametrized (`leave_parametrized=False`) a tensor "
                         "that is parametrized in terms of a sequence of tensors.")
    delattr(type(module), tensor_name)
    del module.parametrizations[tensor_name]
    _register_parameter_or_buffer(module, tensor_name, original)
    if not is_parametrized(module):
        delattr(module, "parametrizations")
        module.__class__ = type(module).__bases__[0]
    return module


def type_before_parametrizations(module: Module) -> type:
    """module's class before it was parametrized."""
    return type(module).__bases__[0] if is_parametrized(module) else type(module)


def transfer_parametrizations_and_params(from_module: Module, to_module: Module,
                                         tensor_name: str | None = None) -> Module:
    """Registers from_module's parametrizations (of tensor_name, or all) on to_module, sharing
    their originals."""
    if not is_parametrized(from_module):
        return to_module
    names = list(from_module.parametrizations) if tensor_name is None else [tensor_name]
    for name in names:
        source = from_module.parametrizations[name]
        if not hasattr(to_module, name):
            setattr(to_module, name, Parameter(getattr(from_module, name).detach()))
        for parametrization in source:
            register_parametrization(to_module, name, parametrization)
        target = to_module.parametrizations[name]
        originals = ["original"] if source.is_tensor else \
            [f"original{i}" for i in range(source.ntensors)]
        for original in originals:
            setattr(target, original, getattr(source, original))
    return to_module


__all__ = ["cached", "ParametrizationList", "register_parametrization", "is_parametrized",
           "remove_parametrizations", "type_before_parametrizations",
           "transfer_parametrizations_and_params"]
