"""Layer and loss constructors and functionals take PyTorch's arguments in PyTorch's order,
including the deprecated ones tutorials still pass."""
import inspect
import warnings

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import F, check, make, torch


def test_constructor_and_functional_parameters_match_torch():
    generic = ("args", "kwargs")
    for name in cnn.__all__:
        ours, theirs = getattr(cnn, name), getattr(torch.nn, name, None)
        if theirs is None or not isinstance(ours, type):
            continue
        expected = list(inspect.signature(theirs.__init__).parameters)
        if set(expected) <= {"self", *generic}:
            continue
        assert list(inspect.signature(ours.__init__).parameters) == expected, name
    for name in cnn.functional.__all__:
        theirs = getattr(torch.nn.functional, name, None)
        try:
            expected = list(inspect.signature(theirs).parameters)
        except (TypeError, ValueError):
            continue
        if set(expected) <= set(generic):
            continue
        assert list(inspect.signature(getattr(cnn.functional, name)).parameters) == expected, name


def test_legacy_reduction_flags_positionally():
    x, y = make((4, 3)), np.array([0, 2, 1, 2])
    w = make((3,), low=0.5, high=1.5)
    for size_average, reduce in ((False, None), (None, False), (True, True)):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            ours = cnn.NLLLoss(cg.tensor(w), size_average, -100, reduce)(
                cg.tensor(x).log_softmax(1), cg.tensor(y))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = torch.nn.NLLLoss(torch.tensor(w), size_average, -100, reduce)(
                torch.tensor(x).log_softmax(1), torch.tensor(y))
        np.testing.assert_allclose(ours.numpy(), ref.numpy(), rtol=1e-5)
    with pytest.warns(UserWarning):
        assert cnn.CrossEntropyLoss(None, False).reduction == "sum"
        assert cnn.MSELoss(None, False).reduction == "none"


def test_weighted_mse_loss():
    for reduction in ("none", "mean", "sum"):
        check(lambda a, b, w: F(a).mse_loss(a, b, reduction=reduction, weight=w), (3, 4), (3, 4),
              make((3, 4), low=0.1, high=1.0, seed=7))


def test_layer_options_torch_has():
    bn = cnn.BatchNorm1d(3, bias=False, dtype=cg.float64)
    assert bn.bias is None and bn.weight.dtype == cg.float64 and bn.running_mean.dtype == cg.float64
    assert repr(bn) == repr(torch.nn.BatchNorm1d(3, bias=False))
    assert isinstance(cnn.Identity(54, unused="argument")(cg.ones(1)), cg.Tensor)
    emb = cnn.Embedding(4, 2, dtype=cg.float64)
    assert emb.weight.dtype == cg.float64
    table = cg.tensor(make((4, 2)))
    frozen = cnn.Embedding.from_pretrained(table, padding_idx=1)
    assert not frozen.weight.requires_grad and frozen.padding_idx == 1
    np.testing.assert_array_equal(frozen(cg.tensor([3])).numpy(), table.numpy()[3:])
    assert cnn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad
    scaled = cnn.Embedding(4, 2, scale_grad_by_freq=True)
    scaled(cg.tensor([1, 1, 2])).sum().backward()
    np.testing.assert_array_equal(scaled.weight.grad.numpy(), [[0, 0], [1, 1], [1, 1], [0, 0]])
