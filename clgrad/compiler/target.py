"""What codegen knows of the device it writes for. The engine picks one per device; the
compiler never asks a device itself."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    width: int = 8              # lanes per work-item in explicit vector types (1: none)
    loop_hints: tuple[str, ...] = ()    # `#pragma clang loop` hints for every loop: a device
                                        # compiler's workaround
    vector_hint: bool = False   # mark kernels written in vectors with vec_type_hint
    accumulators: int = 10      # vector accumulators a matmul's register tile may hold
    tile_unroll: int = 1        # k steps of a matmul's register tile per loop iteration, where
                                # they divide its k block (clang's unroll_count)
    cores: int = 1              # compute units that run work-groups at once
    vector_bits: int | None = None  # the widest vector a kernel may use: a kernel of 64-bit
                                    # elements gets fewer lanes than one of floats
    sincos: bool = False        # spell sin and cos as sincos(), so that each is one function
                                # in every kernel (Renderer.sincos)
    guard_folds: bool = False   # exp, tanh, floor and ceil take x's bits xored with an opaque
                                # 0, so that the compiler never folds one of a constant
                                # (render._FOLDED_WRONG)
    no_contraction: bool = False    # every kernel says `#pragma OPENCL FP_CONTRACT OFF`: a
                                    # compiler that fuses a multiply and an add of separate
                                    # statements (NVIDIA's) rounds once where PyTorch rounds
                                    # twice, and a*b - a*b is then a*b's rounding error, not 0
    float_to_int_min: bool = False  # a float outside an integer type's range (NaN, inf, 3e9)
                                    # converts to its minimum, written out: x86 gives that, so
                                    # PyTorch's CPU does; NVIDIA's conversion saturates
    transposes_panels: bool = False     # a matmul's B read along k (a Linear's weight)
                                        # goes into its panel in squares transposed by
                                        # shuffles (lower_matmul._reads_along_k)
    far_trig: bool = False      # float vector sin, cos and tan of a vector with a lane of 1e5
                                # or more take it twice (render._FAR_TRIG)
    sum_streams: int = 1        # stretches a long float sum's row is read as, side by side
                                # (lower_reduce._pairwise_sum)
    fp64: bool = True           # the device computes doubles: a float32 running sum or product
                                # accumulates in one, as PyTorch's CPU scans (lower_scan)
    row_group: int = 1          # work-items sharing a reduction's row on a one-lane target,
                                # a power of two (lower_reduce_group); 1: a work-item per row
