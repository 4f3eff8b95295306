"""PyTorch's legacy tensor types: constructors, isinstance by dtype, Tensor.type."""
import numpy as np
import pytest

import clgrad as cg
from helpers import torch

TYPES = ["FloatTensor", "DoubleTensor", "HalfTensor", "IntTensor", "LongTensor", "BoolTensor"]


@pytest.mark.parametrize("name", TYPES)
def test_constructors_and_isinstance_match_torch(name):
    ours, theirs = getattr(cg, name), getattr(torch, name)
    data = [1, 0, 3]
    made, ref = ours(data), theirs(data)
    assert made.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_array_equal(made.numpy(), ref.numpy())
    assert ours(2, 3).shape == tuple(theirs(2, 3).shape)
    assert ours().shape == tuple(theirs().shape) == (0,)
    assert isinstance(made, ours) and not isinstance(made, cg.LongTensor if
                                                     name != "LongTensor" else cg.FloatTensor)
    assert made.type() == f"clgrad.{name}" and ref.type() == f"torch.{name}"


def test_type_converts():
    t = cg.tensor([1.5, -2.0])
    assert t.type(cg.DoubleTensor).dtype == cg.float64
    assert t.type("torch.LongTensor").tolist() == [1, -2]
    assert t.type(cg.int32).dtype == cg.int32
    assert cg.FloatTensor(t) is t
    with pytest.raises(TypeError, match="expected float64"):
        cg.DoubleTensor(t)
    with pytest.raises(ValueError, match="invalid type"):
        t.type("torch.ComplexTensor")
