"""as_strided and its kin (frontend/strided_views.py), asarray and frombuffer
(array_interop.py), fill and constant_pad_nd (functional_forms.py), the layout queries and
strided/permuted creation (layouts.py), histogram and histogramdd (histograms.py), gradient
(numeric_gradient.py), binomial (random_fills.py) and apply_/map_/map2_ (host_callables.py)
against PyTorch."""
import numpy as np
import pytest

from helpers import check, library, make, torch

import clgrad as cg

F32 = np.float32


# ---- as_strided ----

STRIDED = [  # input shape, size, stride, storage_offset
    ((6,), (2, 2), (1, 2), None),
    ((3, 4), (2, 3), (4, 1), 1),
    ((6,), (2, 2), (1, 1), 0),          # overlapping: the gradient adds up
    ((5,), (3, 2), (0, 1), 2),          # a zero stride repeats
    ((6,), (0, 3), (1, 1), None),       # empty
    ((6,), (), (), 3),                  # one element, 0-d
    ((4,), (1, 1), (5, 1), 3),          # size-1 dims, whatever their strides
]


@pytest.mark.parametrize("shape,size,stride,offset", STRIDED)
def test_as_strided(shape, size, stride, offset):
    check(lambda x: x.as_strided(size, stride, offset), shape)
    check(lambda x: library(x).as_strided_copy(x, size, stride, offset), shape)


def test_as_strided_function_and_in_place():
    check(lambda x: library(x).as_strided(x, (3, 2), (2, 1), storage_offset=1), (2, 4))
    check(lambda x: x.clone().as_strided_((2, 2), (1, 2)) * 2, (6,))


@pytest.mark.parametrize("size,stride,offset", [((2, 2), (1, 2), 1), ((2, 2), (1, 1), None),
                                                 ((0,), (1,), None)])
def test_as_strided_scatter(size, stride, offset):
    # PyTorch 2.13's gradient of as_strided_scatter's input is the one its strided elements
    # get, where it should be the one of the others (those the result keeps): its values are
    # compared here, the gradients against the same write through a view of a copy
    def scattered(x, src, method=False):
        if isinstance(x, cg.Tensor):
            return x.as_strided_scatter(src, size, stride, offset) if method else \
                cg.as_strided_scatter(x, src, size, stride, offset)
        y = x.clone()
        y.as_strided(size, stride, offset).copy_(src)
        return y

    src = make(size)
    if stride == (1, 1):    # [0, 1] and [1, 0] write one element: one of them wins (which
        src[1, 0] = src[0, 1]   # is the kernel's choice, as on PyTorch's GPUs): equal here
    check(scattered, (6,), src)
    check(lambda x, src: scattered(x, src, True), (2, 3), src)
    check(lambda x, src: library(x).as_strided_scatter(x, src, size, stride, offset), (6,),
          src, grad=False)


def test_as_strided_is_a_view():
    def written(x):             # a write through the view reaches the base
        y = x.clone()
        y.as_strided((2, 2), (1, 3)).mul_(10)
        return y

    def reread(x):              # the view reads its base again after it changed
        y = x.clone()
        v = y.as_strided((2, 2), (2, 1), 1)
        y.add_(1)
        return v * 1

    check(written, (2, 3))
    check(reread, (6,))


def test_as_strided_reads_a_views_own_row_major_order():
    x = np.arange(12, dtype=F32).reshape(3, 4)
    ours = cg.tensor(x).t().as_strided((2, 2), (1, 2)).numpy()
    np.testing.assert_array_equal(ours, x.T.reshape(-1)[[[0, 2], [1, 3]]])


@pytest.mark.parametrize("size,stride,offset,message", [
    ((3, 3), (1, 2), 0, "out of bounds for storage of size 24"),
    ((2,), (-1,), 0, "Negative strides"),
    ((2, 2), (1,), 0, "mismatch in length"),
    ((2,), (1,), -1, "invalid storage offset"),
    ((2, -1), (1, 1), 0, "overflowed"),
])
def test_as_strided_errors(size, stride, offset, message):
    with pytest.raises(RuntimeError, match=message):
        cg.arange(6.0).as_strided(size, stride, offset)
    with pytest.raises(RuntimeError, match="src size = \\[2, 3\\], slice size = \\[2, 2\\]"):
        cg.as_strided_scatter(cg.zeros(6), cg.ones(2, 3), (2, 2), (1, 2))


# ---- asarray, frombuffer ----

@pytest.mark.usefixtures("cpu_device")
def test_asarray_shares_numpy_memory_and_copies_when_asked():
    a = np.arange(4.0)
    shared, copied = cg.asarray(a), cg.asarray(a, copy=True)
    a[0] = 9.0
    assert shared.dtype == cg.float64 and shared.numpy()[0] == 9.0
    assert copied.numpy()[0] == 0.0
    assert cg.asarray(a, dtype=cg.float32).dtype == cg.float32
    with pytest.raises(ValueError, match="can't alias"):
        cg.asarray(a, dtype=cg.float32, copy=False)
    with pytest.raises(ValueError, match="arbitrary sequence"):
        cg.asarray([1, 2], copy=False)


@pytest.mark.parametrize("obj", [[1, 2.5], 3, [True, False], [[1, 2], [3, 4]]])
def test_asarray_of_python_data(obj):
    ours, ref = cg.asarray(obj), torch.asarray(obj)
    assert ours.dtype.name == str(ref.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())


def test_asarray_of_a_tensor():
    x = cg.ones(2, requires_grad=True)
    assert cg.asarray(x) is x and cg.asarray(x).requires_grad
    # (requires_grad given: PyTorch warns that its default changed)
    check(lambda x: library(x).asarray(x, copy=True, requires_grad=True) * 2, (3,))
    check(lambda x: library(x).asarray(x, dtype=library(x).float64, requires_grad=True) * 2,
          (3,))
    with pytest.raises(ValueError, match="can't alias"):
        cg.asarray(x, dtype=cg.float64, copy=False)
    assert not cg.asarray(x * 2, requires_grad=False).requires_grad
    assert cg.asarray([1.0, 2.0], requires_grad=True).requires_grad


@pytest.mark.parametrize("dtype,count,offset", [("float32", -1, 0), ("float32", 2, 4),
                                                 ("int16", 3, 2), ("uint8", -1, 5),
                                                 ("bool", 2, 0), ("bool", -1, 4)])
def test_frombuffer(dtype, count, offset):
    data = bytearray(np.arange(4, dtype=F32).tobytes())     # (bytes 0x80, 0x3f, 0x40 as bools)
    ours = cg.frombuffer(data, dtype=getattr(cg, dtype), count=count, offset=offset)
    ref = torch.frombuffer(bytearray(data), dtype=getattr(torch, dtype), count=count,
                           offset=offset)
    assert ours.dtype.name == dtype
    np.testing.assert_array_equal(ours.double().numpy(), ref.double().numpy())


@pytest.mark.usefixtures("cpu_device")
def test_frombuffer_shares_a_writable_buffer():
    data = bytearray(np.arange(4, dtype=F32).tobytes())
    t = cg.frombuffer(data, dtype=cg.float32, requires_grad=True)
    data[0:4] = np.float32(5).tobytes()
    assert t.requires_grad and t.detach().numpy()[0] == 5.0


@pytest.mark.parametrize("buffer,kwargs,message", [
    (bytearray(16), dict(count=5), "must not be greater than actual buffer length"),
    (bytearray(16), dict(offset=16), "must be non-negative and no greater"),
    (bytearray(16), dict(count=0), "must not be 0"),
    (bytearray(16), dict(offset=2), "must be a multiple of element size"),
    (b"", {}, "must not be 0"),
    ([1, 2], {}, "buffer protocol"),
])
def test_frombuffer_errors(buffer, kwargs, message):
    with pytest.raises(ValueError, match=message):
        cg.frombuffer(buffer, dtype=cg.float32, **kwargs)


# ---- strided and permuted creation, layout ----

def test_empty_strided_and_permuted():
    t = cg.empty_strided((2, 3), (1, 2), dtype=cg.int32, requires_grad=False)
    assert t.shape == (2, 3) and t.dtype == cg.int32
    assert cg.ones(2, dtype=cg.float64).new_empty_strided((4,), (1,)).dtype == cg.float64
    p = cg.empty_permuted((2, 3, 4), (0, 2, 1), requires_grad=True)
    assert p.shape == (2, 3, 4) and p.requires_grad and p.dtype == cg.float32
    with pytest.raises(RuntimeError, match="dimensionality of sizes"):
        cg.empty_strided((2, 3), (1,))
    with pytest.raises(RuntimeError, match="does not match the length of the physical_layout"):
        cg.empty_permuted((2, 3, 4), (0, 2))
    with pytest.raises(RuntimeError, match="Duplicate dim"):
        cg.empty_permuted((2, 3, 4), (0, 2, 2))
    with pytest.raises(RuntimeError, match="Dimension out of range"):
        cg.empty_permuted((2, 3), (0, 5))


@pytest.mark.parametrize("shape", [(2, 3), (2, 1, 3), (1,), (0,), (2, 0, 3), ()])
def test_dim_order(shape):
    ref = torch.ones(shape)
    assert cg.ones(shape).dim_order() == ref.dim_order()
    try:
        expected = ref.dim_order(ambiguity_check=True)
    except RuntimeError:
        with pytest.raises(RuntimeError, match="does not have unique dim order"):
            cg.ones(shape).dim_order(ambiguity_check=True)
    else:
        assert cg.ones(shape).dim_order(ambiguity_check=True) == expected
    with pytest.raises(TypeError, match="must be a bool"):
        cg.ones(shape).dim_order(ambiguity_check="yes")


def test_layout_and_output_nr():
    assert cg.ones(2).layout is cg.strided and repr(cg.strided) == "clgrad.strided"
    class Halves(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 0.5, x * 0.5

        @staticmethod
        def backward(ctx, a, b):
            return (a + b) * 0.5

    first, second = Halves.apply(cg.ones(2, requires_grad=True))
    assert (first.output_nr, second.output_nr) == (0, 1)
    assert cg.ones(2).output_nr == 0


# ---- fill, constant_pad_nd ----

def test_fill():
    check(lambda x: library(x).fill(x, 2.5), (2, 3))
    check(lambda x, v: library(x).fill(x, v), (2, 3), np.array(1.5, F32))
    check(lambda x: library(x).fill(x, 2.7), np.array([1, 2], np.int64))
    check(lambda x: library(x).fill(x, 1.0), (0, 2))
    with pytest.raises(RuntimeError, match="0-dimension value tensor"):
        cg.fill(cg.ones(2), cg.ones(2))


@pytest.mark.parametrize("shape,pad,value", [((2, 3), (1, 0, 0, 2), 2.5), ((2, 3), (-1, 1), 0),
                                             ((3,), (2, 2), -1.0), ((2, 2), (-2, 0), 0),
                                             ((1, 0), (1, 1, 0, 1), 3.0)])
def test_constant_pad_nd(shape, pad, value):
    check(lambda x: library(x).constant_pad_nd(x, pad, value), shape)


def test_constant_pad_nd_errors():
    for pad, message in [((1,), "must be even"), ((1,) * 6, "no more than twice"),
                         ((-3, 0), "negative output size")]:
        with pytest.raises(RuntimeError, match=message):
            cg.constant_pad_nd(cg.ones(2, 2), pad)


# ---- histogram, histogramdd ----

VALUES = np.array([1.0, 2.0, 1.0, 4.0, 2.5, 3.0], F32)
WEIGHTS = np.array([1.0, 2.0, 0.5, 4.0, 1.0, 3.0], F32)
HISTOGRAMS = [  # values, bins (a number or a list of edges), keyword arguments
    (VALUES, 3, {}),
    (VALUES, 4, dict(range=(0.0, 5.0), density=True)),
    (VALUES, [0.0, 1.5, 2.5, 4.0], {}),
    (VALUES.reshape(2, 3), 2, dict(weight=WEIGHTS.reshape(2, 3), density=True)),
    (np.zeros(0, F32), 2, {}),                          # no data: range (0, 1)
    (np.array([3.0, 3.0], F32), 2, {}),                 # one value: range +- 0.5
    (np.array([1.0, np.nan, 2.0], F32), 2, dict(range=(0.0, 2.0))),
    (VALUES.astype(np.float64), 2, {}),
]


@pytest.mark.parametrize("values,bins,kwargs", HISTOGRAMS)
def test_histogram(values, bins, kwargs):
    def histogram(x):
        lib = library(x)
        edges = bins if isinstance(bins, int) else lib.tensor(bins, dtype=x.dtype)
        weight = {k: lib.tensor(v) for k, v in kwargs.items() if k == "weight"}
        other = {k: v for k, v in kwargs.items() if k != "weight"}
        return tuple(lib.histogram(x, edges, **weight, **other))
    check(histogram, values, grad=False)
    check(lambda x: tuple(x.histogram(3)), VALUES, grad=False)


POINTS = np.array([[1.0, 2.0], [2.0, 3.0], [0.0, 0.0], [1.5, 2.5]], F32)


@pytest.mark.parametrize("bins,kwargs", [(2, {}), ([2, 3], dict(range=[0.0, 4.0, 0.0, 3.0],
                                                                  density=True)),
                                         ("edges", dict(weight=np.arange(4, dtype=F32)))])
def test_histogramdd(bins, kwargs):
    def histogramdd(x):
        lib = library(x)
        spec = bins if bins != "edges" else [lib.tensor([0.0, 1.0, 4.0]),
                                             lib.tensor([0.0, 2.0, 3.0])]
        extra = {k: lib.tensor(v) if k == "weight" else v for k, v in kwargs.items()}
        hist, edges = lib.histogramdd(x, spec, **extra)
        return (hist,) + tuple(edges)
    check(histogramdd, POINTS, grad=False)


@pytest.mark.parametrize("call,error,message", [
    (lambda: cg.histogram(cg.arange(4), 2), NotImplementedError, "not implemented for"),
    (lambda: cg.histogram(cg.ones(3), 0), RuntimeError, "bins must be > 0"),
    (lambda: cg.histogram(cg.ones(3), 2, range=(3.0, 1.0)), RuntimeError, "min should not"),
    (lambda: cg.histogram(cg.tensor([1.0, float("nan")]), 2), RuntimeError, "not finite"),
    (lambda: cg.histogram(cg.ones(3), 2, weight=cg.ones(2)), RuntimeError, "same shape"),
    (lambda: cg.histogramdd(cg.ones(3), 2), RuntimeError, "at least 2 dimensions"),
    (lambda: cg.histogramdd(cg.ones(3, 2), [2, 2, 2]), RuntimeError, "size of bins"),
    (lambda: cg.histogramdd(cg.ones(3, 2), 2, range=[0.0, 1.0]), RuntimeError, "4 elements"),
])
def test_histogram_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ---- gradient ----

@pytest.mark.parametrize("kwargs", [{}, dict(spacing=2.0, dim=1), dict(spacing=[0.5, 2.0]),
                                    dict(dim=0, edge_order=2), dict(spacing=[3.0], dim=(-1,),
                                                                    edge_order=2)])
def test_gradient_evenly_spaced(kwargs):
    check(lambda f: library(f).gradient(f, **kwargs), (3, 4))
    check(lambda f: library(f).gradient(f, **kwargs), np.array([[1, 2, 4, 8], [3, 7, 9, 1],
                                                                [0, 0, 5, 2]]))


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_at_coordinates(edge_order):
    x = np.array([0.0, 1.0, 2.5, 3.0], F32)
    check(lambda f, x: library(f).gradient(f, spacing=[x], dim=1, edge_order=edge_order),
          (2, 4), x)
    check(lambda f, x: library(f).gradient(f, spacing=(x[:3], x), edge_order=edge_order),
          (3, 4), x)


def test_gradient_errors():
    for kwargs, message in [(dict(edge_order=3), "only supports edge_order"),
                            (dict(spacing=[1.0, 2.0, 3.0]), "list of length equal to"),
                            (dict(spacing=[1.0], dim=[0, 1]), "same length"),
                            (dict(edge_order=2), "at least edge_order\\+1"),
                            (dict(dim=(0, 0)), "appears multiple times")]:
        with pytest.raises(RuntimeError, match=message):
            cg.gradient(cg.ones(2, 3), **kwargs)


# ---- binomial ----

def test_binomial_statistics():
    cg.manual_seed(0)
    count = cg.tensor([[10.0], [40.0]]).expand(2, 2000)
    prob = cg.tensor([0.3, 0.9]).repeat(1000)
    draws = cg.binomial(count, prob, generator=None)
    assert draws.shape == (2, 2000) and draws.dtype == cg.float32
    values = draws.numpy()
    assert (values >= 0).all() and (values <= count.numpy()).all()
    assert np.all(values == np.round(values))
    means = values.reshape(2, 1000, 2).mean(1)
    np.testing.assert_allclose(means, [[3.0, 9.0], [12.0, 36.0]], rtol=0.05)
    assert cg.binomial(cg.zeros(0), cg.zeros(0)).shape == (0,)
    assert np.isnan(cg.binomial(cg.tensor([-1.0]), cg.tensor([0.5])).numpy()).all()
    with pytest.raises(ValueError, match="floating-point dtypes for count"):
        cg.binomial(cg.tensor([10]), cg.tensor([0.5]))


# ---- apply_, map_, map2_ ----

@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
def test_apply_map_map2(dtype):
    def run(lib):
        t = lib.tensor([[1, 0, 3], [4, 5, 0]], dtype=getattr(lib, dtype))
        other = lib.tensor([2, 0, 1], dtype=getattr(lib, dtype))
        t.apply_(lambda v: v * 2.6 if dtype != "bool" else not v)
        t.map_(other, lambda a, b: a + b if dtype != "bool" else a and b)
        t.map2_(other, t.clone(), lambda a, b, c: a * b - c if dtype != "bool" else a or c)
        return t
    ours, ref = run(cg), run(torch)
    np.testing.assert_array_equal(ours.numpy(), ref.numpy())
    assert ours.dtype.name == dtype


def test_apply_writes_through_views_and_refuses_grad():
    base = cg.zeros(2, 3)
    base[1].apply_(lambda v: v + 7)
    np.testing.assert_array_equal(base.numpy(), [[0, 0, 0], [7, 7, 7]])
    x = cg.ones(2, requires_grad=True)
    for call in (lambda: x.apply_(abs), lambda: (x * 1).map_(x, max)):
        with pytest.raises(RuntimeError, match="requires grad"):
            call()
    with pytest.raises(TypeError, match="expected a float32 tensor for 'other'"):
        cg.ones(2).map_(cg.ones(2, dtype=cg.int64), max)
    with pytest.raises(TypeError, match="must be real number, not str"):
        cg.ones(2).apply_(lambda v: "a")
    with pytest.raises(RuntimeError):
        cg.ones(2).map_(cg.ones(3), max)
