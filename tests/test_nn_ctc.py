"""F.ctc_loss and nn.CTCLoss against PyTorch: values and PyTorch's own gradient formula."""
import math

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
import clgrad.nn.functional as CF
from helpers import F, check, library, make, nn

T, N, C = 6, 2, 5                           # frames, batch, classes (most rows)
PADDED = [[1, 1, 2], [3, 4, 0]]             # 1, 1 repeats: a path needs a blank between them
CONCATENATED = [1, 1, 2, 3]
TARGET_LENGTHS = [3, 1]


def _t(x, values):
    """values as an int64 tensor of x's library."""
    return library(x).tensor(values)


def _ctc(targets, input_lengths, target_lengths=TARGET_LENGTHS, tensors=True, **kwargs):
    """A check function: ctc_loss of its log_probs input against these targets and lengths
    (tensors, or tuples as given)."""
    def fn(x):
        lengths = (_t(x, input_lengths), _t(x, target_lengths)) if tensors else \
            (input_lengths, target_lengths)
        return F(x).ctc_loss(x, _t(x, targets), *lengths, **kwargs)
    return fn


ROWS = [
    # (name, function of log_probs, log_probs shape)
    ("padded none", _ctc(PADDED, [6, 5], reduction="none"), (T, N, C)),
    ("padded mean", _ctc(PADDED, [6, 5]), (T, N, C)),
    ("padded sum", _ctc(PADDED, [6, 5], reduction="sum"), (T, N, C)),
    ("concatenated", _ctc(CONCATENATED, [6, 5], reduction="none"), (T, N, C)),
    ("lengths as tuples", _ctc(PADDED, (6, 5), (3, 1), tensors=False, reduction="sum"),
     (T, N, C)),
    ("lengths as lists", _ctc(CONCATENATED, [6, 5], [3, 1], tensors=False), (T, N, C)),
    ("blank 4", _ctc([[1, 1, 2], [3, 0, 4]], [6, 5], reduction="none", blank=4), (T, N, C)),
    ("empty target", _ctc([[1, 1, 2], [3, 4, 0]], [6, 5], [3, 0], reduction="none"),
     (T, N, C)),
    ("all targets empty", _ctc([], [6, 5], [0, 0], reduction="none"), (T, N, C)),
    ("no frames, empty target", _ctc(PADDED, [6, 0], [3, 0], reduction="none"), (T, N, C)),
    ("impossible alignment", _ctc(PADDED, [3, 5], reduction="none"), (T, N, C)),
    ("impossible, zero_infinity", _ctc(PADDED, [3, 5], reduction="none", zero_infinity=True),
     (T, N, C)),
    ("impossible, zero_infinity mean", _ctc(PADDED, [2, 5], zero_infinity=True), (T, N, C)),
    ("size-1 batch", _ctc([[2, 2]], [6], [2], reduction="none"), (T, 1, C)),
    ("unbatched", _ctc([2, 2], (6,), (2,), tensors=False, reduction="none"), (T, C)),
    ("unbatched mean", _ctc([2, 2], [6], [2]), (T, C)),
    ("of log_softmax", lambda x: _ctc(PADDED, [6, 4], reduction="sum")(x.log_softmax(2)),
     (T, N, C)),
    ("torch.ctc_loss, reduction 2", lambda x: library(x).ctc_loss(
        x, _t(x, PADDED), _t(x, [6, 5]), _t(x, TARGET_LENGTHS), 0, 2, False), (T, N, C)),
    ("module", lambda x: nn(x).CTCLoss(blank=4, zero_infinity=True)(
        x, _t(x, CONCATENATED), _t(x, [6, 2]), _t(x, TARGET_LENGTHS)), (T, N, C)),
]


@pytest.mark.parametrize("name,fn,shape", ROWS, ids=[row[0] for row in ROWS])
def test_ctc_loss(name, fn, shape):
    check(fn, shape)


def test_float64_and_a_longer_sequence():
    check(_ctc([[1, 2, 1], [3, 3, 0]], [12, 9], [3, 2], reduction="sum"), (12, N, C),
          dtype=np.float64)


def test_impossible_alignment_is_infinite_with_nan_gradient():
    # PyTorch's gradient formula is -inf + inf there: NaN at every class of the counted frames
    x = cg.tensor(make((T, N, C)), requires_grad=True)
    loss = CF.ctc_loss(x, cg.tensor(PADDED), cg.tensor([3, 5]), cg.tensor(TARGET_LENGTHS),
                       reduction="none")
    assert math.isinf(loss.detach().tolist()[0])
    loss.sum().backward()
    grad = x.grad.numpy()
    assert np.isnan(grad[:3, 0]).all() and not grad[3:, 0].any() and np.isfinite(grad[:, 1]).all()


def test_steps_share_their_kernels_whatever_the_length():
    # each frame's emissions come from a buffer of their own and each alpha (and beta) is kept
    # in one (frontend/step_slices.py): the same step kernels run at every frame
    def kernels(frames: int) -> set:
        x = cg.tensor(make((frames, N, C)), requires_grad=True)
        with cg.profile() as prof:
            loss = CF.ctc_loss(x, cg.tensor(PADDED), cg.tensor([frames, frames - 1]),
                               cg.tensor(TARGET_LENGTHS))
            loss.backward()
            x.grad.numpy()
        return {row.name for row in prof.rows}
    assert len(kernels(6)) == len(kernels(12))


def test_module():
    assert repr(cnn.CTCLoss(blank=1, zero_infinity=True)) == "CTCLoss()"
    loss = cnn.CTCLoss(reduction="sum")
    assert (loss.blank, loss.reduction, loss.zero_infinity) == (0, "sum", False)
    with pytest.raises(ValueError, match="x is not a valid value for reduction"):
        cnn.CTCLoss(reduction="x")


def _call(shape=(T, N, C), dtype=cg.float32, targets=PADDED, input_lengths=[6, 5],
          target_lengths=TARGET_LENGTHS, **kwargs):
    """ctc_loss of zeros of shape and dtype; lists of lengths become tensors."""
    lengths = [cg.tensor(v) if isinstance(v, list) else v for v in (input_lengths,
                                                                     target_lengths)]
    return CF.ctc_loss(cg.zeros(*shape, dtype=dtype), cg.tensor(targets), *lengths, **kwargs)


ERRORS = [
    # (call arguments, exception, message)
    (dict(shape=(T, N, C, 1)), RuntimeError,
     "Expected 3-dimensional tensor, but got 5-dimensional tensor for argument #1 'log_probs'"),
    (dict(shape=(T,)), RuntimeError, "but got 2-dimensional tensor"),
    (dict(shape=(T, 0, C), targets=[[]], input_lengths=[], target_lengths=[]),
     RuntimeError, "log_probs tensor must not be empty"),
    (dict(dtype=cg.int64), NotImplementedError,
     "float32 or float64, got int64"),
    (dict(blank=5), RuntimeError, "blank must be in label range"),
    (dict(blank=-1), RuntimeError, "blank must be in label range"),
    (dict(reduction="x"), ValueError, "x is not a valid value for reduction"),
    (dict(input_lengths=[6]), RuntimeError, "input_lengths must be of size batch_size"),
    (dict(target_lengths=(3, 1, 1)), TypeError, "both tensors or both tuples"),
    (dict(input_lengths=(6, 5, 1), target_lengths=(3, 1)), RuntimeError,
     "input_lengths must be of size batch_size"),
    (dict(input_lengths=6, target_lengths=3), TypeError, "a tensor or a tuple of ints"),
    (dict(input_lengths=[6.0, 5.0]), RuntimeError, "input_lengths must be integral"),
    (dict(input_lengths=[7, 5]), RuntimeError,
     "Expected input_lengths to have value at most 6, but got value 7"),
    (dict(input_lengths=[-1, 5]), RuntimeError,
     "Expected input_lengths to have value at least 0, but got value -1"),
    (dict(target_lengths=[4, 1]), RuntimeError,
     "Expected tensor to have size at least 4 at dimension 1, but got size 3 for argument #2"),
    (dict(target_lengths=[3, -1]), RuntimeError,
     "Expected target_lengths to have value at least 0, but got value -1"),
    (dict(targets=[PADDED[0]]), RuntimeError,
     "Expected tensor to have size 2 at dimension 0, but got size 1 for argument #2"),
    (dict(targets=[1, 1, 2]), RuntimeError,
     "Expected tensor to have size 4 at dimension 0, but got size 3 for argument #2"),
    (dict(targets=[PADDED]), RuntimeError,
     "Expected 1 to 2 dimensions, but got 3-dimensional tensor for argument #2 'targets'"),
]


@pytest.mark.parametrize("kwargs,error,message", ERRORS)
def test_errors(kwargs, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        _call(**kwargs)
