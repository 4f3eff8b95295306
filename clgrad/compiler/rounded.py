"""OpenCL C functions that round a float register to a 16-bit float: kernels hold float16 and
bfloat16 values in float registers and round each op's result (render.Renderer.narrow)."""
from __future__ import annotations

from .dtype import DType, bfloat16, float16

# Rounding a float to bfloat16 in its register: add half an ulp of bfloat16 (less when the kept
# bits are even: ties go to even), then drop the low 16 bits. A NaN keeps its sign and gets the
# quiet bit, so no NaN's kept bits read as an infinity. The NaN is chosen by select(), not
# `isnan(x) ? :`, on which Intel's compiler (2026.22) crashed (SIGSEGV in SimplifyCFG's
# speculate-blocks) in a loop beside a bounds-tested read (a bfloat16 amin's gradient beside a
# diff's, fuzz seed 99501351); and tested as x != x, which PoCL computes in a third less time
# than isnan (a fused chain of 24 roundings of 2^22 elements: 36 ms against 55).
_BFLOAT16 = """#ifndef {guard}
#define {guard}
inline float{n} {name}(float{n} x) {{
  uint{n} b = as_uint{n}(x);
  uint{n} rounded = select(b + 0x7fffu + ((b >> 16) & 1u), b | 0x400000u, x != x);
  return as_float{n}(rounded & 0xffff0000u);
}}
#endif
"""

# Rounding a float to float16 in its register: a normal half keeps 10 of the float's 23
# mantissa bits (rounded as bfloat16's 7 are above); below 2^-14 a subnormal half is a whole
# multiple of 2^-24, found by rint; past 65504 it is an infinity of x's sign (65520 and up
# round to 65536 first). A NaN stays itself. Chosen by select(), as bfloat16's: the same
# bits as `?:`, and PoCL computes a fused chain of 24 roundings of 2^22 floats in 95 ms
# against 110 (Intel's runtime 20.7 against 21.0; an EPYC Zen 4, the machine quiet).
_FLOAT16 = """#ifndef {guard}
#define {guard}
inline float{n} {name}(float{n} x) {{
  uint{n} b = as_uint{n}(x);
  float{n} r = as_float{n}((b + 0xfffu + ((b >> 13) & 1u)) & 0xffffe000u);
  r = select(r, rint(x * 16777216.0f) * 5.9604644775390625e-08f, fabs(x) < 6.103515625e-05f);
  r = select(r, as_float{n}((b & 0x80000000u) | 0x7f800000u), fabs(r) > 65504.0f);
  return select(r, x, x != x);
}}
#endif
"""

# the 16-bit floats (DType.is_16_bit_float): their functions' names and definitions
_DEFINITIONS = {bfloat16: ("clgrad_round_bf16", _BFLOAT16), float16: ("clgrad_round_f16", _FLOAT16)}


def function(dtype: DType, width: int) -> str:
    """The name of the function rounding a float (width 1) or a vector of width to dtype."""
    return _DEFINITIONS[dtype][0] + ("" if width == 1 else f"_x{width}")


def definition(dtype: DType, width: int) -> str:
    """That function's definition, guarded: a program joins kernels."""
    name = function(dtype, width)
    return _DEFINITIONS[dtype][1].format(n="" if width == 1 else width, name=name,
                                         guard=name.upper())
