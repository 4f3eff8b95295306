"""Creation ops, metadata, conversions, realize and repr (checked against NumPy and against
PyTorch's printed text, so these need no reference library)."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, make


def _eq(t, expected, dtype):
    assert t.dtype == dtype, (t.dtype, dtype)
    assert t.shape == np.shape(expected)
    np.testing.assert_allclose(t.numpy(), expected, rtol=1e-6, atol=1e-6)


def test_tensor_from_data():
    _eq(cg.tensor([[1.5, 2], [3, 4]]), [[1.5, 2], [3, 4]], cg.float32)
    _eq(cg.tensor([1, 2, 3]), [1, 2, 3], cg.int64)
    _eq(cg.tensor([True, False]), [True, False], cg.bool)
    _eq(cg.tensor(2.5), 2.5, cg.float32)
    _eq(cg.tensor([1, 2], dtype=cg.float64), [1.0, 2.0], cg.float64)
    _eq(cg.tensor(np.arange(4, dtype=np.int32)), np.arange(4), cg.int32)
    _eq(cg.tensor(np.ones(3)), np.ones(3), cg.float64)       # NumPy arrays keep their dtype


def test_constant_creation():
    _eq(cg.zeros(2, 3), np.zeros((2, 3)), cg.float32)
    _eq(cg.zeros((2, 3), dtype=cg.int32), np.zeros((2, 3)), cg.int32)
    _eq(cg.ones(4), np.ones(4), cg.float32)
    _eq(cg.ones(2, 2, dtype=cg.bool), np.ones((2, 2), bool), cg.bool)
    _eq(cg.full((2, 3), 7), np.full((2, 3), 7), cg.int64)
    _eq(cg.full((2,), 1.5), [1.5, 1.5], cg.float32)
    _eq(cg.full((2,), True), [True, True], cg.bool)
    _eq(cg.eye(3), np.eye(3), cg.float32)
    _eq(cg.eye(2, 4, dtype=cg.int64), np.eye(2, 4), cg.int64)
    like = cg.tensor([[1, 2, 3]], dtype=cg.int32)
    _eq(cg.zeros_like(like), np.zeros((1, 3)), cg.int32)
    _eq(cg.ones_like(like, dtype=cg.float64), np.ones((1, 3)), cg.float64)


@pytest.mark.parametrize("args,expected,dtype", [
    ((5,), np.arange(5), cg.int64),
    ((2, 9, 3), np.arange(2, 9, 3), cg.int64),
    ((5, 0, -2), np.arange(5, 0, -2), cg.int64),
    ((0.0, 1.0, 0.25), np.arange(0, 1, 0.25), cg.float32),
    ((1, 2.5, 0.5), np.arange(1, 2.5, 0.5), cg.float32),
    ((-1.0, 1.0, 0.3), np.arange(-1, 1, 0.3), cg.float32),
    ((3, 3), np.arange(3, 3), cg.int64),
], ids=str)
def test_arange(args, expected, dtype):
    _eq(cg.arange(*args), expected, dtype)


def test_arange_dtype_argument():
    _eq(cg.arange(4, dtype=cg.float32), np.arange(4.0), cg.float32)


def test_random_creation_and_seed():
    cg.manual_seed(3)
    a, b = cg.randn(3, 5), cg.rand(3, 5)
    cg.manual_seed(3)
    np.testing.assert_array_equal(a.numpy(), cg.randn(3, 5).numpy())
    np.testing.assert_array_equal(b.numpy(), cg.rand(3, 5).numpy())
    assert 0 <= b.numpy().min() and b.numpy().max() < 1
    like = cg.randn_like(cg.zeros(4, 1, 6, dtype=cg.float64))
    assert like.shape == (4, 1, 6) and like.dtype == cg.float64
    assert abs(float(cg.randn(1 << 12).mean())) < 0.1


def test_from_numpy():
    for dtype in (np.float32, np.float64, np.int32, np.int64, np.bool_):
        arr = make((2, 3), dtype, -3, 4)
        t = cg.from_numpy(arr)
        assert t.dtype.np == dtype
        np.testing.assert_array_equal(t.numpy(), arr)
    np.testing.assert_array_equal(cg.from_numpy(np.arange(6.0).reshape(2, 3).T).numpy(),
                                  np.arange(6.0).reshape(2, 3).T)


def test_metadata():
    t = cg.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24
    assert t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.dtype == cg.float32 and t.device == cg.device()
    assert len(t) == 2
    s = cg.tensor(3.5)
    assert s.shape == () and s.ndim == 0 and s.numel() == 1


def test_conversions():
    t = cg.tensor([[1.5, -2.0], [3.0, 4.25]])
    assert t.tolist() == [[1.5, -2.0], [3.0, 4.25]]
    assert cg.tensor([7]).item() == 7 and isinstance(cg.tensor([7]).item(), int)
    assert float(t[1, 1]) == 4.25
    assert int(cg.tensor(3)) == 3
    assert t.sum().item() == 6.75
    assert cg.tensor([True]).item() is True
    arr = t.numpy()
    assert arr.dtype == np.float32 and arr.shape == (2, 2)
    assert t.int().tolist() == [[1, -2], [3, 4]]
    assert t.to(cg.float64).dtype == cg.float64
    assert t.double().float().dtype == cg.float32
    with pytest.raises(RuntimeError, match="item.*4 elements"):
        t.item()


def test_realize_several_at_once():
    a = cg.tensor([1.0, 2.0, 3.0])
    b, c = a * 2, a.exp().sum()
    cg.realize(b, c)
    np.testing.assert_allclose(b.numpy(), [2, 4, 6])
    np.testing.assert_allclose(c.numpy(), np.exp([1, 2, 3]).sum(), rtol=1e-6)
    assert a.realize() is a


def test_clone_detach():
    check(lambda a: a.clone() * 2, (3, 5))
    x = cg.tensor(make((3, 5)), requires_grad=True)
    (x.detach() * x).sum().backward()          # detach cuts the first factor's path
    np.testing.assert_allclose(x.grad.numpy(), x.detach().numpy())
    assert not x.detach().requires_grad and x.detach().grad_fn is None


REPRS = [
    (lambda: cg.tensor([[0.25, 0.25], [0.25, 0.25]], requires_grad=True).mean(0),
     "tensor([0.2500, 0.2500], grad_fn=<MeanBackward1>)"),
    (lambda: cg.tensor([1.5, -2.0, 3.25]), "tensor([ 1.5000, -2.0000,  3.2500])"),
    (lambda: cg.tensor([1, 2, 3]), "tensor([1, 2, 3])"),
    (lambda: cg.tensor([True, False]), "tensor([ True, False])"),
    (lambda: cg.tensor(2.5), "tensor(2.5000)"),
    (lambda: cg.tensor([1.0, 2.0]), "tensor([1., 2.])"),
    (lambda: cg.tensor([1e-5, 1.0, 1000.0]), "tensor([1.0000e-05, 1.0000e+00, 1.0000e+03])"),
    (lambda: cg.tensor([1, 2], dtype=cg.int32), "tensor([1, 2], dtype=clgrad.int32)"),
    (lambda: cg.tensor([1.5, 2.0], dtype=cg.float64),
     "tensor([1.5000, 2.0000], dtype=clgrad.float64)"),
    (lambda: cg.zeros(2, 3, requires_grad=True),
     "tensor([[0., 0., 0.],\n        [0., 0., 0.]], requires_grad=True)"),
    (lambda: cg.zeros(0, 3), "tensor([], size=(0, 3))"),
    (lambda: cg.arange(12.0).reshape(3, 4) / 7,
     "tensor([[0.0000, 0.1429, 0.2857, 0.4286],\n        [0.5714, 0.7143, 0.8571, 1.0000],\n"
     "        [1.1429, 1.2857, 1.4286, 1.5714]])"),
    (lambda: cg.ones(2, 2, requires_grad=True) * 3,
     "tensor([[3., 3.],\n        [3., 3.]], grad_fn=<MulBackward0>)"),
    (lambda: cg.tensor([123456.0, 1.5]), "tensor([1.2346e+05, 1.5000e+00])"),
    (lambda: cg.arange(2000.0),
     "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
     "        1.9990e+03])"),
    (lambda: cg.arange(24.0).reshape(2, 3, 4),
     'tensor([[[ 0.,  1.,  2.,  3.],\n'
     '         [ 4.,  5.,  6.,  7.],\n'
     '         [ 8.,  9., 10., 11.]],\n'
     '\n'
     '        [[12., 13., 14., 15.],\n'
     '         [16., 17., 18., 19.],\n'
     '         [20., 21., 22., 23.]]])'),
    (lambda: cg.tensor([float('nan'), 1.5, float('inf'), 0.0]),
     'tensor([   nan, 1.5000,    inf, 0.0000])'),
    (lambda: cg.arange(30.0).reshape(2, 15) * 1.37,
     'tensor([[ 0.0000,  1.3700,  2.7400,  4.1100,  5.4800,  6.8500,  8.2200,  9.5900,\n'
     '         10.9600, 12.3300, 13.7000, 15.0700, 16.4400, 17.8100, 19.1800],\n'
     '        [20.5500, 21.9200, 23.2900, 24.6600, 26.0300, 27.4000, 28.7700, 30.1400,\n'
     '         31.5100, 32.8800, 34.2500, 35.6200, 36.9900, 38.3600, 39.7300]])'),
    (lambda: cg.arange(40).reshape(2, 20) - 20,
     'tensor([[-20, -19, -18, -17, -16, -15, -14, -13, -12, -11, -10,  -9,  -8,  -7,\n'
     '          -6,  -5,  -4,  -3,  -2,  -1],\n'
     '        [  0,   1,   2,   3,   4,   5,   6,   7,   8,   9,  10,  11,  12,  13,\n'
     '          14,  15,  16,  17,  18,  19]])'),
    (lambda: cg.arange(1200.0).reshape(40, 30) / 3,
     'tensor([[0.0000e+00, 3.3333e-01, 6.6667e-01,  ..., 9.0000e+00, 9.3333e+00,\n'
     '         9.6667e+00],\n'
     '        [1.0000e+01, 1.0333e+01, 1.0667e+01,  ..., 1.9000e+01, 1.9333e+01,\n'
     '         1.9667e+01],\n'
     '        [2.0000e+01, 2.0333e+01, 2.0667e+01,  ..., 2.9000e+01, 2.9333e+01,\n'
     '         2.9667e+01],\n'
     '        ...,\n'
     '        [3.7000e+02, 3.7033e+02, 3.7067e+02,  ..., 3.7900e+02, 3.7933e+02,\n'
     '         3.7967e+02],\n'
     '        [3.8000e+02, 3.8033e+02, 3.8067e+02,  ..., 3.8900e+02, 3.8933e+02,\n'
     '         3.8967e+02],\n'
     '        [3.9000e+02, 3.9033e+02, 3.9067e+02,  ..., 3.9900e+02, 3.9933e+02,\n'
     '         3.9967e+02]])'),
    (lambda: cg.zeros(0),
     'tensor([])'),
]


@pytest.mark.parametrize("k", range(len(REPRS)))
def test_repr_matches_pytorch(k):
    make_tensor, expected = REPRS[k]       # the text of repr(torch tensor), torch. -> clgrad.
    assert repr(make_tensor()) == expected


def test_helper_fallback_catches_wrong_gradient(monkeypatch):
    """Without torch the helper checks gradients by finite differences; it must really fail
    on a wrong one (here a gradient rule swapped for a wrong one)."""
    import helpers
    from clgrad.compiler import derived, gradients
    from clgrad.compiler.ops import Op
    monkeypatch.setattr(helpers, "torch", None)
    check(lambda a, b: (a * b).sin().sum(1), (3, 5), (3, 5))
    monkeypatch.setitem(gradients.RULES, Op.SIN, gradients.RULES[Op.COS])
    monkeypatch.setattr(derived, "_templates", {})  # gradients derived with the right rule
    with pytest.raises(AssertionError, match="gradient"):
        check(lambda a: a.sin(), (3, 5))
