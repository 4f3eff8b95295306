"""How far a fuzzed program's values may be from PyTorch's: the reach of every value, and the
tolerance model of the 16-bit floats. A reproducer holds this file's text, then
fuzz_harness's: it imports NumPy only and receives torch as an argument.

16-bit floats. A program that casts to float16 or bfloat16 is judged against PyTorch's own
16-bit run (its float32 reference computes those ops in the 16-bit type). PyTorch's CPU
kernels, and clgrad, compute a 16-bit op in float32 and round its result once, so:
- an exact op (a cast, a move or selection, and on 16-bit values +, -, *, /, sqrt, floor and
  the like, correctly rounded from their inputs) must give PyTorch's bits;
- any other (exp and the other functions, sums and products, softmax, norms, losses, and
  every float32 op but moves, which clgrad may contract into an fma) computes in float32 a
  value up to delta off PyTorch's (_delta: float32's rounding of the value, how far float32's
  rounding of its inputs moves it, and a sum's rounding: log2(n) float32 ulps of its terms);
  where its exact value lies within delta of a tie between two 16-bit values, the two may
  round apart by an ulp of the type (more where delta is more: a cancelling sum);
- PyTorch's prod of a 16-bit type rounds each partial product to the type, in order, and its
  nll_loss keeps its partial sums in the type (its sum, mean and cumsum, and clgrad's prod
  and nll_loss, round once): (n - 1) / 2 ulps apart for n terms; its vector rsqrt of a
  16-bit type is not correctly rounded (an ulp off in 0.1% to 0.3% of the elements); its
  transposed convolution, and a convolution's input gradient, round once or each kernel
  tap's products and sum, as the CPU decides (_taps): an ulp of its terms per kernel tap;
- a gradient is PyTorch's formula (derivatives.yaml, its backward kernels) in PyTorch and
  one derived from the IR in clgrad, which round at other steps (clgrad computes a function's
  gradient in float32 as its value; PyTorch's reads the rounded value and rounds each op):
  each 16-bit result of a backward op may be an ulp of the type off, and a gradient as far
  off as PyTorch's own rounding in its backward ops moves it (`shadow`: the backward pass
  rerun in float64 from the same 16-bit forward values), and GRAD_ULPS ulps of the coarsest
  16-bit type it passed through (the runs' flips of x - mean can cancel those of the mean).
Seven more runs take every inexact op's result at the top, at the bottom, at random in that
range, and at the top and bottom in two checkerboards (neighbours apart: their difference),
and a value a 16-bit one reaches may differ from PyTorch's by FLIPS times how far they move
it (a gradient, SHADOWS times how far the shadow is, too), besides fuzz_harness's RTOL and
ATOL, which are under an ulp of either type. So a forward value shows a missing rounding, a
rounding to odd or toward zero, or an op computed in float32 where PyTorch rounds (or in
another 16-bit type) wherever that moves it more than the near-tie flips do, and a gradient
one computed in the wrong 16-bit type. Integer and bool results, shapes and
non-finite elements those runs change are left out.
"""
import numpy as np

FLIPS, SHADOWS, GRAD_ULPS = 2.0, 2.0, 1.0
K_MOVED, K_ULPS = 8.0, 4.0      # (EPS32 is half a float32 ulp)
EPS32 = 2.0 ** -24
_EXACT = frozenset("""_to_copy alias as_strided cat clone copy detach expand flip gather index
    index_select lift_fresh masked_fill permute reshape roll select slice squeeze stack t
    transpose tril triu unsqueeze view _unsafe_view unbind split split_with_sizes zeros_like
    ones_like full_like new_zeros new_ones new_empty new_full empty_like fill zero max min
    amax amin sort topk cummax cummin maximum minimum clamp clamp_min clamp_max relu neg abs
    sign where constant_pad_nd select_backward slice_backward index_copy scatter""".split())
# exact in the forward pass where every float operand is 16-bit
_EXACT_16_BIT = frozenset("""add sub rsub mul div reciprocal sqrt square floor ceil round
    trunc frac hardtanh hardtanh_backward threshold threshold_backward leaky_relu""".split())
# PyTorch's 16-bit results of these keep partial results in the type
_PARTIALS_IN_TYPE = frozenset(("prod", "nll_loss_forward", "nll_loss2d_forward"))
_LINEAR = frozenset("""sum mean nansum mm bmm addmm addmv mv dot baddbmm addbmm cumsum
    index_add scatter_add index_put _unsafe_index_put convolution convolution_backward
    avg_pool1d avg_pool2d avg_pool2d_backward""".split())
_ELEMENTWISE = frozenset("""exp exp2 expm1 log log2 log10 log1p sin cos tan tanh sigmoid
    atan asin acos sinh cosh asinh acosh atanh erf erfc erfinv pow rsqrt sinc lgamma digamma
    gelu silu mish softplus elu selu celu log_sigmoid_forward hardsigmoid hardswish
    softshrink hardshrink sigmoid_backward tanh_backward gelu_backward silu_backward
    mish_backward softplus_backward elu_backward log_sigmoid_backward hardsigmoid_backward
    hardswish_backward atan2 fmod remainder xlogy hypot addcmul addcdiv lerp""".split())


def tracker(torch, sign: int = 0):
    """A torch dispatch mode that marks every float value an op makes (backward ops included)
    with its reach: the largest finite magnitude among it and the values it was computed from.
    A sum that cancels keeps the rounding errors of its summands, whose size depends on the
    order of summation (clgrad's is not torch's): the reach bounds them. It marks every value
    a 16-bit float reaches, and in a program with one, the float64 shadow of every backward
    value; with a sign (1 up, -1 down, 2 at random, 3, 4 and their negatives in checkerboards:
    _direction), it rounds each inexact op's result as _rounded does."""
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_leaves

    def magnitude(t) -> float:
        finite = t.detach()[torch.isfinite(t)] if t.is_floating_point() else None
        return float(finite.abs().max()) if finite is not None and finite.numel() else 0.0

    class Tracker(TorchDispatchMode):
        backward = False            # run() sets it as the backward pass begins
        seen_narrow = False
        draws = torch.Generator().manual_seed(abs(sign))    # (a pair's phases are one)

        def reach(self, t) -> float:
            return getattr(t, "_fuzz_reach", None) or magnitude(t)

        def narrow(self, t) -> float:
            """The eps of the coarsest 16-bit type t was computed from, 0 if none."""
            own = torch.finfo(t.dtype).eps if t.dtype in (torch.float16, torch.bfloat16) \
                else 0.0
            return max(getattr(t, "_fuzz_narrow", 0.0), own)

        def summary(self, outputs: list, grads: list) -> tuple:
            """(narrow() of each output, of each gradient (0 for none), and each gradient's
            float64 shadow or None)"""
            shadows = [getattr(g, "_fuzz_shadow", None) for g in grads]
            return (tuple(self.narrow(o) for o in outputs),
                    tuple(0.0 if g is None else self.narrow(g) for g in grads),
                    tuple(None if s is None else s.numpy() for s in shadows))

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            tensors = [t for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
            # (before the op: an in-place one changes its input)
            rounding = _rounded(torch, func, args, kwargs, self, sign) if sign else None
            shadows = _in_float64(torch, func, args, kwargs, lambda t: getattr(
                t, "_fuzz_shadow", t)) if self.backward and self.seen_narrow and not sign \
                else []
            out = func(*args, **kwargs)
            if rounding:
                rounding(out)
            sources = [self.reach(t) for t in tensors]
            narrow = max([self.narrow(t) for t in tensors] + [0.0])
            outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
            for k, t in enumerate(outs):
                t._fuzz_narrow = max(narrow, self.narrow(t))
                self.seen_narrow |= t._fuzz_narrow > 0
                if t.is_floating_point():
                    t._fuzz_reach = max(sources + [magnitude(t)])
                    if k < len(shadows) and shadows[k].shape == t.shape:
                        t._fuzz_shadow = shadows[k]
            return out

    return Tracker()


def _in_float64(torch, func, args, kwargs, how=None) -> list:
    """func's tensor results with its float tensors (first passed to how) and float dtypes in
    float64; [] where it refuses."""
    from torch.utils._pytree import tree_leaves, tree_map

    def convert(a):
        if isinstance(a, torch.Tensor) and a.is_floating_point():
            return (how(a) if how else a).detach().to(torch.float64, copy=True)
        return torch.float64 if isinstance(a, torch.dtype) and a.is_floating_point else a
    a, k = tree_map(convert, (args, kwargs))
    try:
        return [t for t in tree_leaves(func(*a, **k)) if isinstance(t, torch.Tensor)]
    except Exception:  # noqa: BLE001 (an op float64 refuses: no shadow, no rounding)
        return []


def _rounded(torch, func, args, kwargs, tracker, sign: int):
    """For an inexact op (see the model above), a function that rewrites its float results
    as their float64 values moved by delta in the direction sign names (_direction) and
    rounded to the result's type; None for an exact op."""
    from torch.utils._pytree import tree_leaves
    name = func.overloadpacket.__name__
    name = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    floats = [t for t in tree_leaves((args, kwargs))
              if isinstance(t, torch.Tensor) and t.is_floating_point()]
    sixteen = (torch.float16, torch.bfloat16)
    if not floats or name in _EXACT or name in _EXACT_16_BIT and not tracker.backward and all(
            t.dtype in sixteen for t in floats):
        return None
    exact = _in_float64(torch, func, args, kwargs)
    # each input moved by a whole rounding of float32, up or down at random: a move drawn
    # smaller (uniform in the range) left digamma near its root its own rounding's size, not
    # its input's through its slope (fuzz seed 99702738: a half's digamma an ulp apart)
    nearby = _in_float64(torch, func, args, kwargs, lambda t: t * (1 + EPS32 * (
        torch.randint(0, 2, t.shape, generator=tracker.draws).double() * 2 - 1)))
    terms = _in_float64(torch, func, args, kwargs, torch.abs) if name in _LINEAR else exact
    sums = np.log2(max(t.numel() for t in floats) + 1)

    def rewrite(out):
        outs = [t for t in tree_leaves(out) if isinstance(t, torch.Tensor)]
        for k, (o, v, w, a) in enumerate(zip(outs, exact, nearby, terms)):
            if not o.is_floating_point() or o.shape != v.shape:
                continue
            delta = _delta(torch, name, v, w, a, sums)
            if (tracker.backward or name == "rsqrt") and o.dtype in sixteen:
                delta = torch.maximum(delta, 0.75 * _ulp(torch, v, o.dtype))
            if name in _PARTIALS_IN_TYPE and o.dtype in sixteen:
                terms_each = max(t.numel() for t in floats) / max(o.numel(), 1)
                delta = delta + (terms_each - 1) / 2 * _ulp(torch, v, o.dtype)
            taps = _taps(name, args, k)
            if taps and o.dtype in sixteen:
                delta = delta + taps * _ulp(torch, a, o.dtype)
            if _rounds_exp_first(name, args) and o.dtype in sixteen:
                delta = delta + _ulp(torch, v, o.dtype)
            direction = _direction(torch, sign, v.shape, tracker.draws)
            new = (v + direction * torch.nan_to_num(delta, 0.0, 0.0, 0.0)).to(o.dtype)
            o.copy_(torch.where(torch.isfinite(v) & torch.isfinite(o), new, o))
    return rewrite


def _direction(torch, sign: int, shape: tuple, draws):
    """Which way each element of a result moves: all up (sign 1) or down (-1), each at random
    (2), or up and down by the parity of its coordinates' sum (a checkerboard), each op's
    phase at random, the other way round for -sign (3, 4 and their negatives). Neighbours
    along any dim then move apart and a difference of them (a diff, a convolution's taps of
    opposite sign) moves by both moves, where moving both the same way cancels (fuzz seed
    99503883: a diff of layer_norm results, then half()). The phases are drawn, so that an
    op's move into a difference and the difference's own move do not cancel in every run."""
    if sign in (1, -1):
        return sign
    if sign == 2:
        return torch.randint(0, 2, shape, generator=draws).double() * 2 - 1
    coordinates = sum((torch.arange(n).reshape([n if a == axis else 1 for a in range(len(shape))])
                       for axis, n in enumerate(shape)), torch.zeros((), dtype=torch.long))
    phase = float(torch.randint(0, 2, (), generator=draws)) * 2 - 1
    return (1 - 2 * (coordinates % 2)).double() * phase * (1 if sign > 0 else -1)


def _taps(name: str, args, k: int) -> int:
    """The taps (kernel elements) of the weight of a transposed convolution, output k of an
    op, where output k is one (0 if not): a transposed convolution's result, and a
    convolution's input gradient. PyTorch's 16-bit answer depends on the CPU: oneDNN, which
    takes bfloat16 on a CPU of AVX-512 (float16 on one of AVX512-FP16), rounds once;
    elsewhere PyTorch's col2im rounds each tap's products to the type and adds them, and the
    bias, in it, one by one, as clgrad does on every CPU: 2 * taps roundings, each within half
    an ulp of the terms (fuzz seed 99000723: 229 of 504 bfloat16 elements an ulp from the
    rounded-once answer, none from torch's own with ONEDNN_MAX_CPU_ISA=AVX2 or
    torch.backends.mkldnn.flags(enabled=False); seed 99210324, a conv2d's input gradient,
    likewise)."""
    if name == "convolution" and args[6] and k == 0:
        weight = args[1]
    elif name == "convolution_backward" and not args[7] and k == 0:
        weight = args[2]
    else:
        return 0
    return int(np.prod(weight.shape[2:]))


def _rounds_exp_first(name: str, args) -> bool:
    """Whether the op is a softmax over a dim with others after it, which PyTorch's CPU
    kernel of a 16-bit type computes in one of two ways by where its vector loop leaves off
    (which its thread count and vector width decide): exp(x - max) / sum rounded once, as
    clgrad, or exp(x - max) rounded to the type first, then divided: within an ulp of the
    type of the once-rounded value (fuzz seed 100001440: a bfloat16 (64, 45) over dim 0, in
    two threads every column the latter; 1 of 2,880 elements an ulp past the model)."""
    if name != "_softmax":
        return False
    x, dim = args[0], args[1]
    return int(np.prod(x.shape[dim % max(x.dim(), 1) + 1:])) > 1


def _delta(torch, name: str, exact, nearby, terms, sums: float):
    """How far an inexact op's float32 computation may leave its exact value: what moving
    its inputs by float32's rounding moves it, K_ULPS half-ulps of float32 of it, and for a
    sum, a product or a function with sums inside, log2(numel) of those of its terms (its
    result's mean magnitude for softmax, norms and the other ops of rows)."""
    value = exact.abs()
    if name in _LINEAR:
        return K_ULPS * EPS32 * (value + sums * terms)
    delta = K_MOVED * (nearby - exact).abs()
    if name in _ELEMENTWISE:
        return delta + K_ULPS * EPS32 * value
    finite = value[torch.isfinite(value)]
    return delta + K_ULPS * EPS32 * sums * (value + (finite.mean() if finite.numel() else 0))


def _ulp(torch, v, dtype):
    """The 16-bit dtype's ulp at each element of v (its least subnormal at 0)."""
    info = torch.finfo(dtype)
    return (info.eps * torch.ldexp(torch.ones_like(v), torch.frexp(v).exponent - 1)).clamp(
        min=info.tiny * info.eps)


def flip_runs(torch, run, program, arrays: list, requires_grad: list, tracked) -> tuple:
    """(output tolerances, gradient tolerances) for the values a 16-bit one reaches: FLIPS
    times the most the runs with every inexact op rounded up, down, at random and in a
    checkerboard move them from tracked (run() under tracker(torch)), plus SHADOWS times how
    far a gradient's shadow is; None for the other values, a reason to leave a value out where those runs change
    what cannot be compared with a tolerance."""
    outputs, grads, shadows = tracked.narrow
    try:
        runs = [run(torch, program, arrays, requires_grad, np.float32, tracker(torch, sign))
                for sign in (1, -1, 2, 3, -3, 4, -4)]
    except Exception as error:  # noqa: BLE001 (a flip that makes PyTorch refuse: no answer)
        reason = f"a 16-bit rounding the other way makes torch refuse ({type(error).__name__})"
        return tuple(tuple(reason if n else None for n in flags) for flags in (outputs, grads))
    return (tuple(_tolerance(a, [r.outputs[k] for r in runs], None, n)
                  for k, (a, n) in enumerate(zip(tracked.outputs, outputs))),
            tuple(_tolerance(a, [r.grads[k] for r in runs], s, n, gradient=True)
                  for k, (a, s, n) in enumerate(zip(tracked.grads, shadows, grads))))


def _tolerance(base, others: list, shadow, narrow: float, gradient: bool = False):
    if not narrow or base is None or any(o is None for o in others):
        return None
    if any(o.shape != base.shape for o in others):
        return "a 16-bit rounding the other way changes its shape"
    if base.dtype.kind in "biu":
        return None if all(np.array_equal(o, base) for o in others) else \
            "a 16-bit rounding the other way changes it"
    if any(np.any(kinds(o) != kinds(base)) for o in others):
        return "a 16-bit rounding the other way makes a NaN or infinity of it"
    with np.errstate(invalid="ignore"):
        tolerance = FLIPS * np.maximum.reduce([np.abs(o.astype(np.float64) - base)
                                               for o in others])
        if shadow is not None and shadow.shape == base.shape:
            tolerance = tolerance + SHADOWS * np.abs(shadow - base)
        if gradient:
            magnitude = np.abs(base.astype(np.float64))
            tolerance = tolerance + GRAD_ULPS * narrow * np.where(
                magnitude > 0, np.exp2(np.frexp(magnitude)[1] - 1.0), 0.0)
    return np.where(np.isfinite(tolerance), tolerance, 0.0)


def kinds(a: np.ndarray) -> np.ndarray:
    """0 where finite, 1 NaN, 2 +inf, 3 -inf."""
    return np.select([np.isnan(a), np.isposinf(a), np.isneginf(a)], [1, 2, 3], 0)
