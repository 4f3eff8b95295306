"""Reductions as a GPU gets them (engine/targets.codegen_target of a GPU device): a work-group
per row that reads along the last axis and is at least 32 long (lower_reduce_group.py), a
work-item per row elsewhere. The kernels run on the CPU devices as they would on a GPU."""
from types import SimpleNamespace

import numpy as np
import pytest

import clgrad as cg
from clgrad.engine.targets import GPU_ROW_GROUP, codegen_target

from helpers import F, check, library, make


# Intel's CPU compiler computes a float min of a group's row wrongly (the max of -x, a
# NaN-propagating select: the NaN or the least element lost in some rows; PoCL computes the
# same source right, and Intel's own does with -x written as a flip of the sign bit)
INTEL_MINIMA = pytest.mark.xfail(cg.device().runtime == "intel", strict=True,
                                 reason="Intel's CPU compiler: a group's float min")


@pytest.fixture(autouse=True)
def gpu_target(codegen_for):
    gpu = SimpleNamespace(kind="gpu", compute_units=2, has_fp64=cg.device().has_fp64)
    codegen_for(codegen_target(gpu))


def _groups(*tensors) -> list:
    """The work-group sizes of the reduction kernels computing tensors, in order: None for a
    work-item per row."""
    kernels = [k for k in cg.compile(*tensors) if k.kind == "reduce"]
    for k in kernels:
        assert ("barrier(" in k.source) == (k.local_size is not None), k.source
        if k.local_size:
            assert k.global_size[0] % k.local_size[0] == 0
    return [k.local_size and k.local_size[0] for k in kernels]


# rows: not a multiple of the group, a whole group, several, one row, a group of 32 with a
# tail of one, and rows too short for a group
ROWS = [(3, 1000), (5, GPU_ROW_GROUP), (2, 4096), (1, 777), (4, 33), (6, 20)]
ROW_IDS = ["ragged", "one_group", "long", "one_row", "warp", "short"]


@pytest.mark.parametrize("shape", ROWS, ids=ROW_IDS)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "var", "std", "logsumexp", "norm"])
def test_row_reductions(op, shape):
    check(lambda a: getattr(a, op)(-1), shape)


@pytest.mark.parametrize("shape", [
    pytest.param(shape, marks=[INTEL_MINIMA] if shape[-1] >= 32 else [], id=name)
    for shape, name in zip(ROWS, ROW_IDS)])     # (a short row keeps a work-item's kernel)
def test_row_minima(shape):
    check(lambda a: a.amin(-1), shape)
    check(lambda a: a.amin(-1, keepdim=True), (3, 4) + shape)


@INTEL_MINIMA
def test_minima_over_several_axes():
    check(lambda a: a.amin((0, 2)), (6, 40, 70))
    check(lambda a: a.min(), (37, 29))


@pytest.mark.parametrize("shape,group", [((3, 1000), 256), ((5, 256), 256), ((2, 4096), 256),
                                         ((4, 200), 128), ((4, 33), 32), ((4, 32), 32),
                                         ((4, 31), None), ((6, 20), None)])
def test_a_row_gets_a_group_where_it_is_long_enough(shape, group):
    x = cg.randn(*shape)
    assert _groups(x.sum(-1)) == [group]
    assert _groups(x.softmax(-1)) == [group]


def test_reductions_over_several_axes_and_kept_dims():
    check(lambda a: a.sum((1, 2), keepdim=True), (4, 30, 50))
    check(lambda a: a.var((1, 2)), (4, 30, 50))
    check(lambda a: a.amax((0, 2), keepdim=True), (6, 40, 70))
    check(lambda a: a.sum(), (37, 29))
    x = cg.randn(6, 40, 70)
    assert _groups(x.sum((1, 2))) == _groups(x.amax((0, 2))) == _groups(x.sum()) == [256]


def test_a_middle_axis_keeps_a_work_item_per_row():
    # neighbouring rows are neighbouring addresses there: the one work-item per row reads them
    check(lambda a: a.sum(1), (4, 300, 5))
    check(lambda a: a.softmax(1), (4, 300, 5))
    assert _groups(cg.randn(4, 300, 5).sum(1)) == [None]
    assert _groups(cg.randn(4, 300, 1).sum(1)) == [256]      # the last axis is of size 1


def test_prod():
    check(lambda a: a.prod(-1), (3, 1000), low=0.9, high=1.1)
    ints = make((3, 1000), np.int64, -3, 4)
    check(lambda a: a.prod(-1), ints)        # wraps, in any order the same
    # a float product's partials could meet as 0 * inf: it keeps a work-item per row
    assert _groups(cg.randn(3, 1000).prod(-1)) == [None]
    assert _groups(cg.tensor(ints).prod(-1)) == [256]


@pytest.mark.parametrize("op", ["max", pytest.param("min", marks=INTEL_MINIMA)])
def test_max_min_with_indices_take_the_first_of_ties(op):
    x = make((4, 1000))
    x[0, [5, 600, 999]] = 9.0 if op == "max" else -9.0     # ties, in different work-items
    x[1, :] = 1.5                                           # all ties
    x[2, [7, 300]] = np.nan                                 # the first NaN wins
    x[3, [0, 999]] = np.inf if op == "max" else -np.inf
    check(lambda a: getattr(a, op)(-1), x)
    check(lambda a: getattr(a, op)(dim=1, keepdim=True), x)
    check(lambda a: getattr(a, "arg" + op)(-1), x, grad=False)
    check(lambda a: getattr(a, "arg" + op)(), x, grad=False)
    assert set(_groups(getattr(cg.tensor(x), "arg" + op)(-1))) == {256}


def test_amax_spreads_the_gradient_over_ties_and_nans():
    x = make((3, 1000))
    x[0, [1, 500, 700]] = 5.0
    x[1, [3, 900]] = np.nan
    x[2, :] = -np.inf
    check(lambda a: a.amax(-1), x)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_rows(dtype):
    x = make((3, 1000), dtype, -1000, 1000)
    x[0, 17] = np.iinfo(dtype).max
    x[1, 400] = np.iinfo(dtype).min
    for fn in (lambda a: a.sum(-1), lambda a: a.amax(-1), lambda a: a.amin(-1),
               lambda a: a.argmax(-1), lambda a: a.argmin(-1), lambda a: a.min(-1)):
        check(fn, x)
    assert _groups(cg.tensor(x).amin(-1)) == [256]


def test_any_and_all():
    x = np.zeros((4, 1000), np.bool_)
    x[1, 999] = x[2, 0] = x[2, 640] = True
    x[3, :] = True
    for fn in (lambda a: a.any(-1), lambda a: a.all(-1), lambda a: (~a).all(-1, keepdim=True)):
        check(fn, x)
    assert _groups(cg.tensor(x).any(-1)) == [256]


@pytest.mark.parametrize("cast", ["half", "bfloat16"])
def test_16_bit_rows_sum_in_float32_and_round_once(cast):
    atol = 2e-2 if cast == "half" else 1e-1
    check(lambda a: getattr(a, cast)().sum(-1).float(), (3, 1000), atol=atol, rtol=1e-2)
    check(lambda a: getattr(a, cast)().amax(-1).float(), (3, 1000))
    check(lambda a: getattr(a, cast)().softmax(-1).float(), (3, 1000), atol=1e-3, rtol=1e-2)
    check(lambda a: getattr(a, cast)().mean(-1).float(), (3, 1000), atol=1e-3, rtol=1e-2)
    # sixteenths of [0, 16): every partial sum is exact, so the rounding at the end is all
    sixteenths = (np.arange(3000).reshape(3, 1000) % 256 / 16).astype(np.float32)
    check(lambda a: getattr(a, cast)().sum(-1).float(), sixteenths, atol=0, rtol=0)


def test_float64_rows():
    for fn in (lambda a: a.sum(-1), lambda a: a.var(-1), lambda a: a.softmax(-1),
               lambda a: a.amax(-1)):
        check(fn, (3, 1000), dtype=np.float64, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("shape", [(8, 1000), (1, 4096), (5, 40)], ids=["rows", "one", "warp"])
def test_row_functions(shape):
    check(lambda a: a.softmax(-1), shape)
    check(lambda a: a.log_softmax(-1), shape)
    n = shape[-1]
    check(lambda a, w, b: F(a).layer_norm(a, (n,), w, b), shape, (n,), (n,))


def test_cross_entropy():
    target = make((16,), np.int64, 0, 1000)
    check(lambda a: F(a).cross_entropy(a, library(a).tensor(target)), (16, 1000))
    check(lambda a: F(a).cross_entropy(a, library(a).tensor(target), label_smoothing=0.1),
          (16, 1000))


def test_nonfinite_rows():
    x = make((5, 1000))
    x[0, 10] = np.inf
    x[1, [10, 20]] = [np.inf, -np.inf]
    x[2, 999] = np.nan
    x[3, ::2] = -np.inf                     # softmax over the rest
    x[4, :] = -np.inf                       # softmax of NaNs
    for fn in (lambda a: a.sum(-1), lambda a: a.softmax(-1), lambda a: a.logsumexp(-1),
               lambda a: a.mean(-1)):
        check(fn, x, grad=False)


def test_empty_rows():
    check(lambda a: a.sum(-1), (3, 0))
    check(lambda a: a.prod(-1), (3, 0))
    check(lambda a: a.sum(-1), (0, 1000))
    check(lambda a: a.softmax(-1), (0, 1000))


def test_fused_work_before_and_after_the_reduction():
    check(lambda a, b: ((a * 2 + b).exp().sum(-1) / 3).sqrt(), (4, 700), (700,))
    check(lambda a: a - a.mean(-1, keepdim=True) * a.amax(-1, keepdim=True), (4, 700))
    x = cg.randn(4, 700)
    assert _groups(x - x.mean(-1, keepdim=True) * x.amax(-1, keepdim=True)) == [256]


def test_padding_breaks_keep_a_work_item_per_row():
    check(lambda a: F(a).pad(a, (30, 2)).sum(-1), (4, 1000))
    assert _groups(cg.nn.functional.pad(cg.randn(4, 1000), (30, 2)).sum(-1)) == [None]


def test_a_sum_of_2_24_is_partial_rows_then_their_total():
    x = np.random.default_rng(0).standard_normal(1 << 24, np.float32)
    total = cg.tensor(x).sum()
    assert _groups(total) == [256, 256]
    np.testing.assert_allclose(total.item(), x.astype(np.float64).sum(), rtol=1e-6)
