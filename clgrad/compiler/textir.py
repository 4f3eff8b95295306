"""The IR as text: one readable line per node, and a lark grammar that reads it back.

    %0 = buffer @12 : f32[4,4]
    %1 = const 2.0 : f32[4,4]
    %2 = mul %0 %1 : f32[4,4]
    %3 = sum %2 axes=(1) : f32[4,1]
    return %3

`parse(dump(roots), buffers)` gives back the very same (interned) nodes: nodes are rebuilt
with `Node(...)` directly, never through the folding constructors, and literals keep their
Python type (`2` is an int, `2.0` a float, `True` a bool).
"""
from __future__ import annotations

import functools
import importlib.resources
import math
import re
from pathlib import Path

import lark

from .dtype import BY_SHORT
from . import ir
from .ir import BufferRef, Node, toposort
from .kernel import KernelSpec
from .ops import BINARY, MOVEMENT, REDUCE, SOURCE, UNARY, Op

# The keyword each op's arg is written under; ops missing here take no arg.
_ARG_NAME = {op: "axes" for op in REDUCE}
_ARG_NAME.update({Op.RESHAPE: "shape", Op.EXPAND: "shape", Op.PERMUTE: "order",
                  Op.SHRINK: "bounds", Op.STRIDE: "steps", Op.WINDOW: "window",
                  Op.SCATTER: "mode"})
_GENERIC = "arg"      # an arg on an op that normally has none still round-trips
_ONE_SOURCE = frozenset({Op.CONTIGUOUS, Op.SCAN, Op.SORT, Op.ARGSORT, Op.ARGTOPK, Op.LU,
                         Op.CHOLESKY, Op.QR, Op.EIGH, Op.SVD, Op.LDL})

_OPS = {op.name.lower(): op for op in Op}
_INT_TEXT = re.compile(r"[+-]?\d+")


# ---- dump ---------------------------------------------------------------------------------

def dump(roots: list[Node] | Node) -> str:
    """The text of every node reachable from roots, sources first, then a `return` line."""
    roots = [roots] if isinstance(roots, Node) else list(roots)
    names: dict[Node, str] = {}
    lines = []
    for node in toposort(roots):
        names[node] = f"%{len(names)}"
        lines.append(f"{names[node]} = {_node_text(node, names)}")
    lines.append("return " + ", ".join(names[r] for r in roots))
    return "\n".join(lines) + "\n"


def _node_text(node: Node, names: dict[Node, str]) -> str:
    parts = [node.op.name.lower()]
    parts += [names[s] for s in node.src]
    parts += _arg_text(node)
    shape = ",".join(str(int(s)) for s in node.shape)
    return " ".join(parts) + f" : {node.dtype.short}[{shape}]"


def _arg_text(node: Node) -> list[str]:
    op, arg = node.op, node.arg
    if op is Op.BUFFER:
        return [f"@{arg.id}"]
    if op is Op.CONST:
        return [_value_text(arg)]
    if op is Op.PAD:
        pads, fill = arg
        return [f"pads={_value_text(pads)}", f"fill={_value_text(fill)}"]
    if op is Op.SCAN:
        axis, combine = arg
        return [f"axis={axis}", f"combine={combine}"]
    if op in _ARG_NAME:
        return [f"{_ARG_NAME[op]}={_value_text(arg)}"]
    if arg is not None:
        return [f"{_GENERIC}={_value_text(arg)}"]
    return []


def _value_text(value) -> str:
    if isinstance(value, tuple):
        return "(" + ",".join(_value_text(v) for v in value) + ")"
    if isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value)          # inf, -inf, nan, -0.0 and 1e-07 all read back exactly
    if isinstance(value, str) and value.isidentifier():
        return value                # a word: a scatter's mode
    raise ValueError(f"cannot write {value!r} ({type(value).__name__}) in the text IR")


# ---- parse --------------------------------------------------------------------------------

@functools.cache
def _parser() -> lark.Lark:
    return lark.Lark(_grammar_text(), parser="lalr", propagate_positions=True,
                     maybe_placeholders=False)


def _grammar_text() -> str:
    try:
        return importlib.resources.files(__package__).joinpath("grammar.lark").read_text()
    except (OSError, TypeError, ModuleNotFoundError):
        # importlib.resources cannot see into a namespace package (no __init__.py)
        return Path(__file__).with_name("grammar.lark").read_text()


def parse(text: str, buffers: dict[int, BufferRef] | None = None) -> list[Node]:
    """The roots named by the `return` line of `text`.

    `buffers` maps the ids written as `@id` to their BufferRef; an id not in it gets a fresh
    BufferRef with no device, sized from the node, so that the graph can still be analysed.
    """
    if not text.endswith("\n"):
        text += "\n"
    try:
        tree = _parser().parse(text)
    except lark.exceptions.UnexpectedInput as e:
        raise _located(text, e.line, e.column, _describe(e)) from None
    return _Builder(text, buffers or {}).build(tree)


def _describe(e: lark.exceptions.UnexpectedInput) -> str:
    if isinstance(e, lark.exceptions.UnexpectedToken):
        if e.token.type == "$END":
            return "unexpected end of input (the text ends with a line `return %a, %b`)"
        return f"unexpected {e.token.value!r}"
    if isinstance(e, lark.exceptions.UnexpectedCharacters):
        return f"unexpected character {e.char!r}"
    return "unexpected end of input"


def _located(text: str, line: int, column: int, message: str) -> ValueError:
    lines = text.splitlines()
    if 1 <= line <= len(lines):
        source = lines[line - 1]
    else:
        line, source = len(lines), lines[-1] if lines else ""
        column = len(source) + 1
    caret = " " * max(column - 1, 0) + "^"
    return ValueError(f"IR text, line {line}, column {column}: {message}\n"
                      f"    {source}\n    {caret}")


class _Builder:
    """Walks the parse tree line by line, making each node once its sources exist."""

    def __init__(self, text: str, buffers: dict[int, BufferRef]):
        self.text = text
        self.buffers = buffers
        self.fresh: dict[int, BufferRef] = {}
        self.names: dict[str, Node] = {}

    def build(self, tree: lark.Tree) -> list[Node]:
        *nodes, ret = tree.children
        for line in nodes:
            self.define(line)
        return [self.ref(tok) for tok in ret.children]

    def error(self, meta_or_token, message: str) -> ValueError:
        return _located(self.text, meta_or_token.line, meta_or_token.column, message)

    def ref(self, tok: lark.Token) -> Node:
        if tok.value not in self.names:
            raise self.error(tok, f"{tok.value} is used before it is defined")
        return self.names[tok.value]

    def define(self, line: lark.Tree) -> None:
        name, op_tok, *rest = line.children
        if name.value in self.names:
            raise self.error(name, f"{name.value} is defined twice")
        op = _OPS.get(op_tok.value)
        if op is None:
            raise self.error(op_tok, f"unknown op {op_tok.value!r}")
        *operands, type_tree = rest
        srcs = [o for o in operands if isinstance(o, lark.Token) and o.type == "REF"]
        attrs = [o for o in operands if isinstance(o, lark.Tree) and o.data == "attr"]
        scalars = [o for o in operands if isinstance(o, lark.Tree) and o.data == "scalar"]
        refs = [o for o in operands if isinstance(o, lark.Token) and o.type == "BUFFER_ID"]
        dtype, shape = self.type(type_tree)
        self.check_arity(line, op, len(srcs))
        arg = self.arg(line, op, attrs, scalars, refs, dtype, shape)
        self.names[name.value] = Node(op, dtype, shape, tuple(self.ref(s) for s in srcs), arg)

    def type(self, tree: lark.Tree):
        dtype_tok, *dims = tree.children
        if dtype_tok.value not in BY_SHORT:
            raise self.error(dtype_tok, f"unknown dtype {dtype_tok.value!r} "
                                        f"(expected one of {', '.join(BY_SHORT)})")
        return BY_SHORT[dtype_tok.value], tuple(int(d) for d in dims)

    def check_arity(self, line: lark.Tree, op: Op, n: int) -> None:
        want = _arity(op)
        if want is not None and n != want:
            raise self.error(line.meta, f"{op.name.lower()} takes {want} operands, got {n}")

    def arg(self, line, op: Op, attrs, scalars, refs, dtype, shape):
        values = {}
        for attr in attrs:
            key, value = attr.children
            if key.value in values:
                raise self.error(key, f"{key.value}= given twice")
            values[key.value] = _value(value)
        if op is Op.BUFFER:
            if len(refs) != 1 or values:
                raise self.error(line.meta, "buffer takes exactly one @id and nothing else")
            return self.buffer(int(refs[0].value[1:]), dtype, shape)
        if refs:
            raise self.error(refs[0], f"{op.name.lower()} takes no buffer")
        if op is Op.CONST:
            if len(scalars) != 1 or values:
                raise self.error(line.meta, "const takes exactly one value and nothing else")
            return _value(scalars[0])
        if scalars:
            raise self.error(scalars[0].meta, f"{op.name.lower()} takes no bare value")
        if op is Op.PAD:
            return tuple(self.take(line, op, values, ["pads", "fill"]))
        if op is Op.SCAN:
            return tuple(self.take(line, op, values, ["axis", "combine"]))
        if op in _ARG_NAME:
            return self.take(line, op, values, [_ARG_NAME[op]])[0]
        if values:
            return self.take(line, op, values, [_GENERIC])[0]
        return None

    def take(self, line, op: Op, values: dict, keys: list[str]) -> list:
        if sorted(values) != sorted(keys):
            expected = " ".join(f"{k}=..." for k in keys)
            raise self.error(line.meta, f"{op.name.lower()} expects {expected}, "
                                        f"got {' '.join(values) or 'nothing'}")
        return [values[k] for k in keys]

    def buffer(self, ref_id: int, dtype, shape) -> BufferRef:
        if ref_id in self.buffers:
            return self.buffers[ref_id]
        if ref_id not in self.fresh:
            self.fresh[ref_id] = BufferRef(None, math.prod(shape) * dtype.itemsize)
        return self.fresh[ref_id]


def _arity(op: Op) -> int | None:
    """How many sources `op` takes; None for an op whose count this file does not know."""
    if op in SOURCE:
        return 0
    if op in BINARY or op in (Op.MATMUL, Op.TRISOLVE):
        return 2
    if op in (Op.WHERE, Op.LDL_SOLVE):
        return 3
    if op in UNARY or op in REDUCE or op in MOVEMENT or op in _ONE_SOURCE:
        return 1
    return None


def _value(tree):
    """A parsed value as Python: scalars keep their literal type, parentheses make tuples,
    a bare word (a scan's combine) is a string."""
    if isinstance(tree, lark.Tree) and tree.data == "tuple":
        return tuple(_value(v) for v in tree.children)
    if isinstance(tree, lark.Tree) and tree.data == "word":
        return tree.children[0].value
    (tok,) = tree.children
    if tree.data == "word":
        return tok.value
    text = tok.value
    if tok.type == "BOOL":
        return text == "True"
    if _INT_TEXT.fullmatch(text):
        return int(text)
    return float(text)


def kernel_ir(spec: KernelSpec) -> str:
    """The kernel's graph as text IR, its inputs shown as the buffers they are read from."""
    rebuilt: dict[Node, Node] = {n: ir.buffer(ref, n.dtype, n.shape)
                               for n, ref in spec.inputs.items()}
    for node in spec.nodes():
        rebuilt[node] = ir.Node(node.op, node.dtype, node.shape,
                                tuple(rebuilt[s] for s in node.src), node.arg)
    return dump([rebuilt[n] for n, _ in spec.outputs])
