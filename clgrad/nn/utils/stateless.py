"""Calling a module with other tensors in place of its parameters and buffers, as
torch.nn.utils.stateless and torch.func.functional_call: each named tensor is swapped in
for the call and the module's own swapped back after it, even when the call raises."""
from __future__ import annotations

import warnings
from contextlib import contextmanager

from ...frontend.tensor import Tensor
from ..module import Module

_MISSING = object()


def _submodule(module: Module, path: str) -> Module:
    for name in path.split(".") if path else []:
        child = getattr(module, name, _MISSING)
        if child is _MISSING:
            raise AttributeError(f"{type(module).__name__} has no attribute `{name}`")
        if not isinstance(child, Module):
            raise TypeError(f"submodule `{path}`: {child} is not an instance of nn.Module")
        module = child
    return module


def _swap(module: Module, name: str, tensor):
    """Puts tensor (_MISSING: nothing) at module.<name>; returns what was there."""
    if tensor is not _MISSING and tensor is not None and not isinstance(tensor, Tensor):
        raise TypeError(f"{tensor} is not an instance of torch.Tensor")
    for table in (module._parameters, module._buffers):
        if name in table:
            old = table[name]
            if tensor is _MISSING:
                del table[name]
            else:
                table[name] = tensor
            return old
    old = getattr(module, name, _MISSING)
    if old is not _MISSING and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"attribute `{name}`: {old} is not an instance of torch.Tensor")
    if tensor is not _MISSING:
        setattr(module, name, tensor)
    elif old is not _MISSING:
        delattr(module, name)
    return old


def _swap_all(module: Module, named_tensors: dict) -> dict:
    """Swaps every path.name in named_tensors; returns what each held (undone on error)."""
    before = {}
    try:
        for key, tensor in named_tensors.items():
            path, _, name = key.rpartition(".")
            before[key] = _swap(_submodule(module, path), name, tensor)
    except Exception:
        _swap_all(module, before)
        raise
    return before


def _untie(module: Module, named_tensors: dict) -> dict:
    """named_tensors with each tensor also given under the other names of a parameter or
    buffer the module holds under several names (tie_weights)."""
    names_of = {}
    for name, t in [*module.named_parameters(remove_duplicate=False),
                    *module.named_buffers(remove_duplicate=False)]:
        names_of.setdefault(id(t), set()).add(name)
    tied = {name: names for names in names_of.values() if len(names) > 1 for name in names}
    untied = dict(named_tensors)
    for name in [n for n in named_tensors if n in tied]:
        given = [n for n in tied[name] if n in named_tensors]
        if len({id(named_tensors[n]) for n in given}) > 1:
            raise ValueError(f"functional_call got multiple values for keys "
                             f"{sorted(tied[name])}, which are tied. Consider using "
                             "tie_weights=False")
        untied.update(dict.fromkeys(tied[name], named_tensors[name]))
    return untied


def _check_keys(module: Module, keys) -> None:
    own = {name for name, _ in [*module.named_parameters(remove_duplicate=False),
                                *module.named_buffers(remove_duplicate=False)]}
    errors = []
    if set(keys) - own:
        errors.append(f"Unexpected key(s): {', '.join(map(repr, sorted(set(keys) - own)))}.")
    if own - set(keys):
        errors.append(f"Missing key(s): {', '.join(map(repr, sorted(own - set(keys))))}.")
    if errors:
        raise RuntimeError(f"Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                           + "\n\t".join(errors))


@contextmanager
def _reparametrize_module(module: Module, parameters_and_buffers: dict,
                          tie_weights: bool = False, strict: bool = False):
    named = _untie(module, parameters_and_buffers) if tie_weights else parameters_and_buffers
    if strict:
        _check_keys(module, named)
    before = _swap_all(module, named)
    try:
        yield
    finally:
        _swap_all(module, before)


def _functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                     tie_weights: bool = True, strict: bool = False):
    """module(*args, **kwargs) with the tensors of parameters_and_buffers (keyed by
    state_dict names) in place of the module's own."""
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, parameters_and_buffers, tie_weights, strict):
        return module(*args, **(kwargs or {}))


def functional_call(module: Module, parameters_and_buffers: dict, args=None, kwargs=None, *,
                    tie_weights: bool = True, strict: bool = False):
    """The deprecated spelling of torch.func.functional_call (clgrad.func.functional_call)."""
    warnings.warn("`torch.nn.utils.stateless.functional_call` is deprecated as of PyTorch 2.0 "
                  "and will be removed in a future version of PyTorch. Please use "
                  "`torch.func.functional_call` instead which is a drop-in replacement.",
                  FutureWarning, stacklevel=2)
    return _functional_call(module, parameters_and_buffers, args, kwargs,
                            tie_weights=tie_weights, strict=strict)


__all__ = ["functional_call"]
