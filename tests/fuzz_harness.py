"""Runs one generated program on a framework (clgrad or torch) and judges clgrad's answer
against PyTorch's.

Every reproducer the fuzzer writes is fuzz_rounding's text, this file's and the program's, so
it stays standalone: it imports NumPy only and receives the frameworks as arguments.
"""
import contextlib
from typing import NamedTuple

import numpy as np

try:        # (a reproducer holds fuzz_rounding's text above this file's)
    from fuzz_rounding import flip_runs, kinds as _kinds, tracker as _reach_tracker
except ImportError:
    _kinds, _reach_tracker = kinds, tracker  # noqa: F821

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
FLOAT_SPECIALS = (np.nan, np.inf, -np.inf)

# clgrad's float32 answer may differ from PyTorch's float32 answer by
# RTOL * |value| + ATOL * (largest |value| of that tensor)
# + SUMS * (its reach: the largest |value| it was computed from, see
#   fuzz_rounding.tracker)
# + SLACK * (how far PyTorch's own float32 answer is from its float64 answer, and how far
#   the float64 answer moves when the inputs move by float32's rounding: the conditioning
#   of the value).
RTOL, ATOL, SUMS, SLACK = 1e-4, 1e-5, 2e-4, 8.0
# A reference whose float32 and float64 runs differ by more than this (relative to the
# tensor's scale), or in any integer or non-finite element, has no single float32 answer.
UNSTABLE = 1e-2


def make_input(data_seed: int, index: int, shape: tuple, dtype: str, edges: bool) -> np.ndarray:
    """The index-th input of a program. Floats are distinct (no ties for max or argmax to
    break differently) and in [-2, 2); ints in [-5, 5]. With edges, some elements are NaN,
    +-inf or int32 extremes."""
    rng = np.random.default_rng([data_seed, index])
    n = int(np.prod(shape, dtype=np.int64))
    if dtype == "bool":
        flat = rng.random(n) < 0.5
    elif dtype.startswith("int"):
        flat = rng.integers(-5, 6, n).astype(dtype)
    else:
        spread = rng.permutation(n) + rng.uniform(0.1, 0.9, n)
        flat = (-2.0 + 4.0 * spread / max(n, 1)).astype(dtype)
    if edges and n and dtype != "bool" and rng.random() < 0.5:
        specials = FLOAT_SPECIALS if dtype.startswith("float") else (INT32_MIN, INT32_MAX)
        spots = rng.integers(0, n, rng.integers(1, 4))
        flat[spots] = rng.choice(specials, len(spots))
    return flat.reshape(shape)


def make_inputs(data_seed: int, inputs: list, edges: bool) -> list:
    return [make_input(data_seed, k, shape, dtype, edges)
            for k, (shape, dtype, _) in enumerate(inputs)]


class Result(NamedTuple):
    outputs: list       # NumPy arrays
    grads: list         # one per input: a NumPy array, or None without a gradient
    # torch only: for each output and gradient, the largest magnitude among the values it was
    # computed from (see fuzz_rounding.tracker); zeros for clgrad
    output_reach: list
    grad_reach: list
    # torch's float64 run only: for each output and gradient, how far each element moves when
    # the float inputs move by float32's rounding (see references); empty elsewhere
    output_spread: tuple = ()
    grad_spread: tuple = ()
    # run() under a tracker: whether a 16-bit value reaches each output and gradient, and
    # each gradient's float64 shadow (fuzz_rounding.tracker's summary)
    narrow: tuple = ()
    # torch's float32 run only: (output tolerances, gradient tolerances) by the 16-bit model
    # (fuzz_rounding.flip_runs): None for a value no 16-bit one reaches
    flips: tuple = ((), ())
    dtypes: tuple = ()      # the outputs' dtype names (NumPy has no bfloat16)


def reference(torch, program, arrays: list, requires_grad: list,
              float_dtype=np.float32) -> Result:
    """run() on torch, with the reach of each value. The values come from a run of their own:
    under a dispatch mode PyTorch takes other backward formulas (prod's product of the others
    even where no element is zero: no NaN from inf / inf), which are not the answer a user
    gets."""
    with _working_float(torch, float_dtype):
        values = run(torch, program, arrays, requires_grad, float_dtype)
        tracked = run(torch, program, arrays, requires_grad, float_dtype, _reach_tracker(torch))
        flips = (), ()
        if float_dtype is np.float32 and any(tracked.narrow[0] + tracked.narrow[1]):
            flips = flip_runs(torch, run, program, arrays, requires_grad, tracked)
    return values._replace(output_reach=tracked.output_reach, grad_reach=tracked.grad_reach,
                           flips=flips)


@contextlib.contextmanager
def _working_float(torch, float_dtype):
    """Inside, what a program makes float32 (`.float()`, a Python float with an int tensor)
    is float_dtype: the float64 estimate of a program that makes float32 values would
    otherwise compute them in float32, or mix them with float64 ones, which conv and matmul
    refuse."""
    if float_dtype is not np.float64:
        yield
        return
    default, cast = torch.get_default_dtype(), torch.Tensor.float
    torch.set_default_dtype(torch.float64)
    torch.Tensor.float = torch.Tensor.double
    try:
        yield
    finally:
        torch.set_default_dtype(default)
        torch.Tensor.float = cast


def references(torch, program, arrays: list, requires_grad: list) -> tuple:
    """(PyTorch's float32 answer, its float64 estimate, None); when the float64 run refuses
    the program (PyTorch's float64 path refuses what its float32 path takes: a transposed
    convolution to an empty output), the float32 answer stands for both, with the refusal in
    place of None."""
    ref = reference(torch, program, arrays, requires_grad)
    try:
        ref64 = reference(torch, program, arrays, requires_grad, np.float64)
    except RuntimeError as error:
        return ref, ref, error
    with _working_float(torch, np.float64):
        moved = run(torch, program, _rounding_moved(arrays), requires_grad, np.float64)
    return ref, ref64._replace(output_spread=_spreads(ref64.outputs, moved.outputs),
                               grad_spread=_spreads(ref64.grads, moved.grads)), None


def _rounding_moved(arrays: list) -> list:
    """The float inputs, each element moved at random by up to float32's rounding (a relative
    2**-24). How far that moves the float64 answer is how far rounding inside the program may
    move it too: a sum that cancels, then divided by, turns the rounding of its terms into a
    relative error a thousand times larger, which the float32 answer of one order of summation
    may not show (fuzz edge seed 72001144: 1.9 - 0.88 + ... = 2.6e-4, then 1 / that)."""
    rng = np.random.default_rng(0)
    moved = []
    for a in arrays:
        if a.dtype.kind == "f":
            a = a * (1 + rng.uniform(-2.0**-24, 2.0**-24, a.shape))
        moved.append(a)
    return moved


def _spreads(values: list, moved: list) -> tuple:
    """|moved - values| for each pair of arrays, 0 where either is not finite or the shapes
    differ (a shape the values decide); None for a missing gradient."""
    spreads = []
    for a, b in zip(values, moved):
        if a is None or b is None or np.shape(a) != np.shape(b) or a.dtype.kind != "f":
            spreads.append(None)
            continue
        with np.errstate(invalid="ignore"):
            spread = np.abs(b.astype(np.float64) - a)
        spreads.append(np.where(np.isfinite(spread), spread, 0.0))
    return tuple(spreads)


def run(fw, program, arrays: list, requires_grad: list, float_dtype=np.float32,
        tracking=None) -> Result:
    """program's outputs and each input's gradient. The gradients are of the sum of each float
    output times a random cotangent. (clgrad marks some outputs as requiring grad that torch
    does not: the int and bool results of float tensors, and what they select through where.
    Each output's cotangent depends on its position alone, so such an extra output changes
    nothing where its gradient is zero.) Everything is computed in one go (clgrad.realize)
    where the framework can. tracking: a fuzz_rounding.tracker to run torch under."""
    tracking = tracking or contextlib.nullcontext()
    leaves = [fw.tensor(a.astype(float_dtype) if a.dtype.kind == "f" else a, requires_grad=g)
              for a, g in zip(arrays, requires_grad)]
    with tracking:
        outputs = program(fw, *leaves)
        floats = (fw.float16, fw.bfloat16, fw.float32, fw.float64)
        differentiable = [k for k, o in enumerate(outputs)
                          if o.requires_grad and o.dtype in floats]
        if differentiable:
            tracking.backward = True        # (a tracker adds 16-bit gradients in any order)
            fw.autograd.backward([outputs[k] for k in differentiable],
                                 [cotangent(fw, outputs[k], k) for k in differentiable])
    grads = [x.grad for x in leaves]
    if hasattr(fw, "realize"):
        fw.realize(*outputs, *[g for g in grads if g is not None])
    reach = getattr(tracking, "reach", lambda t: 0.0)
    summary = getattr(tracking, "summary", lambda outputs, grads: ())
    return Result([numpy_of(fw, o) for o in outputs],
                  [None if g is None else numpy_of(fw, g) for g in grads],
                  [reach(o) for o in outputs], [0.0 if g is None else reach(g) for g in grads],
                  narrow=summary(outputs, grads),
                  dtypes=tuple(str(o.dtype).rsplit(".", 1)[-1] for o in outputs))


def numpy_of(fw, t) -> np.ndarray:
    """t as a NumPy array; a bfloat16 one (NumPy has no such type) in float32, exactly."""
    t = t.detach()
    return (t.float() if t.dtype == fw.bfloat16 else t).numpy()


def cotangent(fw, output, k: int):
    rng = np.random.default_rng([0, k])
    values = np.asarray(rng.uniform(-1, 1, tuple(output.shape)), np.float32)
    return fw.tensor(values).to(output.dtype)


def judge(got: Result, ref: Result, ref64: Result, edges: bool) -> tuple[str, str]:
    """(status, detail): "ok", "wrong forward", "wrong gradient", or "skipped" when no value
    has a reliable float32 answer. got, ref and ref64 are run()'s results for clgrad, torch in
    float32 and torch in float64. Values without a reliable answer are left out; the
    detail names them."""
    left_out, compared = [], 0
    for k, (a, b) in enumerate(zip(got.dtypes, ref.dtypes)):
        if a != b:
            return "wrong forward", f"output {k}: dtype {a} != torch's {b}"
    with np.errstate(invalid="ignore", over="ignore"):
        for name, have, want, want64, reach, spread, flips in _values(got, ref, ref64):
            if want is None:
                continue
            reason = _unstable(want, want64, edges) or (flips if isinstance(flips, str)
                                                        else None)
            if reason:
                left_out.append(f"{name} left out: {reason}")
                continue
            compared += 1
            problem = _mismatch(have, want, want64, reach, spread, flips)
            if problem:
                status = "wrong forward" if name.startswith("output") else "wrong gradient"
                return status, f"{name}: {problem}"
    return ("ok" if compared else "skipped"), "; ".join(left_out)


def _values(got: Result, ref: Result, ref64: Result):
    """(name, clgrad's, torch's, torch's float64 array, torch's reach, the float64 array's
    spread or None, its 16-bit flips or None) for each output and each input's gradient."""
    for k, arrays in enumerate(zip(got.outputs, ref.outputs, ref64.outputs)):
        yield (f"output {k}", *arrays, ref.output_reach[k], _at(ref64.output_spread, k),
               _at(ref.flips[0], k))
    for k, arrays in enumerate(zip(got.grads, ref.grads, ref64.grads)):
        yield (f"gradient of input {k}", *_none_as_zeros(*arrays), ref.grad_reach[k],
               _at(ref64.grad_spread, k), _at(ref.flips[1], k))


def _at(spreads: list, k: int):
    return spreads[k] if k < len(spreads) else None


def _none_as_zeros(*arrays) -> tuple:
    """PyTorch's None gradient means zero: Nones become zeros shaped like the others."""
    shaped = next((a for a in arrays if a is not None), None)
    return tuple(np.zeros_like(shaped) if a is None and shaped is not None else a
                 for a in arrays)


def _scale(a: np.ndarray) -> float:
    finite = np.abs(a[np.isfinite(a)])
    return float(finite.max()) if finite.size else 0.0


def _unstable(want: np.ndarray, want64: np.ndarray, edges: bool) -> str | None:
    if want.shape != want64.shape:      # a shape that values decide (x[x > 0.3], nonzero)
        return f"float32 and float64 give shapes {want.shape} and {want64.shape}"
    if want.dtype.kind in "biu":
        return None if np.array_equal(want, want64) else "an integer result flips with precision"
    if not edges and not np.all(np.isfinite(want)):
        return "a non-finite reference in the default mode"
    if np.any(_kinds(want) != _kinds(want64)):
        return "non-finite elements differ between float32 and float64"
    deviation = _deviation(want, want64)
    if deviation > UNSTABLE * _scale(want64):
        return f"float32 is off float64 by {deviation:.3g}"
    return None


def _deviation(want: np.ndarray, want64: np.ndarray) -> float:
    """How far torch's float32 answer is from its float64 one (finite elements only)."""
    finite = np.isfinite(want)
    deviation = np.abs(want[finite].astype(np.float64) - want64[finite])
    return float(deviation.max()) if deviation.size else 0.0


def _mismatch(have: np.ndarray, want: np.ndarray, want64: np.ndarray, reach: float,
              spread=None, flips=None) -> str | None:
    """What is wrong with have, or None. flips (a value a 16-bit one reaches): the 16-bit
    model's tolerance (fuzz_rounding), in place of the float32 model's reach and deviation."""
    if have.shape != want.shape:
        return f"shape {have.shape} != torch's {want.shape}"
    if have.dtype != want.dtype:
        return f"dtype {have.dtype} != torch's {want.dtype}"
    if want.dtype.kind in "biu":
        return _first_difference(have, want, have != want)
    if np.any(_kinds(have) != _kinds(want)):
        return _first_difference(have, want, _kinds(have) != _kinds(want))
    tolerance = RTOL * np.abs(want.astype(np.float64)) + ATOL * _scale(want) + (
        SUMS * reach + SLACK * _deviation(want, want64) if flips is None else flips)
    if spread is not None and spread.shape == want.shape:
        tolerance = tolerance + SLACK * spread
    error = np.where(np.isfinite(want), np.abs(have.astype(np.float64) - want), 0.0)
    return _first_difference(have, want, error > tolerance)


def _first_difference(have: np.ndarray, want: np.ndarray, bad: np.ndarray) -> str | None:
    if not np.any(bad):
        return None
    at = tuple(int(i) for i in np.argwhere(bad)[0])
    return (f"{int(np.sum(bad))} of {bad.size} elements differ; at {at}: clgrad {have[at]!r}, "
            f"torch {want[at]!r}")


def main(program, inputs: list, data_seed: int, edges: bool) -> None:
    """Runs program on clgrad (CLGRAD_DEVICE picks the device) and on torch; prints the
    verdict."""
    import clgrad
    import torch
    arrays = make_inputs(data_seed, inputs, edges)
    flags = [g for _, _, g in inputs]
    ref, ref64, _ = references(torch, program, arrays, flags)
    got = run(clgrad, program, arrays, flags)
    print(f"device {clgrad.device()}:", *judge(got, ref, ref64, edges))
