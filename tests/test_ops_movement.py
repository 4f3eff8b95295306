"""Views, concatenation, padding and matmul, forward and backward."""
import importlib

import numpy as np
import pytest

from helpers import check, library

A, B, C = (3, 5), (4, 1, 6), (2, 3, 4)

VIEWS = {
    "reshape": lambda a: a.reshape(4, 6) * 2,
    "reshape_tuple_infer": lambda a: a.reshape((-1, 2)) * 2,
    "view": lambda a: a.view(6, 4).exp(),
    "view_as": lambda a: a.view_as(a.reshape(4, 6)),
    "permute": lambda a: a.permute(2, 0, 1) * 2,
    "permute_tuple": lambda a: a.permute((1, 2, 0)).sin(),
    "transpose": lambda a: a.transpose(0, 2) * 2,
    "transpose_neg": lambda a: a.transpose(-1, -2) * 2,
    "unsqueeze": lambda a: a.unsqueeze(1) * 2,
    "unsqueeze_end": lambda a: a.unsqueeze(-1) * 2,
    "flatten": lambda a: a.flatten() * 2,
    "flatten_range": lambda a: a.flatten(1) * 2,
    "flip": lambda a: a.flip(0) * 2,
    "flip_many": lambda a: a.flip((0, 2)) * 2,
    "repeat": lambda a: a.repeat(2, 1, 3) * 2,
    "repeat_more_dims": lambda a: a.repeat(2, 1, 1, 1) * 2,
    "contiguous": lambda a: a.transpose(0, 1).contiguous() * 2,
    "T": lambda a: a.reshape(6, 4).T * 2,
    "chain": lambda a: a.permute(1, 0, 2).reshape(3, 8).flip(1)[:, 1::3].t() * 2,
    "split_merge": lambda a: (a.permute(2, 0, 1).reshape(2, 1, 2, 3, 2, 1).flip(3)
                              .reshape(4, 3, 2)[:, 1:] * 2),
}


@pytest.mark.parametrize("name", VIEWS)
def test_views(name):
    check(VIEWS[name], C)


def test_t_and_squeeze():
    check(lambda a: a.t() * 2, A)
    check(lambda a: a.t() * 2, (5,))
    check(lambda a: a.squeeze() * 2, B)
    check(lambda a: a.squeeze(1) * 2, B)
    check(lambda a: a.squeeze(0) * 2, B)     # size 4: unchanged
    check(lambda a: a.reshape(()) * 2, (1,))
    check(lambda a: a.reshape(1, 1) * 2, ())


def test_expand():
    check(lambda a: a.expand(4, 3, 6) * 2, B)
    check(lambda a: a.expand(2, -1, 5, -1) * 2, (1, 1, 6))
    check(lambda a, b: a.expand_as(b) * b, (3, 1), A)
    check(lambda a: a.expand(3, 4), ())


def test_cat_stack():
    for dim in (0, 1, -1):
        check(lambda a, b, c: library(a).cat([a, b, c], dim), C, C, C)
    check(lambda a, b: library(a).cat([a, b], 1), A, (3, 2))
    check(lambda a, b: library(a).cat((a * 2, b.t()), 0), A, (5, 4))
    for dim in (0, 1, 2, -1):
        check(lambda a, b: library(a).stack([a, b], dim), A, A)
    check(lambda a, b: library(a).cat([a, b]), (5,), np.zeros(0, np.float32))


def test_cat_keeps_negative_zero():
    # parts are padded and added: a +0.0 fill made a part's -0.0 +0.0 (fuzz seed 401163)
    a = np.array([-0.0, 1.0, np.nan], np.float32)
    b = np.array([-0.0, -np.inf], np.float32)
    check(lambda x, y: 1 / library(x).cat([x, y]), a, b, grad=False)
    check(lambda x: 1 / library(x).stack([x, x], 1), a, grad=False)


def test_cat_promotes():
    check(lambda a, b: library(a).cat([a, b]), np.array([1, 2], np.int64), (3,))


def _pad(t):
    return importlib.import_module(library(t).__name__ + ".nn.functional").pad


@pytest.mark.parametrize("pads", [(1, 2), (0, 1, 2, 0), (1, 1, 0, 0, 2, 1), (-1, 1), (2, -1, 1, 0)],
                         ids=str)
def test_pad(pads):
    check(lambda a: _pad(a)(a, pads) * 2, C)


def test_pad_value():
    check(lambda a: _pad(a)(a, (1, 1), value=3.5) * 2, A)


MATMUL_SHAPES = [
    ((3, 5), (5, 4)), ((7, 13), (13, 5)), ((13,), (13, 5)), ((7, 13), (13,)), ((5,), (5,)),
    ((2, 3, 5), (2, 5, 4)), ((2, 3, 5), (5, 4)), ((5,), (2, 5, 3)), ((4, 1, 3, 5), (2, 5, 6)),
    ((2, 3, 5), (5,)), ((1, 9), (9, 1)),
]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=str)
def test_matmul(shapes):
    check(lambda a, b: a @ b, *shapes, atol=1e-4)


def test_mm_bmm_and_transposed_operands():
    check(lambda a, b: a.mm(b), (7, 13), (13, 5), atol=1e-4)
    check(lambda a, b: a.bmm(b), (2, 3, 5), (2, 5, 4), atol=1e-4)
    check(lambda a, b: a.t() @ b, (13, 7), (13, 5), atol=1e-4)
    check(lambda a, b: a @ b.transpose(1, 2), (2, 3, 5), (2, 4, 5), atol=1e-4)
    check(lambda a, b: a.matmul(b[:, ::2]), (3, 5), (5, 8), atol=1e-4)
    check(lambda a, b: (a @ b).relu() @ a.t(), (7, 13), (13, 13), atol=1e-3)


def test_matmul_dtypes():
    a = np.arange(12, dtype=np.int64).reshape(3, 4)
    check(lambda x, y: x @ y, a, a.T.copy())
    check(lambda x, y: x @ y, (7, 13), (13, 5), dtype=np.float64)
