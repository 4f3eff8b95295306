"""The machinery of the program generator: where its decisions come from, the pool of values a
program has computed so far, and shapes.

A program is built by execution: each candidate line is evaluated with PyTorch on the values so
far, and kept only if PyTorch accepts it and (outside the edge mode) its result is finite,
moderate and clear of the points where an op jumps (relu at 0, floor at integers, ties of max),
so that two correct float32 implementations must agree on it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
import random
import re
import warnings

import torch

from fuzz_harness import make_input

# Dimension sizes, simplest first (hypothesis shrinks towards the start of every list).
SIZES = (2, 3, 1, 4, 8, 5, 13, 16, 7, 30, 32, 64, 104, 128, 1000)
MAX_NUMEL = 4096
MAX_MAGNITUDE = 1e4       # larger results are rejected outside the edge mode
MARGIN = 1e-4             # how far from a jump, relative to the operand's scale, is clear
KINDS = {torch.float32: "float", torch.float64: "float", torch.float16: "float",
         torch.bfloat16: "float", torch.int64: "int", torch.int32: "int", torch.bool: "bool"}
SIXTEEN_BIT = {torch.float16: "half", torch.bfloat16: "bfloat16"}   # dtype -> its cast method

torch.set_num_threads(1)  # deterministic and light on a shared machine


class Choices:
    """The generator's source of decisions. Each is an integer in [lo, hi] where lo is the
    simplest choice, so that hypothesis shrinks towards simple programs."""

    def integer(self, lo: int, hi: int) -> int:
        raise NotImplementedError

    def pick(self, options):
        return options[self.integer(0, len(options) - 1)]

    def chance(self, percent: int) -> bool:
        return self.integer(0, 99) >= 100 - percent

    def weighted(self, table: dict):
        """A key of table ({key: weight}), drawn with probability proportional to its weight."""
        at = self.integer(0, sum(table.values()) - 1)
        for key, weight in table.items():
            if at < weight:
                return key
            at -= weight
        raise AssertionError("unreachable")


class SeededChoices(Choices):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


@dataclasses.dataclass
class Value:
    name: str
    t: torch.Tensor           # its value as PyTorch computes it, in the program's dtype
    # the largest magnitude among the values it was computed from: a sum's rounding, which
    # differs with the order of its terms, is relative to its terms, not to the sum
    reach: float = 0.0

    @property
    def kind(self) -> str:
        return KINDS[self.t.dtype]

    @property
    def shape(self) -> tuple:
        return tuple(self.t.shape)

    @property
    def scale(self) -> float:
        """The largest magnitude among its finite elements (0 if none) and those it was
        computed from: how far from a jump (a clamp's bound, a comparison's other side) its
        value is clearly on one side, whatever order clgrad's sums take."""
        t = self.t.double()
        finite = t[torch.isfinite(t)]
        return max(float(finite.abs().max()) if finite.numel() else 0.0, self.reach)


class Builder:
    """A program under construction: its inputs, its lines and the values they computed."""

    def __init__(self, choices: Choices, edges: bool):
        self.ch, self.edges = choices, edges
        self.data_seed = choices.integer(0, 2**31 - 1)
        self.inputs: list[tuple] = []       # (shape, dtype name, requires_grad)
        self.lines: list[str] = []
        self.pool: list[Value] = []
        self.used: set[str] = set()         # names some line reads
        # inside narrowed(): the operand the next family asks for, and the 16-bit dtype its
        # new float inputs are cast to (a matmul's weight, a norm's affine, a partner)
        self.preferred: Value | None = None
        self.narrow_to: torch.dtype | None = None

    # ---- values ----
    def new_input(self, shape: tuple, dtype: str = "float32") -> Value:
        k = len(self.inputs)
        requires_grad = dtype == "float32" and not self.ch.chance(15)
        self.inputs.append((shape, dtype, requires_grad))
        value = Value(f"x{k}", torch.tensor(make_input(self.data_seed, k, shape, dtype,
                                                       self.edges)))
        self.pool.append(value)
        if self.narrow_to is not None and dtype == "float32":
            return self.emit(f"{value.name}.{SIXTEEN_BIT[self.narrow_to]}()") or value
        return value

    @contextlib.contextmanager
    def narrowed(self, x: Value):
        """Inside, the next operand a family asks for is x if it fits, and new float inputs
        come cast to x's dtype: a family's line on a 16-bit value stays in its dtype."""
        saved = self.preferred, self.narrow_to
        self.preferred, self.narrow_to = x, x.t.dtype
        try:
            yield
        finally:
            self.preferred, self.narrow_to = saved

    def emit(self, expr: str) -> Value | None:
        """Evaluates expr with PyTorch; keeps it as a new line if PyTorch accepts it and the
        result is acceptable, else returns None."""
        names = {v.name: v.t for v in self.pool}
        try:
            with torch.no_grad(), warnings.catch_warnings():
                warnings.simplefilter("ignore")     # var of one element and the like
                result = eval(expr, {"fw": torch}, names)  # noqa: S307 (our own text)
        except Exception:  # noqa: BLE001 (any refusal of PyTorch's just rejects the line)
            return None
        if not isinstance(result, torch.Tensor) or result.dtype not in KINDS \
                or not self._acceptable(result):
            return None
        read = set(re.findall(r"\b[xv]\d+\b", expr))
        value = Value(f"v{len(self.lines)}", result,
                      max((v.scale for v in self.pool if v.name in read), default=0.0))
        self.used.update(read)
        self.lines.append(f"{value.name} = {expr}")
        self.pool.append(value)
        return value

    def _acceptable(self, t: torch.Tensor) -> bool:
        if t.numel() > MAX_NUMEL:
            return False
        if self.edges:
            return True
        if t.numel() == 0:
            return False
        if t.is_floating_point():
            return bool(torch.isfinite(t).all()) and float(t.abs().max()) <= MAX_MAGNITUDE
        return t.dtype == torch.bool or int(t.abs().max()) <= MAX_MAGNITUDE

    def operand(self, kinds=("float",), min_ndim: int = 0) -> Value:
        """A value of one of kinds from the pool (often the newest: chains fuse), else a new
        input; inside narrowed(), its value first if it fits."""
        preferred, self.preferred = self.preferred, None
        if preferred is not None and preferred.kind in kinds and preferred.t.dim() >= min_ndim:
            return preferred
        fits = [v for v in self.pool if v.kind in kinds and v.t.dim() >= min_ndim]
        if fits and not self.ch.chance(10):
            return fits[-1] if self.ch.chance(40) else self.ch.pick(fits)
        dtype = {"float": "float32", "int": self.ch.pick(("int64", "int32")),
                 "bool": "bool"}[self.ch.pick(kinds)]
        return self.new_input(self.shape(min_ndim=min_ndim), dtype)

    def partner(self, a: Value, kinds=("float",)) -> Value:
        """A value broadcastable with a: from the pool, or a new input of a related shape."""
        fits = [v for v in self.pool if v.kind in kinds and _broadcasts(a.shape, v.shape)]
        if fits and self.ch.chance(50):
            return self.ch.pick(fits)
        dtype = {"float": "float32", "int": "int64", "bool": "bool"}[self.ch.pick(kinds)]
        return self.new_input(self.broadcast_partner_shape(a.shape), dtype)

    def positive(self, x: Value, at_least: float = 0.1) -> Value | None:
        """x itself when all of it is >= at_least, else a new line mapping x to such values."""
        if self.edges or float(x.t.min()) >= at_least:
            return x
        if x.kind != "float":
            return self.emit(f"{x.name}.abs() + 1")
        forms = [f"{x.name}.exp() + 0.1", f"{x.name} * {x.name} + 0.5",
                 f"{x.name}.sigmoid() + 0.25", f"{x.name}.abs() + 0.5"]
        if not self.clear(x.t):
            forms.pop()         # abs jumps at 0
        return self.emit(self.ch.pick(forms))

    # ---- margins ----
    def clear(self, distance: torch.Tensor, scale: float | None = None) -> bool:
        """Whether every element of distance (to the nearest jump of an op) is exactly 0 (both
        sides compute it exactly) or farther than MARGIN * scale."""
        if self.edges or not distance.is_floating_point() or distance.numel() == 0:
            return True
        d = distance.abs()
        scale = float(d.max()) if scale is None else scale
        return bool(((d == 0) | (d > MARGIN * max(scale, 1e-6))).all())

    # ---- shapes ----
    def size(self, at_most: int = MAX_NUMEL) -> int:
        if self.edges and self.ch.chance(20):
            return self.ch.pick((1, 0))
        fitting = [s for s in SIZES if s <= at_most] or [1]
        return self.ch.pick(fitting)

    def shape(self, min_ndim: int = 0) -> tuple:
        ndim = max(min_ndim, self.ch.pick((1, 2, 0, 3, 4)))
        shape: list[int] = []
        for _ in range(ndim):
            shape.append(self.size(MAX_NUMEL // max(math.prod(shape), 1)))
        return tuple(shape)

    def broadcast_partner_shape(self, shape: tuple) -> tuple:
        """shape with some dims 1, some leading dims dropped, or a new leading dim."""
        out = [1 if self.ch.chance(30) else s for s in shape]
        if out and self.ch.chance(25):
            out = out[self.ch.integer(1, len(out)):]
        elif self.ch.chance(15) and math.prod(shape) * 4 <= MAX_NUMEL:
            out = [self.ch.pick((2, 3, 4))] + out
        return tuple(out)

    def dim(self, ndim: int) -> int:
        """A dim of an ndim-dimensional value, negative or not."""
        d = self.ch.integer(0, max(ndim, 1) - 1)
        return d - max(ndim, 1) if self.ch.chance(30) else d

    def scalar(self, kind: str = "float") -> str:
        if kind == "float":
            return self.ch.pick(("2.0", "0.5", "-1.5", "3.0", "0.25", "-0.75", "10.0", "1e-3"))
        return self.ch.pick(("2", "-3", "1", "5"))

    # ---- the program ----
    def sinks(self) -> list[Value]:
        """The computed values no line reads: the program's natural outputs."""
        return [v for v in self.pool if v.name.startswith("v") and v.name not in self.used]

    def source(self, outputs: list[Value]) -> str:
        params = ", ".join(f"x{k}" for k in range(len(self.inputs)))
        body = "".join(f"    {line}\n" for line in self.lines)
        inputs = "".join(f"    ({shape!r}, {dtype!r}, {g}),\n" for shape, dtype, g in self.inputs)
        return (f"DATA_SEED = {self.data_seed}\nEDGES = {self.edges}\n"
                f"INPUTS = [  # (shape, dtype, requires_grad)\n{inputs}]\n\n\n"
                f"def program(fw, {params}):\n{body}"
                f"    return [{', '.join(v.name for v in outputs)}]\n")


def _broadcasts(a: tuple, b: tuple) -> bool:
    shape = torch.broadcast_shapes(a, b) if _compatible(a, b) else None
    return shape is not None and math.prod(shape) <= MAX_NUMEL


def _compatible(a: tuple, b: tuple) -> bool:
    return all(x == y or x == 1 or y == 1 for x, y in zip(reversed(a), reversed(b)))
