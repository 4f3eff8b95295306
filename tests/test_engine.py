"""The engine's buffer donation: an output may overwrite a buffer it reads only when no tensor
and no other lazy graph can read that buffer's old value afterwards."""
import weakref

import numpy as np

import clgrad as cg
from clgrad.engine import donation


def test_no_donation_while_another_lazy_graph_holds_a_node_reading_the_buffer():
    """y.grad = -(c * sign(x - y)) and x.grad = c * sign(x - y) share the node c * sign(...)
    (nodes are interned). Reading y.grad alone must not write it over the cotangent c's
    buffer: x.grad, still lazy, reads c through that shared node (no tensor holds c's node
    itself). From the second run of the graph on, the plan's donation was replayed."""
    rng = np.random.default_rng(0)
    for _ in range(3):
        xs, ys, c = (rng.uniform(-2, 2, (3, 4)).astype(np.float32) for _ in range(3))
        x, y = cg.tensor(xs, requires_grad=True), cg.tensor(ys, requires_grad=True)
        (x - y).abs().backward(cg.tensor(c))
        np.testing.assert_allclose(y.grad.numpy(), -c * np.sign(xs - ys))
        np.testing.assert_allclose(x.grad.numpy(), c * np.sign(xs - ys))


def test_no_donation_while_a_lazy_tensor_reads_the_buffer_beside_the_output():
    """`doubled` reads w's buffer through a node that r's kernel computes but does not write,
    and that does not lead to w's new value: writing w's new value over its old buffer would
    change what `doubled` computes later. From the first run of the graph on."""
    for _ in range(3):
        w, x = cg.tensor(np.array([1.0, 2.0], np.float32)), cg.tensor(np.ones(2, np.float32))
        doubled = w * 2
        w.add_(x)
        r = doubled + w
        np.testing.assert_array_equal(r.numpy(), [4.0, 7.0])
        np.testing.assert_array_equal(doubled.numpy(), [2.0, 4.0])
        np.testing.assert_array_equal(w.numpy(), [2.0, 3.0])


def test_no_donation_of_a_buffer_an_outputs_gradient_reads():
    """rrelu's output, computed, keeps the graph its GradFn differentiates: the slope reads a
    buffer of random numbers that no tensor holds. Writing the output over that buffer (it
    has the output's size) gave the backward pass the output's values as slopes, from the
    second step on (the first, too, once a new plan's schedule no longer held the buffer)."""
    for _ in range(3):
        x = cg.tensor(np.linspace(-2, 2, 41).astype(np.float32), requires_grad=True)
        out = cg.nn.functional.rrelu(x, 0.1, 0.3, training=True)
        slopes = out.detach().numpy()[:20] / x.detach().numpy()[:20]
        out.sum().backward()
        np.testing.assert_allclose(x.grad.numpy()[:20], slopes, rtol=1e-6)


def test_an_update_in_place_that_nothing_else_reads_writes_over_its_buffer():
    a = cg.tensor(np.arange(4, dtype=np.float32)).realize()
    buffers = []
    for _ in range(3):
        a.mul_(2).add_(1)
        a.realize()
        buffers.append(a.node.arg.buffer)
    assert (len(set(buffers[1:])) == 1) == donation.REFCOUNTS_VERIFIED   # from its second run
    np.testing.assert_array_equal(a.numpy(), ((np.arange(4) * 2 + 1) * 2 + 1) * 2 + 1)


def test_a_donated_buffer_comes_back_under_a_new_node():
    """Buffer nodes are interned by their ref and stand for values that never change (caches
    key on them: cross_entropy's checked targets). An output written over a leaf's buffer
    while that leaf's node still lived came back as the very same node, new values and all."""
    a = cg.tensor(np.arange(4, dtype=np.float32)).realize()
    for _ in range(3):
        before = weakref.ref(a.node)    # (a strong reference would stop the donation)
        a.add_(1)
        a.realize()
        assert a.node is not before()
    np.testing.assert_array_equal(a.numpy(), np.arange(4) + 3)


def test_an_input_given_to_one_output_is_read_right_by_the_others():
    """where(m, a, b)'s backward writes a's gradient, where(m, c, 0), over the cotangent c's
    buffer, then computes b's, where(m, 0, c), in the same kernel. Its pointers were restrict,
    so Intel's compiler loaded c again after the store in the loop over the last elements:
    b's gradient was 0 there (fuzz seed 2408861)."""
    rng = np.random.default_rng(0)
    for _ in range(3):
        ints = cg.tensor(rng.integers(-5, 6, 30))
        a, b = (cg.tensor(rng.standard_normal(30).astype(np.float32), requires_grad=True)
                for _ in range(2))
        c = rng.standard_normal(30).astype(np.float32)
        mask = ints < ints
        out = cg.where(mask, a, b)
        out.backward(cg.tensor(c))          # no one holds the cotangent: it may be given away
        cg.realize(mask, out, a.grad, b.grad)
        np.testing.assert_array_equal(b.grad.numpy(), c)
        np.testing.assert_array_equal(a.grad.numpy(), np.zeros(30, np.float32))
