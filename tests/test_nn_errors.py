"""nn's errors and warnings as PyTorch raises them, never an internal AssertionError."""
import warnings

import pytest

import clgrad as cg
import clgrad.nn.functional as CF
from helpers import torch


def test_linear_of_mixed_dtypes_raises_runtime_error_naming_them():
    layer = cg.nn.Linear(3, 2)
    with pytest.raises(RuntimeError, match="linear: expected input, weight and bias of one "
                                           "dtype, got float64, float32, float32"):
        layer(cg.ones(2, 3, dtype=cg.float64))
    if torch is not None:
        with pytest.raises(RuntimeError):
            torch.nn.Linear(3, 2)(torch.ones(2, 3, dtype=torch.float64))


def test_mse_loss_of_different_shapes_warns_as_torch():
    with pytest.warns(UserWarning, match=r"target size \(2,\) that is different to the input "
                                         r"size \(2, 1\)"):
        CF.mse_loss(cg.ones(2, 1), cg.ones(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CF.mse_loss(cg.ones(2), cg.ones(2))
