"""What each device gets from codegen: the engine's choice, per device, of the compiler's
Target. Every choice below is backed by a measurement (docs/runtimes.md)."""
from __future__ import annotations

import dataclasses

from ..compiler.target import Target

# Intel's CPU compiler vectorises loops inside a work-item wrongly (sums that subtract lose
# terms; builtins in loops with a remainder crash it): its loops stay scalar. Its vectoriser
# across work-items, which clgrad relies on, is unaffected.
_INTEL_LOOPS = ("vectorize(disable)",)

# The widest vector of a device whose builtins of 512-bit vectors are wrong
NARROW_VECTOR_BITS = 256

# Work-items sharing a reduction's row on a GPU (lower_reduce_group.py). Not measured yet,
# reasoned: 8 of NVIDIA's 32-wide warps (4 of AMD's 64-wide wavefronts), so that an SM's 2,048
# work-items hold 8 groups at once, whose loads hide one another's 8 halving steps between
# barriers; 1,024, the most a group may hold, leaves 2 groups per SM to hide 10 steps, and 64
# gives few rows too few work-items (a batch of 64 rows: 4,096 for an H200's 132 SMs).
GPU_ROW_GROUP = 256


def sum_streams(device) -> int:
    """Stretches a long float sum's row is read as side by side: two on a CPU of 256-bit
    vectors, one on a CPU with AVX-512. Row sums of 64 MiB of float32, rows of 4,096 floats,
    two stretches against one: on a 2-core EPYC Zen 3 (AVX2, Intel's runtime) 0.87x the time
    (W5's sum 0.92-0.95x PyTorch's speed -> 1.04-1.18x); on a 2-core EPYC Zen 4 (AVX-512)
    1.15-1.35x the time, on Intel's runtime with 16 lanes and with 8 and on PoCL with 8 (W5's
    sum 0.48-0.49x PyTorch's speed with two, 0.65-0.70x with one)."""
    return 2 if device.native_float_width < 16 else 1


def codegen_target(device) -> Target:
    """GPUs get their parallelism from work-items, a reduction's rows from groups of them
    (GPU_ROW_GROUP). NVIDIA's compiler fuses a multiply and an add
    of separate statements and saturates float-to-int conversions, where PyTorch rounds each op
    and x86 gives the integer minimum: GPUs get both written out (on an H100, the zeros of
    gumbel_softmax(hard=True) were -1.5e-8, sinc's gradient at 1e-30 was 5.9e22, PyTorch's 0,
    and 1 / x.int() of NaN was inf, PyTorch's -4.7e-10).
    CPUs need explicit vectors: PoCL does not recover them (8 lanes measured best there), and
    Intel's compiler does not widen them, so it gets the device's native width (16 floats with
    AVX-512: W4 1.5x, sum 2x, softmax 1.2x faster than 8). Its vectors of 64-bit integers stay
    within one AVX-512 register: its code for two (long16) got int64 min and != wrong (fuzz
    seeds 31952, 50248). It merges a sin and a cos of one value into a sincos whose results
    differ from its lone sin's and cos's (by an ulp, in a third to a half of all floats), so it
    gets sincos for both always: cos(x) is then the same float in a kernel that also takes
    sin(x), and ties between cosines of one value hold in a gradient's kernels (fuzz seed
    1002609). The cost: a kernel of sines alone runs ~15% slower where the sines bound it
    (sin(sin(sin(x))), 8M floats), as fast where memory does. PoCL's lone sin and cos are its
    sincos's already; its float vector sin, cos and tan are wrong in small lanes beside a huge
    one, and such vectors are taken twice (render._FAR_TRIG). Where its builtins of 512-bit
    vectors are wrong (AMD Zen 4: runtime/probe.py), a kernel of 64-bit elements gets 4 lanes.
    A matmul's B read along k (x @ w.T) is transposed into its panel by shuffles on Intel's
    runtime (1024^3: 22-24 -> 11.7-12.6 ms on the AMD EPYC, PyTorch's 13-16); PoCL's shuffles
    made the same products 1.5-2x slower than its gathers, so it keeps those."""
    if device.kind == "gpu":
        return Target(width=1, cores=device.compute_units, no_contraction=True,
                      float_to_int_min=True, fp64=device.has_fp64, row_group=GPU_ROW_GROUP)
    if device.runtime == "intel":
        width = min(16, device.native_float_width)
        return Target(width=width, loop_hints=_INTEL_LOOPS, vector_hint=True,
                      accumulators=width, tile_unroll=4, cores=device.compute_units,
                      vector_bits=32 * width, sincos=True, transposes_panels=True,
                      sum_streams=sum_streams(device), fp64=device.has_fp64)
    return narrowed(Target(width=8, cores=device.compute_units, guard_folds=True,
                           far_trig=True, sum_streams=sum_streams(device),
                           fp64=device.has_fp64), device)


def narrowed(target: Target, device) -> Target:
    """target, kept to 256-bit vectors on a device whose builtins of 512-bit vectors are
    wrong (runtime/probe.py)."""
    if device.verdict.wide_vectors:
        return target
    return dataclasses.replace(target, vector_bits=NARROW_VECTOR_BITS)
