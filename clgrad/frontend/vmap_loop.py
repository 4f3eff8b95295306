"""torch.vmap as a loop: func runs once per index of the mapped dimension, on each input's
slice there, and its outputs are stacked along out_dims. That is correct for any func (also
one that reads values on the host, or branches on them), and the ops it records fuse as
usual, but it records the function's graph once per slice rather than batching it.

in_dims and out_dims follow PyTorch: an int or None for every input (output), or a
(possibly nested) tuple matching the inputs' (outputs') structure; keyword arguments are
passed unmapped. randomness: "different" (each slice draws anew), "same" (each slice draws
what the first did) or "error" (the default: a random op, seen as a change of the global
generator's state, raises). chunk_size is checked and has nothing to change in a loop."""
from __future__ import annotations

import functools

from . import creation
from .global_state import get_rng_state, set_rng_state
from .joining import stack
from .operands import is_tensor

_RANDOMNESS = ("error", "different", "same")


def _name(func) -> str:
    return getattr(func, "__name__", repr(func))


def _pairs(dims, tree, where: str):
    """(leaf, dim) for every leaf of tree, with dims an int/None for a whole subtree or a
    structure matching tree's."""
    if dims is None or isinstance(dims, int) and not isinstance(dims, bool):
        if isinstance(tree, (tuple, list)):
            return [p for item in tree for p in _pairs(dims, item, where)]
        if isinstance(tree, dict):
            return [p for item in tree.values() for p in _pairs(dims, item, where)]
        return [(tree, dims)]
    if isinstance(dims, (tuple, list)) and isinstance(tree, (tuple, list)) and \
            len(dims) == len(tree):
        return [p for d, item in zip(dims, tree) for p in _pairs(d, item, where)]
    if isinstance(dims, dict) and isinstance(tree, dict) and dims.keys() == tree.keys():
        return [p for key in tree for p in _pairs(dims[key], tree[key], where)]
    raise ValueError(f"{where} is not compatible with the structure of the values it maps: "
                     f"{dims!r}")


def _rebuild(tree, leaves):
    """tree with its leaves taken in order from the iterator leaves."""
    if isinstance(tree, (tuple, list)):
        return type(tree)(_rebuild(item, leaves) for item in tree)
    if isinstance(tree, dict):
        return {key: _rebuild(item, leaves) for key, item in tree.items()}
    return next(leaves)


def _batch_size(where: str, pairs) -> int:
    sizes = []
    for leaf, dim in pairs:
        if dim is None:
            continue
        if not is_tensor(leaf):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type "
                             f"{type(leaf)}. We cannot vmap over non-Tensor arguments, please "
                             f"use None as the respective in_dim")
        if not -leaf.ndim <= dim < leaf.ndim:
            raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a "
                             f"Tensor of dimensionality {leaf.ndim} so expected in_dim to "
                             f"satisfy -{leaf.ndim} <= in_dim < {leaf.ndim}.")
        sizes.append(leaf.shape[dim])
    if not sizes:
        raise ValueError(f"{where}: at least one input must be mapped over (got no in_dim "
                         f"other than None)")
    if len(set(sizes)) > 1:
        raise ValueError(f"vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0]


def _slice(leaf, dim, index: int | None):
    """leaf's slice index along dim (None: a zero slice, to learn the outputs' shapes)."""
    if dim is None:
        return leaf
    if index is None:
        shape = leaf.shape[:dim % leaf.ndim] + leaf.shape[dim % leaf.ndim + 1:]
        return creation.zeros(*shape, dtype=leaf.dtype, device=leaf.device)
    return leaf.select(dim, index)


def _stacked(func, results, out_dims, empty: bool):
    """The outputs of every slice, stacked along their out_dims (an empty batch: the probe's
    outputs with a mapped dimension of size 0)."""
    pairs = _pairs(out_dims, results[0], "out_dims")
    columns = [[p[0] for p in _pairs(out_dims, r, "out_dims")] for r in results]
    leaves = []
    for k, (first, dim) in enumerate(pairs):
        if dim is None:
            leaves.append(first)
        elif not is_tensor(first):
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` must only return "
                             f"Tensors, got type {type(first)}. Did you mean to set out_dims= "
                             f"to None for output?")
        elif empty:
            leaves.append(first.unsqueeze(dim).narrow(dim, 0, 0))
        else:
            leaves.append(stack([column[k] for column in columns], dim))
    return _rebuild(results[0], iter(leaves))


def vmap(func, in_dims=0, out_dims=0, randomness: str = "error", *, chunk_size=None):
    """func mapped over a dimension of its inputs, by a loop (see the module's docstring)."""
    if randomness not in _RANDOMNESS:
        raise RuntimeError(f"Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got "
                         f"{chunk_size})")

    @functools.wraps(func)
    def mapped(*args, **kwargs):
        where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
        if not args:
            raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot "
                             f"to add inputs, or you are trying to vmap over a function with no "
                             f"inputs. The latter is unsupported.")
        if not isinstance(in_dims, (int, tuple)) or isinstance(in_dims, bool):
            raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) "
                             f"tuple matching the structure of inputs, got: {type(in_dims)}.")
        pairs = _pairs(in_dims, args, "in_dims")
        size = _batch_size(where, pairs)
        start = get_rng_state()
        results = []
        for index in range(size) or [None]:
            if randomness == "same":
                set_rng_state(start)
            sliced = _rebuild(args, iter([_slice(leaf, dim, index) for leaf, dim in pairs]))
            results.append(func(*sliced, **kwargs))
            if randomness == "error" and get_rng_state() != start:
                raise RuntimeError("vmap: called random operation while in randomness error "
                                   "mode. Please either use the 'same' or 'different' "
                                   "randomness flags on vmap or perform the randomness "
                                   "operation out of vmap")
        return _stacked(func, results, out_dims, empty=size == 0)

    return mapped


FUNCTIONS = {"vmap": vmap}
