"""nn.init's remaining initialisers: the property each promises, and PyTorch's errors."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as CF
from clgrad import nn


def test_trunc_normal_stays_in_bounds_with_the_normals_moments():
    w = nn.init.trunc_normal_(cg.empty(200, 500), mean=1.0, std=2.0, a=-1.0, b=3.0,
                              generator=cg.Generator().manual_seed(0)).numpy()
    assert w.min() >= -1.0 and w.max() <= 3.0
    # a normal(1, 2) cut at one std each side: mean 1, std 2 * 0.5380 (truncated moments)
    assert abs(w.mean() - 1.0) < 0.01 and abs(w.std() - 2 * 0.5380) < 0.01
    narrow = nn.init.trunc_normal_(cg.empty(10000), std=0.02).numpy()
    assert abs(narrow.std() - 0.02) < 1e-3       # bounds at +-100 std: a plain normal


def test_orthogonal_rows_or_columns_are_orthonormal():
    tall = nn.init.orthogonal_(cg.empty(6, 3), gain=2.0).numpy().astype(np.float64)
    np.testing.assert_allclose(tall.T @ tall, 4 * np.eye(3), atol=1e-5)
    wide = nn.init.orthogonal_(cg.empty(3, 2, 2, 2)).numpy().reshape(3, 8).astype(np.float64)
    np.testing.assert_allclose(wide @ wide.T, np.eye(3), atol=1e-5)


def test_eye_and_dirac_pass_inputs_through():
    np.testing.assert_array_equal(nn.init.eye_(cg.empty(2, 3)).numpy(), np.eye(2, 3))
    w = nn.init.dirac_(cg.empty(4, 4, 3, 3))
    x = cg.randn(2, 4, 5, 5)
    np.testing.assert_allclose(CF.conv2d(x, w, padding=1).numpy(), x.numpy(), atol=1e-6)
    grouped = nn.init.dirac_(cg.empty(4, 2, 3), groups=2).numpy()
    assert grouped[:, :, 1].tolist() == [[1, 0], [0, 1], [1, 0], [0, 1]]
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        nn.init.eye_(cg.empty(2, 2, 2))
    with pytest.raises(ValueError, match="3, 4, or 5 dimensions"):
        nn.init.dirac_(cg.empty(2, 2))


def test_sparse_zeroes_that_share_of_each_column():
    w = nn.init.sparse_(cg.empty(10, 7), sparsity=0.3, std=0.5).numpy()
    assert ((w == 0).sum(0) == 3).all()
    assert 0.2 < w[w != 0].std() < 1.0
