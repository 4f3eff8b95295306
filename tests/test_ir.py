"""Compiler tier: the text IR (dump/parse round trips), the NumPy interpreter, and a few
graphs run through the real compiler on the PoCL device and checked against the interpreter."""

import math

import numpy as np
import pytest

from clgrad.compiler import factorizations, ir, ldl, recurrences
from clgrad.compiler.dtype import (bfloat16, bool_, float16, float32, float64, from_numpy,
                                  int32, int64)
from clgrad.compiler.interpret import evaluate
from clgrad.compiler.ir import BufferRef, Node
from clgrad.compiler.ops import FLOAT_BINARY, FLOAT_UNARY, Op
from clgrad.compiler.textir import dump, parse


def buf(shape, dtype=float32):
    shape = tuple(shape)
    return ir.buffer(BufferRef(None, math.prod(shape) * dtype.itemsize), dtype, shape)


def refs_of(roots):
    return {n.arg.id: n.arg for n in ir.toposort(roots) if n.op is Op.BUFFER}


def assert_round_trip(roots):
    text = dump(roots)
    back = parse(text, refs_of(roots))
    assert len(back) == len(roots)
    assert all(a is b for a, b in zip(back, roots)), text
    assert dump(back) == text
    # without the buffers: fresh references, the same graph otherwise
    fresh = parse(text)
    renamed = {f"@{old.arg.id}": f"@{new.arg.id}"
               for old, new in zip(ir.toposort(roots), ir.toposort(fresh)) if old.op is Op.BUFFER}
    expected = text
    for old, new in renamed.items():
        expected = expected.replace(old + " ", new + " ")
    assert dump(fresh) == expected
    return text


# ---- text IR ------------------------------------------------------------------------------

def test_dump_format():
    a = buf((4, 4))
    two = ir.const(2.0, float32, (4, 4))
    s = ir.reduce(Op.SUM, ir.binary(Op.MUL, a, two), (1,))
    p = ir.permute(s, (1, 0))
    padded = ir.cast(ir.pad(a, ((1, 0), (0, 2)), 0.0), int64)
    rid = a.arg.id
    assert dump([p, padded]) == (
        f"%0 = buffer @{rid} : f32[4,4]\n"
        "%1 = const 2.0 : f32[4,4]\n"
        "%2 = mul %0 %1 : f32[4,4]\n"
        "%3 = sum %2 axes=(1) : f32[4,1]\n"
        "%4 = permute %3 order=(1,0) : f32[1,4]\n"
        "%5 = pad %0 pads=((1,0),(0,2)) fill=0.0 : f32[5,6]\n"
        "%6 = cast %5 : i64[5,6]\n"
        "return %4, %6\n")
    assert dump(p) == dump([p])


def every_op_graph():
    x = buf((2, 3))
    y = buf((2, 3))
    i = buf((2, 3), int32)
    scalar = buf((), float64)
    roots = []
    for op in FLOAT_UNARY:          # every math op, a new one included
        roots.append(ir.unary(op, x))
    for op in FLOAT_BINARY:
        roots.append(ir.binary(op, x, y))
    lt = ir.binary(Op.CMPLT, x, y)
    eq = ir.binary(Op.CMPEQ, i, ir.const(3, int32, (2, 3)))
    both = ir.binary(Op.AND, lt, ir.unary(Op.NOT, eq))
    either = ir.binary(Op.OR, lt, eq)
    roots += [ir.binary(op, i, i) for op in (Op.XOR, Op.SHL, Op.SHR)]
    roots += [ir.where(both, x, ir.const(-math.inf, float32, (2, 3))), either,
              ir.cast(x, int64), ir.cast(i, bool_), ir.cast(eq, float16), ir.detach(x),
              ir.bitcast(x, int32), ir.sloped(x, y),
              ir.window(x, 1, 2, 1, 1)]
    roots += [ir.reduce(Op.SUM, x, (0, 1)), ir.reduce(Op.RMAX, i, (0,)),
              ir.reduce(Op.PROD, y, (1,)), ir.gather(x, ir.reshape(ir.iota(2, int32), (2, 1))),
              ir.scan(x, 1, "logaddexp"), ir.scan(i, 0, "max"), ir.sort(x, True),
              ir.argsort(i, False), ir.argtopk(x, 2, True),
              ir.scatter(ir.iota(2, int32), x, 4, "add")]
    roots += [ir.reshape(x, (3, 2)), ir.reshape(scalar, (1, 1)), ir.permute(x, (1, 0)),
              ir.expand(ir.reduce(Op.SUM, x, (1,)), (2, 3)),
              ir.pad(i, ((0, 1), (2, 0)), 7), ir.pad(lt, ((1, 1), (0, 0)), True),
              ir.matmul(ir.pad(x, ((0, 0), (1, 0)), ir.ABSENT), ir.pad(y, ((2, 0), (0, 0)))),
              ir.shrink(x, ((1, 2), (0, 2))), ir.stride(x, (-1, 2)),
              ir.matmul(x, ir.permute(y, (1, 0))), ir.contiguous(ir.permute(x, (1, 0))),
              ir.unary(Op.EXP, scalar)]
    square = buf((3, 3))
    roots += [factorizations.lu(square), factorizations.cholesky(square), factorizations.qr(x),
              factorizations.eigh(square), factorizations.svd(x.permute((1, 0))),
              factorizations.trisolve(square, x.permute((1, 0)), upper=True, transposed=True),
              ldl.ldl(square), ldl.ldl_solve(square, buf((3,), int32), x.permute((1, 0)))]
    steps, state, weight = buf((2, 1, 3)), buf((1, 1)), buf((3, 1))
    roots += [recurrences.gru_states(steps, state, ir.permute(weight, (1, 0)), buf((3,)), True),
              recurrences.gru_gradients(steps, buf((2, 1, 1)), buf((2, 1, 1)), state, weight,
                                        reverse=False)]
    lstm = recurrences.lstm_states(buf((2, 1, 4)), state, state, buf((1, 4)), buf((4,)), False)
    roots += [recurrences.lstm_gradients(lstm, buf((2, 1, 1)), state, state, buf((4, 1)), True)]
    return roots


def test_round_trip_every_op():
    roots = every_op_graph()
    assert {n.op for n in ir.toposort(roots)} == set(Op)
    assert_round_trip(roots)


@pytest.mark.parametrize("value, dtype", [
    (math.inf, float32), (-math.inf, float32), (math.nan, float32), (-0.0, float32),
    (0.0, float64), (1e-07, float32), (1.5e300, float64), (-2.5, float16),
    (True, bool_), (False, bool_), (-7, int32), (2**62 + 1, int64), (0, int64)])
def test_round_trip_consts(value, dtype):
    for shape in ((), (3,), (1, 2, 1)):
        node = ir.const(value, dtype, shape)
        assert_round_trip([node])
        (back,) = parse(dump(node))
        assert type(back.arg) is type(node.arg) and repr(back.arg) == repr(node.arg)


def test_round_trip_keeps_literal_types_and_signed_zero():
    x = buf(())
    roots = [ir.binary(Op.ADD, x, ir.const(-0.0, float32)),
             ir.binary(Op.ADD, x, ir.const(0.0, float32)),
             Node(Op.CONST, float32, (), (), 2), Node(Op.CONST, float32, (), (), 2.0)]
    assert roots[0] is not roots[1] and roots[2] is not roots[3]
    text = assert_round_trip(roots)
    assert "const -0.0 : f32[]" in text and "const 2 : f32[]" in text


def test_round_trip_zero_dim_bool_int_and_shared_roots():
    s = buf((), int64)
    flag = ir.binary(Op.CMPLT, s, ir.const(0, int64))
    picked = ir.where(flag, ir.unary(Op.NEG, s), s)
    assert_round_trip([picked, flag, picked])
    assert "%0 = buffer" in dump(picked) and ": i64[]" in dump(picked)


def test_round_trip_unusual_arg():
    x = buf((2,))
    odd = Node(Op.CONTIGUOUS, float32, (2,), (x,), (1, (2, 3.5)))
    assert "arg=(1,(2,3.5))" in dump(odd)
    assert_round_trip([odd])


def test_unknown_buffers_get_fresh_refs():
    text = "%0 = buffer @9999 : f32[2,3]\n%1 = buffer @9999 : f32[2,3]\n" \
           "%2 = add %0 %1 : f32[2,3]\nreturn %2\n"
    (out,) = parse(text)
    a, b = out.src
    assert a is b and a.arg.device is None and a.arg.nbytes == 24 and a.arg.buffer is None
    known = BufferRef(None, 24)
    (out2,) = parse(text, {9999: known})
    assert out2.src[0].arg is known


def test_parse_accepts_comments_blank_lines_and_names():
    text = """
    # a hand-written graph
    %a = buffer @1 : f32[2,2]
    %b = buffer @2 : f32[2,2]

    %c = matmul %a %b : f32[2,2]   # epilogue follows
    %d = max %c %z : f32[2,2]
    return %d"""
    with pytest.raises(ValueError, match=r"line 7, column 17: %z is used before"):
        parse(text)
    (d,) = parse(text.replace("%z", "%c").replace("\n    ", "\n"))
    assert d.op is Op.MAX and d.src[0].op is Op.MATMUL


def test_syntax_error_names_line_and_column():
    text = "%0 = buffer @1 : f32[4]\n%1 = exp %0 : f32[4\nreturn %1\n"
    with pytest.raises(ValueError) as info:
        parse(text)
    message = str(info.value)
    assert "line 2" in message and "column 20" in message and "%1 = exp %0 : f32[4" in message


@pytest.mark.parametrize("text, pattern", [
    ("%0 = frob : f32[]\nreturn %0", "line 1.*unknown op 'frob'"),
    ("%0 = const 1.0 : f33[]\nreturn %0", "unknown dtype 'f33'"),
    ("%0 = const 1.0 : f32[]\n%1 = add %0 : f32[]\nreturn %1", "line 2.*add takes 2 operands"),
    ("%0 = const 1.0 : f32[]\n%0 = neg %0 : f32[]\nreturn %0", "defined twice"),
    ("%0 = const 1.0 : f32[3]\n%1 = sum %0 : f32[1]\nreturn %1", "sum expects axes="),
    ("%0 = const 1.0 : f32[]\n", "end of input"),
    ("%0 = const 1.0 : f32[] ?\nreturn %0", "line 1, column 24: unexpected character"),
])
def test_bad_text(text, pattern):
    with pytest.raises(ValueError, match=pattern):
        parse(text)


# ---- interpreter --------------------------------------------------------------------------

rng = np.random.default_rng(0)


def run(make, *arrays):
    """evaluate(make(*nodes)) with each array bound to a fresh buffer."""
    nodes = [buf(a.shape, from_numpy(a.dtype)) for a in arrays]
    out = make(*nodes)
    roots = out if isinstance(out, list) else [out]
    values = evaluate(roots, {n.arg: a for n, a in zip(nodes, arrays)})
    for root, value in zip(roots, values):
        assert value.dtype == root.dtype.np and value.shape == root.shape
    return values if isinstance(out, list) else values[0]


def test_float_unary():
    x = rng.uniform(0.1, 3, (3, 4)).astype(np.float32)
    cases = {Op.NEG: -x, Op.RECIP: 1 / x, Op.SQRT: np.sqrt(x), Op.EXP: np.exp(x),
             Op.LOG: np.log(x), Op.SIN: np.sin(x), Op.COS: np.cos(x), Op.TANH: np.tanh(x),
             Op.ABS: x, Op.FLOOR: np.floor(x), Op.CEIL: np.ceil(x)}
    for op, expected in cases.items():
        np.testing.assert_allclose(run(lambda a: ir.unary(op, a), x), expected, rtol=1e-6)
    halves = np.array([0.5, 1.5, 2.5, -0.5, -1.5, 2.4], np.float32)
    np.testing.assert_array_equal(run(lambda a: ir.unary(Op.ROUND, a), halves),
                                  [0, 2, 2, -0, -2, 2])


def test_16_bit_scatters_in_the_type_round_each_step():
    # 1 + eps/2 + eps/2 is 1 rounded at each step (a tie to even), 1 + eps summed first
    for dtype in (float16, bfloat16):
        half_eps = 2.0 ** -11 if dtype is float16 else 2.0 ** -8
        values = np.array([[1.0], [half_eps], [half_eps], [2.0]], np.float32)
        index = np.array([0, 0, 0, 1], np.int64)
        summed = run(lambda i, v: ir.scatter(i, ir.cast(v, dtype), 2, "add_to",
                                             partials_in_type=True), index, values)
        np.testing.assert_array_equal(np.asarray(summed, np.float32), [[1.0], [2.0]])


def test_int_and_bool_semantics_follow_c():
    a = np.array([7, -7, 7, -7, 6], np.int32)
    b = np.array([2, 2, -2, -2, 3], np.int32)
    div, mod = run(lambda x, y: [ir.binary(Op.DIV, x, y), ir.binary(Op.MOD, x, y)], a, b)
    np.testing.assert_array_equal(div, [3, -3, -3, 3, 2])       # C: toward zero
    np.testing.assert_array_equal(mod, [1, -1, 1, -1, 0])       # sign of the dividend
    np.testing.assert_array_equal(run(lambda x: ir.unary(Op.ABS, x), a), np.abs(a))
    f = np.array([5.5, -5.5, 3.0, -0.7], np.float32)
    g = np.array([2.0, 2.0, -2.0, 0.5], np.float32)
    np.testing.assert_allclose(run(lambda x, y: ir.binary(Op.MOD, x, y), f, g), np.fmod(f, g))
    np.testing.assert_array_equal(run(lambda x: ir.cast(x, int32), f), [5, -5, 3, 0])
    np.testing.assert_array_equal(run(lambda x: ir.cast(x, bool_), f - 3), [1, 1, 0, 1])
    flags = np.array([True, False, True])
    np.testing.assert_array_equal(run(lambda x: ir.cast(x, float32), flags), [1, 0, 1])
    np.testing.assert_array_equal(run(lambda x: ir.unary(Op.NOT, x), flags), ~flags)
    with pytest.raises(TypeError, match="exp is not defined for int32"):
        run(lambda x: ir.unary(Op.EXP, x), a)


def test_binary_comparison_where():
    x = np.array([1.0, np.nan, -2.0, 4.0], np.float32)
    y = np.array([np.nan, 3.0, -1.0, 4.0], np.float32)
    mx, mn, lt, eq, pw = run(lambda a, b: [ir.binary(Op.MAX, a, b), ir.binary(Op.MIN, a, b),
                                           ir.binary(Op.CMPLT, a, b), ir.binary(Op.CMPEQ, a, b),
                                           ir.binary(Op.POW, a, b)], x, y)
    np.testing.assert_array_equal(mx, [np.nan, np.nan, -1, 4])     # a NaN wins, as in torch
    np.testing.assert_array_equal(mn, [np.nan, np.nan, -2, 4])
    np.testing.assert_array_equal(lt, [False, False, True, False])
    np.testing.assert_array_equal(eq, [False, False, False, True])
    np.testing.assert_allclose(pw, np.power(x, y))
    p = np.array([True, True, False]), np.array([True, False, False])
    both, either = run(lambda a, b: [ir.binary(Op.AND, a, b), ir.binary(Op.OR, a, b)], *p)
    np.testing.assert_array_equal(both, p[0] & p[1])
    np.testing.assert_array_equal(either, p[0] | p[1])
    c = np.array([True, False, True])
    v = np.array([1, 2, 3], np.int64)
    np.testing.assert_array_equal(run(lambda k, a: ir.where(k, a, ir.unary(Op.NEG, a)), c, v),
                                  [1, -2, 3])


def test_reductions_keep_dims():
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    s, m = run(lambda a: [ir.reduce(Op.SUM, a, (0, 2)), ir.reduce(Op.RMAX, a, (1,))], x)
    np.testing.assert_allclose(s, x.sum(axis=(0, 2), keepdims=True), rtol=1e-5)
    np.testing.assert_array_equal(m, x.max(axis=1, keepdims=True))
    with_nan = np.array([[np.nan, 1.0], [np.nan, np.nan]], np.float32)
    np.testing.assert_array_equal(run(lambda a: ir.reduce(Op.RMAX, a, (1,)), with_nan),
                                  [[np.nan], [np.nan]])     # a NaN is the max, as in torch
    ints = np.array([[-5, -9], [3, 2]], np.int64)
    np.testing.assert_array_equal(run(lambda a: ir.reduce(Op.RMAX, a, (1,)), ints), [[-5], [3]])
    np.testing.assert_array_equal(run(lambda a: ir.reduce(Op.SUM, a, (0,)), ints), [[-2, -7]])
    np.testing.assert_array_equal(run(lambda a: ir.reduce(Op.PROD, a, (0, 1)), ints), [[270]])


def test_iota_and_gather():
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    index = np.array([[3, 0], [1, 1]], np.int64)
    np.testing.assert_array_equal(run(ir.gather, table, index), table[index])
    np.testing.assert_array_equal(evaluate(ir.iota(5, int32))[0], np.arange(5, dtype=np.int32))


def test_movement():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    got = run(lambda a: [ir.reshape(a, (2, 6)), ir.permute(a, (1, 0)),
                         ir.expand(ir.reshape(a, (3, 1, 4)), (3, 2, 4)),
                         ir.pad(a, ((1, 0), (0, 2)), -1.0), ir.shrink(a, ((1, 3), (1, 2))),
                         ir.stride(a, (-2, 3)), ir.stride(a, (2, -1)),
                         ir.contiguous(ir.permute(a, (1, 0)))], x)
    expected = [x.reshape(2, 6), x.T, np.broadcast_to(x[:, None], (3, 2, 4)),
                np.pad(x, ((1, 0), (0, 2)), constant_values=-1), x[1:3, 1:2], x[::-2, ::3],
                x[::2, ::-1], x.T]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert got[5].shape == (2, 2) and got[5][0, 0] == 8      # (n-1) - i*|s|


def test_matmul_batched_and_consts():
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    b = rng.standard_normal((2, 4, 5)).astype(np.float32)
    np.testing.assert_allclose(run(ir.matmul, a, b), a @ b, rtol=1e-5, atol=1e-6)
    c = evaluate([ir.const(2.5, float16, (2,)), ir.const(True, bool_, ()),
                  ir.const(-3, int64, (1, 1))])
    assert c[0].dtype == np.float16 and list(c[0]) == [2.5, 2.5]
    assert c[1].dtype == np.bool_ and c[1].shape == () and c[1]
    assert c[2].dtype == np.int64 and c[2].tolist() == [[-3]]


def test_matmul_skips_the_products_of_absent_elements():
    # an absent pad reads as 0, but no product is formed with it (0 * inf would be NaN), in
    # either operand, through views; a real zero pad's products are formed
    a = np.array([[1.0, 2.0], [np.inf, 0.5]], np.float32)
    b = np.array([[np.inf, 1.0], [3.0, np.nan], [-1.0, 2.0]], np.float32)
    with np.errstate(invalid="ignore"):
        want_left, want_right = a @ b[1:], b[1:].T @ a
    left = run(lambda a, b: ir.matmul(ir.pad(a, ((0, 0), (1, 0)), ir.ABSENT), b), a, b)
    np.testing.assert_array_equal(left, want_left)
    assert np.isnan(run(lambda a, b: ir.matmul(ir.pad(a, ((0, 0), (1, 0))), b), a, b)).all()
    right = run(lambda b, a: ir.matmul(b.permute((1, 0)), ir.pad(a, ((1, 0), (0, 0)),
                                                                  ir.ABSENT)), b, a)
    np.testing.assert_array_equal(right, want_right)
    assert run(lambda a: ir.pad(a, ((0, 0), (0, 1)), ir.ABSENT), a)[:, 2].tolist() == [0, 0]


def test_interpreter_agrees_with_round_trip():
    x, y = buf((2, 3)), buf((2, 3))
    roots = every_op_graph()[:3]
    text = dump(roots)
    back = parse(text, refs_of(roots))
    arrays = {n.arg: rng.uniform(0.5, 2, n.shape).astype(n.dtype.np)
              for n in ir.toposort(roots) if n.op is Op.BUFFER}
    for a, b in zip(evaluate(roots, arrays), evaluate(back, arrays)):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="holds no data"):
        evaluate(ir.binary(Op.ADD, x, y))


# ---- against the real compiler on the default device --------------------------------------

@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    from clgrad.config import config
    from clgrad.runtime import get_device
    try:
        device = get_device()
    except Exception as e:          # no OpenCL: the text tests above still run
        pytest.skip(f"no OpenCL device: {e}")
    with config.override(CACHE_DIR=str(tmp_path_factory.mktemp("clgrad-cache"))):
        yield device


def upload(device, a):
    from clgrad.engine import storage
    ref = BufferRef(device, a.nbytes)
    storage(ref).write(a)
    return ir.buffer(ref, float32, a.shape)


def read(ref, node):
    return ref.buffer.read(np.empty(node.shape, node.dtype.np))


def softmax(x):
    m = ir.expand(ir.reduce(Op.RMAX, x, (1,)), x.shape)
    e = ir.unary(Op.EXP, ir.binary(Op.SUB, x, m))
    s = ir.expand(ir.reduce(Op.SUM, e, (1,)), x.shape)
    return ir.binary(Op.MUL, e, ir.unary(Op.RECIP, s))


def small(w):
    """A weight of a GRU's size (|w| < 1 / sqrt(hidden) in PyTorch's): a gradient carried
    back through normal ones grows by ~sqrt(48) a step, past float32's tolerance here."""
    return ir.binary(Op.MUL, w, ir.const(0.25, w.dtype, w.shape))


def relu(x):
    return ir.binary(Op.MAX, x, ir.const(0.0, x.dtype, x.shape))


GRAPHS = {
    "chain_through_transpose": (
        [(5, 7), (7, 5)],
        lambda a, b: ir.unary(Op.TANH, ir.binary(Op.MUL, ir.binary(
            Op.ADD, ir.permute(a, (1, 0)), b), ir.const(0.5, float32, (7, 5))))),
    "softmax": ([(6, 19)], softmax),
    "pad": ([(3, 5)], lambda a: ir.binary(Op.ADD, ir.pad(a, ((1, 2), (0, 3)), -1.0),
                                          ir.const(1.0, float32, (6, 8)))),
    "matmul_relu": ([(4, 9), (9, 16), (4, 16)],
                    lambda a, b, c: relu(ir.binary(Op.ADD, ir.matmul(a, b), c))),
    "non_trailing_sum": ([(6, 5, 3)], lambda a: ir.reduce(Op.SUM, ir.unary(Op.EXP, a), (0,))),
    # a GRU's and an LSTM's loops: hidden 4 in scalar loops, 16 in vectors of 8 or 16
    "gru_states": ([(3, 2, 12), (2, 4), (4, 12), (12,)],
                   lambda g, h, w, b: recurrences.gru_states(g, h, w, b, reverse=False)),
    "gru_states_16_reversed": ([(2, 3, 48), (3, 16), (16, 48), (48,)],
                               lambda g, h, w, b: recurrences.gru_states(g, h, w, b, True)),
    "gru_gradients": ([(3, 2, 12), (3, 2, 4), (3, 2, 4), (2, 4), (12, 4)],
                      lambda *a: recurrences.gru_gradients(*a[:4], small(a[4]), True)),
    "gru_gradients_16": ([(4, 1, 48), (4, 1, 16), (4, 1, 16), (1, 16), (48, 16)],
                         lambda *a: recurrences.gru_gradients(*a[:4], small(a[4]), False)),
    # an LSTM's: its gradients read the states its forward kernel wrote
    "lstm": ([(3, 2, 16), (2, 4), (2, 4), (4, 16), (16,), (3, 2, 4), (2, 4), (2, 4), (16, 4)],
             lambda g, h, c, wt, b, d_out, d_h, d_c, w: recurrences.lstm_gradients(
                 recurrences.lstm_states(g, h, c, wt, b, False), d_out, d_h, d_c, w, False)),
    "lstm_16_reversed": ([(2, 3, 64), (3, 16), (3, 16), (16, 64), (64,), (2, 3, 16), (3, 16),
                          (3, 16), (64, 16)],
                         lambda g, h, c, wt, b, d_out, d_h, d_c, w: recurrences.lstm_gradients(
                             recurrences.lstm_states(g, h, c, small(wt), b, True), d_out, d_h,
                             d_c, small(w), True)),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_compiler_matches_interpreter(cpu, name):
    from clgrad.engine import run
    shapes, make = GRAPHS[name]
    arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    root = make(*(upload(cpu, a) for a in arrays))
    (expected,) = evaluate([root])            # reads the uploaded device buffers
    (ref,) = run([root], cpu)
    np.testing.assert_allclose(read(ref, root), expected, rtol=1e-5, atol=1e-6)


def test_interning_returns_the_live_node_and_forgets_dead_ones():
    x = buf((5,))
    n = ir.unary(Op.EXP, x)
    assert ir.unary(Op.EXP, x) is n and ir.unary(Op.EXP, buf((5,))) is not n
    count = len(ir._interned)
    del n
    assert len(ir._interned) == count - 1       # the entry went with the node
    assert ir.unary(Op.EXP, x).src == (x,)


def test_heads_number_structure_and_constants_made_lately_stay_interned():
    a, b = buf((2, 3)), buf((2, 3))
    assert a.head == b.head != buf((3, 2)).head           # a buffer's head leaves it out
    assert ir.unary(Op.EXP, a).head == ir.unary(Op.EXP, b).head != ir.unary(Op.LOG, a).head
    zero, negative_zero = ir.const(0.0, float32, (2,)), ir.const(-0.0, float32, (2,))
    assert zero is not negative_zero and zero.head != negative_zero.head
    made = ir.const(0.9, float32, (4, 5)).serial
    assert ir.const(0.9, float32, (4, 5)).serial == made  # still the node made before


def test_structural_key_stops_at_the_nodes_it_is_given():
    x, w = buf((4, 3)), buf((3, 2))
    mid = ir.matmul(x, w)
    root = ir.unary(Op.EXP, ir.binary(Op.ADD, mid, mid))
    ids = {}
    key, nodes, leaves = ir.structural_key([root], stops={mid}, ids=ids)
    assert leaves == [mid] and mid in nodes and x not in nodes
    assert ids == {n: i for i, n in enumerate(nodes)}
    assert (key, nodes, leaves) == ir.structural_key([root], lambda n: n if n is mid else None)
    # the same structure over other buffers keys alike; the buffers themselves are the leaves
    other = ir.unary(Op.EXP, ir.binary(Op.ADD, *[ir.matmul(buf((4, 3)), buf((3, 2)))] * 2))
    assert ir.structural_key([other])[0] == ir.structural_key([root])[0]
