"""Random fills and samplers as Tensor methods (x.uniform_(), x.normal_(), x.bernoulli(),
x.multinomial(n), ...) and torch.* functions (bernoulli, poisson, binomial). Samples are
drawn on the host from the global stream or the given generator, as cg.randn's are, and
uploaded: PyTorch's values differ (another generator), its distributions do not. A fill is
recorded on the old value, so autograd sees an overwrite, as with fill_."""
from __future__ import annotations

import numpy as np

from ..compiler import dtype as dt
from . import creation
from .backward import record
from .generator import numpy_rng
from .inplace import assign_result, snapshot
from .operands import broadcast_shape


def _stream(generator) -> np.random.Generator:
    return numpy_rng(generator, creation.generator())


def _fill(self, values: np.ndarray, op: str):
    sample = creation.tensor(np.asarray(values).reshape(self.shape), dtype=self.dtype,
                             device=self.device)
    return assign_result(self, record(op, sample.node, self.device, [snapshot(self)]), op)


def _float_only(self, op: str) -> None:
    if not self.dtype.is_float:
        raise RuntimeError(f"{op}: expected a floating point tensor, got {self.dtype.name}")


def uniform_(self, from_: float = 0.0, to: float = 1.0, *, generator=None):
    _float_only(self, "uniform_")
    return _fill(self, _stream(generator).uniform(from_, to, self.shape), "uniform_")


def normal_(self, mean: float = 0.0, std: float = 1.0, *, generator=None):
    _float_only(self, "normal_")
    if std < 0:
        raise RuntimeError(f"normal_ expects std >= 0.0, but found std {std}")
    return _fill(self, _stream(generator).normal(mean, std, self.shape), "normal_")


def log_normal_(self, mean: float = 1.0, std: float = 2.0, *, generator=None):
    _float_only(self, "log_normal_")
    return _fill(self, _stream(generator).lognormal(mean, std, self.shape), "log_normal_")


def exponential_(self, lambd: float = 1.0, *, generator=None):
    _float_only(self, "exponential_")
    if lambd <= 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd}")
    return _fill(self, _stream(generator).exponential(1 / lambd, self.shape), "exponential_")


def cauchy_(self, median: float = 0.0, sigma: float = 1.0, *, generator=None):
    _float_only(self, "cauchy_")
    values = median + sigma * _stream(generator).standard_cauchy(self.shape)
    return _fill(self, values, "cauchy_")


def geometric_(self, p: float, *, generator=None):
    if not 0 < p < 1:
        raise RuntimeError(f"geometric_ expects p to be in (0, 1), but got p={p}")
    return _fill(self, _stream(generator).geometric(p, self.shape), "geometric_")


def _random_limit(dtype: dt.DType) -> int:
    """random_()'s bound: every integer the dtype holds exactly (PyTorch's)."""
    if dtype.is_float:
        return 2 ** (np.finfo(dtype.np).nmant + 1)
    if dtype == dt.bool_:
        return 2
    return int(np.iinfo(dtype.np).max) + 1


def random_(self, from_: int = 0, to: int | None = None, *, generator=None):
    """Integers drawn uniformly from [from, to - 1] (one argument: [0, from - 1])."""
    if to is None and from_ != 0:
        from_, to = 0, from_
    to = _random_limit(self.dtype) if to is None else to
    if from_ >= to:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={from_} "
                           f">= to={to}")
    return _fill(self, _stream(generator).integers(from_, to, self.shape), "random_")


def _probabilities(p, like) -> np.ndarray:
    given = p.detach().numpy() if hasattr(p, "numpy") else np.asarray(p, np.float64)
    values = np.broadcast_to(given, like.shape)
    if values.size and not ((values >= 0) & (values <= 1)).all():
        raise RuntimeError("bernoulli: Expected p_in >= 0 && p_in <= 1 to be true, but got "
                           f"probabilities from {values.min()} to {values.max()}")
    return values


def bernoulli_(self, p=0.5, *, generator=None):
    draws = _stream(generator).random(self.shape) < _probabilities(p, self)
    return _fill(self, draws, "bernoulli_")


def bernoulli(input, p=None, *, generator=None):
    """Ones with probability p (input's own values when p is None), else zeros."""
    _float_only(input, "bernoulli")
    probabilities = _probabilities(input if p is None else p, input)
    draws = _stream(generator).random(input.shape) < probabilities
    return creation.tensor(draws, dtype=input.dtype, device=input.device)


def poisson(input, generator=None):
    """Samples of Poisson(rate) for each rate in input."""
    _float_only(input, "poisson")
    rates = input.detach().numpy()
    if rates.size and (rates < 0).any():
        raise RuntimeError("poisson: invalid Poisson rate, expected rate to be non-negative")
    values = _stream(generator).poisson(rates)
    return creation.tensor(values, dtype=input.dtype, device=input.device)


def multinomial(input, num_samples: int, replacement: bool = False, *, generator=None):
    """For each row of weights (1-D or 2-D input), num_samples category indices drawn with
    probability proportional to the weights, with or without replacement."""
    if input.ndim not in (1, 2):
        raise RuntimeError(f"multinomial: prob_dist must be 1 or 2 dim, got {input.ndim}")
    if not input.dtype.is_float:
        raise RuntimeError(f"multinomial only supports floating-point dtypes for input, got: "
                           f"{input.dtype.name}")
    if num_samples <= 0:
        raise RuntimeError("multinomial: cannot sample n_sample <= 0 samples")
    weights = input.detach().numpy().astype(np.float64).reshape(-1, input.shape[-1])
    if not replacement and num_samples > input.shape[-1]:
        raise RuntimeError("multinomial: cannot sample n_sample > prob_dist.size(-1) samples "
                           "without replacement")
    if (weights < 0).any() or not np.isfinite(weights).all():
        raise RuntimeError("multinomial: probability tensor contains either `inf`, `nan` or "
                           "element < 0")
    rng = _stream(generator)
    rows = []
    for row in weights:
        total = row.sum()
        if total == 0 or (not replacement and np.count_nonzero(row) < num_samples):
            raise RuntimeError("multinomial: invalid multinomial distribution (sum of "
                               "probabilities <= 0 or too few nonzero for sampling without "
                               "replacement)")
        rows.append(rng.choice(row.size, num_samples, replace=replacement, p=row / total))
    picked = np.stack(rows).reshape(input.shape[:-1] + (num_samples,))
    return creation.tensor(picked, dtype=dt.int64, device=input.device)


def binomial(count, prob, generator=None):
    """Samples of Binomial(count, prob) for each pair (broadcast), of count's dtype. A pair that
    is no distribution (count < 0, prob outside [0, 1], NaN) gives NaN."""
    if not count.dtype.is_float:
        raise ValueError(f"binomial only supports floating-point dtypes for count, got: "
                         f"{count.dtype.name}")
    if prob.dtype != count.dtype:
        raise RuntimeError(f"binomial: expected prob of dtype {count.dtype.name} as count, got "
                           f"{prob.dtype.name}")
    shape = broadcast_shape("binomial", count.shape, prob.shape)
    n = np.broadcast_to(count.detach().numpy(), shape).astype(np.float64)
    p = np.broadcast_to(prob.detach().numpy(), shape).astype(np.float64)
    valid = (n >= 0) & (p >= 0) & (p <= 1) & np.isfinite(n)
    draws = _stream(generator).binomial(np.where(valid, n, 0).astype(np.int64),
                                        np.where(valid, p, 0))
    return creation.tensor(np.where(valid, draws, np.nan), dtype=count.dtype,
                           device=count.device)


METHODS = [("uniform_", uniform_), ("normal_", normal_), ("log_normal_", log_normal_),
           ("exponential_", exponential_), ("cauchy_", cauchy_), ("geometric_", geometric_),
           ("random_", random_), ("bernoulli_", bernoulli_), ("bernoulli", bernoulli),
           ("multinomial", multinomial)]

FUNCTIONS = {fn.__name__: fn for fn in (bernoulli, poisson, multinomial, binomial)}
