"""A Module's forward hooks, as PyTorch's: pre-hooks run before forward and may replace its
arguments, hooks run after and may replace its output. Each table maps a handle's id to its hook
(PyTorch's layout: nn.utils.weight_norm looks its hook up in module._forward_pre_hooks); which
hooks take keyword arguments, or run even when forward raised, is kept by id beside it."""
from __future__ import annotations

import warnings
from collections import OrderedDict

from ..frontend.backward import RemovableHandle


def tables() -> dict:
    """The hook tables a new Module starts with."""
    return {"_forward_pre_hooks": OrderedDict(), "_forward_pre_hooks_with_kwargs": set(),
            "_forward_hooks": OrderedDict(), "_forward_hooks_with_kwargs": set(),
            "_forward_hooks_always_called": set(), "_load_state_dict_pre_hooks": OrderedDict()}


def add(hooks: OrderedDict, hook, prepend: bool = False, *flags: set) -> RemovableHandle:
    """hook registered in hooks (first when prepend); its id joins each of flags."""
    handle = RemovableHandle(hooks)
    hooks[handle.id] = hook
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    for flag in flags:
        flag.add(handle.id)
    return handle


def _run_pre_hooks(module, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    for key, hook in list(module._forward_pre_hooks.items()):
        if key in module._forward_pre_hooks_with_kwargs:
            result = hook(module, args, kwargs)
            if result is not None:
                if not (isinstance(result, tuple) and len(result) == 2):
                    raise RuntimeError("forward pre-hook must return None or a tuple of "
                                       f"(new_args, new_kwargs), but got {result}.")
                args, kwargs = result
        else:
            result = hook(module, args)
            if result is not None:
                args = result if isinstance(result, tuple) else (result,)
    return args, kwargs


def _run_hook(module, key, hook, args: tuple, kwargs: dict, output):
    if key in module._forward_hooks_with_kwargs:
        return hook(module, args, kwargs, output)
    return hook(module, args, output)


def _run_hooks(module, args: tuple, kwargs: dict, output):
    for key, hook in list(module._forward_hooks.items()):
        result = _run_hook(module, key, hook, args, kwargs, output)
        if result is not None:
            output = result
    return output


def _run_always_called(module, args: tuple, kwargs: dict) -> None:
    """After forward raised: the hooks registered with always_call=True, their own errors
    turned into warnings (forward's is the one raised), as PyTorch does."""
    for key, hook in list(module._forward_hooks.items()):
        if key not in module._forward_hooks_always_called:
            continue
        try:
            _run_hook(module, key, hook, args, kwargs, None)
        except Exception as e:
            warnings.warn("forward hook with ``always_call=True`` raised an exception that was "
                          f"silenced as another error was raised in forward: {e}", stacklevel=3)


def call(module, args: tuple, kwargs: dict):
    """module.forward(*args, **kwargs) between its hooks (Module.__call__ when it has any)."""
    args, kwargs = _run_pre_hooks(module, args, kwargs)
    try:
        output = module.forward(*args, **kwargs)
    except Exception:
        _run_always_called(module, args, kwargs)
        raise
    return _run_hooks(module, args, kwargs, output)


def find_pre_hook(module, kind: type, name: str):
    """The key of module's forward pre-hook of class kind for the tensor name (nn.utils's
    legacy weight_norm and spectral_norm), or None."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and hook.name == name:
            return key
    return None


def remove_pre_hook(module, kind: type, name: str, what: str):
    """Takes that hook out and undoes what it set up (hook.remove); returns module."""
    key = find_pre_hook(module, kind, name)
    if key is None:
        raise ValueError(f"{what} of '{name}' not found in {module}")
    module._forward_pre_hooks.pop(key).remove(module)
    return module
