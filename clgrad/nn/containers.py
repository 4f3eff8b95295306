"""Sequential and ModuleList: modules that hold other modules under the names "0", "1", ..."""
from __future__ import annotations

from collections import OrderedDict

from .module import Module


class Sequential(Module):
    def __init__(self, *args):
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, module in args[0].items():
                self.add_module(name, module)
        else:
            for i, module in enumerate(args):
                self.add_module(str(i), module)

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

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> Sequential:
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

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

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module: Module) -> ModuleList:
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules) -> ModuleList:
        for m in modules:
            self.append(m)
        return self

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


class ModuleDict(Module):
    """Submodules under string keys, in insertion order."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __delitem__(self, key: str) -> None:
        del self._modules[key]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules)

    def __contains__(self, key) -> bool:
        return key in self._modules

    def clear(self) -> None:
        self._modules.clear()

    def pop(self, key: str) -> Module:
        module = self[key]
        del self[key]
        return module

    def keys(self):
        return self._modules.keys()

    def items(self):
        return self._modules.items()

    def values(self):
        return self._modules.values()

    def update(self, modules) -> None:
        for key, module in _pairs(modules):
            self[key] = module


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


class ParameterList(Module):
    """Parameters under the names "0", "1", ...: they show in parameters() and state_dict()."""

    def __init__(self, values=None):
        super().__init__()
        if values is not None:
            self.extend(values)

    def __getitem__(self, index):
        values = list(self._parameters.values())
        if isinstance(index, slice):
            return ParameterList(values[index])
        return self._parameters[str(_index(index, len(values)))]

    def __setitem__(self, index: int, value) -> None:
        self.register_parameter(str(_index(index, len(self))), _as_parameter(value))

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def __iadd__(self, values) -> ParameterList:
        return self.extend(values)

    def __dir__(self):
        return [k for k in super().__dir__() if not k.isdigit()]

    def append(self, value) -> ParameterList:
        self.register_parameter(str(len(self)), _as_parameter(value))
        return self

    def extend(self, values) -> ParameterList:
        for value in values:
            self.append(value)
        return self

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p) for k, p in self._parameters.items())


class ParameterDict(Module):
    """Parameters under string keys, in insertion order."""

    def __init__(self, parameters=None):
        super().__init__()
        if parameters is not None:
            self.update(parameters)

    def __getitem__(self, key: str):
        return self._parameters[key]

    def __setitem__(self, key: str, value) -> None:
        self.register_parameter(key, _as_parameter(value))

    def __delitem__(self, key: str) -> None:
        del self._parameters[key]

    def __len__(self) -> int:
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters)

    def __contains__(self, key) -> bool:
        return key in self._parameters

    def get(self, key: str, default=None):
        return self._parameters.get(key, default)

    def setdefault(self, key: str, default=None):
        if key not in self:
            self[key] = default
        return self[key]

    def clear(self) -> None:
        self._parameters.clear()

    def pop(self, key: str):
        value = self[key]
        del self[key]
        return value

    def keys(self):
        return self._parameters.keys()

    def items(self):
        return self._parameters.items()

    def values(self):
        return self._parameters.values()

    def update(self, parameters) -> None:
        for key, value in _pairs(parameters):
            self[key] = value

    def extra_repr(self) -> str:
        return "\n".join(_parameter_line(k, p) for k, p in self._parameters.items())
