"""A graph checked against the recorded walk of another (compiler/walk_match.py) matches exactly
when the two have one structural key, and then gives the nodes and leaves the key's walk gives:
a wrong match would replay a plan or a gradient template on a graph it does not fit, and
compute wrong numbers without a sign."""
import math
import random

import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import ir
from clgrad.compiler.dtype import float32, int32
from clgrad.compiler.ir import BufferRef
from clgrad.compiler.ops import Op
from clgrad.compiler.walk_match import Walk
from clgrad.engine import plan as plans


def buf(shape=(2, 3), dtype=float32, ref=None):
    ref = ref or BufferRef(None, math.prod(shape) * dtype.itemsize)
    return ir.buffer(ref, dtype, tuple(shape))


def add(a, b):
    return ir.binary(Op.ADD, a, b)


def mul(a, b):
    return ir.binary(Op.MUL, a, b)


def shared_below(a):
    return mul(add(a, buf()), add(a, buf()))


def squared(a):
    return mul(a, a)


def two_reads_of_one_buffer():
    ref = BufferRef(None, 24)
    return [add(buf(ref=ref), ir.reshape(buf((3, 2), ref=ref), (2, 3)))]


def realized(node):
    node.buffer = BufferRef(None, 24)
    return node


# (name, graph, another graph): each pair differs in one thing the key must tell apart
DIFFERENT = [
    ("one buffer read twice / two buffers", lambda: [squared(buf())],
     lambda: [mul(buf(), buf())]),
    ("a buffer shared deeper down", lambda: [shared_below(buf())],
     lambda: [mul(add(buf(), buf()), add(buf(), buf()))]),
    ("one node read twice / two equal-looking ones", lambda: [squared(add(buf(), buf()))],
     lambda: [mul(add(buf(), buf()), add(buf(), buf()))]),
    ("one buffer through two shapes / two buffers", two_reads_of_one_buffer,
     lambda: [add(buf(), ir.reshape(buf((3, 2)), (2, 3)))]),
    ("constants", lambda: [mul(buf(), ir.const(2.0, float32, (2, 3)))],
     lambda: [mul(buf(), ir.const(3.0, float32, (2, 3)))]),
    ("0.0 and -0.0", lambda: [add(buf(), ir.const(0.0, float32, (2, 3)))],
     lambda: [add(buf(), ir.const(-0.0, float32, (2, 3)))]),
    ("shapes", lambda: [ir.unary(Op.EXP, buf((2, 3)))], lambda: [ir.unary(Op.EXP, buf((3, 2)))]),
    ("dtypes", lambda: [ir.unary(Op.NEG, buf())], lambda: [ir.unary(Op.NEG, buf(dtype=int32))]),
    ("strides", lambda: [ir.stride(buf((4, 4)), (2, 1))], lambda: [ir.stride(buf((4, 4)), (1, 2))]),
    ("offsets", lambda: [ir.shrink(buf((4,)), ((0, 2),))],
     lambda: [ir.shrink(buf((4,)), ((2, 4),))]),
    ("permutations", lambda: [ir.permute(buf((2, 3, 4)), (1, 0, 2))],
     lambda: [ir.permute(buf((2, 3, 4)), (0, 2, 1))]),
    ("ops", lambda: [add(buf(), buf())], lambda: [ir.binary(Op.SUB, buf(), buf())]),
    ("source order", lambda: [(lambda a, b: ir.binary(Op.SUB, a, add(a, b)))(buf(), buf())],
     lambda: [(lambda a, b: ir.binary(Op.SUB, a, add(b, a)))(buf(), buf())]),
    ("a node computed before / still lazy", lambda: [ir.unary(Op.EXP, realized(mul(buf(), buf())))],
     lambda: [ir.unary(Op.EXP, mul(buf(), buf()))]),
    ("root counts", lambda: [ir.unary(Op.EXP, buf())],
     lambda: (lambda e: [e, ir.unary(Op.LOG, e)])(ir.unary(Op.EXP, buf()))),
    ("one root twice / two roots", lambda: (lambda e: [e, e])(ir.unary(Op.EXP, buf())),
     lambda: [ir.unary(Op.EXP, buf()), ir.unary(Op.EXP, buf())]),
]


@pytest.mark.parametrize("by_buffer", [True, False])
@pytest.mark.parametrize("name,make,other", DIFFERENT, ids=[row[0] for row in DIFFERENT])
def test_graphs_that_differ_do_not_match_and_their_like_do(name, make, other, by_buffer):
    first, second = make(), other()
    if by_buffer:
        assert key_of(first, True)[0] != key_of(second, True)[0]
    for recorded, roots in ((first, second), (second, first)):
        assert_match_is_key_equality(recorded, roots, by_buffer)
    for recorded, like in ((first, make()), (second, other())):     # over other buffers
        assert key_of(recorded, by_buffer)[0] == key_of(like, by_buffer)[0]
        assert_match_is_key_equality(recorded, like, by_buffer)


def key_of(roots, by_buffer):
    return ir.structural_key(roots) if by_buffer else ir.structural_key(roots, stops=frozenset())


def assert_match_is_key_equality(recorded, roots, by_buffer):
    key, nodes, _ = key_of(recorded, by_buffer)
    want = key_of(roots, by_buffer)
    got = Walk(recorded, nodes, by_buffer).match(roots)
    assert (got is not None) == (want[0] == key), (recorded, roots)
    if got is not None:
        assert got[0] == want[1] and got[1] == want[2]


def random_graph(rng: random.Random, pool: list, realize: bool) -> list:
    """A few roots over buffers drawn from pool (so some are shared), some nodes computed."""
    made = [rng.choice(pool)() for _ in range(3)]
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        a, b = rng.choice(made), rng.choice(made)
        if kind < 0.4:
            node = rng.choice([add, mul])(a, b)
        elif kind < 0.6:
            node = ir.unary(rng.choice([Op.EXP, Op.NEG]), a)
        elif kind < 0.8:
            node = mul(a, ir.const(rng.choice([1.0, 2.0]), float32, (2, 2)))
        else:
            node = ir.permute(a, (1, 0))
        if realize and node.op is not Op.BUFFER and rng.random() < 0.1:
            realized(node)
        made.append(node)
    return rng.sample(made[3:], rng.randint(1, min(3, len(made) - 3)))


@pytest.mark.parametrize("by_buffer", [True, False])
def test_random_graphs_match_exactly_when_their_keys_are_equal(by_buffer):
    """Graphs drawn over three shared buffers and fresh ones: twins drawn alike (over other
    fresh buffers) and strangers, every pair agrees with the keys."""
    shared = [buf((2, 2)) for _ in range(3)]
    pool = [lambda n=n: n for n in shared] + [lambda: buf((2, 2))] * 2
    rng = random.Random(7)
    for _ in range(30):
        seed = rng.random()
        twin, other_twin = (random_graph(random.Random(seed), pool, by_buffer) for _ in range(2))
        stranger = random_graph(rng, pool, by_buffer)
        for recorded, roots in ((twin, other_twin), (twin, stranger), (stranger, twin)):
            assert_match_is_key_equality(recorded, roots, by_buffer)


def test_a_plan_is_matched_per_device(monkeypatch):
    """The walks recorded for one device do not answer for another of another spec: its own
    plan is scheduled and recorded."""
    device = cg.device()

    class Other:
        spec = device.spec + ":other"

        def __getattr__(self, name):
            return getattr(device, name)

    x, y = (cg.tensor(np.full((2, 3), k, np.float32)) for k in (1, 2))
    first = plans.plan_for([(x * 2).node], device)[0]
    assert plans.plan_for([(y * 2).node], device)[0] is first
    assert plans.plan_for([(y * 2).node], Other())[0] is not first


def test_a_backward_run_reading_one_buffer_twice_is_not_taken_for_one_reading_two():
    """Runs of one wiring, alternately over two buffers and over one read twice: each gets
    the gradient of its own graph, from its own template."""
    rng = np.random.default_rng(0)
    for step in range(4):
        a_values, x_values = (rng.standard_normal(3).astype(np.float32) for _ in range(2))
        a = cg.tensor(a_values, requires_grad=True)
        x = a.detach() if step % 2 else cg.tensor(x_values)
        (a * x.exp()).sum().backward()
        np.testing.assert_allclose(a.grad.numpy(), np.exp(a_values if step % 2 else x_values),
                                   rtol=1e-6)
