"""cg.save / cg.load: state dicts (and optimizer state) as safetensors files.

Tensors are stored under their (flattened) key path; everything else, and the structure
needed to rebuild nested dicts and lists, goes into the file's string metadata as JSON.

    cg.save(model.state_dict(), "model.safetensors")
    cg.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 3}, "ckpt.st")
"""
from __future__ import annotations

import json
import os

import numpy as np
from safetensors import SafetensorError, safe_open
from safetensors.numpy import load_file, save_file

from .compiler import dtype as dt
from .frontend.creation import tensor as _tensor
from .frontend.tensor import Tensor

_SEP = "/"
_TREE_KEY = "__clgrad_tree__"


def _encode(obj, path: str, tensors: dict):
    """A JSON-able description of obj; its tensors go into `tensors` under their path."""
    if isinstance(obj, Tensor):
        _store(tensors, path, obj.detach().numpy())
        return {"t": path, "dtype": obj.dtype.name}
    if isinstance(obj, np.ndarray):
        _store(tensors, path, obj)
        return {"a": path}
    if isinstance(obj, dict):
        items = []
        for k, v in obj.items():
            if not isinstance(k, (str, int)):
                raise TypeError(f"save: dict keys must be str or int, got {type(k).__name__} "
                                f"at {path or '<root>'}")
            sub = f"{path}{_SEP}{k}" if path else str(k)
            items.append([k, _encode(v, sub, tensors)])
        return {"d": items}
    if isinstance(obj, (list, tuple)):
        kind = "l" if isinstance(obj, list) else "u"
        return {kind: [_encode(v, f"{path}{_SEP}{i}" if path else str(i), tensors)
                       for i, v in enumerate(obj)]}
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return {"v": obj}
    if isinstance(obj, np.generic):
        return {"v": obj.item()}
    raise TypeError(f"save: cannot store a {type(obj).__name__} at {path or '<root>'}; "
                    "only tensors, arrays, numbers, strings, None, dicts, lists and tuples")


def _store(tensors: dict, path: str, array: np.ndarray) -> None:
    """array under its key path; two keys that flatten to one path ({"a/b": x, "a": {"b": y}},
    {1: x, "1": y}) would keep one tensor for both, so that is an error."""
    if path in tensors:
        raise ValueError(f"save: two keys name the tensor at {path!r} (keys are joined with "
                         f"{_SEP!r}, and int keys are written as strings); rename one")
    tensors[path] = np.asarray(array, order="C")     # ascontiguousarray makes 0-d 1-d


def _decode(desc, tensors: dict, device):
    if "t" in desc:
        array = tensors[desc["t"]]
        dtype = next((d for d in dt.ALL if d.name == desc["dtype"]), None)
        return _tensor(array, dtype=dtype, device=device)
    if "a" in desc:
        return tensors[desc["a"]]
    if "d" in desc:
        return {k: _decode(v, tensors, device) for k, v in desc["d"]}
    if "l" in desc:
        return [_decode(v, tensors, device) for v in desc["l"]]
    if "u" in desc:
        return tuple(_decode(v, tensors, device) for v in desc["u"])
    return desc["v"]


def save(obj, f) -> None:
    """Writes obj (a state dict, or nested dicts/lists of tensors and plain values) to path as
    a safetensors file. The write goes to a temporary file that is then moved into place."""
    tensors: dict[str, np.ndarray] = {}
    tree = _encode(obj, "", tensors)
    path = os.fspath(f)
    tmp = f"{path}.tmp{os.getpid()}"
    save_file(tensors, tmp, metadata={_TREE_KEY: json.dumps(tree)})
    os.replace(tmp, path)


def load(f, map_location=None, weights_only: bool = True):
    """Reads what save() wrote. A plain safetensors file (no clgrad metadata) loads as a dict
    of tensors. map_location picks the device of the loaded tensors."""
    path = os.fspath(f)
    try:
        tensors = load_file(path)
        with safe_open(path, framework="numpy") as f:
            metadata = f.metadata() or {}
    except (SafetensorError, OSError, ValueError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise RuntimeError(f"load: {path} is not a readable safetensors file (truncated or "
                           f"corrupt?): {error}") from error
    if _TREE_KEY not in metadata:
        return {k: _tensor(v, device=map_location) for k, v in tensors.items()}
    return _decode(json.loads(metadata[_TREE_KEY]), tensors, map_location)
