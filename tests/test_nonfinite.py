"""NaN and inf as PyTorch treats them (issue 13, item 4): comparisons with NaN are false.
Values and gradients are checked against PyTorch with helpers.check, in vector (long rows) and
scalar code."""
import math

import numpy as np
import pytest

from helpers import check, library, make


def F(t):
    """clgrad.nn.functional or torch.nn.functional, whichever t belongs to."""
    return library(t).nn.functional

nan, inf = math.nan, math.inf


def with_nonfinite(shape, seed=0, nans=True, infs=False) -> np.ndarray:
    """Random floats with NaNs (and infinities) sprinkled in, several per row."""
    x = make(shape, seed=seed)
    rng = np.random.default_rng(seed)
    flat = x.reshape(-1)
    picks = rng.permutation(flat.size)
    k = max(1, flat.size // 8)
    if nans:
        flat[picks[:k]] = nan
    if infs:
        flat[picks[k:2 * k]] = inf
        flat[picks[2 * k:3 * k]] = -inf
    return x


# long rows run the vector loops, (3, 5) the scalar ones
SHAPES = [(3, 5), (4, 37)]


# ---- comparisons ----

COMPARISONS = {
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}


@pytest.mark.parametrize("name", COMPARISONS)
@pytest.mark.parametrize("shape", SHAPES)
def test_comparison_with_nan_is_false(name, shape):
    a = with_nonfinite(shape, seed=1, infs=True)
    b = with_nonfinite(shape, seed=2, infs=True)
    b[0, :3] = a[0, :3]            # some ties, and NaN against NaN
    check(COMPARISONS[name], a, b, grad=False)
    check(lambda x: COMPARISONS[name](x, nan), a, grad=False)
    check(lambda x: COMPARISONS[name](x, 0.5), a, grad=False)
    check(lambda x: COMPARISONS[name](1.0, x), a, grad=False)


def test_where_on_ge_takes_the_else_branch_for_nan():
    a = np.array([1.0, nan, 3.0, 2.0], np.float32)
    check(lambda x: library(x).where(x >= 2, x, x * 0 - 1), a)
    check(lambda x: library(x).where(x <= 2, x * 3, x * 0 + 7), a)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.bool_])
def test_comparisons_of_ints_and_bools(dtype):
    a, b = make((4, 37), dtype, -3, 3, seed=1), make((4, 37), dtype, -3, 3, seed=2)
    for fn in COMPARISONS.values():
        check(fn, a, b, grad=False)
