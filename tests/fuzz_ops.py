"""The op families a fuzzed program draws its lines from. Each takes the Builder, picks its
operands and returns the line's expression (text that runs with fw = clgrad or fw = torch), or
None when it finds nothing valid; it may emit helper lines first (a positive version of an
operand). The Builder evaluates the expression and rejects what PyTorch refuses."""
from __future__ import annotations

import math

import torch

import fuzz_nn
from fuzz_gen import MARGIN, MAX_NUMEL, SIXTEEN_BIT, Builder, Value

# unary ops on floats: template, and where the op jumps (its output or its gradient)
UNARY = {
    "-{x}": None, "{x}.neg()": None, "{x}.abs()": "zero", "{x}.exp()": None,
    "{x}.log()": "positive", "{x}.sqrt()": "positive", "{x}.rsqrt()": "positive",
    "{x}.sin()": None, "{x}.cos()": None, "{x}.tanh()": None, "{x}.sigmoid()": None,
    "{x}.relu()": "zero", "{x}.sign()": "zero", "{x}.floor()": "integer",
    "{x}.ceil()": "integer", "{x}.round()": "half", "{x}.reciprocal()": "nonzero",
    "{x}.erf()": None, "{x}.erfc()": None, "{x}.expm1()": None, "{x}.atan()": None,
    "{x}.sinh()": None, "{x}.cosh()": None, "{x}.asinh()": None, "{x}.exp2()": None,
    "{x}.square()": None, "{x}.sinc()": None, "{x}.trunc()": "integer",
    "{x}.frac()": "integer", "{x}.log1p()": "positive", "{x}.log2()": "positive",
    "{x}.log10()": "positive", "{x}.lgamma()": "positive", "{x}.digamma()": "positive",
}
INT_UNARY = ("-{x}", "{x}.abs()", "{x}.sign()", "{x}.neg()", "{x}.square()")
ARITHMETIC = ("+", "-", "*", "/", "**")
# a op b whose value jumps where a / b is an integer
REMAINDERS = ("%", "//", "fw.fmod", "fw.remainder", "fw.floor_divide")
COMPARISONS = ("<", ">", "<=", ">=", "==", "!=")
CASTS = {"float": ".float()", "int32": ".int()", "int64": ".long()", "bool": ".bool()"}


def _distance(t: torch.Tensor, jump: str) -> torch.Tensor:
    """How far each element of t is from where an op of this jump kind jumps."""
    if jump == "integer":
        return t - t.round()
    if jump == "half":
        return t - (t.floor() + 0.5)
    return t


def unary(b: Builder) -> str | None:
    x = b.operand(("float", "int"))
    if x.kind == "int":
        return b.ch.pick(INT_UNARY).format(x=x.name)
    template = b.ch.pick(list(UNARY))
    jump = UNARY[template]
    if jump == "positive" or jump == "nonzero" and bool((x.t.abs() < 0.1).any()):
        x = b.positive(x)
    elif jump and not b.clear(_distance(x.t, jump), x.scale):
        return None
    return None if x is None else template.format(x=x.name)


def clamp(b: Builder) -> str | None:
    x = b.operand(("float", "int"))
    flat = x.t.flatten().double()
    flat = flat[torch.isfinite(flat)]
    if not flat.numel():
        return None
    # bounds inside the values' range, so that both clamp some elements
    lo, hi = (torch.quantile(flat, q).item() for q in (b.ch.integer(0, 40) / 100,
                                                     b.ch.integer(60, 100) / 100))
    lo, hi = (str(int(v)) if x.kind == "int" else f"{v:.3g}" for v in (lo, hi))
    if not (b.clear(x.t - float(lo), x.scale) and b.clear(x.t - float(hi), x.scale)):
        return None
    bounds = b.ch.pick((f"min={lo}, max={hi}", f"min={lo}", f"max={hi}", f"{lo}, {hi}"))
    return f"{x.name}.clamp({bounds})"


def binary(b: Builder) -> str | None:
    a = b.operand(("float", "int"))
    op = b.ch.pick(ARITHMETIC + ("maximum", "minimum") + REMAINDERS + ("fw.atan2",))
    if op in REMAINDERS:
        return _remainder(b, a, op)
    if op == "fw.atan2":
        return _atan2(b, a)
    if b.ch.chance(30) and op not in ("maximum", "minimum"):
        return _with_scalar(b, a, op)
    other = b.partner(a, ("float", "int") if b.ch.chance(30) else (a.kind,))
    if op == "/":
        if not b.edges and bool((other.t.abs() < 0.1).any()):
            other = b.positive(other)
    elif op == "**":
        a = b.positive(a)
        if other.kind == "int" or other.scale > 3:
            return None
    elif op in ("maximum", "minimum"):
        if not _clear_difference(b, a, other):
            return None
        return f"fw.{op}({a.name}, {other.name})"
    return None if a is None or other is None else f"{a.name} {op} {other.name}"


def _remainder(b: Builder, a: Value, op: str) -> str | None:
    """a % b, a // b, fmod or remainder: b clear of 0, a / b clear of the integers."""
    if b.ch.chance(30):
        divisor = b.ch.pick(("2.0", "0.75", "-1.5", "3", "-2") if a.kind == "float"
                            else ("2", "-3", "5", "1.5"))
        other = torch.tensor(float(divisor))
    else:
        value = b.partner(a, ("float", "int") if b.ch.chance(30) else (a.kind,))
        value = value if b.edges or bool((value.t.abs() >= 0.1).all()) else b.positive(value)
        if value is None:
            return None
        divisor, other = value.name, value.t
    if not b.edges:
        if bool((other == 0).any()):
            return None
        quotient = a.t.double() / other.double()
        if not b.clear(quotient - quotient.round(), max(float(quotient.abs().max()), 1.0)):
            return None
    if op in ("%", "//"):
        return f"{a.name} {op} {divisor}"
    return f"{op}({a.name}, {divisor})"


def _atan2(b: Builder, y: Value) -> str | None:
    """atan2(y, x): clear of the origin, and of y = 0 where x < 0 (it jumps from pi to -pi)."""
    if y.kind != "float":
        return None
    x = b.partner(y)
    ys, xs = torch.broadcast_tensors(y.t.double(), x.t.double())
    distance = torch.where(xs < 0, ys, torch.hypot(ys, xs))
    if not (b.edges or _clear_of_zero(distance, max(y.scale, x.scale))):
        return None
    return f"fw.atan2({y.name}, {x.name})"


def _with_scalar(b: Builder, a: Value, op: str) -> str | None:
    """a op number, or number op a (a reflected operator)."""
    number = b.scalar(b.ch.pick(("float", "int")))
    if op == "**":
        if a.kind == "int":
            return f"{a.name} ** {b.ch.pick(('2', '3', '1', '0'))}"
        if b.ch.chance(30):
            return f"{b.ch.pick(('2.0', '0.5', '3.0'))} ** {a.name}"
        a = b.positive(a)
        exponent = b.ch.pick(("2", "0.5", "-1", "3", "1.5", "-0.5"))
        return None if a is None else f"{a.name} ** {exponent}"
    if b.ch.chance(50):
        if op == "/":
            a = b.positive(a)
        return None if a is None else f"{number} {op} {a.name}"
    return f"{a.name} {op} {number}" if not (op == "/" and float(number) == 0) else None


def _clear_difference(b: Builder, x: Value, y: Value) -> bool:
    """Whether x and y are nowhere nearly but not exactly equal (a tie both sides break the
    same way, or a clear winner)."""
    if x.kind == "bool" or y.kind == "bool":
        return True
    d = x.t.double() - y.t.double()
    return b.clear(d, max(x.scale, y.scale))


def compare(b: Builder) -> str | None:
    a = b.operand(("float", "int"))
    if b.ch.chance(30):
        number = b.scalar(a.kind)
        other_t = torch.tensor(float(number))
        if not b.clear(a.t.double() - other_t.double(), a.scale):
            return None
        return f"{a.name} {b.ch.pick(COMPARISONS)} {number}"
    other = b.partner(a, (a.kind,))
    if not _clear_difference(b, a, other):
        return None
    return f"{a.name} {b.ch.pick(COMPARISONS)} {other.name}"


def logical(b: Builder) -> str | None:
    m = b.operand(("bool",))
    if b.ch.chance(30):
        return f"~{m.name}"
    return f"{m.name} {b.ch.pick(('&', '|'))} {b.partner(m, ('bool',)).name}"


def where(b: Builder) -> str | None:
    if any(v.kind == "bool" for v in b.pool) and b.ch.chance(50):
        cond = b.operand(("bool",))
    else:           # a comparison line feeding the where
        comparison = compare(b)
        cond = comparison and b.emit(comparison)
    if cond is None:
        return None
    a = b.partner(cond, ("float",) if b.ch.chance(80) else ("float", "int"))
    other = b.scalar() if b.ch.chance(25) else b.partner(cond, (a.kind,)).name
    return f"fw.where({cond.name}, {a.name}, {other})"


def cast(b: Builder) -> str | None:
    x = b.operand(("float", "int", "bool"))
    target = b.ch.pick(list(CASTS))
    if x.kind == "float" and target != "float":
        jump = "zero" if target == "bool" else "integer"
        if not b.clear(_distance(x.t, jump), x.scale):
            return None
        limit = 2.0 ** (31 if target == "int32" else 63)
        if target != "bool" and not bool((x.t.double().abs() < limit).all()):
            return None     # NaN, inf or out of range: undefined in C, the CPU's in PyTorch
    return x.name + CASTS[target]


def _clear_of_zero(t: torch.Tensor, scale: float) -> bool:
    return bool((t.abs() > MARGIN * max(scale, 1e-6)).all())


def _dims(b: Builder, x: Value, tuples: bool) -> tuple[str, tuple]:
    """A dim argument for a reduction over x ("" for all dims) and the axes it names."""
    ndim = x.t.dim()
    if ndim == 0 and not b.edges or b.ch.chance(20):
        return "", tuple(range(ndim))
    if tuples and ndim >= 2 and b.ch.chance(30):
        axes = sorted({b.ch.integer(0, ndim - 1) for _ in range(b.ch.integer(1, ndim))})
        return f"dim={tuple(axes)!r}", tuple(axes)
    d = b.dim(ndim)
    return f"dim={d}", ((d % ndim,) if ndim else ())


def _keepdim(b: Builder, dims: str) -> str:
    return dims + (", keepdim=True" if dims and b.ch.chance(40) else "")


def _clear_top(b: Builder, x: Value, axes: tuple, largest: bool) -> bool:
    """Whether the largest (or smallest) element of every row along axes is unique by a clear
    margin, or tied exactly."""
    t = x.t
    if b.edges or not t.is_floating_point() or t.dim() == 0:
        return True
    rows = _rows(t, axes)
    if rows.shape[1] < 2:
        return True
    top = rows.double().topk(2, dim=1, largest=largest).values
    return b.clear(top[:, 0] - top[:, 1], x.scale)


def _rows(t: torch.Tensor, axes: tuple) -> torch.Tensor:
    """t's elements along axes as the rows of a matrix, one row per element of the result."""
    rows = t.movedim(axes, tuple(range(t.dim() - len(axes), t.dim())))
    return rows.reshape(-1, math.prod(t.shape[a] for a in axes))


def _order_decides_product(x: Value, axes: tuple) -> bool:
    """Whether some row's product along axes is inf in one order of its multiplications and
    NaN in another. A row with an inf (and no 0 or NaN) is inf unless a partial product of
    its small elements underflows to 0 before it meets the inf; one with a 0 (and no inf or
    NaN) is 0 unless one of its large elements overflows to inf first. Where the small
    elements multiply to below the smallest normal number (or the large ones overflow),
    either can happen, and which does is an artefact of the order: PyTorch's CPU kernel
    multiplies each of 4 vectors' lanes down its row, then the vectors, then the lanes in
    turn (so the order depends on its AVX2 or AVX-512 build), then the elements past the
    last 4 vectors, and splits rows of 32768 elements and more between its threads; clgrad's
    lanes are the device's vector width, and meet as mantissas and exponents apart. The two
    agree by chance only (fuzz seeds 502066: PyTorch inf; 1102031: PyTorch NaN, the small
    elements' product 1e-533, below even float64's range), so no such line is kept. Nor
    one whose finite elements multiply to inf or 0 in one order only: the large ones'
    product past the type's range, all of them within it (edge seed 100300536: 128 float16
    values whose product is 1698, PyTorch's inf), or the small ones' below it."""
    t = x.t
    if not t.is_floating_point() or t.numel() == 0:
        return False
    rows = _rows(t, axes).double()
    size, info = rows.abs(), torch.finfo(t.dtype)
    finite = torch.isfinite(rows)
    small = torch.where(finite & (size < 1) & (size > 0), size.log2(), 0.0).sum(1)
    large = torch.where(finite & (size > 1), size.log2(), 0.0).sum(1)
    has_inf, has_zero = rows.isinf().any(1), (rows == 0).any(1)
    low, high = math.log2(info.tiny), math.log2(info.max)
    under, over, whole = small < low, large >= high, small + large
    undecided = ((has_inf & ~has_zero & under) | (has_zero & ~has_inf & over)
                 | (~has_inf & ~has_zero & ((over & (whole < high)) | (under & (whole > low))
                                            | (over & under))))
    return bool((undecided & ~rows.isnan().any(1)).any())


def reduce_(b: Builder) -> str | None:
    x = b.operand(("float", "int", "bool") if b.ch.chance(20) else ("float",))
    op = b.ch.pick(("sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod",
                    "var", "std", "logsumexp", "softmax", "log_softmax"))
    # PyTorch takes a tuple of dims for these only
    dims, axes = _dims(b, x, tuples=op in ("sum", "mean", "amax", "amin", "var", "std"))
    if op in ("max", "min", "argmax", "argmin", "amax", "amin"):
        if not _clear_top(b, x, axes, largest=op in ("max", "argmax", "amax")):
            return None
        if op in ("max", "min") and dims:
            return f"{x.name}.{op}({_keepdim(b, dims)}){b.ch.pick(('.values', '.indices', '[0]'))}"
    if op in ("logsumexp", "softmax", "log_softmax") and not dims:
        return None
    if op in ("softmax", "log_softmax") and x.kind != "float":
        return None     # PyTorch refuses integers and bools, but not empty ones: no answer
    if op == "prod" and not b.edges and math.prod(x.shape[a] for a in axes) > 24:
        return None     # a product of many elements under- or overflows
    if op == "prod" and _order_decides_product(x, axes):
        return None
    if op in ("var", "std") and math.prod(x.shape[a] for a in axes) < 2 and not b.edges:
        return None
    if op == "std" and not b.edges and not _clear_of_zero(x.t.double().std(dim=axes or None),
                                                          x.scale):
        return None     # sqrt's gradient is infinite at 0 (PyTorch makes it 0 there)
    keep = dims if op in ("softmax", "log_softmax") else _keepdim(b, dims)
    return f"{x.name}.{op}({keep})"


def _factor_shape(b: Builder, numel: int) -> list[int]:
    """A random shape with numel elements (0 goes last when numel is 0)."""
    dims, left = [], numel
    for _ in range(b.ch.integer(0, 3)):
        divisors = [d for d in range(1, min(left, 64) + 1) if left % d == 0] or [1, 2, 3]
        d = b.ch.pick(divisors)
        dims.append(d)
        left //= d
    dims.append(left)
    order = [dims[i] for i in _permutation(b, len(dims))]
    if numel and b.ch.chance(30):
        order[b.ch.integer(0, len(order) - 1)] = -1
    return order


def _permutation(b: Builder, n: int) -> list[int]:
    left, out = list(range(n)), []
    while left:
        out.append(left.pop(b.ch.integer(0, len(left) - 1)))
    return out


def reshape(b: Builder) -> str | None:
    x = b.operand(("float", "int", "bool"))
    dims = ", ".join(map(str, _factor_shape(b, x.t.numel())))
    how = b.ch.pick(("reshape", "view", "flatten", "flatten_range"))
    if how == "view":
        return f"{x.name}{'' if x.t.is_contiguous() else '.contiguous()'}.view({dims})"
    if how == "flatten":
        return f"{x.name}.flatten()"
    if how == "flatten_range" and x.t.dim() >= 2:
        start = b.ch.integer(0, x.t.dim() - 2)
        return f"{x.name}.flatten({start}, {b.ch.integer(start, x.t.dim() - 1)})"
    return f"{x.name}.reshape({dims})"


def permute(b: Builder) -> str | None:
    x = b.operand(("float", "int", "bool"), min_ndim=1)
    ndim = x.t.dim()
    form = b.ch.pick(("permute", "transpose", "t", "unsqueeze", "squeeze", "contiguous"))
    if form == "permute":
        return f"{x.name}.permute({', '.join(map(str, _permutation(b, ndim)))})"
    if form == "transpose":
        return f"{x.name}.transpose({b.dim(ndim)}, {b.dim(ndim)})"
    if form == "t" and ndim <= 2:
        return f"{x.name}.t()"
    if form == "unsqueeze":
        return f"{x.name}.unsqueeze({b.ch.integer(-ndim - 1, ndim)})"
    if form == "squeeze":
        ones = [d for d, s in enumerate(x.shape) if s == 1]
        return f"{x.name}.squeeze({b.ch.pick(ones)})" if ones and b.ch.chance(60) \
            else f"{x.name}.squeeze()"
    return f"{x.name}.contiguous()"


def expand(b: Builder) -> str | None:
    x = b.operand(("float", "int", "bool"))
    sizes = ["-1"] * x.t.dim()
    numel = max(x.t.numel(), 1)
    for d, s in enumerate(x.shape):
        if s == 1:
            grow = b.size(MAX_NUMEL // numel)
            numel *= max(grow, 1)
            sizes[d] = str(grow)
    if b.ch.chance(40) or not x.t.dim():
        lead = b.size(MAX_NUMEL // numel)
        sizes.insert(0, str(lead))
    return f"{x.name}.expand({', '.join(sizes)})"


def join(b: Builder) -> str | None:
    """fw.cat or fw.stack of x with one or two values of fitting shapes."""
    x = b.operand(("float", "int", "bool") if b.ch.chance(20) else ("float",), min_ndim=1)
    stack = b.ch.chance(30)
    d = b.dim(x.t.dim() + 1) if stack else b.dim(x.t.dim())
    parts = [x]
    for _ in range(b.ch.integer(1, 2)):
        shape = list(x.shape)
        if not stack:
            # the other dims' elements, not x's numel // shape[d]: an x empty along another
            # dim has a numel of 0 however large its other dims (an expand of it), and the
            # new input took MAX_NUMEL along d times those (15 GB: edge seed 5300951)
            rest = math.prod(s for i, s in enumerate(shape) if i != d % len(shape))
            shape[d] = b.size(MAX_NUMEL // max(rest, 1)) if rest <= MAX_NUMEL else 0
        same = [v for v in b.pool if v.shape == tuple(shape) and v.kind == x.kind]
        parts.append(b.ch.pick(same) if same and b.ch.chance(50)
                     else b.new_input(tuple(shape), "float32" if x.kind == "float" else "int64"))
    names = ", ".join(p.name for p in parts)
    return f"fw.{'stack' if stack else 'cat'}([{names}], dim={d})"


def _slice_item(b: Builder, n: int) -> str:
    form = b.ch.pick((":", "int", "slice", "None", "negative"))
    if form == "int" and n:
        return str(b.ch.integer(0, n - 1))
    if form == "negative" and n:
        return str(-b.ch.integer(1, n))
    if form == "slice":
        start = b.ch.pick(("", "1", "-3", "2"))
        stop = b.ch.pick(("", "-1", "5", "100"))
        step = b.ch.pick(("", "2", "3", "7"))
        return f"{start}:{stop}" + (f":{step}" if step else "")
    return "None" if form == "None" else ":"


def slice_(b: Builder) -> str | None:
    x = b.operand(("float", "int", "bool"), min_ndim=1)
    items = [_slice_item(b, n) for n in x.shape[:b.ch.integer(1, x.t.dim())]]
    if b.ch.chance(30):
        items.insert(b.ch.integer(0, len(items)), "...")
    return f"{x.name}[{', '.join(items)}]"


def index(b: Builder) -> str | None:
    """Reading through integer index tensors or a boolean mask, on the first or second dim."""
    x = b.operand(("float", "int", "bool") if b.ch.chance(20) else ("float",), min_ndim=1)
    d = 1 if x.t.dim() >= 2 and b.ch.chance(30) else 0
    n, lead = x.shape[d], ":, " * d
    form = b.ch.pick(("list", "mask", "pool", "compare", "two"))
    if form == "mask" and n <= 16:
        bits = [b.ch.chance(50) for _ in range(n)]
        return f"{x.name}[{lead}fw.tensor({bits!r})]"
    if form == "pool":
        fits = [v for v in b.pool if v.kind == "int" and v.t.numel() and v.t.min() >= -n
                and v.t.max() < n]
        if fits:
            return f"{x.name}[{lead}{b.ch.pick(fits).name}]"
    if form == "compare" and x.kind == "float" and b.clear(x.t - 0.3, x.scale):
        return f"{x.name}[{x.name} > 0.3]"
    picks = [b.ch.integer(-n, n - 1) for _ in range(b.ch.integer(1, 6))] if n else []
    if form == "two" and x.t.dim() >= 2 and d == 0:
        second = [b.ch.integer(0, x.shape[1] - 1) for _ in picks] if x.shape[1] else []
        return f"{x.name}[fw.tensor({picks!r}), fw.tensor({second!r})]"
    return f"{x.name}[{lead}fw.tensor({picks!r})]"


def scatter(b: Builder) -> str | None:
    """Writing rows at integer indices along dim 0: adds (rows written twice add up) or copies
    (to distinct rows: which of two writes wins is the kernel's choice)."""
    x = b.operand(("float",), min_ndim=1)
    n = x.shape[0]
    if not n:
        return None
    form = b.ch.pick(("index_add", "index_copy", "scatter_add", "index_put"))
    picks = [b.ch.integer(0, n - 1) for _ in range(b.ch.integer(1, 6))]
    if form == "index_copy":
        picks = sorted(set(picks))
    src = b.new_input((len(picks),) + tuple(x.shape[1:]))
    index = f"fw.tensor({picks!r})"
    if form == "scatter_add":
        rows = (len(picks),) + (1,) * (x.t.dim() - 1)
        index = f"{index}.reshape({rows}).expand({tuple(src.shape)})"
        return f"{x.name}.scatter_add(0, {index}, {src.name})"
    if form == "index_put":
        return f"{x.name}.index_put(({index},), {src.name}, accumulate=True)"
    return f"{x.name}.{form}(0, {index}, {src.name})"


def matmul(b: Builder) -> str | None:
    a = b.operand(("float",), min_ndim=1)
    # its other operand in its dtype, as conv's weight: PyTorch refuses two dtypes but in
    # a batched product with an empty operand (edge seeds 100100367, 100300519), so matmul
    # takes a again, and is not drawn where new inputs come in another type
    if a.t.dtype in SIXTEEN_BIT and b.narrow_to is None:
        with b.narrowed(a):
            return matmul(b)
    if b.narrow_to not in (None, a.t.dtype):
        return None
    k = a.shape[-1]
    # the product and the new operand stay within MAX_NUMEL, also when a is empty (an edge's
    # 0 rows by k = 1000 once drew a 30x8x1000x1000 operand: minutes of PyTorch reference)
    m = b.size(MAX_NUMEL // max(math.prod(a.shape[:-1]), k, 1))
    lead = a.shape[:-2]
    fits = math.prod(lead) * max(k, a.shape[-2] if lead else 1) * m <= MAX_NUMEL
    batch = lead if lead and fits and b.ch.chance(60) else ()
    form = b.ch.pick(("@", "matmul", "fw.matmul", "mm", "bmm", "vector", "transposed",
                      "transposed_left", "self"))
    if form == "self" and a.t.dim() >= 2:
        return f"{a.name} @ {a.name}.transpose(-1, -2)"
    if form == "transposed_left" and a.t.dim() >= 2:
        return f"{a.name}.transpose(-1, -2) @ {b.new_input(batch + (a.shape[-2], m)).name}"
    if form == "vector":
        return f"{a.name} @ {b.new_input((k,)).name}"
    if form == "transposed":
        w = b.new_input(batch + (m, k))
        return f"{a.name} @ {w.name}.{'t()' if not batch else 'transpose(-2, -1)'}"
    w = b.new_input(batch + (k, m))
    if form == "mm" and a.t.dim() == 2:
        return f"{a.name}.mm({w.name})"
    if form == "bmm" and a.t.dim() == 3 and batch:
        return f"{a.name}.bmm({w.name})"
    if form == "fw.matmul":
        return f"fw.matmul({a.name}, {w.name})"
    return f"{a.name}.matmul({w.name})" if form == "matmul" else f"{a.name} @ {w.name}"


def conv(b: Builder) -> str | None:
    """A convolution, transposed convolution or pooling of a float value of 3 or 4 dims
    (batch, channels, then 1 or 2 spatial): im2col views, which reach the matmul kernel as
    gathered operands. A max pool takes a new input, whose distinct values leave no near
    ties for the two frameworks to break apart."""
    x = b.operand(("float",), min_ndim=3)
    if x.t.dtype in SIXTEEN_BIT and b.narrow_to is None:
        with b.narrowed(x):     # its weight in its dtype: PyTorch refuses another (but for an
            return conv(b)      # empty input: edge seed 94001114), so conv takes x again
    if b.narrow_to not in (None, x.t.dtype):
        return None
    spatial = len(x.shape) - 2
    if spatial > 2:
        return None
    kernel = tuple(b.ch.integer(1, 3) for _ in range(spatial))
    stride, padding = b.ch.integer(1, 2), b.ch.integer(0, min(kernel) // 2)
    form = b.ch.weighted({"conv": 6, "transposed": 2, "avg_pool": 1, "max_pool": 1})
    if form.endswith("pool"):
        if form == "max_pool":
            x = b.new_input(x.shape)
        return f"fw.nn.functional.{form}{spatial}d({x.name}, {kernel}, {stride}, {padding})"
    channels = x.shape[1]
    groups = b.ch.pick([g for g in (1, 2, 3) if channels % g == 0])
    out = groups * b.ch.integer(1, 3)
    dilation = b.ch.pick((1, 1, 2))
    output_padding = 0
    if form == "transposed":
        weight = b.new_input((channels, out // groups) + kernel)
        output_padding = b.ch.integer(0, max(stride, dilation) - 1)
        extra = f", output_padding={output_padding}"
    else:
        weight, extra = b.new_input((out, channels // groups) + kernel), ""
    bias = f", {b.new_input((out,)).name}" if b.ch.chance(50) else ""
    name = f"conv_transpose{spatial}d" if form == "transposed" else f"conv{spatial}d"
    weight = weight.name
    if b.edges and padding:
        # an inf or NaN of the output's gradient (a transposed one's: of its input) meets the
        # padding's zeros in the weight gradient: a NaN or not as PyTorch's backend and
        # oneDNN's algorithm decide (its slow path, a batch of one, forms the product; oneDNN
        # skips it, as clgrad, but in some dilated and grouped shapes: of 168 small shapes of
        # 3-wide kernels, 106 NaN; edge seed 100102960; a transposed one's in float32 by a
        # batch of one as clgrad, by two as oneDNN, in bfloat16 neither: edge seed
        # 101300116), so the weight gradient is not compared
        weight = f"{weight}.detach()"
    if b.edges and (output_padding or padding and form == "conv"):
        # where the padding's zeros meet an inf or NaN weight, PyTorch's backend decides:
        # a float32 convolution's slow path (a batch of one) multiplies them (NaN, as clgrad),
        # oneDNN's (a larger batch, a 16-bit type) skips them (edge seed 101101570); a
        # transposed one's output padding, which no input reaches, is 0 on the slow path (as
        # clgrad) and NaN in some cells on oneDNN's (edge seed 101002175): the weight is
        # made finite, an inf 1 or -1 (as float max, products of it overflow in a sum where
        # its order decides: a NaN for PyTorch, -inf for clgrad and float64; edge seed
        # 101300428)
        weight = f"{weight}.nan_to_num(0.0, 1.0, -1.0)"
    return (f"fw.nn.functional.{name}({x.name}, {weight}{bias}, stride={stride}, "
            f"padding={padding}{extra}, dilation={dilation}, groups={groups})")


def scan(b: Builder) -> str | None:
    """Running sums and products along a dim, and the ops that move elements within one:
    flip, roll, tril/triu, gather, sort and topk (whose rows must hold no near ties), diff."""
    x = b.operand(("float", "int") if b.ch.chance(20) else ("float",), min_ndim=1)
    ndim = x.t.dim()
    d = b.dim(ndim)
    length = x.shape[d]
    form = b.ch.pick(("cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "flip", "roll",
                      "tril", "triu", "gather", "sort", "topk", "diff"))
    if form == "cumprod" and length > 24 and not b.edges:
        return None     # a product of many elements under- or overflows
    if form in ("logcumsumexp", "cummax", "cummin") and x.kind != "float":
        return None
    if form in ("cummax", "cummin", "sort", "topk") \
            and not _distinct_along(b, x, d, ties=form.startswith("cum")):
        return None
    if form in ("cumsum", "cumprod", "logcumsumexp"):
        return f"{x.name}.{form}({d})"
    if form in ("cummax", "cummin"):
        return f"{x.name}.{form}({d}).{b.ch.pick(('values', 'indices'))}"
    if form == "flip":
        return f"{x.name}.flip({d})"
    if form == "roll":
        return f"{x.name}.roll({b.ch.integer(-3, 5)}, {d})"
    if form in ("tril", "triu"):
        return f"{x.name}.{form}({b.ch.integer(-2, 2)})" if ndim >= 2 else None
    if form == "sort":
        return f"{x.name}.sort({d}, descending={b.ch.chance(50)}).values"
    if form == "topk":
        k = b.ch.integer(0, length) if length else 0
        return f"{x.name}.topk({k}, {d}, largest={b.ch.chance(50)}).values"
    if form == "diff":
        return f"{x.name}.diff(dim={d})"
    # gather: an index of x's shape but for a few picks along d
    shape = list(x.shape)
    shape[d] = b.ch.integer(1, 4) if length else 0
    picks = [b.ch.integer(0, length - 1) for _ in range(math.prod(shape))] if length else []
    index = f"fw.tensor({picks!r}, dtype=fw.int64).reshape({tuple(shape)!r})"
    return f"{x.name}.gather({d}, {index})"


def _distinct_along(b: Builder, x: Value, d: int, ties: bool) -> bool:
    """Whether the elements of each row along d are apart by a clear margin, or (where ties
    is true: cummax's rule for them is PyTorch's, sort's and topk's order of equals is not)
    tied exactly. With edges, only whether no two are equal (two infinities, two NaNs)."""
    if ties and b.edges or x.kind != "float" or x.t.numel() == 0 or x.shape[d] < 2:
        return True
    ordered = x.t.double().movedim(d, -1).sort(-1).values
    low, high = ordered[..., :-1], ordered[..., 1:]
    if b.edges:
        return not bool(((low == high) | (low.isnan() & high.isnan())).any())
    gaps = high - low
    return b.clear(gaps, x.scale) and (ties or bool((gaps != 0).all()))


# in-place ops: template of the call on t (a float), and where its value or gradient jumps
IN_PLACE = {"add_({n})": None, "sub_({n})": None, "mul_({n})": None, "div_({n})": None,
            "clamp_(-0.5, 0.75)": (-0.5, 0.75), "relu_()": (0.0,), "sigmoid_()": None,
            "tanh_()": None, "neg_()": None, "abs_()": (0.0,), "pow_(2)": None,
            "masked_fill_({v} > 0.25, -1.0)": (0.25,), "exp_()": None}


def in_place(b: Builder) -> str | None:
    """An in-place op on a copy of a value, or on a view of that copy (a slice, a transpose,
    a row picked by an integer), the copy then read whole: PyTorch's version counters and
    CopySlices, which clgrad's in-place writes into a base must reproduce."""
    x = b.operand(("float",), min_ndim=1)
    call = b.ch.pick(list(IN_PLACE))
    for point in IN_PLACE[call] or ():
        if not b.clear(x.t - point, max(x.scale, 1.0)):
            return None
    number = b.scalar("float").replace("1e-3", "4.0")      # (no quotient past MAX_MAGNITUDE)
    if b.ch.chance(30):
        return f"{x.name}.clone().{call.format(n=number, v=x.name)}"
    view = b.ch.pick(("[1:]", "[::2]", "[0]", ".transpose(0, -1)", "[..., :1]", "[-1:]"))
    if not x.shape[0] and view == "[0]":
        return None
    return f"(lambda t: (t{view}.{call.format(n=number, v='t' + view)}, t)[1])({x.name}.clone())"


import fuzz_narrow  # noqa: E402 (it hands 16-bit values to this module's families)

# op family -> weight. The 16-bit family comes last and keeps the total under 128: a seed
# draws what it drew before it was added up to its first 16-bit line (random.randint draws
# as many bits for any total from 64 to 127, and a draw past the old total was redrawn)
FAMILIES = {unary: 10, binary: 10, reduce_: 8, reshape: 3, permute: 4, matmul: 4, where: 3,
            compare: 3, cast: 3, clamp: 2, slice_: 4, index: 3, join: 3, expand: 2, logical: 1,
            scatter: 2, conv: 2, scan: 4, fuzz_nn.activation: 4, fuzz_nn.normalization: 3,
            fuzz_nn.loss: 3, in_place: 3, fuzz_narrow.sixteen_bit: 6}
