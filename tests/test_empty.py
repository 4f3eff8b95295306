"""Reductions over empty dims, matmuls with a size-0 dim, and one-dim ops of 0-d tensors, as
PyTorch (issue 13, item 10): values, gradients, and PyTorch's exception types where it
refuses (a max over nothing)."""
import numpy as np
import pytest

import clgrad as cg
from helpers import F, check, library, torch

EMPTY = np.zeros((3, 0), np.float32)

REDUCTIONS = {
    "sum0": lambda x: x.sum(0), "sum1": lambda x: x.sum(1), "sum": lambda x: x.sum(),
    "sum_keepdim": lambda x: x.sum(1, keepdim=True),
    "mean0": lambda x: x.mean(0), "mean1": lambda x: x.mean(1), "mean": lambda x: x.mean(),
    "var0": lambda x: x.var(0), "var1": lambda x: x.var(1), "var": lambda x: x.var(),
    "std1": lambda x: x.std(1), "prod0": lambda x: x.prod(0), "prod1": lambda x: x.prod(1),
    "amax0": lambda x: x.amax(0), "amin0": lambda x: x.amin(0),
    "max0": lambda x: x.max(0), "min0": lambda x: x.min(0),
    "argmax0": lambda x: x.argmax(0), "argmin0": lambda x: x.argmin(0),
    "logsumexp0": lambda x: x.logsumexp(0), "logsumexp1": lambda x: x.logsumexp(1),
    "softmax0": lambda x: x.softmax(0), "softmax1": lambda x: x.softmax(1),
    "log_softmax1": lambda x: x.log_softmax(1),
}


@pytest.mark.filterwarnings("ignore::UserWarning")     # PyTorch's var over too few elements
@pytest.mark.parametrize("name", REDUCTIONS)
def test_reduction_over_empty(name):
    check(REDUCTIONS[name], EMPTY)
    if not name[:-1].endswith(("max", "min")):     # those refuse a reduced dim of size 0
        check(REDUCTIONS[name], np.zeros((0, 4), np.float32))


def test_integer_sum_over_empty():
    check(lambda x: x.sum(0), np.zeros((3, 0), np.int32))
    check(lambda x: x.sum(1), np.zeros((3, 0), np.int64))


REFUSED = {     # PyTorch's exception types
    "amax1": (lambda x: x.amax(1), IndexError), "amin1": (lambda x: x.amin(1), IndexError),
    "max1": (lambda x: x.max(1), IndexError), "min1": (lambda x: x.min(1), IndexError),
    "argmax1": (lambda x: x.argmax(1), IndexError), "argmin1": (lambda x: x.argmin(1), IndexError),
    "max": (lambda x: x.max(), RuntimeError), "min": (lambda x: x.min(), RuntimeError),
    "amax": (lambda x: x.amax(), RuntimeError), "argmax": (lambda x: x.argmax(), IndexError),
}


@pytest.mark.parametrize("name", REFUSED)
def test_max_of_nothing_raises_as_pytorch(name):
    import torch
    fn, error = REFUSED[name]
    with pytest.raises(error):
        fn(torch.zeros(3, 0))
    with pytest.raises(error, match=r"(arg)?(max|min)\(\).*(3, 0)"):    # the op and the shape
        fn(cg.zeros(3, 0))


@pytest.mark.parametrize("shapes", [((2, 0), (0, 3)), ((0, 2), (2, 3)), ((2, 3), (3, 0)),
                                    ((4, 2, 0), (4, 0, 3)), ((0, 2, 3), (0, 3, 4)),
                                    ((0,), (0,)), ((0,), (0, 3)), ((3, 0), (0,)),
                                    ((2, 0), (5, 0, 3)), ((16, 0), (0, 32)), ((0, 16), (16, 16)),
                                    ((16, 16), (16, 0)), ((2, 8, 0), (2, 0, 16))])
def test_matmul_with_a_size_zero_dim(shapes):
    # K = 0 is zeros, M, N or a batch of 0 is empty; the gradients are zeros of each shape
    check(lambda a, b: a @ b, *shapes)


def test_a_vector_product_over_nothing_read_by_a_reduction():
    # an empty vector computed from data (not an upload of nothing) times (0, n) became a pad
    # of it, which the softmax's kernel indexed through its empty shape (ZeroDivisionError in
    # delinearize: edge seeds 2500957, 2501031)
    check(lambda a, b: (a.expand(0) @ b.t()).softmax(-1), (1,), (1000, 0))
    check(lambda a, b, c: ((a * b).flatten() @ c).softmax(0), (4, 0), (1, 0), (0, 7))


def test_a_gradient_through_nothing_still_carries_nan():
    # the sum over no elements is 0 and 0 * inf is NaN: the gradient is not dropped as a zero
    # (edge seeds 2700339, 2700683 against a first fix of the above)
    zero = np.array(0.0, np.float32)
    check(lambda x: (x ** 0.5).expand(0).sum(), zero)
    check(lambda x, w: ((x ** 0.5).expand(0) @ w)[3], zero, (0, 8))


@pytest.mark.parametrize("name", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("value", [2.0, -np.inf, np.inf, np.nan])
def test_one_dim_ops_of_a_0d_tensor(name, value):
    x = np.array(value, np.float32)
    check(lambda t: getattr(t, name)(0), x)
    check(lambda t: getattr(t, name)(-1), x)
    with pytest.raises(IndexError):
        getattr(cg.tensor(x), name)(1)


def test_max_and_argmax_of_a_0d_tensor():
    x = np.array(2.5, np.float32)
    check(lambda t: t.max(0), x)
    check(lambda t: t.min(-1, keepdim=True), x)
    check(lambda t: t.argmax(0), x)


def test_gradient_of_an_empty_selection():
    # the gather rule's one-hot matmul contracted over no indices (ZeroDivisionError in lower)
    mask = np.array([False, False])
    check(lambda x: x[library(x).tensor(mask)], (2, 2))
    check(lambda x: x[library(x).tensor(np.zeros(0, np.int64))], (3, 2))


def test_cat_of_only_one_dimensional_empty_tensors():
    # every part skipped as PyTorch skips (0,)-shaped ones: clgrad had no part left (edge seed
    # 10228 on edges + scatter)
    check(lambda a, b: library(a).cat([a, b]), np.zeros(0, np.float32), np.zeros(0, np.float32))
    check(lambda a: library(a).cat([a.round(), a], dim=0), np.zeros(0, np.float32))


def test_a_skipped_part_of_cat_still_gets_its_gradient():
    # summed over nothing it is 0, and 0 times the inf of log's derivative at 0 is NaN, as
    # PyTorch has it (clgrad gave the part no gradient: edge seed 8701372)
    zero = np.array(0.0, np.float32)
    check(lambda x, y: library(x).cat([x.log().expand(0), y, (x * 2).expand(0)]), zero, (2, 3))
    check(lambda x: library(x).cat([x.log().expand(0), x.expand(0)]), zero)


def test_pooling_an_empty_batch():
    # a reduction with no rows at all reached the scheduler's row-length test, which divided
    # by its size (ZeroDivisionError: edge seeds 8200455, 8200630)
    check(lambda x: F(x).avg_pool2d(x, (2, 1), 1, 0), (0, 7, 10, 4))
    check(lambda x: F(x).avg_pool1d(x, 2) * 2, (0, 3, 8))


@pytest.mark.parametrize("conv, shapes", [
    ("conv1d", ((64, 0, 2), (3, 0, 1), (3,))), ("conv1d", ((0, 5), (3, 0, 2), (3,))),
    ("conv2d", ((2, 0, 5, 5), (4, 0, 2, 2), (4,)))])
@pytest.mark.parametrize("cast", ["float", "bfloat16"])
def test_convolution_of_an_input_without_channels(conv, shapes, cast):
    # PyTorch's result has no channels either, whatever the weight's out channels; the bias
    # still gets its gradient, zeros (clgrad gave 3 channels of bias: edge seeds 8200327,
    # 8200345, 8200347; a 16-bit bias was not spread over no channels: edge seed 100100874)
    groups = 4 if conv == "conv2d" else 1
    check(lambda x, w, b: getattr(F(x), conv)(
        *(getattr(t, cast)() for t in (x, w, b)), groups=groups).float() * 2, *shapes)


@pytest.mark.parametrize("conv, shapes", [("conv1d", ((2, 0, 5), (0, 0, 2))),
                                          ("conv_transpose1d", ((2, 0, 5), (0, 3, 2)))])
def test_convolution_weight_without_out_channels_is_refused(conv, shapes):
    x, w = (np.zeros(s, np.float32) for s in shapes)
    if torch is not None:
        with pytest.raises(RuntimeError, match="at least 1 at dimension 0"):
            getattr(torch.nn.functional, conv)(torch.tensor(x), torch.tensor(w))
    with pytest.raises(RuntimeError, match=rf"{conv}: .*at least 1 at dimension 0.*\[0, "):
        getattr(cg.nn.functional, conv)(cg.tensor(x), cg.tensor(w))


@pytest.mark.parametrize("conv, shapes, kw", [
    ("conv1d", ((1, 1, 0), (2, 1, 1)), dict(padding=1)),
    ("conv2d", ((1, 1, 0, 3), (2, 1, 1, 1)), dict(padding=1)),
    ("conv_transpose1d", ((1, 1, 0), (1, 2, 3)), {})])
def test_convolution_of_an_empty_image_is_refused_unless_the_batch_is_empty(conv, shapes, kw):
    # PyTorch refuses it (clgrad padded nothing into an image of zeros); with no batch or no
    # channels the result is as empty as the input (a transposed one sized as for any input)
    x, w = (np.zeros(s, np.float32) for s in shapes)
    if torch is not None:
        with pytest.raises(RuntimeError, match="Only zero batch or zero channel inputs"):
            getattr(torch.nn.functional, conv)(torch.tensor(x), torch.tensor(w), **kw)
    with pytest.raises(RuntimeError, match=rf"{conv}: only zero batch or zero channel inputs"):
        getattr(cg.nn.functional, conv)(cg.tensor(x), cg.tensor(w), **kw)
    check(lambda x, w: getattr(F(x), conv)(x, w, **kw), (0,) + shapes[0][1:], shapes[1])


@pytest.mark.filterwarnings("ignore::UserWarning")     # the target broadcast to the input
@pytest.mark.parametrize("loss", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
@pytest.mark.parametrize("reduction", ["sum", "mean"])
def test_loss_of_nothing_still_reaches_its_target(loss, reduction):
    """A loss over an empty input sums nothing, yet its zero gradient still flows back to a
    target broadcast into it, and silu's slope at NaN makes that NaN, as in PyTorch (fuzz
    edge seed 91400076); it used to stop at a constant 0."""
    target = np.array(np.nan, np.float32)
    check(lambda x, t: getattr(F(x), loss)(x, F(t).silu(t * 1), reduction=reduction),
          np.zeros((0, 3), np.float32), target)



@pytest.mark.parametrize("mode, shape, pad", [
    ("reflect", (0, 3, 4), [1, 1]), ("replicate", (0, 2, 4, 4), [1, 1, 1, 1]),
    ("circular", (0, 3, 4), [1, 1]), ("circular", (2, 3, 0), [0, 0]),
    ("circular", (2, 3, 4), [-2, -2])])
def test_padding_modes_to_or_of_empty_tensors(mode, shape, pad):
    check(lambda x: F(x).pad(x, pad, mode), shape)


@pytest.mark.parametrize("mode", ["reflect", "replicate"])
@pytest.mark.parametrize("shape, pad", [((1, 0, 40), [1, 1]), ((0, 40), [1, 1]),
                                        ((2, 0, 4, 4), [1, 1, 1, 1]), ((0, 4, 4, 4), [1] * 6)])
def test_reflecting_an_empty_channel_or_image_is_refused(mode, shape, pad):
    # (an empty batch is padded: the first test)
    with pytest.raises(RuntimeError, match=r"tensor with possibly 0 batch size and other "
                                           r"non-zero dimensions for input, but got: \["):
        cg.nn.functional.pad(cg.zeros(shape), pad, mode)
