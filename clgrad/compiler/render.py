"""OpenCL C spellings of the IR's operations, for scalars and for vectors of `width` lanes.

Booleans live in registers as int: 0/1 in scalar code and 0/-1 masks in vector code, the
forms that OpenCL's own comparisons produce, so comparisons and `select` need no fix-ups.
The narrow integers (int8, uint8, int16) live in int registers too and are wrapped back to
their width after each op that can leave it; float16 and bfloat16 live in float registers,
rounded to their type (to nearest, ties to even) after each op, as PyTorch rounds each op's
result.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from . import rounded
from .dtype import DType, bfloat16, bool_, float16, float32, int32
from .ops import Op
from .target import Target


@dataclass(frozen=True)
class Value:
    code: str       # a C variable or literal
    dtype: DType
    vec: bool       # True when it holds one value per lane


_FLOAT_UNARY = {
    Op.NEG: "(-{0})", Op.RECIP: "(1/{0})", Op.SQRT: "sqrt({0})", Op.EXP: "exp({0})",
    Op.LOG: "log({0})", Op.SIN: "sin({0})", Op.COS: "cos({0})", Op.TANH: "tanh({0})",
    Op.ABS: "fabs({0})", Op.FLOOR: "floor({0})", Op.CEIL: "ceil({0})", Op.ROUND: "rint({0})",
    Op.ERF: "erf({0})", Op.ERFC: "erfc({0})", Op.TAN: "tan({0})", Op.ASIN: "asin({0})",
    Op.ACOS: "acos({0})", Op.ATAN: "atan({0})", Op.SINH: "sinh({0})", Op.COSH: "cosh({0})",
    Op.ASINH: "asinh({0})", Op.ACOSH: "acosh({0})", Op.ATANH: "atanh({0})",
    Op.LGAMMA: "lgamma({0})",
}
_INT_UNARY = {Op.NEG: None, Op.ABS: None,    # wrapping: Renderer._wrapping
              Op.FLOOR: "{0}", Op.CEIL: "{0}", Op.ROUND: "{0}"}
_INFIX = {Op.ADD: "+", Op.SUB: "-", Op.MUL: "*", Op.DIV: "/", Op.CMPLT: "<", Op.CMPEQ: "==",
          Op.AND: "&", Op.OR: "|", Op.XOR: "^",
          Op.SHL: "<<", Op.SHR: ">>"}
_FLOAT_CALL = {Op.POW: "pow", Op.MOD: "fmod", Op.ATAN2: "atan2", Op.HYPOT: "hypot",
               Op.COPYSIGN: "copysign", Op.NEXTAFTER: "nextafter"}
_INT_CALL = {Op.MAX: "max", Op.MIN: "min"}
_LEAVE_RANGE = frozenset({Op.NEG, Op.ABS, Op.NOT, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.SHL})
_BOOL_AS_LOGIC = {Op.MAX: "({0}|{1})", Op.MIN: "({0}&{1})", Op.CMPLT: "({2}{0}&{1})"}


# tanh from expm1, whose error runtimes keep near an ulp where their tanh's is not: Intel's
# AVX2 tanh is off by up to 4 ulps in half of all floats (1.0 for tanh(9.0), 0.99999994 once
# rounded, leaving no gradient where PyTorch has 1.3e-7). 1 - 2 / (u + 2) rounds to ±1 exactly
# where tanh does (u + 2 rounded by a relative 2^-24 would move u / (u + 2) by an ulp there),
# and inf gives ±1. Below 0.55 a float's tanh is x + x³ P(x²): u / (u + 2) was 2 ulps off
# in half of those floats, and tanh(3.59e-4) was x itself, an ulp above, so x - tanh(x) gave 0
# where PyTorch has 2.9e-11 (fuzz seed 99004020). P fits (tanh(√t)/√t - 1)/t on t < 0.55²
# (Chebyshev nodes, degree 5: 1e-10 of tanh). Every float below 7e-3 is then rounded
# correctly and none is more than an ulp off, as PyTorch's (tests/test_overflow_gradients.py)
_TANH_DEFINITION = """#ifndef CLGRAD_TANH_{ctype}
#define CLGRAD_TANH_{ctype}
inline {ctype} clgrad_tanh_{ctype}({ctype} x) {{
  {ctype} a = fabs(x), t = a * a, u = expm1(a + a), two = ({ctype})(2);
  return copysign(a < ({ctype})(0.55f) ? {small} : ({ctype})(1) - two / (u + two), x);
}}
#endif
"""
_TANH_P = ("-3.33333333e-01f", "1.33333244e-01f", "-5.39647467e-02f", "2.18188748e-02f",
           "-8.52793513e-03f", "2.52850305e-03f")


def _tanh_near_zero(ctype: str) -> str:
    """tanh(a) for a < 0.55, in a's C type: a double's from expm1, which P cannot match."""
    if ctype.startswith("double"):
        return "u / (u + two)"
    horner = f"({ctype})({_TANH_P[-1]})"
    for coefficient in reversed(_TANH_P[:-1]):
        horner = f"fma({horner}, t, ({ctype})({coefficient}))"
    return f"fma(a * t, {horner}, a)"


# Vector loads and stores go through pointers to these element-aligned vector types, not
# vloadN/vstoreN: PoCL does not inline its builtins, and a call per vector costs more than the
# arithmetic it feeds (matmul 4x, elementwise ~1.5x). Guarded, since a program joins kernels.
_UNALIGNED_TYPES = ("char", "uchar", "short", "ushort", "int", "long", "float", "double")


def unaligned(storage: str, width: int) -> str:
    return f"{storage}{width}_u"


def unaligned_typedefs(width: int) -> str:
    if width == 1:
        return ""
    lines = [f"#ifndef CLGRAD_UNALIGNED_{width}", f"#define CLGRAD_UNALIGNED_{width}"]
    for t in _UNALIGNED_TYPES:
        lines.append(f"typedef {t}{width} __attribute__((aligned(sizeof({t})))) "
                     f"{unaligned(t, width)};")
    lines.append("#endif")
    return "\n".join(lines) + "\n"


# NaN as a value the compiler cannot see: PoCL folds exp/tanh/exp2/floor of a NaN literal to
# garbage and drops the store, so a NaN constant must never reach its optimiser.
# get_work_dim() (1 to 3) is unknown at build time; added to one less than the quiet NaN's bits
# it makes a NaN in any launch. Infinities too: from a constant -inf input PoCL folded
# softmax's exp(-inf - -inf) (NaN) to 1, so a row of -inf gave 1/n. +inf is the largest finite
# value's bits plus exactly 1: plus get_work_dim() it was a NaN in a matmul's 3-dim launch
# (its epilogue's logsumexp took an infinite max for finite; fuzz seeds 400440, 400463).
# OPAQUE_ONE is 1 for any work dim, through bits PoCL's optimiser does not follow (it folds
# get_work_dim() > 0, knowing its range).
OPAQUE_ONE = "(get_work_dim() & 1 | get_work_dim() >> 1)"
_OPAQUE_DECLARATIONS = {
    ("nan", 4): "const float nan_f32 = as_float(0x7fbfffffu + get_work_dim());",
    ("nan", 8): "const double nan_f64 = as_double(0x7ff7ffffffffffffUL + get_work_dim());",
    ("inf", 4): f"const float inf_f32 = as_float(0x7f7fffffu + {OPAQUE_ONE});",
    ("inf", 8): f"const double inf_f64 = as_double(0x7fefffffffffffffUL + {OPAQUE_ONE});",
    ("zero", 4): f"const uint zero_u32 = {OPAQUE_ONE} - 1u;",
}
# PoCL folds these of a NaN it computes from literals (0.001f / (0.0f + 0.0f), minus itself:
# an empty product's reciprocal in a softmax) to garbage too, where the others give NaN
# (fuzz edge seed 5300659). With guard_folds their argument's bits are xored with an opaque
# 0: the same value for every x, but none the optimiser can know (an arithmetic op with a
# NaN it folds to NaN whatever the other operand)
_FOLDED_WRONG = frozenset({Op.EXP, Op.TANH, Op.FLOOR, Op.CEIL})

_INT_MIN = {4: "INT_MIN", 8: "LONG_MIN"}     # integer registers' least values, by size


# sin and cos as the two results of one sincos (Target.sincos), for one C type
_SINCOS = """#ifndef CLGRAD_SINCOS_{ctype}
#define CLGRAD_SINCOS_{ctype}
inline {ctype} clgrad_sin_{ctype}({ctype} x) {{ {ctype} c; return sincos(x, &c); }}
inline {ctype} clgrad_cos_{ctype}({ctype} x) {{ {ctype} c; sincos(x, &c); return c; }}
#endif
"""


# PoCL's float vector sin, cos and tan are wrong in the lanes under 2^-7 once another lane
# takes their slow path (|x| from ~1e7, inf): sin(0.0048) was 0.0097 beside a -inf (fuzz edge
# seed 6200209). A vector with a lane from 1e5 up (below where the slow path starts) is taken
# twice: its far lanes from the call on all of it, the others from a call with those zeroed
_FAR_TRIG = frozenset({Op.SIN, Op.COS, Op.TAN})
_FAR_TRIG_DEFINITION = """#ifndef CLGRAD_{name}_FAR_{ctype}
#define CLGRAD_{name}_FAR_{ctype}
inline {ctype} clgrad_{name}_far_{ctype}({ctype} x) {{
  {ctype} y = {name}(x);
  int{n} far = isgreaterequal(fabs(x), ({ctype})(1e5f));
  return any(far) ? select({name}(select(x, ({ctype})(0.0f), far)), y, far) : y;
}}
#endif
"""


class Renderer:
    def __init__(self, width: int, target: Target):
        self.width = width
        self.target = target
        self.opaque: set[tuple[str, int]] = set()   # NaN, inf and 0 constants used, by size
        self.roundings: set[tuple[DType, int]] = set()  # (16-bit float, vector width) rounded
        self.sincos_types: set[str] = set()         # C types whose sin or cos is a sincos
        self.far_trig: set[tuple[str, str]] = set()     # (function, vector type) guarded
        self.tanh_types: set[str] = set()           # C types whose tanh is taken

    def prologue(self) -> list[str]:
        """Declarations the kernel body needs before its first line."""
        return [_OPAQUE_DECLARATIONS[key] for key in sorted(self.opaque)]

    def definitions(self) -> str:
        """Functions the kernel calls, defined before it (guarded: a program joins kernels)."""
        rounding = "".join(rounded.definition(dtype, width) for dtype, width in
                           sorted(self.roundings, key=lambda pair: (pair[0].name, pair[1])))
        return rounding + "".join(_SINCOS.format(ctype=c) for c in sorted(self.sincos_types)) \
            + "".join(_FAR_TRIG_DEFINITION.format(name=name, ctype=ctype, n=self.width)
                      for name, ctype in sorted(self.far_trig)) \
            + "".join(_TANH_DEFINITION.format(ctype=c, small=_tanh_near_zero(c))
                      for c in sorted(self.tanh_types))

    def _opaque(self, kind: str, dtype: DType) -> str:
        size = 8 if dtype.itemsize == 8 else 4      # half is computed as float
        self.opaque.add((kind, size))
        return f"{kind}_f{size * 8}"

    # ---- types and literals ----
    def ctype(self, dtype: DType, vec: bool) -> str:
        return f"{dtype.ctype}{self.width}" if vec else dtype.ctype

    def literal(self, value, dtype: DType) -> str:
        """A constant as C; negative ones in parentheses, so that `a - -3` stays a subtraction
        (`a--3` would be a decrement)."""
        if dtype == bool_:
            return "1" if value else "0"
        if not dtype.is_float:
            text = f"{int(value)}L" if dtype.itemsize == 8 else str(int(value))
            return f"({text})" if value < 0 else text
        if math.isnan(value):
            return self._opaque("nan", dtype)
        if math.isinf(value):
            inf = self._opaque("inf", dtype)
            return inf if value > 0 else f"(-{inf})"
        text = repr(float(value)) + ("" if dtype.itemsize == 8 else "f")
        return f"({text})" if text.startswith("-") else text

    def splat(self, v: Value) -> str:
        if v.vec:
            return v.code
        if v.dtype == bool_:
            return f"(({self.ctype(bool_, True)})(-({v.code})))"
        return f"(({self.ctype(v.dtype, True)})({v.code}))"

    def _mask(self, code: str, operand_dtype: DType) -> str:
        """A vector comparison of 64-bit lanes yields longN; bring it to the int mask form."""
        return f"convert_int{self.width}({code})" if operand_dtype.register_size == 8 else code

    # ---- operations ----
    def unary(self, op: Op, a: Value, out: DType) -> str:
        if op is Op.CAST:
            return self.cast(a, out)
        if op is Op.BITCAST:
            return self.bitcast(a, out)
        code = self._unary(op, a)
        if op in _LEAVE_RANGE or out.is_16_bit_float:
            return self.narrow(code, out, a.vec)
        return code

    def _unary(self, op: Op, a: Value) -> str:
        if op is Op.DETACH:
            return a.code
        if op is Op.NOT:     # logical on bools (0/1 scalars, 0/-1 masks), bitwise on ints
            return f"(!{a.code})" if a.dtype == bool_ and not a.vec else f"(~{a.code})"
        if self.target.guard_folds and op in _FOLDED_WRONG and a.dtype.is_float:
            a = self._unfoldable(a)
        if op is Op.TANH:
            return self._tanh(a)
        if op in (Op.SIN, Op.COS) and self.target.sincos and a.dtype.is_float:
            # sin and cos spelled as sincos: a compiler that merges a sin and a cos of one
            # value into a sincos with other results than its lone sin and cos (Intel's) then
            # computes the same bits for sin(x) whether or not its kernel also takes cos(x)
            ctype = self.ctype(a.dtype, a.vec)
            self.sincos_types.add(ctype)
            return f"clgrad_{op.name.lower()}_{ctype}({a.code})"
        if op in _FAR_TRIG and self.target.far_trig and a.vec and a.dtype.ctype == "float":
            name, ctype = op.name.lower(), self.ctype(a.dtype, True)
            self.far_trig.add((name, ctype))
            return f"clgrad_{name}_far_{ctype}({a.code})"
        table = _FLOAT_UNARY if a.dtype.is_float else _INT_UNARY
        if op not in table:
            raise TypeError(f"{op.name.lower()} is not defined for {a.dtype.name}")
        if op in (Op.NEG, Op.ABS) and not a.dtype.is_float:
            # from a 0 the compiler cannot see: Intel's still folded comparisons of 0 - x
            # with 0 into comparisons of x, wrong for INT_MIN (where(-x < 0, .., where(-x > 0,
            # ..)) took neither branch in vector code: fuzz seed 2700237)
            self.opaque.add(("zero", 4))
            negated = self._wrapping("(zero_u32-{0})", a.dtype, a.vec, a.code)
            return negated if op is Op.NEG else f"max({a.code},{negated})"
        return table[op].format(a.code)

    def _unfoldable(self, a: Value) -> Value:
        """a float value whose bits pass through an xor with an opaque 0 (_FOLDED_WRONG)."""
        self.opaque.add(("zero", 4))
        width = str(self.width) if a.vec else ""
        floats, bits = ("double", "ulong") if a.dtype.itemsize == 8 else ("float", "uint")
        return Value(f"as_{floats}{width}(as_{bits}{width}({a.code})^({bits})zero_u32)",
                     a.dtype, a.vec)

    def _wrapping(self, template: str, dtype: DType, vec: bool, *operands: str) -> str:
        """Signed integer arithmetic that wraps around, as PyTorch's, done on the unsigned
        type: signed overflow is undefined in OpenCL C and compilers use it (Intel's folded
        sign(-x) to -sign(x), 1 for x = INT_MIN, whose negation wraps to itself)."""
        width = str(self.width) if vec else ""
        unsigned = (f"as_u{dtype.ctype}{width}({x})" for x in operands)
        return f"as_{dtype.ctype}{width}({template.format(*unsigned)})"

    def _tanh(self, a: Value) -> str:
        ctype = self.ctype(a.dtype, a.vec)
        self.tanh_types.add(ctype)
        return f"clgrad_tanh_{ctype}({a.code})"

    @staticmethod
    def _select(if_false: str, if_true: str, cond: str) -> str:
        """cond ? if_true : if_false; a vector cond must be a mask of the operands' lane width
        (what comparing them gives). `?:` rather than select(): PoCL calls select() as a
        function, and a NaN-propagating max with it ran 15% slower than fmax; with `?:`, no
        slower."""
        return f"({cond}?{if_true}:{if_false})"

    def _nan_max(self, op: Op, x: str, y: str) -> str:
        """max (min) of floats where a NaN wins, as PyTorch's: y when it is larger (smaller)
        or NaN, else x. A NaN x stays: both comparisons with it are false. (fmax/fmin drop
        NaNs.)"""
        beats = f"({x}<{y})" if op is Op.MAX else f"({y}<{x})"
        return self._select(x, y, f"({beats}|({y}!={y}))")

    def _int_divide(self, op: Op, x: Value, y: str) -> str:
        """Integer / and % that cannot trap: x86 faults on a division by 0, and on the most
        negative value by -1. Those divide by 1 instead: x / -1 is -x (wrapping, as PyTorch,
        and from an opaque 0 as every integer negation: unary), x % -1 is 0, and by 0 the
        quotient is x and the remainder 0 (defined values; the frontend raises before a
        kernel divides by a zero it can see)."""
        safe = f"((({y}==0)|({y}==-1))?1:{y})"
        if op is Op.MOD:
            return f"({x.code}%{safe})"
        return f"(({y}==-1)?{self._unary(Op.NEG, x)}:({x.code}/{safe}))"

    def binary(self, op: Op, a: Value, b: Value) -> str:
        code = self._binary(op, a, b)
        if op in _LEAVE_RANGE or (a.dtype.is_16_bit_float and op not in (Op.CMPLT, Op.CMPEQ)):
            return self.narrow(code, a.dtype, a.vec or b.vec)
        return code

    def narrow(self, code: str, dtype: DType, vec: bool) -> str:
        """A register value brought back to what dtype holds: a narrow integer wrapped to its
        width (the int arithmetic under it cannot overflow), a float rounded to a 16-bit
        float."""
        width = self.width if vec else 1
        if dtype.is_16_bit_float:
            self.roundings.add((dtype, width))
            return f"{rounded.function(dtype, width)}({code})"
        if not dtype.is_narrow_int:
            return code
        if vec:
            return f"convert_int{width}(convert_{dtype.storage}{width}({code}))"
        return f"((int)({dtype.storage})({code}))"

    def _binary(self, op: Op, a: Value, b: Value) -> str:
        vec = a.vec or b.vec
        x, y = (self.splat(a), self.splat(b)) if vec else (a.code, b.code)
        if a.dtype == bool_ and op in _BOOL_AS_LOGIC:
            # masks are 0/-1, so order comparisons must be spelled as logic
            return _BOOL_AS_LOGIC[op].format(x, y, "~" if vec else "!")
        if op in (Op.DIV, Op.MOD) and a.dtype != bool_ and not a.dtype.is_float:
            return self._int_divide(op, Value(x, a.dtype, vec), y)
        if op in (Op.ADD, Op.SUB, Op.MUL) and not a.dtype.is_float and a.dtype != bool_:
            return self._wrapping(f"({{0}}{_INFIX[op]}{{1}})", a.dtype, vec, x, y)
        if op in _INFIX and not (op is Op.DIV and a.dtype == bool_):
            code = f"({x}{_INFIX[op]}{y})"
            if vec and op in (Op.CMPLT, Op.CMPEQ):
                return self._mask(code, a.dtype)
            return code
        if op in (Op.MAX, Op.MIN) and a.dtype.is_float:
            return self._nan_max(op, x, y)
        table = _FLOAT_CALL if a.dtype.is_float else _INT_CALL
        if op not in table:
            raise TypeError(f"{op.name.lower()} is not defined for {a.dtype.name}")
        return f"{table[op]}({x},{y})"

    def where(self, c: Value, a: Value, b: Value) -> str:
        if not (c.vec or a.vec or b.vec):
            return f"({c.code}?{a.code}:{b.code})"
        mask = self.splat(c)
        if a.dtype.register_size == 8:
            mask = f"convert_long{self.width}({mask})"
        return self._select(self.splat(b), self.splat(a), mask)

    def cast(self, a: Value, out: DType) -> str:
        if a.dtype == out:
            return a.code
        if out.is_narrow_int or out.is_16_bit_float:
            # through the register type: a float is truncated to int, then wrapped (-1.0 is
            # 255 as uint8, as in PyTorch), or rounded to a 16-bit float
            wide = self._cast(a, int32 if out.ctype == "int" else float32)
            return self.narrow(wide, out, a.vec)
        return self._cast(a, out)

    def bitcast(self, a: Value, out: DType) -> str:
        """a's stored bits read as out (dtype.register_bitcast's pairs): integers in int
        registers are wrapped to out's width, bfloat16 is the high half of its float."""
        if bool_ in (a.dtype, out):
            return self.cast(a, out)
        if a.dtype.ctype == out.ctype:
            return self.narrow(a.code, out, a.vec)
        n = self.width if a.vec else ""
        if a.dtype == bfloat16:
            return self.narrow(f"(as_uint{n}({a.code})>>16)", out, a.vec)
        if out == bfloat16:
            return f"as_float{n}(as_uint{n}({a.code})<<16)"
        return f"as_{out.ctype}{n}({a.code})"

    def _cast(self, a: Value, out: DType) -> str:
        if a.dtype.ctype == out.ctype and out != bool_:
            return a.code if a.dtype != bool_ or not a.vec else f"(-{a.code})"
        if out == bool_:
            code = f"({a.code}!=0)"
            return self._mask(code, a.dtype) if a.vec else code
        source = f"(-{a.code})" if (a.dtype == bool_ and a.vec) else a.code
        if a.vec and a.dtype.itemsize == 8 and not a.dtype.is_float and out.ctype == "float":
            # lane by lane: PoCL's LLVM 14 aborts on a vector int64-to-float conversion for
            # AVX2 targets ("Cannot select X86ISD::FILD v8f32")
            lanes = ",".join(f"(float){lane}" for lane in self.lanes(source))
            return f"(({self.ctype(out, True)})({lanes}))"
        if a.dtype.is_float and not out.is_float and self.target.float_to_int_min:
            assert not a.vec, "written out for one-lane targets (GPUs) only"
            return self._float_to_int_min(source, out)
        if a.vec:
            return f"convert_{out.ctype}{self.width}({source})"
        if a.dtype.is_float and out.ctype == "int":
            # Intel's compiler folds (float)(int)x into trunc(x) in scalar code: -0.0 for x in
            # (-1, 0), and NaN, inf or 3e9 kept where the int is INT_MIN (1 / x.int().float()
            # was -inf, PyTorch inf; fuzz seed 401274). It leaves convert_int alone.
            return f"convert_int({source})"
        return f"(({out.ctype}){source})"

    def _float_to_int_min(self, x: str, out: DType) -> str:
        """x converted to out's register type (int or long), and that type's minimum where x
        is NaN or out of its range, as on x86."""
        size = out.register_size
        bound = f"{float(2 ** (8 * size - 1))!r}f"      # a power of two: exact
        return (f"(({x}) >= -{bound} && ({x}) < {bound} ? convert_{out.ctype}({x}) "
                f": {_INT_MIN[size]})")

    # ---- memory ----
    # float16 is stored as half and computed as float: vload_half/vstore_half are core OpenCL,
    # so it works on devices without cl_khr_fp16 (PoCL's CPU device among them)
    # bfloat16 is stored as the high 16 bits of its float
    def load(self, buf: str, index: str, dtype: DType) -> str:
        if dtype == float16:
            return f"vload_half({index},{buf})"
        if dtype == bfloat16:
            return f"as_float((uint){buf}[{index}]<<16)"
        return f"{buf}[{index}]" if dtype.storage == dtype.ctype else f"((int){buf}[{index}])"

    def vload(self, buf: str, base: str, dtype: DType) -> str:
        n = self.width
        if dtype == float16:
            return f"vload_half{n}(0,{buf}+{base})"
        code = f"*(__global const {unaligned(dtype.storage, n)}*)({buf}+{base})"
        if dtype == bfloat16:
            return f"as_float{n}(convert_uint{n}({code})<<16)"
        if dtype == bool_:
            return f"(-convert_int{n}({code}))"
        return code if dtype.storage == dtype.ctype else f"convert_int{n}({code})"

    def pack(self, lanes: list[Value], dtype: DType) -> str:
        body = ",".join(v.code for v in lanes)
        if dtype == bool_:
            return f"(-({self.ctype(bool_, True)})({body}))"
        return f"(({self.ctype(dtype, True)})({body}))"

    def store(self, buf: str, index: str, v: Value) -> str:
        if v.dtype == float16:
            return f"vstore_half({v.code},{index},{buf});"
        if v.dtype == bfloat16:
            code = f"(ushort)(as_uint({self.narrow(v.code, bfloat16, False)})>>16)"
        else:
            code = v.code if v.dtype.storage == v.dtype.ctype else \
                f"({v.dtype.storage})({v.code})"
        return f"{buf}[{index}] = {code};"

    def store_lane(self, buf: str, index: str, v: Value, k: int) -> str:
        """Lane k of v stored alone (v a variable); a vector bool lane is a 0/-1 mask."""
        if not v.vec:
            return self.store(buf, index, v)
        lane = f"{v.code}.s{k:x}"
        lane = f"(-{lane})" if v.dtype == bool_ else lane
        return self.store(buf, index, Value(lane, v.dtype, False))

    def vstore(self, buf: str, base: str, v: Value) -> str:
        code = self.splat(v)
        if v.dtype == float16:
            return f"vstore_half{self.width}({code},0,{buf}+{base});"
        if v.dtype == bool_:
            code = f"convert_uchar{self.width}(-{code})"
        elif v.dtype == bfloat16:
            bits = f"as_uint{self.width}({self.narrow(code, bfloat16, True)})>>16"
            code = f"convert_ushort{self.width}({bits})"
        elif v.dtype.storage != v.dtype.ctype:
            code = f"convert_{v.dtype.storage}{self.width}({code})"
        return f"*(__global {unaligned(v.dtype.storage, self.width)}*)({buf}+{base}) = {code};"

    # ---- reductions ----
    def reduce_init(self, op: Op, dtype: DType) -> str:
        if op is Op.SUM:
            return self.literal(0, dtype)
        if op is Op.PROD:
            return self.literal(1, dtype)
        if op is Op.MIN:        # (int32 and int64 only: lower_reduce's amin of one)
            return {4: "INT_MAX", 8: "LONG_MAX"}[dtype.register_size]
        if dtype.is_float:
            return self.literal(-math.inf, dtype)
        return _INT_MIN[dtype.register_size] if dtype != bool_ else "0"

    def reduce_step(self, op: Op, acc: str, v: Value) -> str:
        if op is Op.SUM:
            return f"{acc} + {v.code}"
        if op is Op.PROD:
            return f"{acc} * {v.code}"
        if v.dtype == bool_:
            return f"{acc} | {v.code}"
        if v.dtype.is_float:    # a NaN is the max, as in PyTorch
            return self._nan_max(Op.MAX, acc, v.code)
        return f"{'min' if op is Op.MIN else 'max'}({acc},{v.code})"

    def iota(self, base: str, dtype: DType, vec: bool) -> str:
        """The index itself as a value; in vector code, base + (0, 1, ..., width-1)."""
        if not vec:
            return f"(({dtype.ctype}){base})"
        steps = ",".join(map(str, range(self.width)))
        vtype = self.ctype(dtype, True)
        return f"(({vtype})({base})+({vtype})({steps}))"

    def lanes(self, code: str) -> list[str]:
        return [f"{code}.s{k:x}" for k in range(self.width)]
