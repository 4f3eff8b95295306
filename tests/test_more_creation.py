"""Window functions, triangle indices, range, scalar_tensor, randint_like against PyTorch."""
import numpy as np
import pytest
import torch

import clgrad as cg


def _same(got, want, atol=1e-6):
    assert got.shape == tuple(want.shape), (got.shape, want.shape)
    assert got.dtype.name == str(want.dtype).split(".")[1], (got.dtype, want.dtype)
    np.testing.assert_allclose(got.numpy(), want.numpy(), atol=atol, rtol=1e-5)


@pytest.mark.parametrize("name,extra", [("hann_window", ()), ("hamming_window", ()),
                                        ("hamming_window", (0.5, 0.3)), ("blackman_window", ()),
                                        ("bartlett_window", ()), ("kaiser_window", ()),
                                        ("kaiser_window", (5.0,))])
@pytest.mark.parametrize("length", [0, 1, 2, 7, 16])
@pytest.mark.parametrize("periodic", [True, False])
def test_windows(name, extra, length, periodic):
    _same(getattr(cg, name)(length, periodic, *extra),
          getattr(torch, name)(length, periodic, *extra), atol=1e-5)
    _same(getattr(cg, name)(length, dtype=cg.float64), getattr(torch, name)(length,
                                                                            dtype=torch.float64))


def test_window_errors():
    with pytest.raises(RuntimeError, match="non-negative"):
        cg.hann_window(-1)
    with pytest.raises(RuntimeError, match="floating point"):
        cg.hann_window(3, dtype=cg.int64)


def test_window_gradient_flag():
    assert cg.hann_window(4, requires_grad=True).requires_grad


@pytest.mark.parametrize("row,col,offset", [(3, 3, 0), (4, 2, 1), (2, 5, -1), (0, 3, 0),
                                            (1, 1, 5), (3, 4, -10)])
def test_triangle_indices(row, col, offset):
    _same(cg.tril_indices(row, col, offset), torch.tril_indices(row, col, offset))
    _same(cg.triu_indices(row, col, offset=offset, dtype=cg.int32),
          torch.triu_indices(row, col, offset=offset, dtype=torch.int32))


def test_triangle_indices_with_no_columns():
    # (PyTorch 2.13 dies of a division by zero on this one, so no comparison)
    assert cg.tril_indices(3, 0).shape == (2, 0)


def test_triangle_indices_errors():
    with pytest.raises(RuntimeError, match="row must be non-negative"):
        cg.tril_indices(-1, 2)


@pytest.mark.parametrize("args", [(1, 4), (0, 1, 0.25), (5, 1, -2), (1.5, 2.5),
                                  (0, 0), (2, 1, 1)])
def test_range(args):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if len(args) == 3 and args[2] > 0 and args[1] < args[0]:
            with pytest.raises(RuntimeError):
                torch.range(*args)
            with pytest.raises(RuntimeError, match="inconsistent with step sign"):
                cg.range(*args)
            return
        _same(cg.range(*args), torch.range(*args))
        if all(isinstance(a, int) for a in args):   # (PyTorch dies on a step cast to 0)
            _same(cg.range(*args, dtype=cg.int64), torch.range(*args, dtype=torch.int64))


@pytest.mark.parametrize("value,dtype", [(2.5, None), (3, None), (True, cg.bool), (7, cg.int64)])
def test_scalar_tensor(value, dtype):
    want = torch.scalar_tensor(value, dtype=getattr(torch, dtype.name) if dtype else None)
    _same(cg.scalar_tensor(value, dtype=dtype), want)


def test_randint_like():
    x = cg.zeros(3, 4, dtype=cg.int32)
    r = cg.randint_like(x, 5)
    assert r.shape == (3, 4) and r.dtype == cg.int32
    assert r.numpy().min() >= 0 and r.numpy().max() < 5
    r = cg.randint_like(cg.zeros(1000), 3, 6, dtype=cg.int64)
    assert r.dtype == cg.int64 and set(np.unique(r.numpy())) == {3, 4, 5}
