"""conv1d, conv3d, the transposed convolutions and torch.convolution: forward and backward
against PyTorch, empty batches, their errors, and the kernels a transposed convolution costs."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as CF
from helpers import F, check, library, make, torch


@pytest.mark.parametrize("kw", [
    {}, dict(stride=2, padding=1), dict(dilation=2, padding=2), dict(groups=2),
    dict(padding="same", dilation=2), dict(padding="valid"), dict(stride=(3,), padding=(1,)),
])
def test_conv1d(kw):
    weight = (4, 2, 3) if kw.get("groups") == 2 else (4, 4, 3)
    out = check(lambda x, w, b: F(x).conv1d(x, w, b, **kw), (2, 4, 11), weight, (4,),
                atol=1e-4, grad_atol=1e-3)
    assert out[0].grad_fn.name() == "ConvolutionBackward0"


def test_conv1d_unbatched_without_bias():
    check(lambda x, w: F(x).conv1d(x, w, stride=2), (3, 9), (5, 3, 2), atol=1e-4)


@pytest.mark.parametrize("kw", [
    {}, dict(stride=2), dict(stride=2, padding=1, output_padding=1), dict(groups=2),
    dict(dilation=2, padding=1), dict(stride=(2, 3), padding=(1, 0), output_padding=(0, 2)),
    dict(stride=3, padding=4, dilation=2, output_padding=1),
])
def test_conv_transpose2d(kw):
    weight = (4, 3, 3, 2) if kw.get("groups") == 2 else (4, 5, 3, 2)
    out = check(lambda x, w, b: F(x).conv_transpose2d(x, w, b, **kw), (2, 4, 5, 6), weight,
                (6,) if kw.get("groups") == 2 else (5,), atol=1e-4, grad_atol=1e-3)
    assert out[0].grad_fn.name() == "ConvolutionBackward0"


def test_conv_transpose2d_unbatched_without_bias_and_1d():
    check(lambda x, w: F(x).conv_transpose2d(x, w, stride=2), (3, 4, 4), (3, 2, 2, 2), atol=1e-4)
    check(lambda x, w, b: F(x).conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
          (2, 3, 7), (3, 4, 3), (4,), atol=1e-4, grad_atol=1e-3)


@pytest.mark.parametrize("kw", [dict(stride=2, padding=1), {}, dict(stride=2, dilation=2)])
def test_conv_transpose_with_an_infinite_weight(kw):
    # PyTorch multiplies each input by the weight, then adds the products at their places:
    # an inf reaches only the outputs it touches (clgrad, as a convolution of the input spread
    # by the stride, multiplied the spread's zeros by it: NaN beside each inf), and the input
    # gradient takes a padded output's cropped places as zeros, so 0 * inf is NaN there
    # (clgrad had 0: edge seed 8600042)
    x = np.array([[[0.5, -1.5, 0.75]]], np.float32)
    w = np.array([[[1.0, 2.0, -np.inf]]], np.float32)
    check(lambda x, w: F(x).conv_transpose1d(x, w, **kw), x, w)
    w2 = np.array([[[[1.0, -0.5, 0.25], [np.inf, 2.0, 1.5], [0.5, 1.0, -1.0]]]], np.float32)
    check(lambda x, w: F(x).conv_transpose2d(x, w, **kw), x.reshape(1, 1, 1, 3) * np.ones(
        (1, 1, 2, 1), np.float32), w2)


@pytest.mark.skipif(torch is None, reason="PyTorch's non-finite products are the reference")
@pytest.mark.parametrize("nonfinite", [np.inf, -np.inf, np.nan])
@pytest.mark.parametrize("name, kw, x, w", [
    ("conv2d", dict(padding=1), (2, 8, 5, 6), (4, 8, 3, 3)),
    ("conv2d", dict(padding=2, dilation=2, groups=2), (2, 16, 5, 6), (4, 8, 3, 3)),
    ("conv2d", dict(padding=(0, 2)), (1, 8, 4, 4), (1, 8, 3, 3)),
    ("conv2d", dict(padding="same"), (2, 8, 5, 6), (4, 8, 2, 3)),
    ("conv2d", dict(padding=3), (2, 8, 5, 6), (4, 8, 3, 3)),
    ("conv2d", dict(padding=1), (2, 3, 5, 6), (4, 3, 3, 3)),    # col2im's (too few channels)
    ("conv1d", dict(padding=1), (2, 8, 7), (4, 8, 3)),
    ("conv3d", dict(padding=(1, 2, 0)), (1, 8, 3, 4, 3), (3, 8, 2, 3, 2)),
])
@pytest.mark.filterwarnings("ignore:Using padding='same'")
def test_conv_input_gradient_with_a_nonfinite_weight(name, kw, x, w, nonfinite):
    # the input gradient is a convolution of the output's gradient padded by the kernel's
    # reach: PyTorch forms no product with a place outside the output, so a non-finite weight
    # reaches only the inputs it touched (times the padding's zeros it was NaN at the edges).
    # (Its forward is no reference here: oneDNN multiplies the padding's zeros by the weight
    # for some shapes and not for others.)
    x, w = make(x, seed=5), make(w, seed=6)
    w.reshape(-1)[[1, w.size - 4]] = nonfinite
    tx = torch.tensor(x, requires_grad=True)
    out = getattr(torch.nn.functional, name)(tx, torch.tensor(w), **kw)
    dy = make(tuple(out.shape), seed=7)
    out.backward(torch.tensor(dy))
    cx = cg.tensor(x, requires_grad=True)
    (got,) = cg.autograd.grad(getattr(CF, name)(cx, cg.tensor(w), **kw), [cx], cg.tensor(dy))
    np.testing.assert_allclose(got.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-4,
                               equal_nan=True)


def test_conv_transpose2d_inverts_the_shape_of_its_convolution():
    x = cg.randn(1, 2, 9, 8)
    w = cg.randn(3, 2, 3, 3)
    y = CF.conv2d(x, w, stride=2, padding=1)
    assert CF.conv_transpose2d(y, w, stride=2, padding=1, output_padding=(0, 1)).shape == x.shape


def test_conv_transpose2d_costs_what_a_convolution_costs():
    """The dilated, padded input is a view the matmul reads: one matmul and the copy into NCHW,
    as conv2d."""
    x, w = cg.randn(2, 4, 5, 5), cg.randn(4, 3, 3, 3)
    kernels = [k.name for k in cg.compile(CF.conv_transpose2d(x, w, stride=2))]
    assert len(kernels) == 2 and sum(name.startswith("M_") for name in kernels) == 1


def test_convolution_errors_name_the_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"conv1d: input of shape \(1, 3, 5\) .* expects 2"):
        CF.conv1d(cg.ones(1, 3, 5), cg.ones(2, 2, 3))
    with pytest.raises(RuntimeError, match="conv1d: expected a 3-D weight"):
        CF.conv1d(cg.ones(1, 3, 5), cg.ones(2, 3, 3, 3))
    with pytest.raises(RuntimeError, match="conv_transpose2d: output padding must be smaller"):
        CF.conv_transpose2d(cg.ones(1, 2, 4, 4), cg.ones(2, 3, 3, 3), stride=2, output_padding=2)
    with pytest.raises(RuntimeError, match=r"conv_transpose2d: expected bias of shape \(3,\)"):
        CF.conv_transpose2d(cg.ones(1, 2, 4, 4), cg.ones(2, 3, 3, 3), cg.ones(2))
    with pytest.raises(RuntimeError, match="conv_transpose2d: input of shape"):
        CF.conv_transpose2d(cg.ones(1, 3, 4, 4), cg.ones(2, 3, 3, 3))
    if torch is not None:   # the same exception types as PyTorch
        with pytest.raises(RuntimeError):
            torch.nn.functional.conv1d(torch.ones(1, 3, 5), torch.ones(2, 2, 3))
        with pytest.raises(RuntimeError):
            torch.nn.functional.conv_transpose2d(torch.ones(1, 2, 4, 4), torch.ones(2, 3, 3, 3),
                                                 stride=2, output_padding=2)


@pytest.mark.parametrize("kw, weight", [
    ({}, (6, 4, 2, 2, 2)),
    (dict(stride=(1, 2, 1), padding=(1, 0, 1), dilation=(1, 1, 2), groups=2), (6, 2, 2, 2, 3)),
    (dict(padding="same", dilation=(2, 1, 1)), (6, 4, 2, 3, 2)),    # odd totals: one more after
])
@pytest.mark.filterwarnings("ignore:Using padding='same'")   # PyTorch's, about its own copy
def test_conv3d(kw, weight):
    out = check(lambda x, w, b: F(x).conv3d(x, w, b, **kw), (2, 4, 4, 5, 5), weight, (6,),
                atol=1e-4, grad_atol=1e-3)
    assert out[0].grad_fn.name() == "ConvolutionBackward0"


@pytest.mark.parametrize("kw, shapes", [
    (dict(stride=2, padding=(1, 0, 0), output_padding=(1, 0, 1), groups=2),
     ((2, 4, 3, 3, 2), (4, 3, 2, 2, 2), (6,))),
    (dict(dilation=(2, 1, 1), stride=(1, 2, 1)), ((4, 3, 3, 2), (4, 2, 2, 2, 2))),  # unbatched
])
def test_conv_transpose3d(kw, shapes):
    check(lambda x, w, *b: F(x).conv_transpose3d(x, w, *b, **kw), *shapes, atol=1e-4,
          grad_atol=1e-3)


def test_top_level_3d_convolutions_are_the_functionals():
    assert cg.conv3d is CF.conv3d and cg.conv_transpose3d is CF.conv_transpose3d


def test_torch_convolution_takes_lists_and_the_transposed_flag():
    check(lambda x, w, b: library(x).convolution(x, w, b, [2], [1], [1], True, [1], 1),
          (2, 3, 4, 3, 3), (3, 2, 2, 2, 2), (2,), atol=1e-4, grad_atol=1e-3)
    check(lambda x, w: library(x).convolution(x, w, None, [1, 2], [0, 1], [2, 1], False, [0, 0],
                                              3), (2, 6, 7, 6), (3, 2, 2, 3), atol=1e-4)


def test_convolutions_of_an_empty_batch():
    """(0, O, ...) out; the weight and bias get zero gradients, as PyTorch's do."""
    check(lambda x, w, b: [F(x).conv3d(x, w, b, padding=1),
                           F(x).conv_transpose2d(x[:, :, 0], w[:, :, 0], b, stride=2)],
          (0, 4, 3, 3, 3), (4, 4, 2, 2, 2), (4,))


ERRORS = [   # each called on clgrad and on torch: the same exception type
    lambda lib: lib.nn.functional.conv3d(lib.zeros(3, 3), lib.zeros(6, 4, 1, 1, 1)),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 1, 4, 3, 3, 3), lib.zeros(6, 4, 1, 1, 1)),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 3, 3, 3), lib.zeros(6, 2, 1, 1, 1),
                                         groups=4),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 3, 3, 3), lib.zeros(6, 4, 1, 1, 1),
                                         groups=0),
    lambda lib: lib.nn.functional.conv_transpose3d(lib.zeros(1, 4, 3, 3, 3),
                                                   lib.zeros(4, 6, 1, 1, 1), groups=3),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 3, 3, 3), lib.zeros(6, 4, 1, 1, 1),
                                         stride=(1, 2)),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 3, 3, 3), lib.zeros(6, 4, 1, 1, 1),
                                         padding="full"),
    lambda lib: lib.nn.functional.conv3d(lib.zeros(1, 4, 3, 3, 3), lib.zeros(6, 4, 1, 1, 1),
                                         lib.zeros(5)),
    lambda lib: lib.nn.functional.conv_transpose3d(lib.zeros(1, 4, 3, 3, 3),
                                                   lib.zeros(4, 6, 1, 1, 1), padding="same"),
    lambda lib: lib.convolution(lib.zeros(4, 3, 3, 3), lib.zeros(6, 4, 1, 1, 1), None, [1],
                                [0], [1], False, [0], 1),
]


@pytest.mark.skipif(torch is None, reason="compares exception types with PyTorch's")
@pytest.mark.parametrize("call", ERRORS)
def test_convolution_errors_are_pytorchs(call):
    with pytest.raises(Exception) as theirs:
        call(torch)
    with pytest.raises(theirs.type):
        call(cg)


@pytest.mark.skipif(torch is None, reason="PyTorch's second derivative is the reference")
@pytest.mark.parametrize("kw", [dict(padding=1), dict(padding=(2, 0), dilation=2, groups=2)])
def test_conv_input_gradient_differentiated_again(kw):
    # a gradient penalty: the input gradient (a convolution of the output's gradient with the
    # flipped weight, its padding absent) is differentiated again, to the weight and the input
    channels = 8 // kw.get("groups", 1)
    x, w, dy = make((2, 8, 6, 5), seed=1), make((4, channels, 3, 3), seed=2), None
    results = []
    for lib, tensor in ((torch, torch.tensor), (cg, cg.tensor)):
        tx, tw = tensor(x, requires_grad=True), tensor(w, requires_grad=True)
        out = lib.nn.functional.conv2d(tx * tx, tw, **kw)
        dy = make(tuple(out.shape), seed=3) if dy is None else dy
        (gx,) = lib.autograd.grad(out, [tx], tensor(dy), create_graph=True)
        (gx * gx).sum().backward()
        results.append([tx.grad.detach().numpy(), tw.grad.detach().numpy()])
    for want, got in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)


@pytest.mark.skipif(torch is None, reason="PyTorch's non-finite products are the reference")
@pytest.mark.parametrize("kw", [dict(padding=1), dict(padding=(2, 1), stride=2),
                                dict(padding=(0, 1)), dict(padding=2)])
def test_conv_weight_gradient_with_nonfinite_inputs(kw):
    # PyTorch forms no product of the output's gradient with the input's padding: an infinite
    # gradient at the edge gives no NaN (clgrad's windows read the padding as absent there).
    # (oneDNN forms them for a few shapes, of few channels in groups or dilated: no reference.)
    x, dy, w = make((2, 4, 6, 5), seed=1), None, make((4, 4, 3, 3), seed=3)
    x[0, 3, 0, 0], x[1, 2, 2, 4] = np.inf, np.nan
    grads = []
    for lib, tensor in ((torch, torch.tensor), (cg, cg.tensor)):
        tw = tensor(w, requires_grad=True)
        out = lib.nn.functional.conv2d(tensor(x), tw, **kw)
        if dy is None:
            dy = make(tuple(out.shape), seed=2)
            dy[1, 2, 0, 0], dy[0, 1, -1, 2] = np.inf, -np.inf
        out.backward(tensor(dy))
        grads.append(tw.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-4, atol=1e-4, equal_nan=True)
