"""SPEC §5: every user mistake raises when the op is recorded, naming the op and what it got."""
import numpy as np
import pytest

import clgrad as cg

a = cg.zeros(3, 5)
b = cg.zeros(4, 1, 6)


def raises(exc, *words):
    """pytest.raises whose message must contain every word (regex-escaped); a shape written
    as a tuple, "(3, 5)", may also appear as the Size a tensor's .shape is, Size([3, 5])."""
    import ast
    import re

    def pattern(word: str) -> str:
        if not re.fullmatch(r"\((\d+, )*(\d+,?)?\)", word):
            return re.escape(word)
        return f"(?:{re.escape(word)}|{re.escape(f'Size({list(ast.literal_eval(word))})')})"
    return pytest.raises(exc, match="(?s)" + "".join(f"(?=.*{pattern(w)})" for w in words))


def test_elementwise_shape_mismatch():
    with raises(RuntimeError, "add", "(3, 5)", "(4, 1, 6)"):
        a + b
    with raises(RuntimeError, "mul", "(3, 5)", "(4,)"):
        a * cg.zeros(4)
    with raises(RuntimeError, "where", "(3, 5)", "(2, 5)"):
        cg.where(a > 0, a, cg.zeros(2, 5))


def test_matmul_shape_mismatch():
    with raises(RuntimeError, "matmul", "(3, 5)", "(4, 5)"):
        a @ cg.zeros(4, 5)
    with raises(RuntimeError, "matmul", "(5,)", "(3,)"):
        cg.zeros(5) @ cg.zeros(3)
    with raises(RuntimeError, "matmul", "(2, 3, 5)", "(3, 5, 2)"):
        cg.zeros(2, 3, 5) @ cg.zeros(3, 5, 2)
    with raises(RuntimeError, "matmul", "()"):
        cg.tensor(1.0) @ a
    with raises(RuntimeError, "mm", "(2, 3, 5)"):
        cg.zeros(2, 3, 5).mm(a)
    with raises(RuntimeError, "bmm", "(2, 3, 5)", "(3, 5, 2)"):
        cg.zeros(2, 3, 5).bmm(cg.zeros(3, 5, 2))
    with raises(RuntimeError, "matmul", "float32", "int64"):
        a @ cg.zeros(5, 2, dtype=cg.int64)


def test_cat_stack_mismatch():
    with raises(RuntimeError, "cat", "(3, 5)", "(3, 4)"):
        cg.cat([a, cg.zeros(3, 4)], 0)
    with raises(RuntimeError, "cat", "(3, 5)", "(3,)"):
        cg.cat([a, cg.zeros(3)])
    with raises(IndexError, "cat", "dimension 2"):
        cg.cat([a, a], 2)
    with raises(RuntimeError, "cat", "empty"):
        cg.cat([])
    with raises(RuntimeError, "stack", "(3, 5)", "(5, 3)"):
        cg.stack([a, cg.zeros(5, 3)])


def test_reshape_expand_mismatch():
    with raises(RuntimeError, "reshape", "[4, 4]", "15"):
        a.reshape(4, 4)
    with raises(RuntimeError, "view", "[-1, 4]", "15"):
        a.view(-1, 4)
    with raises(RuntimeError, "reshape", "one dimension"):
        a.reshape(-1, -1)
    with raises(RuntimeError, "expand", "(3, 5)", "7"):
        a.expand(3, 7)
    with raises(RuntimeError, "expand", "number of sizes"):
        a.expand(5)
    with raises(RuntimeError, "permute", "(3, 5)"):
        a.permute(0, 0)
    with raises(RuntimeError, "pad", "padding length 3"):
        cg.nn.functional.pad(a, (1, 2, 3))


@pytest.mark.parametrize("call,words", [
    (lambda: a.sum(2), ("sum", "dimension 2", "2 dimensions")),
    (lambda: a.mean(-3), ("mean", "-3")),
    (lambda: a.softmax(5), ("softmax", "5")),
    (lambda: a.max(2), ("2",)),
    (lambda: a.argmax(3), ("argmax", "3")),
    (lambda: a.transpose(0, 2), ("transpose", "2")),
    (lambda: a.unsqueeze(3), ("unsqueeze", "3")),
    (lambda: a.squeeze(2), ("squeeze", "2")),
    (lambda: a.flatten(3), ("flatten", "3")),
    (lambda: a.flip(2), ("flip", "2")),
    (lambda: a.size(2), ("size", "2")),
    (lambda: cg.stack([a, a], 3), ("stack", "3")),
], ids=lambda v: v[0] if isinstance(v, tuple) else "")
def test_bad_dims(call, words):
    with raises(IndexError, *words):
        call()


def test_repeated_dim():
    with raises(RuntimeError, "sum", "more than once", "(0, 0)"):
        a.sum((0, 0))


def test_bad_dtypes():
    ints = cg.zeros(3, 5, dtype=cg.int64)
    with raises(RuntimeError, "mean", "int64"):
        ints.mean()
    with raises(RuntimeError, "requires_grad", "int64"):
        ints.requires_grad_()
    with raises(RuntimeError, "requires_grad", "int64"):
        cg.zeros(2, dtype=cg.int64, requires_grad=True)
    with raises(RuntimeError, "requires_grad", "bool"):
        cg.tensor([True], requires_grad=True)
    with raises(TypeError, "where", "float32"):
        cg.where(a, a, a)
    with raises(TypeError, "add", "str"):
        a + "x"
    with raises(RuntimeError, "pow", "negative"):
        ints ** -1
    with raises(IndexError, "float32"):
        a[cg.tensor([0.0, 1.0])]


def test_index_errors():
    with raises(IndexError, "index 3", "dimension 0", "size 3"):
        a[3]
    with raises(IndexError, "index -6", "dimension 1", "size 5"):
        a[0, -6]
    with raises(IndexError, "too many indices", "2", "(3, 5)"):
        a[0, 0, 0]
    with raises(IndexError, "too many indices"):
        a[..., 0, 0, 0]
    with raises(IndexError, "single ellipsis"):
        a[..., ...]
    with raises(IndexError, "index 7", "size 3"):
        a[cg.tensor([0, 7])]
    with raises(IndexError, "index 5", "size 5"):
        a[:, [0, 5]]
    with raises(IndexError, "mask", "(3, 4)", "(3, 5)"):
        a[cg.zeros(3, 4, dtype=cg.bool)]
    with raises(ValueError, "step"):
        a[::-1]


def test_setitem_errors():
    t = cg.zeros(3, 5)
    with raises(RuntimeError, "setitem", "(4,)", "(2, 5)"):
        t[1:3] = cg.zeros(4)
    with raises(IndexError, "index 3", "size 3"):
        t[3] = 1.0
    with raises(IndexError, "too many indices"):
        t[0, 0, 0] = 1.0
    with raises(TypeError, "setitem", "str"):
        t[0] = "x"


def test_inplace_errors():
    leaf = cg.zeros(3, 5, requires_grad=True)
    with raises(RuntimeError, "add_", "leaf"):
        leaf.add_(1)
    t = cg.zeros(3, 5)
    with raises(RuntimeError, "add_", "(3, 5)", "(2, 3, 5)"):
        t.add_(cg.zeros(2, 3, 5))
    with raises(RuntimeError, "copy_", "(4,)", "(3, 5)"):
        t.copy_(cg.zeros(4))


def test_errors_are_raised_before_anything_runs():
    """A bad op must fail while recording: the lazy inputs are never computed."""
    x = cg.zeros(3, 5) * 2
    y = cg.zeros(4, 5) + 1
    with raises(RuntimeError, "matmul"):
        x @ y
    assert x.node.op.name != "BUFFER" and y.node.op.name != "BUFFER"


def test_scalar_conversions():
    with raises(RuntimeError, "item", "15 elements"):
        a.item()
    with raises(TypeError, "0-d"):
        len(cg.tensor(1.0))
    with raises(RuntimeError, "backward", "scalar", "(3, 5)"):
        (cg.zeros(3, 5, requires_grad=True) * 2).backward()
    with raises(RuntimeError, "backward", "does not require grad"):
        a.sum().backward()


def test_clamp_needs_a_bound():
    with raises(ValueError, "clamp"):
        a.clamp()


def test_unsupported_numpy_dtype():
    with raises(TypeError, "complex"):
        cg.tensor(np.zeros(2, np.complex64))
