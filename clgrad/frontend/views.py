"""Views: tensors standing for a part or a rearrangement of another tensor (reshape, permute,
basic indexing, detach). Values are lazy graphs, so a view does not share memory with its
base; instead an in-place op on a view writes its new value back into the base, through the
base's own in-place path (version counter, autograd), as PyTorch's shared storage would."""
from __future__ import annotations


def _write(base, value, op: str = "in-place write through a view") -> None:
    base._assign(value, op)


def reshaped(out, base):
    out._view = (base, lambda b, v: _write(b, v.reshape(b.shape)))
    return out


def permuted(out, base, order: tuple[int, ...]):
    inverse = tuple(sorted(range(len(order)), key=order.__getitem__))
    out._view = (base, lambda b, v: _write(b, v.permute(*inverse)))
    return out


def indexed(out, base, index):
    out._view = (base, lambda b, v: b.__setitem__(index, v))
    return out


def detached(out, base):
    out._view = (base, lambda b, v: b._overwrite(v))
    return out


def expanded(out, base):
    def refuse(b, v):
        raise RuntimeError(f"in-place operation on an expanded view of a tensor of shape "
                           f"{tuple(b.shape)}: several elements of the view are one element of "
                           "the base; clone() the view first")
    out._view = (base, refuse)
    return out
