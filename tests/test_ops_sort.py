"""sort, argsort, msort, topk, kthvalue, median: values, indices and gradients against PyTorch,
stable order of ties, NaN and inf, integer dtypes, empty and one-element rows, long rows."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler.schedule import schedule

from helpers import check, library, make

SHAPES_DIMS = [((7,), 0), ((4, 7), 1), ((4, 7), 0), ((4, 7), -1), ((2, 3, 5), 1),
               ((2, 3, 5), -3), ((3, 1), 1), ((), 0), ((0, 4), 1), ((4, 0), 1), ((0, 4), 0)]
IDS = [f"{s}d{d}" for s, d in SHAPES_DIMS]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("shape,dim", SHAPES_DIMS, ids=IDS)
def test_sort_shapes_and_dims(shape, dim, descending):
    check(lambda x: x.sort(dim, descending), shape)
    check(lambda x: x.sort(dim=dim, descending=descending, stable=True), shape)
    check(lambda x: x.argsort(dim, descending), shape, grad=False)


def test_stable_ties_give_pytorch_indices():
    ties = make((6, 40), np.int32, low=0, high=4).astype(np.float32)
    for descending in (False, True):
        for dim in (0, 1):
            check(lambda x: x.sort(dim=dim, descending=descending, stable=True), ties)
            check(lambda x: x.argsort(dim=dim, descending=descending, stable=True), ties)


def test_nan_sorts_as_largest_and_infinities():
    nan, inf = np.nan, np.inf
    x = np.array([[3, nan, -inf, 1, nan, inf, 0, -0.0], [nan, nan, nan, 1, 1, -inf, inf, 2]],
                 np.float32)
    for descending in (False, True):
        check(lambda t: t.sort(dim=1, descending=descending, stable=True), x)
        check(lambda t: t.sort(dim=0, descending=descending, stable=True), x)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.float64, np.float16])
def test_sort_dtypes(dtype):
    low, high = (-2 ** 31, 2 ** 31 - 1) if dtype == np.int32 else (-50, 50)
    x = make((3, 33), dtype, low=low, high=high)
    for descending in (False, True):
        check(lambda t: t.sort(dim=1, descending=descending, stable=True), x)


def test_long_rows():
    """Rows longer than any work-group, both ways, with the gradient to each element."""
    x = make((3, 5001), np.float32)
    check(lambda t: t.sort(1), x)
    check(lambda t: t.sort(0, descending=True), x.T.copy())
    check(lambda t: t.topk(10), x)


@pytest.mark.parametrize("largest", [True, False])
@pytest.mark.parametrize("k", [0, 1, 3, 7])
def test_topk(k, largest):
    check(lambda t: t.topk(k, largest=largest), (4, 7))
    check(lambda t: t.topk(min(k, 4), dim=0, largest=largest), (4, 7))


@pytest.mark.parametrize("k", [1, 4, 7])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue(k, keepdim):
    check(lambda t: t.kthvalue(k, 1, keepdim), (4, 7))
    check(lambda t: t.kthvalue(min(k, 4), dim=0, keepdim=keepdim), (4, 7))


@pytest.mark.parametrize("shape,dim", [((4, 7), 1), ((4, 6), 1), ((4, 7), 0), ((5,), 0),
                                       ((), 0), ((2, 3, 4), -1)])
def test_median(shape, dim):
    check(lambda t: t.median(dim), shape)
    check(lambda t: t.median(dim, keepdim=True), shape)
    check(lambda t: t.median(), shape)


def test_median_with_nan_gives_the_first_nan_and_its_gradient():
    nan = np.nan
    x = np.array([[3, nan, 1, nan], [1, 2, 3, 4], [nan, 0, 0, 0]], np.float32)
    check(lambda t: t.median(1), x)
    check(lambda t: t.median(), x)
    check(lambda t: t.median(), np.zeros((0,), np.float32))
    ties = np.array([[1, 2, 2], [3, 2, 0]], np.float32)
    check(lambda t: t.median(), ties)


def test_integer_topk_kthvalue_median():
    x = make((3, 9), np.int64, low=-100, high=100)
    check(lambda t: t.topk(4), x)
    check(lambda t: t.median(1), np.sort(x, axis=1)[:, ::-1].copy())


def test_msort_and_function_forms():
    check(lambda t: t.msort(), (5, 3))
    for name in ("sort", "argsort", "msort", "median"):
        check(lambda t: getattr(library(t), name)(t), (5, 3), grad=name != "argsort")
    check(lambda t: library(t).topk(t, 2, dim=0), (5, 3))
    check(lambda t: library(t).kthvalue(t, 2), (5, 3))


def test_sort_of_expression_and_grad_fn_names():
    check(lambda t: (t * 3).sin().sort(1).values.exp(), (3, 8))
    x = cg.ones(3, 4, requires_grad=True)
    assert x.sort().values.grad_fn.name() == "SortBackward0"
    assert x.topk(2).values.grad_fn.name() == "TopkBackward0"
    assert x.kthvalue(1).values.grad_fn.name() == "KthvalueBackward0"
    assert x.median(0).values.grad_fn.name() == "MedianBackward1"
    assert x.median().grad_fn.name() == "MedianBackward0"


def test_errors():
    x = cg.ones(3, 4)
    with pytest.raises(RuntimeError, match="k out of range"):
        x.topk(5)
    with pytest.raises(RuntimeError, match="kthvalue"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match="out of range"):
        x.sort(2)
    with pytest.raises(IndexError, match="non-zero size"):
        cg.ones(2, 0).median(1)


def test_one_sort_kernel():
    x = cg.tensor(make((4, 100), np.float32))
    specs, _ = schedule([x.sort(1).values.node], x.device)
    assert [s.kind for s in specs] == ["sort"]


def test_mode():
    """The smallest of the most frequent values, at its last position (PyTorch's for rows of up
    to 16, where its sort is stable); NaNs all differ."""
    nan = np.nan
    x = np.array([[3, 1, 3, 1, 2], [5, 5, 4, 4, 4], [1, 2, 3, 4, 5], [nan, 1, 1, nan, nan]],
                 np.float32)
    check(lambda t: t.mode(1), x)
    check(lambda t: t.mode(0), x[:3])
    check(lambda t: t.mode(), x)
    check(lambda t: library(t).mode(t, 1, keepdim=True), make((3, 16), np.int32, low=0, high=4))
    check(lambda t: t.mode(0), np.array(7.0, np.float32))


def test_mode_of_long_rows_points_at_its_value():
    """PyTorch's position of a repeated mode in a longer row is its unstable sort's: any
    position holding the value is right."""
    x = make((3, 200), np.int32, low=0, high=9)
    values, indices = cg.tensor(x).mode(1)
    counts = [np.bincount(row, minlength=9) for row in x]
    np.testing.assert_array_equal(values.numpy(), [np.argmax(c) for c in counts])
    np.testing.assert_array_equal(np.take_along_axis(x, indices.numpy()[:, None], 1)[:, 0],
                                  values.numpy())


def test_nanmedian():
    nan = np.nan
    x = np.array([[nan, 1, 3, 2], [4, 3, 2, 1], [1, nan, nan, 5]], np.float32)
    check(lambda t: t.nanmedian(1), x)
    check(lambda t: t.nanmedian(0, True), x)
    check(lambda t: t.nanmedian(), x)
    check(lambda t: library(t).nanmedian(t, 1), (3, 7))
    check(lambda t: t.nanmedian(1), make((3, 7), np.int32, low=-5, high=5))
    all_nan = np.full((2, 3), nan, np.float32)
    assert np.isnan(cg.tensor(all_nan).nanmedian(1).values.numpy()).all()
    assert np.isnan(cg.tensor(all_nan).nanmedian().item())


def test_rows_sorted_by_a_work_item_each_are_not_widened_across_work_items(codegen_for):
    """Intel's compiler widens work-items into vectors: its neighbours' rows, far apart, then
    read through gathers, each branch run for every lane (a (4096, 1024) float32 sort along
    the rows: 1.04 s widened, 0.33 s not, on a 2-core EPYC Zen 4): the kernel says it is
    vectorised already."""
    from clgrad.compiler.target import Target
    codegen_for(Target(width=8, cores=1, vector_hint=True))
    x = cg.tensor(make((4, 50), np.float32))
    for t in (x.sort().values, x.argsort(), x.topk(3).indices):
        kernels = [k for k in cg.compile(t).kernels if k.name.startswith("Q_")]
        assert kernels and all("vec_type_hint" in k.source for k in kernels)
    check(lambda t: t.sort(1), make((4, 50), np.float32))


def _kernel_names(t):
    return [k.name for k in cg.compile(t).kernels]


@pytest.mark.parametrize("largest", [True, False])
def test_topk_of_a_few_selects_them_without_sorting_the_row(largest):
    from clgrad.frontend.sorting import SELECTED_K_MAX
    x = make((5, 100), np.float32)
    for k in (1, SELECTED_K_MAX, SELECTED_K_MAX + 1):
        check(lambda t: t.topk(k, largest=largest), x)
        check(lambda t: t.topk(min(k, 5), dim=0, largest=largest), x)
    names = _kernel_names(cg.tensor(x).topk(SELECTED_K_MAX, largest=largest).values)
    assert any("argtopk" in n for n in names) and not any("sort" in n for n in names)
    assert any("sort" in n for n in _kernel_names(cg.tensor(x).topk(SELECTED_K_MAX + 1).values))
    # rows in the order that makes every value enter the list, and the order none enters
    ordered = np.sort(x, axis=1)
    for rows in (ordered, ordered[:, ::-1].copy()):
        check(lambda t: t.topk(7, largest=largest), rows)


@pytest.mark.parametrize("largest", [True, False])
def test_topk_ties_keep_the_row_order_and_nan_is_largest(largest):
    nan, inf = np.nan, np.inf
    x = np.array([[3, nan, -inf, 1, nan, inf, 0, -0.0, 1, 3],
                  [1, 1, 1, 1, 0, 0, 2, 2, -inf, -inf]], np.float32)
    values, indices = cg.tensor(x).topk(5, largest=largest)
    ref = np.take_along_axis(x, np.argsort(-x if largest else x, axis=1, kind="stable"), 1)
    nan_first = np.isnan(x).sum(1)
    if largest:         # NumPy sorts NaN last, PyTorch first when largest
        ref = np.stack([np.roll(r, n) for r, n in zip(ref, nan_first)])
    np.testing.assert_array_equal(values.numpy(), ref[:, :5])
    np.testing.assert_array_equal(np.take_along_axis(x, indices.numpy(), 1), values.numpy())
    order = np.argsort(-x if largest else x, axis=1, kind="stable")
    if largest:
        order = np.stack([np.roll(o, n) for o, n in zip(order, nan_first)])
    # ties by position, as sort's (PyTorch's topk picks among ties as its algorithm falls)
    np.testing.assert_array_equal(indices.numpy(), order[:, :5])


def _stable_first(x: np.ndarray, k: int, largest: bool) -> np.ndarray:
    """The positions of each row's k first, by value (NaN the largest), ties by position."""
    nan = np.isnan(x) if x.dtype.kind == "f" else np.zeros(x.shape, bool)
    value = np.where(nan, 0, x).astype(np.float64)
    position = np.arange(x.shape[1])
    first = [np.lexsort((position, -v, ~n) if largest else (position, v, n))[:k]
             for v, n in zip(value, nan)]       # (lexsort: by the last key first)
    return np.stack(first)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int64", "uint8"])
def test_topk_passes_vectors_of_values_that_cannot_enter(dtype):
    """A long row passes a vector at a time where none of its values comes before the last of
    the k held: values that tie with it across a vector's edge, NaN, inf and -0.0 still enter
    in ARGSORT's order (ties by position)."""
    x = make((9, 203), np.float32, low=-6, high=6).round()     # ties everywhere
    if dtype[0] in "fb":
        x[1, ::17], x[2, 150], x[3, 40:44] = np.nan, np.inf, -np.inf
        x[4] = -0.0
        x[5, 100:] = 7.0                                        # the largest, late
    x = np.abs(x) if dtype == "uint8" else x
    t = cg.tensor(x).to(getattr(cg, dtype))
    rows = t.float().numpy() if dtype in ("float16", "bfloat16") else t.numpy()
    for k in (1, 4, 20):
        for largest in (True, False):
            values, indices = t.topk(k, largest=largest)
            np.testing.assert_array_equal(indices.numpy(), _stable_first(rows, k, largest),
                                          err_msg=f"k={k} largest={largest}")
            np.testing.assert_array_equal(values.float().numpy(),
                                          np.take_along_axis(rows, indices.numpy(), 1))


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_, np.float64, np.float16])
def test_topk_dtypes(dtype):
    low, high = (-2 ** 31, 2 ** 31 - 1) if dtype == np.int32 else (-1000, 1000)
    x = make((4, 50), dtype, low=low, high=high)
    if dtype == np.int32:
        x[:, :2] = [-2 ** 31, 2 ** 31 - 1]
    values = cg.tensor(x).topk(3).values.numpy()
    np.testing.assert_array_equal(values, -np.sort(-x.astype(np.float64), axis=1)[:, :3])
    if dtype != np.bool_:       # (ties among bools: PyTorch's indices are its own)
        check(lambda t: t.topk(3), x, grad=dtype in (np.float64, np.float16))
