"""torch.* functions take PyTorch's keyword names (input=, other=, axis=, f=, generator=,
requires_grad=), so code written with keywords ports unchanged."""
import inspect
import re

import numpy as np
import pytest

import clgrad as cg
from helpers import check, library, make, torch

SKIPPED = {"out", "layout", "pin_memory", "memory_format",       # not clgrad's concepts
           "pickle_module", "pickle_protocol", "_use_new_zipfile_serialization", "mmap",
           # names torch's docs give where its argument parser takes others (or none):
           # sort's "(Tensor, LongTensor)" result, searchsorted's values (input), broadcast_to's
           # shape (size), unsafe_split's, from_numpy's (positional only)
           "Tensor", "LongTensor", "values", "shape", "tensor", "split_size_or_sections",
           "ndarray",
           # set_num_threads(int) and the like: a type where the name would be, positional only
           "int"}


def _documented_parameters(fn, name):
    """The parameter names in the first line of a torch function's docstring, if it has one."""
    line = (fn.__doc__ or "").strip().split("\n")[0]
    match = re.match(rf"{name}\((.*)\)\s*(->.*)?$", line)
    if not match:
        return None
    names = [p.split("=")[0].split(":")[0].strip() for p in match.group(1).split(",")]
    return [n for n in names if n.isidentifier()]


def test_functions_accept_torch_keyword_names():
    checked = 0
    for name in dir(cg):
        ours, theirs = getattr(cg, name), getattr(torch, name, None)
        if name.startswith("_") or theirs is None or isinstance(ours, type) or not callable(ours):
            continue
        documented = _documented_parameters(theirs, name)
        try:
            parameters = inspect.signature(ours).parameters
        except (TypeError, ValueError):
            continue
        if documented is None or any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
            continue
        checked += 1
        missing = [p for p in documented if p not in parameters and p not in SKIPPED]
        assert not missing, (name, missing)
    assert checked > 50


def test_keyword_calls():
    a, b = cg.tensor([[1.0, 2.0], [3.0, 4.0]]), cg.tensor([[0.5, 5.0], [1.0, 1.0]])
    np.testing.assert_array_equal(cg.matmul(input=a, other=b).numpy(), (a @ b).numpy())
    np.testing.assert_array_equal(cg.maximum(input=a, other=b).numpy(), [[1, 5], [3, 4]])
    assert cg.concatenate([a, b], axis=1).shape == (2, 4)
    assert cg.zeros_like(input=a, requires_grad=True).requires_grad
    assert cg.full_like(a, 7.0, requires_grad=True).requires_grad
    assert cg.linspace(0, 1, 3, requires_grad=True).requires_grad


@pytest.mark.parametrize("make", [lambda g: cg.randn(3, generator=g),
                                  lambda g: cg.rand(3, generator=g),
                                  lambda g: cg.randint(0, 100, (3,), generator=g),
                                  lambda g: cg.randperm(5, generator=g)])
def test_samplers_follow_their_generator(make):
    first = make(cg.Generator().manual_seed(3)).tolist()
    assert make(cg.Generator().manual_seed(3)).tolist() == first
    assert make(cg.Generator().manual_seed(4)).tolist() != first


def test_save_and_load_take_f(tmp_path):
    cg.save({"w": cg.ones(2)}, f=tmp_path / "w.safetensors")
    assert cg.load(f=tmp_path / "w.safetensors")["w"].tolist() == [1.0, 1.0]


def test_division_rounding_modes():
    a = np.array([7, -7, 7, -7, 0, 5], np.int64)
    b = np.array([2, 2, -2, -2, 3, 5], np.int64)
    for mode in ("trunc", "floor", None):
        check(lambda x, y: library(x).div(x, y, rounding_mode=mode), a, b, grad=False)
        check(lambda x, y: x.div(y, rounding_mode=mode), make((3, 4)), make((3, 4), seed=9))
    x = cg.tensor([7.0, -7.0])
    x.div_(2, rounding_mode="floor")
    assert x.tolist() == [3.0, -4.0]
    with pytest.raises(RuntimeError, match="rounding_mode to be one of None, 'trunc', or 'floor'"):
        cg.div(x, 2, rounding_mode="round")


def test_round_decimals_and_reduction_dtypes():
    values = np.array([1.2345, -2.5678, 1234.5, 0.125, -0.375], np.float32)
    check(lambda x: [x.round(decimals=d) for d in (0, 1, 2, -1, -2)], values, grad=False)
    check(lambda x: [x.mean(dtype=library(x).float64), x.prod(1, dtype=library(x).float64),
                     x.softmax(1, dtype=library(x).float64),
                     x.log_softmax(0, dtype=library(x).float64)], (3, 4))
