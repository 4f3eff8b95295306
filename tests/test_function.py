"""cg.autograd.Function: every ctx feature, the checks on what backward returns, and fusion of
custom forward/backward bodies with the ops around them."""
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad as cg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from custom_relu import MyReLU  # noqa: E402  (the seed program's Function)

A = np.array([[-1.5, 0.5, 2.0], [3.0, -0.25, 1.0]], dtype=np.float32)


class Scale(cg.autograd.Function):
    """Non-tensor argument, keyword argument with a default, saving by name."""

    @staticmethod
    def forward(ctx, input, factor, offset=None):
        ctx.factor = factor
        ctx.save_for_backward(input=input, offset=offset)
        out = input * factor
        return out if offset is None else out + offset

    @staticmethod
    def backward(ctx, grad_output):
        assert ctx.saved_variables["input"] is ctx.input
        grad_offset = grad_output if ctx.needs_input_grad.offset else None
        return {"input": grad_output * ctx.factor, "offset": grad_offset}


def leaf(array=A, dtype=cg.float32):
    return cg.tensor(array, dtype=dtype, requires_grad=True)


def test_custom_relu_values_and_node():
    x = leaf()
    y = MyReLU.apply(x)
    assert y.grad_fn.name() == "MyReLUBackward"
    assert y.grad_fn.next_functions == ((x._accumulator, 0),)
    assert not y.is_leaf and y.requires_grad
    (y * 3).sum().backward()
    np.testing.assert_allclose(y.detach().numpy(), np.maximum(A, 0))
    np.testing.assert_allclose(x.grad.numpy(), np.where(A < 0, 0, 3))


def test_no_node_without_grad():
    y = MyReLU.apply(cg.tensor(A))
    assert y.grad_fn is None and not y.requires_grad
    with cg.no_grad():
        y = MyReLU.apply(leaf())
    assert y.grad_fn is None


def test_non_tensor_argument_and_names():
    x = leaf()
    y = Scale.apply(x, 2.0)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 2))


def test_keyword_argument_and_dict_gradients():
    x, b = leaf(), leaf(np.ones(3, np.float32))
    Scale.apply(x, 0.5, offset=b).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 0.5))
    np.testing.assert_allclose(b.grad.numpy(), [2, 2, 2])     # broadcast: summed back


def test_needs_input_grad():
    seen = {}

    class Probe(cg.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight, k):
            seen["flags"] = ctx.needs_input_grad
            return input * weight * k

        @staticmethod
        def backward(ctx, g):
            return None, g, None

    Probe.apply(cg.tensor(A), leaf(), 3).sum().backward()
    flags = seen["flags"]
    assert flags == (False, True, False) and isinstance(flags, tuple)
    assert flags.weight is True and flags["input"] is False and flags[2] is False
    with pytest.raises(AttributeError, match="no argument named 'bias'"):
        flags.bias


def test_several_outputs_materialize_and_none():
    received = []

    def make(materialize):
        class Split(cg.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.set_materialize_grads(materialize)
                return x * 2, x * 3

            @staticmethod
            def backward(ctx, ga, gb):
                received.append((ga, gb))
                return ga * 2 + (gb * 3 if gb is not None else 0)
        return Split

    x = leaf()
    a, b = make(True).apply(x)
    assert a.grad_fn is b.grad_fn and a._output_nr == 0 and b._output_nr == 1
    (a.sum() + b.sum() * 10).backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 32))
    a, _ = make(True).apply(x)
    a.sum().backward()
    np.testing.assert_allclose(received[-1][1].numpy(), np.zeros_like(A))
    a, _ = make(False).apply(x)
    a.sum().backward()
    assert received[-1][1] is None


def test_grad_of_second_output_by_autograd_grad():
    class Split(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 3

    x = leaf()
    a, b = Split.apply(x)
    (gb,) = cg.autograd.grad((b * b).sum(), b)
    np.testing.assert_allclose(gb.numpy(), 2 * 3 * A, rtol=1e-6)
    assert x.grad is None


def test_mark_non_differentiable():
    class WithMask(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            mask = (x > 0).float()
            ctx.mark_non_differentiable(mask)
            return x.clamp(min=0), mask, (x > 0)

        @staticmethod
        def backward(ctx, g, g_mask, g_bool):
            np.testing.assert_allclose(g_mask.numpy(), 0)
            return g

    out, mask, positive = WithMask.apply(leaf())
    assert not mask.requires_grad and mask.grad_fn is None
    assert not positive.requires_grad
    assert out.grad_fn.name() == "WithMaskBackward"
    out.sum().backward()


class AddOneInPlace(cg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_mark_dirty():
    a = leaf()
    x = a * 1
    y = AddOneInPlace.apply(x)
    assert y is x and x.grad_fn.name() == "AddOneInPlaceBackward"
    assert x._version == 1
    (y * 2).sum().backward()
    np.testing.assert_allclose(x.detach().numpy(), A + 1)
    np.testing.assert_allclose(a.grad.numpy(), np.full_like(A, 2))


def test_mark_dirty_on_leaf_that_requires_grad():
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        AddOneInPlace.apply(leaf())


def test_saved_tensor_modified_in_place():
    a = leaf()
    x = a * 1
    y = MyReLU.apply(x)
    x.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*MyReLUBackward"):
        y.sum().backward()


def test_saved_tensors_freed_after_backward():
    y = MyReLU.apply(leaf())
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        y.sum().backward()


def test_wrong_number_of_gradients():
    class TwoGrads(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=r"TwoGradsBackward returned an incorrect number of "
                                           r"gradients \(expected 1, got 2\)"):
        TwoGrads.apply(leaf()).sum().backward()


def test_wrong_gradient_shape():
    class BadShape(cg.autograd.Function):
        @staticmethod
        def forward(ctx, input, weight):
            return input * weight

        @staticmethod
        def backward(ctx, g):
            return g, g.sum(0)[:2]

    with pytest.raises(RuntimeError, match=r"BadShapeBackward.*input 1 \('weight'\).*\[2\].*"
                                           r"\[2, 3\]"):
        BadShape.apply(leaf(), leaf()).sum().backward()


def test_gradient_for_non_tensor_argument():
    class Bad(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match=r"input 1 \('k'\).*not a tensor"):
        Bad.apply(leaf(), 2.0).sum().backward()


def test_function_from_two_plain_functions():
    def cube_forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    def cube_backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x * x

    Cube = cg.autograd.function(forward=cube_forward, backward=cube_backward)
    assert issubclass(Cube, cg.autograd.Function) and Cube.__name__ == "Cube"
    x = leaf()
    y = Cube.apply(x)
    assert y.grad_fn.name() == "CubeBackward"
    # the backward body is differentiable itself: second derivative through create_graph
    (g,) = cg.autograd.grad(y.sum(), x, create_graph=True)
    (gg,) = cg.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), 3 * A * A, rtol=1e-6)
    np.testing.assert_allclose(gg.numpy(), 6 * A, rtol=1e-6)


def test_gradcheck_on_custom_functions():
    x = leaf(A.astype(np.float64) + 0.1, dtype=cg.float64)
    assert cg.autograd.gradcheck(lambda t: MyReLU.apply(t) * t, (x,))

    class WrongExp(cg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.exp()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x            # should be g * exp(x)

    with pytest.raises(RuntimeError, match="Jacobian mismatch for output 0 with respect to input 0"):
        cg.autograd.gradcheck(WrongExp.apply, (x,))
    assert cg.autograd.gradcheck(WrongExp.apply, (x,), raise_exception=False) is False


def test_custom_bodies_fuse_with_surrounding_ops():
    x = leaf()
    y = (MyReLU.apply(x * 2 - 1) + 1).exp()
    assert len(cg.compile(y)) == 1
    (g,) = cg.autograd.grad(y.sum(), x)
    assert len(cg.compile(g)) == 1
    expected = np.exp(np.maximum(2 * A - 1, 0) + 1) * np.where(2 * A - 1 < 0, 0, 2)
    np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5)


@pytest.mark.parametrize("fits", [True, False], ids=["forward-in-cache", "forward-too-large"])
def test_custom_relu_training_step_kernels(fits, monkeypatch):
    """The seed net's step in 6 kernels: forward, backward and the four in-place updates fused
    into them. On a device that starts a backward early (frontend/early_backward.py), the
    loss and gradients run as backward() ends and the updates after, in two kernels of their
    own; where the forward also fits in the cache the device reports (set here, as CPUs
    report different ones), the forward runs as backward() begins and the gradients with the
    updates, fused again: one kernel more than one schedule (dloss/dy_pred, which the
    forward's @w2 kernel stores otherwise)."""
    monkeypatch.setattr(cg.device(), "cache_bytes", 1 << 30 if fits else 1 << 10)
    x, y = cg.randn(64, 1000), cg.randn(64, 10)
    w1 = cg.randn(1000, 100, requires_grad=True)
    w2 = cg.randn(100, 10, requires_grad=True)
    cg.realize(x, y, w1, w2)
    loss = (MyReLU.apply(x.mm(w1)).mm(w2) - y).pow(2).sum()
    with cg.profile() as backward:
        loss.backward()
    with cg.profile() as update:
        with cg.no_grad():
            w1 -= 1e-6 * w1.grad
            w2 -= 1e-6 * w2.grad
            w1.grad.zero_()
            w2.grad.zero_()
    # forward: x@w1 also storing the relu, @w2 (also storing dloss/dy_pred in one schedule),
    # the loss; backward: dh (relu mask fused), dw1 and dw2
    def kinds(profile, updates=False):
        return sorted(row.name.split("_")[0] for row in profile.rows
                      if not updates or "detach" in row.name and "sub" in row.name)
    if not x.device.starts_backward_early:
        expected = [], ["M"] * 5 + ["R"], ["M", "M"]
    elif fits:
        expected = ["M", "M", "R"], ["E", "M", "M", "M"], ["M", "M"]
    else:
        expected = ["M"] * 5 + ["R"], ["E", "E"], ["E", "E"]
    assert (kinds(backward), kinds(update), kinds(update, updates=True)) == expected, \
        (backward.rows, update.rows)


class Passthrough(cg.autograd.Function):
    """Returns its input as is (a view of it, in PyTorch) and saves it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x


class SavesBoth(cg.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(x, w)
        return x * w

    @staticmethod
    def backward(ctx, g):
        x, w = ctx.saved_tensors
        return g * w, g * x


def test_an_input_returned_as_is_cannot_be_changed_in_place():
    # as in PyTorch: the custom backward would not see the change (and the saved input,
    # which the output aliases, would silently take it)
    x = cg.tensor(A, requires_grad=True) * 1
    y = Passthrough.apply(x)
    with pytest.raises(RuntimeError, match="Output 0 of PassthroughBackward is a view and is "
                                           "being modified inplace"):
        y.mul_(2)
    with cg.no_grad(), pytest.raises(RuntimeError, match="is a view"):
        y[0] = 0.0
    y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy(), A)


def test_a_saved_input_changed_through_its_base_is_refused():
    base = cg.tensor(A)
    w = cg.ones(3, requires_grad=True)
    y = SavesBoth.apply(base[0], w)
    base.add_(1)            # base[0] is a view: it changed too
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


class SavesOutput(cg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        out = x.exp()
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, g):
        (out,) = ctx.saved_tensors
        return g * out


def test_a_saved_output_changed_through_a_view_is_refused():
    x = cg.tensor(A, requires_grad=True)
    y = SavesOutput.apply(x)
    y.detach()[0].zero_()           # a view of a view of y: y changes, and so its version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    np.testing.assert_array_equal(y.detach().numpy()[0], 0)
