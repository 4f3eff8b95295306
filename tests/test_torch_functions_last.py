"""ormqr (frontend/householder.py) against PyTorch."""
import numpy as np
import pytest

from helpers import check, library, make, torch

import clgrad as cg

# ---- ormqr ----


def reflectors(shape, seed=0):
    """geqrf's (a, tau) of a random matrix, as float32 arrays."""
    a, tau = torch.geqrf(torch.tensor(make(shape, seed=seed)))
    return a.numpy(), tau.numpy()


@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False),
                                            (False, True)])
def test_ormqr(left, transpose):
    a, tau = reflectors((5, 3))
    other = make((5, 2) if left else (2, 5), seed=3)
    out = check(lambda a, tau, c: library(a).ormqr(a, tau, c, left=left, transpose=transpose),
                a, tau, other)[0]
    assert out.grad_fn.name() == "OrmqrBackward0"


def test_ormqr_of_a_wide_input_a_batch_and_the_method():
    # (the gradients are test_ormqr's: the same products of other shapes)
    a, tau = reflectors((3, 5))
    check(lambda a, tau, c: a.ormqr(tau, c, left=False), a, tau, make((2, 3)), grad=False)
    a, tau = reflectors((2, 5, 3))
    check(lambda a, tau, c: library(a).ormqr(a, tau, c, transpose=True), a, tau,
          make((2, 5, 2)), grad=False)


def test_ormqr_of_no_reflectors_and_no_columns():
    a, tau = reflectors((5, 3))
    check(lambda a, tau, c: a.ormqr(tau, c), a[:, :0], tau[:0], make((5, 2)))
    check(lambda a, tau, c: a.ormqr(tau, c), a, tau, make((5, 0)))


ORMQR_ERRORS = [  # input, tau, other shapes, dtype, left
    ((5,), (3,), (5, 2), np.float32, True),
    ((5, 3), (3,), (5,), np.float32, True),
    ((5, 3), (3,), (2, 5), np.float32, True),
    ((5, 3), (3,), (5, 2), np.float32, False),
    ((5, 3), (2,), (5, 2), np.float32, True),
    ((5, 3), (1, 3), (5, 2), np.float32, True),
    ((2, 5, 3), (2, 3), (5, 2), np.float32, True),
    ((2, 5, 3), (3, 3), (2, 5, 2), np.float32, True),
    ((2, 5, 3), (2, 3), (3, 5, 2), np.float32, True),
    ((5, 3), (3,), (5, 2), np.int64, True),
]


@pytest.mark.parametrize("shapes,dtype,left", [(s[:3], s[3], s[4]) for s in ORMQR_ERRORS])
def test_ormqr_errors_are_pytorchs(shapes, dtype, left):
    arrays = [make(shape, dtype) for shape in shapes]

    def raised(lib):
        with pytest.raises(Exception) as info:
            lib.ormqr(*(lib.tensor(x) for x in arrays), left=left)
        return info.value

    ours, theirs = raised(cg), raised(torch)
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def test_ormqr_refuses_mixed_dtypes_as_pytorch():
    a, tau = reflectors((5, 3))
    with pytest.raises(RuntimeError, match="input has dtypeDouble and tau has dtype Float"):
        cg.ormqr(cg.tensor(a).double(), cg.tensor(tau), cg.tensor(make((5, 2))))
