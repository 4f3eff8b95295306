"""The containers: Sequential, ModuleList and ParameterList hold their entries under the names
"0", "1", ..., ModuleDict and ParameterDict under string keys."""
from __future__ import annotations

import warnings
from collections import OrderedDict

from .module import Module


class _Container(Module):
    """What the containers share: their entries are one of the Module's registration tables
    (_modules or _parameters, named by _table), and _register adds one."""
    _table = "_modules"
    _register = Module.add_module

    def _entries(self) -> dict:
        return self.__dict__[self._table]

    def __len__(self) -> int:
        return len(self._entries())


class Container(Module):
    """PyTorch's oldest container: each keyword argument becomes a named submodule."""

    def __init__(self, **modules):
        warnings.warn("`nn.Container` is deprecated. All of its functionality is now "
                      "implemented in `nn.Module`. Subclass that instead.", FutureWarning,
                      stacklevel=2)
        super().__init__()
        for name, module in modules.items():
            self.add_module(name, module)


class _Numbered(_Container):
    """The list methods of Sequential, ModuleList and ParameterList: entries named "0", "1",
    ..."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __iter__(self):
        return iter(self._entries().values())

    def append(self, value):
        self._register(str(len(self)), value)
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self


class Sequential(_Numbered):
    def __init__(self, *args):
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            super().__init__()
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            super().__init__(args)

    def forward(self, input):
        for module in self._modules.values():
            input = module(input)
        return input

    def __getitem__(self, index):
        modules = list(self._modules.items())
        if isinstance(index, slice):
            return Sequential(OrderedDict(modules[index]))
        return modules[_index(index, len(modules))][1]

    def __setitem__(self, index: int, module: Module) -> None:
        name = list(self._modules)[_index(index, len(self._modules))]
        setattr(self, name, module)

    def __delitem__(self, index: int) -> None:
        del self._modules[list(self._modules)[_index(index, len(self._modules))]]


class ModuleList(_Numbered):
    def __init__(self, modules=None):
        super().__init__(modules)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return ModuleList(list(self._modules.values())[index])
        return self._modules[str(_index(index, len(self)))]

    def __setitem__(self, index: int, module: Module) -> None:
        setattr(self, str(_index(index, len(self))), module)

    def __delitem__(self, index: int) -> None:
        kept = [m for i, m in enumerate(self._modules.values()) if i != _index(index, len(self))]
        self._modules.clear()
        self.extend(kept)

    def insert(self, index: int, module: Module) -> None:
        items = list(self._modules.values())
        items.insert(index, module)
        self._modules.clear()
        self.extend(items)


def _index(index: int, n: int) -> int:
    if not -n <= index < n:
        raise IndexError(f"index {index} is out of range for a container of {n} modules")
    return index % n


# ---- ModuleDict, ParameterList, ParameterDict ---------------------------------------------

def _pairs(items):
    """(key, value) pairs of a mapping or of an iterable of pairs, as PyTorch's update takes."""
    if hasattr(items, "keys"):
        return [(k, items[k]) for k in items.keys()]
    pairs = []
    for j, pair in enumerate(items):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"update: expected an iterable of (key, value) pairs, element #{j} "
                             f"is {pair!r}")
        pairs.append(tuple(pair))
    return pairs


class _Mapping(_Container):
    """The dict methods of ModuleDict and ParameterDict: entries under string keys, in
    insertion order."""

    def __init__(self, entries=None):
        super().__init__()
        if entries is not None:
            self.update(entries)

    def __getitem__(self, key: str):
        return self._entries()[key]

    def __setitem__(self, key: str, value) -> None:
        self._register(key, value)

    def __delitem__(self, key: str) -> None:
        del self._entries()[key]

    def __iter__(self):
        return iter(self._entries())

    def __contains__(self, key) -> bool:
        return key in self._entries()

    def clear(self) -> None:
        self._entries().clear()

    def pop(self, key: str):
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._entries().keys()

    def items(self):
        return self._entries().items()

    def values(self):
        return self._entries().values()

    def update(self, entries) -> None:
        for key, value in _pairs(entries):
            self[key] = value


class ModuleDict(_Mapping):
    """Submodules under string keys, in insertion order."""

    def __init__(self, modules=None):
        super().__init__(modules)


def _as_parameter(value):
    """A tensor registered in a parameter container becomes a Parameter, as in PyTorch."""
    from ..frontend.tensor import Tensor
    from .parameter import Parameter
    if isinstance(value, Tensor) and not isinstance(value, Parameter):
        return Parameter(value, requires_grad=value.requires_grad)
    if value is not None and not isinstance(value, Tensor):
        raise TypeError(f"expected a Parameter or Tensor, got {type(value).__name__}")
    return value


def _parameter_line(key, p) -> str:
    if p is None:
        return f"({key}): None"
    size = "x".join(map(str, p.shape))
    return f"({key}): Parameter containing: [clgrad.{p.dtype.name} of size {size}]"


def _register_parameter(container: Module, name: str, value) -> None:
    container.register_parameter(name, _as_parameter(value))


class ParameterList(_Numbered):
    """Parameters under the names "0", "1", ...: they show in parameters() and state_dict()."""
    _table = "_parameters"
    _register = _register_parameter

    def __getitem__(self, index):
        values = list(self._parameters.values())
        if isinstance(index, slice):
            return ParameterList(values[index])
        return self._parameters[str(_index(index, len(values)))]

    def __setitem__(self, index: int, value) -> None:
        self._register(str(_index(index, len(self))), value)

    def __iadd__(self, values) -> ParameterList:
        return self.extend(values)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p) for k, p in self._parameters.items())


class ParameterDict(_Mapping):
    """Parameters under string keys, in insertion order."""
    _table = "_parameters"
    _register = _register_parameter

    def __init__(self, parameters=None):
        super().__init__(parameters)

    def get(self, key: str, default=None):
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p) for k, p in self._parameters.items())
