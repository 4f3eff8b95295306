"""Tensor methods composed of others (frontend/composite_methods.py): values, gradients and
dtypes against PyTorch through the one check helper, edge inputs included."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, library, make, torch

nan, inf = float("nan"), float("inf")


def _method(name, *args, **kwargs):
    return lambda x, *others: getattr(x, name)(*others, *args, **kwargs)


def _ints(x):
    return library(x).tensor([[0, 2], [1, 0], [2, 1]])


# (name, extra args, shapes of the other operands, check options)
ROWS = [
    ("eq", (), [(3, 4)], dict(grad=False)), ("ne", (0.5,), [], dict(grad=False)),
    ("lt", (), [(3, 4)], dict(grad=False)), ("le", (0.0,), [], dict(grad=False)),
    ("gt", (), [(3, 4)], dict(grad=False)), ("ge", (0.0,), [], dict(grad=False)),
    ("remainder", (0.7,), [], {}), ("fmod", (0.7,), [], {}), ("fmod", (-0.7,), [], {}),
    ("true_divide", (), [(3, 4)], dict(low=0.5)),
    ("trunc", (), [], dict(grad=False)), ("frac", (), [], {}),
    ("log2", (), [], dict(low=0.1)), ("log10", (), [], dict(low=0.1)), ("exp2", (), [], {}),
    ("log1p", (), [], dict(low=-0.9)), ("expm1", (), [], {}),
    ("lerp", (0.3,), [(3, 4)], {}), ("addcmul", (), [(3, 4), (3, 4)], {}),
    ("addcdiv", (), [(3, 4), (3, 4)], dict(low=0.5)),
    ("clamp_min", (0.1,), [], {}), ("clamp_max", (0.1,), [], {}),
    ("movedim", (0, 1), [], {}), ("moveaxis", (1, 0), [], {}), ("swapaxes", (0, 1), [], {}),
    ("narrow", (1, 1, 2), [], {}), ("narrow", (0, -2, 2), [], {}),
    ("split", (2, 1), [], {}), ("split", ([1, 3], 1), [], {}), ("chunk", (2, 0), [], {}),
    ("unbind", (1,), [], {}), ("select", (1, -1), [], {}), ("tile", ((2, 1, 2),), [], {}),
    ("roll", (1, 1), [], {}), ("roll", ((2, -1), (0, 1)), [], {}), ("roll", (5,), [], {}),
    ("tril", (), [], {}), ("triu", (1,), [], {}), ("tril", (-1,), [], {}),
    ("diagonal", (), [], {}), ("diagonal", (1,), [], {}), ("diagonal", (-1,), [], {}),
    ("diag", (), [], {}), ("trace", (), [], {}), ("ravel", (), [], {}),
    ("broadcast_to", ((2, 3, 4),), [], {}), ("mT", None, [], {}),
    ("addmm", (), [(3, 5), (5, 4)], dict(atol=1e-4)),
]


@pytest.mark.parametrize("name,args,others,options", ROWS,
                         ids=[f"{r[0]}{i}" for i, r in enumerate(ROWS)])
def test_method_matches_torch(name, args, others, options):
    if args is None:       # a property
        check(lambda x: getattr(x, name), (3, 4))
    else:
        check(_method(name, *args), (3, 4), *others, **options)


def test_tril_and_triu_of_a_bool_mask_stay_bool():
    check(lambda m: (m.tril(), m.triu(1)), make((3, 4), np.bool_), grad=False)


def test_indexing_along_a_dim_matches_torch():
    check(lambda x: x.gather(1, _ints(x)), (3, 4))
    check(lambda x: x.gather(0, _ints(x)), (3, 4))
    check(lambda x: x.take_along_dim(_ints(x), 1), (3, 4))
    check(lambda x: x.index_select(1, library(x).tensor([3, 0, 3])), (3, 4))
    check(lambda x: x.index_select(0, library(x).tensor([2])), (3, 4))


def test_vector_products_and_diag_of_a_vector_match_torch():
    check(lambda a, b: a.outer(b), (3,), (4,))
    check(lambda a, b: a.dot(b), (5,), (5,))
    check(lambda m, v: m.mv(v), (3, 5), (5,))
    for k in (0, 2, -1):
        check(lambda v: v.diag(k), (3,))


def test_masked_fill_and_nonfinite_tests_match_torch():
    values = np.array([[1.0, nan, inf], [-inf, 0.0, -2.5]], dtype=np.float32)
    mask = values > 0
    check(lambda x: x.masked_fill(library(x).tensor(mask), -1.0), values.copy(), grad=False)
    check(lambda x: x.masked_fill(library(x).tensor(~np.isfinite(values)), 0.0),
          np.nan_to_num(values, nan=1.0, posinf=1.0, neginf=1.0))
    for name in ("isnan", "isinf", "isfinite", "isposinf", "isneginf"):
        check(_method(name), values, grad=False)
    check(_method("nan_to_num"), values, grad=False)
    check(_method("nan_to_num", 1.0, 2.0, -3.0), values, grad=False)


def test_log1p_and_expm1_at_the_edges_match_torch():
    tiny = np.array([1e-30, -1e-20, 1e-8, -1e-7, 3e-4, 80.0, 0.0, -0.5], dtype=np.float32)
    check(_method("log1p"), tiny, rtol=1e-5)
    check(_method("expm1"), np.append(tiny, -80.0).astype(np.float32), rtol=1e-5)
    check(_method("log1p"), np.array([-1.0, inf, 1e30], dtype=np.float32), grad=False)
    check(_method("expm1"), np.array([inf, -inf, -100.0, 88.0], dtype=np.float32), grad=False)


def test_in_place_forms_change_the_tensor_and_keep_autograd():
    x = cg.tensor([[-1.5, 0.25], [2.0, 4.0]])
    y = x.clone()
    assert y.abs_() is y and y.numpy().tolist() == [[1.5, 0.25], [2.0, 4.0]]
    y.clamp_min_(1.0).sqrt_().log2_()
    np.testing.assert_allclose(y.numpy(), np.log2(np.sqrt(np.maximum(np.abs(x.numpy()), 1))),
                               rtol=1e-6)
    w = cg.tensor([1.0, 2.0], requires_grad=True)
    z = w * 1
    z.exp_()
    z.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), np.exp([1.0, 2.0]), rtol=1e-6)
    with pytest.raises(RuntimeError, match="sqrt_: result type float32 can't be cast to the "
                                           "desired output type int64"):
        cg.tensor([4]).sqrt_()
    t = cg.ones(2, 3)
    t.tril_().masked_fill_(t == 0, 7.0)
    assert t.numpy().tolist() == [[1, 7, 7], [1, 1, 7]]


def test_facts_and_new_tensors_as_torch():
    x = cg.ones(2, 3, dtype=cg.float64)
    assert x.element_size() == 8 and x.nbytes == 48 and x.itemsize == 8
    assert x.stride() == (3, 1) and x.stride(0) == 3 and x.is_contiguous()
    assert x.is_floating_point() and not cg.tensor([1]).is_floating_point()
    assert x.nelement() == 6 and x.ndimension() == 2
    z = x.new_zeros(4, 2)
    assert z.shape == (4, 2) and z.dtype == cg.float64 and z.device == x.device
    assert x.new_full((2,), 3).numpy().tolist() == [3.0, 3.0]
    assert x.new_tensor([1, 2]).dtype == cg.float64 and x.new_ones((1,)).dtype == cg.float64
    assert cg.tensor([1, 2]).type_as(x).dtype == cg.float64


def test_errors_name_the_op_and_shapes():
    with pytest.raises(RuntimeError, match=r"narrow: start \(2\) \+ length \(3\) exceeds"):
        cg.ones(4).narrow(0, 2, 3)
    with pytest.raises(RuntimeError, match="split_with_sizes expects split_sizes to sum"):
        cg.ones(4).split([1, 2])
    with pytest.raises(RuntimeError, match="dot: 1D tensors expected"):
        cg.ones(2, 2).dot(cg.ones(2))
    with pytest.raises(RuntimeError, match="gather: Index tensor must have the same number"):
        cg.ones(2, 2).gather(0, cg.tensor([0]))
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2"):
        cg.ones(3).tril()
    if torch is not None:
        for fn in (lambda: torch.ones(4).narrow(0, 2, 3), lambda: torch.ones(3).tril(),
                   lambda: torch.ones(2, 2).dot(torch.ones(2))):
            with pytest.raises(RuntimeError):
                fn()


@pytest.mark.parametrize("weight", [0.2, 0.7, 1.0, -0.6, "tensor"])
def test_lerp_as_pytorchs_kernel(weight):
    """From end where |w| >= 0.5 (w = 1 gives end exactly; -inf toward 1 by 0.7 is inf),
    and PyTorch's gradient products, which an infinite incoming gradient keeps ±inf
    (self + w (end - self) gave g - g w: NaN)."""
    x = np.array([1.0, -inf, 0.1, -3.0, inf, 2.0, 0.3], np.float32)
    y = np.array([2.0, 1.0, 0.7, 5.0, 1.0, 2.0, 1e-8], np.float32)
    g = np.array([1.0, 2.0, inf, -inf, 1.0, 0.5, inf], np.float32)
    w = np.array([0.2, 0.7, 1.0, -0.6, 0.5, 0.49, 1.0], np.float32)
    if weight == "tensor":
        check(lambda a, b, ww, gg: a.lerp(b, ww) * gg, x, y, w, g, atol=0, rtol=3e-7)
    else:       # (within an ulp: the kernel may fuse a multiply-add)
        check(lambda a, b, gg: library(a).lerp(a, b, weight) * gg, x, y, g, atol=0, rtol=3e-7)


def test_lerp_refuses_what_pytorch_refuses():
    for lib in (cg, torch) if torch is not None else (cg,):
        x = lib.ones(2)
        with pytest.raises(RuntimeError, match="expected dtype double for `end`"):
            x.double().lerp(x, 0.5)
        with pytest.raises(RuntimeError, match="expected dtype float for `weight` but got dtype long"):
            x.lerp(x, lib.tensor([1, 0]))
        with pytest.raises(NotImplementedError, match='"lerp_kernel_scalar" not implemented'):
            x.int().lerp(x.int(), 0.5)
    assert cg.ones(2).lerp(cg.zeros(2), cg.tensor(0.25, dtype=cg.float64)).tolist() == [0.75, 0.75]
