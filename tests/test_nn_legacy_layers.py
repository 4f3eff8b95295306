"""Layers kept for PyTorch code that still uses them: CrossMapLRN2d (Lua Torch's windows),
LinearCrossEntropyLoss, SyncBatchNorm and DataParallel in one process, the deprecated
NLLLoss2d; against PyTorch."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import F, check, library, make, nn


@pytest.mark.parametrize("size, channels", [(5, 9), (4, 7), (3, 2)])
def test_cross_map_lrn2d_keeps_pytorch_windows_forward_and_backward(size, channels):
    check(lambda x: nn(x).CrossMapLRN2d(size, alpha=0.3, beta=0.75, k=1.2)(x),
          (2, channels, 3, 2))


def test_linear_cross_entropy_and_its_module():
    classes = make((5,), low=0, high=3, dtype=np.int64)
    grid = make((5, 2), low=0, high=3, dtype=np.int64)
    check(lambda x, w, b: F(x).linear_cross_entropy(x, w, library(x).tensor(grid),
                                                    linear_bias=b, label_smoothing=0.1),
          (5, 4), (3, 2, 4), (3, 2))
    check(lambda x, w: F(x).linear_cross_entropy(x, w, library(x).tensor(classes),
                                                 reduction="none", ignore_index=1), (5, 4), (3, 4))
    loss = cnn.LinearCrossEntropyLoss(4, 3, bias=True)
    x = cg.tensor(make((5, 4)))
    expected = cnn.functional.cross_entropy(loss.linear(x), cg.tensor(classes))
    np.testing.assert_allclose(loss(x, cg.tensor(classes)).item(), expected.item(), rtol=1e-6)
    with pytest.raises(RuntimeError, match="weight shape"):
        cnn.LinearCrossEntropyLoss(4, 3, weight=cg.ones(2))


def test_sync_batch_norm_is_batch_norm_in_one_process():
    x = make((4, 3, 2))
    ours, theirs = cnn.SyncBatchNorm(3), cnn.BatchNorm1d(3)
    np.testing.assert_allclose(ours(cg.tensor(x)).detach().numpy(),
                               theirs(cg.tensor(x)).detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(ours.running_var.numpy(), theirs.running_var.numpy(), rtol=1e-6)
    model = cnn.Sequential(cnn.Linear(3, 3), cnn.BatchNorm1d(3))
    norm = model[1]
    converted = cnn.SyncBatchNorm.convert_sync_batchnorm(model)
    assert type(converted[1]) is cnn.SyncBatchNorm and converted[1].weight is norm.weight
    assert converted[1].running_mean is norm.running_mean
    with pytest.raises(ValueError, match="at least 2D"):
        ours(cg.ones(3))
    assert not isinstance(cnn.BatchNorm3d(2), cnn.BatchNorm2d)


def test_data_parallel_runs_the_module_on_the_whole_batch():
    layer = cnn.Linear(2, 3)
    wrapped = cnn.DataParallel(layer, device_ids=[0])
    x = cg.tensor(make((4, 2)))
    np.testing.assert_array_equal(wrapped(x).detach().numpy(), layer(x).detach().numpy())
    assert list(wrapped.state_dict()) == ["module.weight", "module.bias"]
    assert wrapped.device_ids == []
    np.testing.assert_array_equal(cnn.parallel.data_parallel(layer, x).detach().numpy(),
                                  layer(x).detach().numpy())


def test_nll_loss_2d_is_deprecated_nll_loss():
    with pytest.warns(FutureWarning, match="NLLLoss2d"):
        loss = cnn.NLLLoss2d(ignore_index=2)
    assert loss.ignore_index == 2 and loss.reduction == "mean"
