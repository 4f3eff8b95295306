"""torch.cond and torch.while_loop, PyTorch's higher-order control-flow ops, with their eager
meaning: the predicate is read on the host (a tensor's value is computed for it) and Python runs
the branch or the loop, so the ops inside are recorded as any others and gradients flow through
them. PyTorch compiles both branches and checks that their outputs match; running one branch,
clgrad cannot see the other's."""
from __future__ import annotations

from .operands import is_tensor


def _leaves(tree) -> list:
    """The leaves of nested tuples, lists and dicts."""
    if isinstance(tree, (tuple, list)):
        return [leaf for item in tree for leaf in _leaves(item)]
    if isinstance(tree, dict):
        return [leaf for item in tree.values() for leaf in _leaves(item)]
    return [tree]


def _truth(op: str, pred) -> bool:
    """A bool, or a one-element tensor's value read on the host."""
    if is_tensor(pred):
        if pred.numel() != 1:
            raise RuntimeError(f"{op}: Expected pred to be bool or single-element tensor, but "
                               f"got a tensor of shape {tuple(pred.shape)}.")
        return bool(pred.item())
    return bool(pred)


def cond(pred, true_fn, false_fn, operands=()):
    """true_fn(*operands) if pred else false_fn(*operands)."""
    if not isinstance(pred, (bool, int, float)):
        if not is_tensor(pred):
            raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
        if not callable(true_fn) or not callable(false_fn):
            raise RuntimeError("Expect both branches to be callable.")
        if not isinstance(operands, (tuple, list)) or \
                not all(is_tensor(t) for t in _leaves(operands)):
            raise RuntimeError("Expect operands to be a tuple of possibly nested dict/list/tuple "
                               f"that only consists of tensor leaves, but got {operands}.")
    return true_fn(*operands) if _truth("cond", pred) else false_fn(*operands)


def while_loop(cond_fn, body_fn, carried_inputs):
    """Runs carried = body_fn(*carried) while cond_fn(*carried) holds (a bool or a one-element
    bool tensor); returns the last carried values (one value bare, as PyTorch)."""
    if not callable(cond_fn) or not callable(body_fn):
        raise RuntimeError("Expect cond_fn and body_fn to be callable.")
    if not isinstance(carried_inputs, (tuple, list)):
        raise RuntimeError("Expect carried_inputs to be a tuple of possibly nested "
                           f"dict/list/tuple, but got {type(carried_inputs).__name__}.")
    for leaf in _leaves(carried_inputs):
        if not is_tensor(leaf) and type(leaf) is not int:
            raise AssertionError(f"{[leaf]} can only be of (Tensor, int) but got "
                                 f"({type(leaf).__name__},)")
    carried = tuple(carried_inputs)
    while True:
        keep_going = cond_fn(*carried)
        if not isinstance(keep_going, bool) and not (
                is_tensor(keep_going) and keep_going.numel() == 1
                and keep_going.dtype.name == "bool"):
            raise RuntimeError(f"while_loop: expected cond_fn to return a bool or a "
                               f"one-element bool tensor, got {keep_going!r}")
        if not _truth("while_loop", keep_going):
            break
        out = body_fn(*carried)
        carried = tuple(out) if isinstance(out, (tuple, list)) else (out,)
        if len(carried) != len(carried_inputs):
            raise RuntimeError(f"while_loop: body_fn should return the same number of values "
                               f"as carried_inputs ({len(carried_inputs)}), got {len(carried)}")
    return carried[0] if len(carried) == 1 and is_tensor(carried[0]) else carried


FUNCTIONS = {"cond": cond, "while_loop": while_loop}
