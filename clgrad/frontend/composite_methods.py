"""Tensor methods composed of other Tensor methods: PyTorch's other names for ops clgrad has,
in-place forms, shape and linear-algebra helpers, and elementwise functions written with the
primitives. Their gradients come from the parts; installed by tensor.py from METHODS."""
from __future__ import annotations

import math

import numpy as np

from ..compiler import dtype as dt
from ..compiler import ir, special
from ..compiler.ops import Op
from . import creation, indexing, inplace, joining
from . import elementwise as ew
from .backward import record
from .formula_steps import gradient_steps
from .no_derivative import named_in_place
from .scalar_inputs import number_node
from .operands import (as_float, broadcast_shape, broadcast_to, common_device, from_opmath,
                       is_tensor, normalize_dim, opmath)
from .type_info import finfo

_LN2, _LN10 = math.log(2.0), math.log(10.0)


def _alias(method: str):
    return lambda self, *args, **kwargs: getattr(self, method)(*args, **kwargs)


def _in_place(name: str):
    """x.name_(...): x takes x.name(...), which must keep x's dtype class, as in PyTorch. A
    comparison's 0s and 1s have gradient 0 (PyTorch's formula), not the one x's history would
    pass on if the bool result, outside autograd, left it in place."""
    def method(self, *args, **kwargs):
        before = inplace.snapshot(self)
        result = getattr(before, name)(*args, **kwargs)
        if name in _COMPARISONS and self.dtype.is_float:
            value = result.node.cast(self.dtype)
            result = record(name, value, self.device, [before],
                            derivation=ew.zero_gradient(value, before.node))
        return inplace.computed_result(self, named_in_place(result, f"{name}_"), f"{name}_")
    return method


_COMPARISONS = frozenset({"eq", "ne", "lt", "le", "gt", "ge"})


# ---- elementwise ----

def isinf(self):
    return self.abs() == math.inf if self.dtype.is_float else self.new_zeros(self.shape).bool()


def isfinite(self):
    return (self == self) & (self.abs() < math.inf) if self.dtype.is_float else \
        self.new_ones(self.shape).bool()


def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    """NaN, inf and -inf replaced; the gradient is PyTorch's, g where x is finite, g * 0 (NaN
    where g is inf or NaN) elsewhere."""
    if not self.dtype.is_float:
        return self.clone()
    largest = finfo(self.dtype).max
    x = self.node
    out = x.ne(x).where(nan, x)
    out = out.eq(math.inf).where(largest if posinf is None else posinf, out)
    out = out.eq(-math.inf).where(-largest if neginf is None else neginf, out)
    finite = (x.eq(x) & (x.abs() < math.inf)).cast(x.dtype)
    return record("nan_to_num", out, self.device, [self], derivation=ir.sloped(x, finite))


def trunc(self):
    return ew.where(self < 0, self.ceil(), self.floor()) if self.dtype.is_float else self.clone()


def frac(self):
    return self - trunc(self)


def _scaled_log(name: str, scale: float):
    """log(x) * scale; a 16-bit float's in float32, rounded once, as PyTorch's (not its log
    rounded to the type first: an ulp off in a quarter of the elements)."""
    def method(self):
        node = as_float(self.node)
        return record(name, from_opmath(opmath(node).log() * scale, node), self.device, [self])
    method.__name__ = name
    return method


log2 = _scaled_log("log2", 1 / _LN2)
log10 = _scaled_log("log10", 1 / _LN10)


def exp2(self):
    """2 ** x as pow(2, x) (exact at integers, where exp(x ln 2) is not); the gradient is
    PyTorch's, g * r * ln 2 of the result r, a 16-bit float's each step rounded."""
    node = as_float(self.node)
    x = opmath(node)
    out = from_opmath(x.const_like(2) ** x, node)
    return record("exp2", out, self.device, [self],
                  derivation=gradient_steps(node, [(Op.MUL, out), (Op.MUL, _LN2)], node.dtype))


def log1p(self):
    """log(1 + x), accurate near 0: log(u) * (x / (u - 1)) with u = 1 + x corrects u's
    rounding (the branch not taken divides by 1). The gradient is PyTorch's, g / (x + 1),
    a 16-bit float's x + 1 rounded to it, then the quotient."""
    node = as_float(self.node)
    x = opmath(node)
    return record("log1p", from_opmath(special.log1p(x), node), self.device, [self],
                  derivation=gradient_steps(node, [(Op.DIV, node + 1)], node.dtype))


def expm1(self):
    """exp(x) - 1, accurate near 0: (u - 1) * (x / log(u)) with u = exp(x) (Kahan). The
    gradient is PyTorch's, g * (r + 1) of the result r, a 16-bit float's each step rounded."""
    node = as_float(self.node)
    x = opmath(node)
    u = x.exp()
    plain = u.eq(1) | u.eq(math.inf) | (u - 1).eq(-1)
    corrected = (u - 1) * (x / plain.where(1.0, u.log()))     # x / log(u) is near 1
    out = from_opmath(u.eq(1).where(x, plain.where(u - 1, corrected)), node)
    return record("expm1", out, self.device, [self],
                  derivation=gradient_steps(node, [(Op.MUL, out + 1)], node.dtype))


def lerp(self, end, weight):
    """self + weight (end - self), computed as PyTorch's kernel does: from end,
    end - (end - self)(1 - weight), where |weight| >= 0.5, so that weight 1 gives end exactly
    (and lerp(-inf, 1, 0.7) inf, not NaN). The gradients are PyTorch's products: g (1 - w)
    to self, g w to end, g (end - self) to a tensor weight."""
    for name, other in (("end", end), ("weight", weight)):
        if is_tensor(other) and other.dtype != self.dtype and (name == "end" or other.ndim):
            raise RuntimeError(f"expected dtype {_C_NAMES.get(self.dtype, self.dtype.name)} for "
                               f"`{name}` but got dtype {_C_NAMES.get(other.dtype, other.dtype.name)}")
    if not is_tensor(end):
        raise TypeError(f"lerp(): argument 'end' must be Tensor, not {type(end).__name__}")
    if not self.dtype.is_float:
        kernel = "lerp_kernel_tensor" if is_tensor(weight) else "lerp_kernel_scalar"
        raise NotImplementedError(f'"{kernel}" not implemented for {self.dtype.name} (shapes '
                                  f"{self.shape} and {end.shape}); pass float tensors")
    tensors = [t for t in (self, end, weight) if is_tensor(t)]
    device = common_device("lerp", tensors)
    shape = broadcast_shape("lerp", *(t.shape for t in tensors))
    x, y = (opmath(broadcast_to(t.node, shape)) for t in (self, end))
    w = opmath(broadcast_to(weight.node.cast(self.dtype), shape)) if is_tensor(weight) \
        else number_node(float(weight), x.dtype, shape, device)
    value = special.lerp(x, y, w)
    derivation = ir.sloped(x, 1 - w) + ir.sloped(y, w)
    if is_tensor(weight):
        derivation = derivation + ir.sloped(w, y - x)
    return record("lerp_tensor" if is_tensor(weight) else "lerp", from_opmath(value, self.node),
                  device, tensors, derivation=from_opmath(derivation, self.node))


# C++'s names of the dtypes, as PyTorch's dtype checks print them
_C_NAMES = {dt.float32: "float", dt.float64: "double", dt.float16: "c10::Half",
            dt.bfloat16: "c10::BFloat16", dt.int64: "long int", dt.int32: "int",
            dt.int16: "short int", dt.int8: "signed char", dt.uint8: "unsigned char",
            dt.bool_: "bool"}


def addcmul(self, tensor1, tensor2, value=1):
    return self + value * tensor1 * tensor2


def addcdiv(self, tensor1, tensor2, value=1):
    return self + value * tensor1 / tensor2


def masked_fill(self, mask, value):
    if mask.dtype != dt.bool_:
        raise RuntimeError(f"masked_fill: expected a bool mask, got {mask.dtype.name}")
    return ew.where(mask, value, self)


# ---- shape ----

def movedim(self, source, destination):
    source = [normalize_dim("movedim", d, self.ndim) for d in np.atleast_1d(source).tolist()]
    destination = [normalize_dim("movedim", d, self.ndim)
                   for d in np.atleast_1d(destination).tolist()]
    if len(source) != len(destination):
        raise RuntimeError(f"movedim: Invalid source or destination dims: source ({source} dims)"
                           f" should contain the same number of dims as destination "
                           f"({destination} dims)")
    rest = iter(d for d in range(self.ndim) if d not in source)
    placed = dict(zip(destination, source))
    return self.permute(*[placed[d] if d in placed else next(rest) for d in range(self.ndim)])


def narrow(self, dim: int, start: int, length: int):
    dim = normalize_dim("narrow", dim, self.ndim)
    start = start + self.shape[dim] if start < 0 else start
    if not 0 <= start <= start + length <= self.shape[dim] or length < 0:
        raise RuntimeError(f"narrow: start ({start}) + length ({length}) exceeds dimension size "
                           f"({self.shape[dim]}) of a tensor of shape {self.shape}")
    return self[(slice(None),) * dim + (slice(start, start + length),)]


def split(self, split_size_or_sections, dim: int = 0):
    dim = normalize_dim("split", dim, self.ndim)
    n = self.shape[dim]
    if isinstance(split_size_or_sections, int):
        step = split_size_or_sections
        if step <= 0 and n:
            raise RuntimeError(f"split: split_size must be positive, got {step}")
        sizes = [min(step, n - s) for s in range(0, n, step)] if n else [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n:
            raise RuntimeError(f"split_with_sizes expects split_sizes to sum exactly to {n} "
                               f"(input tensor's size at dimension {dim}), but got "
                               f"split_sizes={sizes}")
    starts = np.cumsum([0] + sizes[:-1]).tolist()
    return tuple(narrow(self, dim, s, size) for s, size in zip(starts, sizes))


def chunk(self, chunks: int, dim: int = 0):
    if chunks <= 0:
        raise RuntimeError(f"chunk expects `chunks` to be greater than 0, got: {chunks}")
    n = self.shape[normalize_dim("chunk", dim, self.ndim)]
    return split(self, max(-(-n // chunks), 1), dim)


def unbind(self, dim: int = 0):
    dim = normalize_dim("unbind", dim, self.ndim)
    return tuple(self.select(dim, i) for i in range(self.shape[dim]))


def select(self, dim: int, index: int):
    dim = normalize_dim("select", dim, self.ndim)
    return self[(slice(None),) * dim + (index,)]


def tile(self, *dims):
    dims = tuple(dims[0]) if len(dims) == 1 and isinstance(dims[0], (tuple, list)) else dims
    dims = (1,) * (self.ndim - len(dims)) + tuple(dims)
    return self.reshape((1,) * (len(dims) - self.ndim) + self.shape).repeat(*dims)


def roll(self, shifts, dims=None):
    if dims is None:
        return roll(self.flatten(), shifts, 0).reshape(self.shape)
    out = self
    for shift, dim in zip(np.atleast_1d(shifts).tolist(), np.atleast_1d(dims).tolist()):
        n = out.shape[normalize_dim("roll", dim, out.ndim)]
        if n:
            k = shift % n
            out = joining.cat([narrow(out, dim, n - k, k), narrow(out, dim, 0, n - k)], dim)
    return out


def _band(self, diagonal: int, lower: bool):
    if self.ndim < 2:
        raise RuntimeError(f"{'tril' if lower else 'triu'}: input tensor must have at least 2 "
                           f"dimensions, got shape {self.shape}")
    rows, cols = self.shape[-2:]
    offset = creation.arange(cols, device=self.device).reshape(1, cols) - \
        creation.arange(rows, device=self.device).reshape(rows, 1)
    keep = offset <= diagonal if lower else offset >= diagonal
    return ew.where(keep, self, False if self.dtype == dt.bool_ else 0)     # (0 makes int64)


def tril(self, diagonal: int = 0):
    return _band(self, diagonal, True)


def triu(self, diagonal: int = 0):
    return _band(self, diagonal, False)


def diagonal(self, offset: int = 0, dim1: int = 0, dim2: int = 1):
    x = movedim(self, (dim1, dim2), (-2, -1))
    x = x[..., :, offset:] if offset >= 0 else x[..., -offset:, :]
    n = max(min(x.shape[-2:]), 0)
    x = x[..., :n, :n].reshape(*x.shape[:-2], n * n)
    return x[..., ::n + 1] if n else x      # a square's diagonal: every (n+1)-th element


def diag(self, diagonal: int = 0):
    if self.ndim == 2:
        return globals()["diagonal"](self, diagonal)
    if self.ndim != 1:
        raise RuntimeError(f"diag: expected a 1-D or 2-D tensor, got shape {self.shape}")
    k, n = abs(diagonal), self.shape[0]
    m = n + k
    padded = joining.cat([self, self.new_zeros(k)]) if k else self
    values = padded.reshape(m, 1).expand(m, m) if diagonal >= 0 else \
        padded.reshape(1, m).expand(m, m)
    return ew.where(_on_diagonal(m, diagonal, self.device), values, 0)


def _on_diagonal(m: int, k: int, device):
    offset = creation.arange(m, device=device).reshape(1, m) - \
        creation.arange(m, device=device).reshape(m, 1)
    return offset == k


def trace(self):
    if self.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {self.ndim}")
    return diagonal(self).sum()


# ---- products ----

def _vectors(op: str, a, b) -> None:
    if a.ndim != 1 or b.ndim != 1:
        raise RuntimeError(f"{op}: 1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors")


def outer(self, vec2):
    _vectors("outer", self, vec2)
    return self.reshape(-1, 1) * vec2.reshape(1, -1)


def dot(self, tensor):
    _vectors("dot", self, tensor)
    if self.shape != tensor.shape:
        raise RuntimeError(f"dot: inconsistent tensor size, expected tensor [{self.shape[0]}] "
                           f"and src [{tensor.shape[0]}] to have the same number of elements")
    if self.dtype != tensor.dtype:
        raise RuntimeError(f"dot: expected both vectors to have same dtype, but found "
                           f"{self.dtype.name} and {tensor.dtype.name}")
    return (self * tensor).sum()


def mv(self, vec):
    if self.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"mv: expected a matrix and a vector, got shapes {self.shape} and "
                           f"{vec.shape}")
    return (self @ vec.reshape(-1, 1)).reshape(self.shape[0])


# ---- indexing along a dim ----

def _along(self, op: str, dim: int, index):
    """self indexed at index along dim and at each position's own coordinates elsewhere."""
    dim = normalize_dim(op, dim, self.ndim)
    if index.ndim != self.ndim:
        raise RuntimeError(f"{op}: Index tensor must have the same number of dimensions as "
                           f"input tensor, got {index.ndim} and {self.ndim}")
    items = []
    for axis, size in enumerate(index.shape):
        if axis == dim:
            items.append(index)
        else:
            shape = [1] * index.ndim
            shape[axis] = size
            items.append(creation.arange(size, device=self.device).reshape(*shape))
    # the gradient is PyTorch's scatter_add_: a 16-bit float's summed in float32
    return indexing.getitem(self, tuple(items), partials_in_type=False)


def gather(self, dim: int, index, *, sparse_grad: bool = False):
    """(sparse_grad asks for a sparse gradient; clgrad's is always dense.)"""
    return _renamed("gather", self, _along(self, "gather", dim, index))


def take_along_dim(self, indices, dim: int | None = None):
    if dim is None:
        picked = indexing.getitem(self.flatten(), indices.flatten(), partials_in_type=False)
        return _renamed("take_along_dim", self, picked)
    return _renamed("take_along_dim", self, _along(self, "take_along_dim", dim, indices))


def index_select(self, dim: int, index):
    if index.ndim > 1:
        raise IndexError(f"index_select(): Index is supposed to be a vector, got shape "
                         f"{index.shape}")
    dim = normalize_dim("index_select", dim, self.ndim)
    # the gradient is PyTorch's index_add_ into zeros: along the first or last of 2 dims or
    # more by an int64 index, its scatter_add_ (a 16-bit float summed in float32, rounded
    # once); else slice by slice, each step rounded to the type
    in_type = not (self.ndim > 1 and dim in (0, self.ndim - 1) and index.dtype == dt.int64)
    picked = indexing.getitem(self, (slice(None),) * dim + (index.reshape(-1),), in_type)
    return _renamed("index_select", self, picked)


def _renamed(op: str, self, result):
    """result, computed by indexing self, recorded as op (its grad_fn is PyTorch's name)."""
    return record(op, result.node, self.device, [self])


# ---- creation like self, and facts ----

def _new(maker: str):
    def method(self, *size, dtype=None, device=None, requires_grad: bool = False):
        size = tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size
        return getattr(creation, maker)(size, dtype=dtype or self.dtype, device=device or self.device,
                    requires_grad=requires_grad)
    return method


def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad: bool = False):
    return creation.full(tuple(size), fill_value, dtype=dtype or self.dtype,
                         device=device or self.device, requires_grad=requires_grad)


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False):
    return creation.tensor(data, dtype=dtype or self.dtype, device=device or self.device,
                           requires_grad=requires_grad)


def stride(self, dim: int | None = None):
    """The strides of the tensor's row-major layout (every clgrad tensor reads as one)."""
    strides = tuple(int(math.prod(self.shape[i + 1:])) for i in range(self.ndim))
    return strides if dim is None else strides[normalize_dim("stride", dim, self.ndim)]


def get_device(self) -> int:
    """-1 on a CPU, as PyTorch's; on a GPU its index within its OpenCL platform."""
    return -1 if self.device.kind == "cpu" else int(self.device.spec.rsplit(":", 1)[-1])


# the device queries PyTorch's tensors answer
QUERIES = [
    ("is_cpu", property(lambda self: self.device.kind == "cpu")),
    ("is_cuda", property(lambda self: False)), ("get_device", get_device),
]

# PyTorch's second names for ops, numpy's: x.multiply(y) is x.mul(y), x.multiply_(y) x.mul_(y)
SECOND_NAMES = {"absolute": "abs", "negative": "neg", "multiply": "mul", "divide": "div",
                "subtract": "sub", "greater": "gt", "greater_equal": "ge", "less": "lt",
                "less_equal": "le", "not_equal": "ne", "fix": "trunc", "clip": "clamp"}

IN_PLACE = ("abs", "exp", "log", "sqrt", "sin", "cos", "tanh", "sigmoid", "relu", "neg",
            "reciprocal", "floor", "ceil", "round", "rsqrt", "sign", "square", "pow",
            "clamp_min", "clamp_max", "masked_fill", "lerp", "addcmul", "addcdiv", "fmod",
            "remainder", "trunc", "frac", "log2", "log10", "log1p", "expm1", "exp2",
            "nan_to_num", "tril", "triu", "logical_not", "addmm", "cumsum", "cumprod",
            "eq", "ne", "lt", "le", "gt", "ge", "floor_divide", "true_divide", "addbmm",
            "addmv", "addr", "baddbmm")

METHODS = [
    ("eq", _alias("__eq__")), ("ne", _alias("__ne__")), ("lt", _alias("__lt__")),
    ("le", _alias("__le__")), ("gt", _alias("__gt__")), ("ge", _alias("__ge__")),
    ("remainder", _alias("__mod__")), ("floor_divide", _alias("__floordiv__")),
    ("true_divide", _alias("div")), ("nelement", _alias("numel")),
    ("ndimension", _alias("dim")), ("swapaxes", _alias("transpose")),
    ("swapdims", _alias("transpose")), ("moveaxis", movedim), ("movedim", movedim),
    ("ravel", lambda self: self.reshape(-1)),
    ("broadcast_to", lambda self, *size: self.expand(*size)),
    ("clamp_min", lambda self, min: self.clamp(min=min)),
    ("clamp_max", lambda self, max: self.clamp(max=max)),
    ("isnan", lambda self: self != self), ("isinf", isinf), ("isfinite", isfinite),
    ("isposinf", lambda self: self == math.inf), ("isneginf", lambda self: self == -math.inf),
    ("nan_to_num", nan_to_num), ("trunc", trunc), ("frac", frac), ("fmod", ew.fmod),
    ("log2", log2), ("log10", log10), ("exp2", exp2), ("log1p", log1p), ("expm1", expm1),
    ("lerp", lerp), ("addcmul", addcmul), ("addcdiv", addcdiv), ("masked_fill", masked_fill),
    ("narrow", narrow), ("split", split), ("chunk", chunk), ("unbind", unbind),
    ("select", select), ("tile", tile), ("roll", roll), ("tril", tril), ("triu", triu),
    ("diagonal", diagonal), ("diag", diag), ("trace", trace),
    ("outer", outer), ("dot", dot), ("mv", mv),
    ("gather", gather), ("take_along_dim", take_along_dim), ("index_select", index_select),
    ("new_zeros", _new("zeros")), ("new_ones", _new("ones")), ("new_empty", _new("empty")), ("new_full", new_full), ("new_tensor", new_tensor),
    ("type_as", lambda self, other: ew.cast(self, other.dtype)),
    ("element_size", lambda self: self.dtype.itemsize),
    ("is_floating_point", lambda self: self.dtype.is_float),
    ("is_signed", lambda self: self.dtype != dt.bool_),
    ("is_contiguous", lambda self, memory_format=None: True),
    ("stride", stride),
    ("nbytes", property(lambda self: self.numel() * self.dtype.itemsize)),
    ("itemsize", property(lambda self: self.dtype.itemsize)),
] + [(f"{name}_", _in_place(name)) for name in IN_PLACE] + QUERIES + [
    (name + tail, _alias(first + tail)) for name, first in SECOND_NAMES.items()
    for tail in ("", "_")]
