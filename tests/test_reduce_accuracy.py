"""Long float sums are summed pairwise (compiler/lower_reduce.py, _pairwise_sum): their error
grows like log(n), as NumPy's and PyTorch's do, not like n."""
import math
import re

import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler.target import Target
from clgrad.engine.targets import sum_streams

SHORT_ROW = 512     # 64 vectors of 8 lanes at most: still one running sum per lane


def _exact(values: np.ndarray, axis=None) -> np.ndarray:
    return values.astype(np.float64).sum(axis=axis)


def test_sum_of_many_tenths_is_within_1e_5():
    # 2**24 + 8 elements: no split in two passes (its length has no power-of-two chunk), so
    # one work-item sums them all; a running sum per lane lost 1% of it
    values = np.full(2 ** 24 + 8, 0.1, np.float32)
    total = cg.from_numpy(values).sum().item()
    assert abs(total - _exact(values)) <= 1e-5 * _exact(values)


def test_broadcast_ones_past_two_to_the_31():
    # reads no memory; a float32 running sum stops growing at 2**24 per lane
    assert cg.ones(1).expand(2 ** 31 + 8).sum().item() == np.float32(2 ** 31 + 8)


def test_column_sums_of_a_long_scalar_row():
    # a sum over the first axis runs one value per step, no vectors: also pairwise
    values = np.full((2 ** 20 + 8, 2), 0.1, np.float32)
    sums = cg.from_numpy(values).sum(0).numpy()
    np.testing.assert_allclose(sums, _exact(values, 0), rtol=1e-6)


def _vectors_of_8(codegen_for, streams: int) -> None:
    """Kernels in vectors of 8 floats, a long sum's row read as `streams` stretches."""
    codegen_for(Target(width=8, cores=cg.device().compute_units, sum_streams=streams))


# blocks of 16 vectors of 8 lanes: 128 floats
@pytest.mark.parametrize("streams", [1, 2])
@pytest.mark.parametrize("length", [16 * 16 * 5 + 16 * 3 + 7, 16 * 16 * 64, 5 * 16 * 16 + 1,
                                    (2 * 17 + 1) * 128 + 8 * 3 + 5])
def test_rows_of_whole_blocks_partial_blocks_and_tails(length, streams, codegen_for):
    # whole blocks of 16 vectors, left-over vectors and a left-over part of a vector; the
    # last length, in two streams, reads two stretches of 17 blocks side by side, then a
    # block left over
    _vectors_of_8(codegen_for, streams)
    rng = np.random.default_rng(length)
    values = rng.standard_normal((3, length)).astype(np.float32) + 1
    x = cg.from_numpy(values)
    np.testing.assert_allclose(x.sum(1).numpy(), _exact(values, 1), rtol=1e-6)
    np.testing.assert_allclose(x.mean(1).numpy(), _exact(values, 1) / length, rtol=1e-6)
    assert x.max(1).values.numpy().tolist() == values.max(1).tolist()


def test_softmax_of_a_long_row_keeps_its_exponentials():
    # the sum's loop also stores exp(x - max) for the normalising loop (the kept source)
    rng = np.random.default_rng(1)
    values = rng.standard_normal((2, 5000)).astype(np.float32)
    e = np.exp(values - values.max(1, keepdims=True))
    np.testing.assert_allclose(cg.from_numpy(values).softmax(-1).numpy(),
                               e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-9)


def test_integer_sums_stay_exact():
    values = np.arange(3 * 5000, dtype=np.int32).reshape(3, 5000)
    assert cg.from_numpy(values).sum(1).numpy().tolist() == values.sum(1).tolist()


@pytest.mark.usefixtures("cpu_codegen")
def test_only_long_float_sums_go_pairwise():
    # code shape: a long sum has the pairwise counter; a short row, a max and an integer sum
    # keep one running reduction
    def sources(t):
        return "".join(k.source for k in cg.compile(t).kernels)
    long_row = cg.randn(4, 16 * SHORT_ROW)
    assert "part" in sources(long_row.sum(1))
    assert "part" not in sources(cg.randn(4, SHORT_ROW).sum(1))
    assert "part" not in sources(long_row.amax(1))
    assert "part" not in sources(cg.from_numpy(np.ones((4, 16 * SHORT_ROW), np.int32)).sum(1))


@pytest.mark.parametrize("streams", [1, 2])
def test_rows_of_two_long_stretches_read_them_side_by_side(streams, codegen_for):
    # in two streams, a row of 4,096 floats (two halves of 8 KiB, whatever the vectors'
    # width) keeps two counters, one of 3,968 floats one; in one stream, one counter each
    _vectors_of_8(codegen_for, streams)

    def counters(length):
        source = "".join(k.source for k in cg.compile(cg.randn(4, length).sum(1)).kernels)
        return int(re.search(r"part\d+\[(\d+)\]", source)[1])
    assert counters(32 * 128) == streams
    assert counters(31 * 128) == 1


class _Cpu:
    def __init__(self, native_float_width):
        self.native_float_width = native_float_width


def test_two_streams_on_cpus_of_256_bit_vectors_only():
    # measured faster on an AVX2 Zen 3, slower on an AVX-512 Zen 4 (engine/targets.py)
    assert sum_streams(_Cpu(8)) == 2
    assert sum_streams(_Cpu(16)) == 1


def test_pairwise_error_grows_slowly():
    # sums of 2**k equal values, k up to 22: the relative error stays near float32's epsilon
    for k in (12, 16, 22):
        values = np.full(2 ** k + 16 * 3 + 5, 1 / 3, np.float32)
        total = cg.from_numpy(values).sum().item()
        assert math.isclose(total, _exact(values), rel_tol=4e-7)



@pytest.mark.parametrize("norm", ["layer_norm", "group_norm", "batch_norm", "instance_norm"])
@pytest.mark.parametrize("value", [1234.567, 0.1, -77.77, 1e6 + 0.5])
def test_normalising_equal_values_gives_zero(norm, value):
    # the mean is summed from each row's first element: a row of 1e6 + 0.5 normalised to 0.999
    # (its sum's rounding error over a variance of that error's size); PyTorch's layer_norm and
    # group_norm give 0 (Welford), its float64 norms 1e-9 at most
    torch = pytest.importorskip("torch")
    values = np.full((4, 6, 10), value, np.float32)
    values[1] = np.linspace(-3, 5, 60, dtype=np.float32).reshape(6, 10)   # one ordinary sample
    if norm == "batch_norm":
        values = values.transpose(1, 0, 2).copy()       # its rows are channels, across samples
    call = {"layer_norm": lambda F, t: F.layer_norm(t, (6, 10)),
            "group_norm": lambda F, t: F.group_norm(t, 3),
            "batch_norm": lambda F, t: F.batch_norm(t, None, None, training=True),
            "instance_norm": lambda F, t: F.instance_norm(t)}[norm]
    weights = np.random.default_rng(0).standard_normal(values.shape)
    results = []
    for lib, dtype in ((cg, np.float32), (torch, np.float64)):
        x = lib.tensor(values.astype(dtype), requires_grad=True)
        y = call(lib.nn.functional, x)
        (y * lib.tensor(weights.astype(dtype))).sum().backward()
        results.append((y.detach().numpy(), x.grad.numpy()))
    (y, grad), (expected_y, expected_grad) = results
    np.testing.assert_allclose(y, expected_y, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-3, atol=1e-3)
