"""The autograd engine: accumulation, retain_graph, detach, grad modes, grad_fn names and
edges, retain_grad, tensor hooks, cg.autograd.grad (higher derivatives), gradcheck, version
counters, and the fusion of derived backward graphs."""
import numpy as np
import pytest

import clgrad as cg
from helpers import check, library

try:
    import torch
except ImportError:
    torch = None

A = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], dtype=np.float32)
W = np.array([[1.0, -2.0], [0.5, 0.25], [-1.0, 3.0]], dtype=np.float32)


def leaf(array=A, dtype=cg.float32):
    return cg.tensor(array, dtype=dtype, requires_grad=True)


def test_gradients_accumulate_until_zeroed():
    x = leaf()
    (x * 2).sum().backward()
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 5))
    with cg.no_grad():
        x.grad.zero_()
    (x * x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * A)


def test_retain_graph():
    x = leaf()
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * (np.exp(A) * (1 + A)), rtol=1e-5)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_backward_of_no_tensors_does_nothing():
    x = leaf()
    cg.autograd.backward([], [])
    assert x.grad is None


def test_backward_needs_scalar_or_gradient():
    x = leaf()
    with pytest.raises(RuntimeError, match="only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(cg.ones(2, 3))
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 2))
    with pytest.raises(RuntimeError, match="does not require grad"):
        cg.tensor(A).sum().backward()


def test_detach():
    x = leaf()
    d = (x * 2).detach()
    assert d.is_leaf and not d.requires_grad and d.grad_fn is None
    (x * d).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * A)     # no gradient through d
    np.testing.assert_allclose(d.numpy(), 2 * A)


def test_no_grad_and_enable_grad():
    x = leaf()
    with cg.no_grad():
        assert not cg.is_grad_enabled()
        y = x * 2
        with cg.enable_grad():
            z = x * 2
    assert cg.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn.name() == "MulBackward0"

    @cg.no_grad()
    def frozen(t):
        return t * 2

    @cg.enable_grad()
    def recorded(t):
        return t * 2

    assert frozen(x).grad_fn is None
    with cg.no_grad():
        assert recorded(x).requires_grad
    cg.set_grad_enabled(False)
    try:
        assert (x * 2).grad_fn is None
    finally:
        cg.set_grad_enabled(True)
    assert cg.autograd.no_grad is cg.no_grad


def test_is_leaf():
    x, c = leaf(), cg.tensor(A)
    y = x * 2
    assert x.is_leaf and c.is_leaf and not y.is_leaf
    assert (c * 2).is_leaf         # nothing requires grad: no graph, a leaf as in PyTorch


NAMED_OPS = {
    "mul": lambda x, w: x * 2, "add": lambda x, w: x + 1, "sub": lambda x, w: x - 1,
    "div": lambda x, w: x / 3, "pow": lambda x, w: x.pow(2), "mean": lambda x, w: x.mean(),
    "sum": lambda x, w: x.sum(), "sum_dim": lambda x, w: x.sum(0), "mm": lambda x, w: x.mm(w),
    "relu": lambda x, w: x.relu(), "exp": lambda x, w: x.exp(), "t": lambda x, w: x.t(),
    "view": lambda x, w: x.view(6), "reshape": lambda x, w: x.reshape(3, 2),
    "neg": lambda x, w: -x, "sigmoid": lambda x, w: x.sigmoid(), "tanh": lambda x, w: x.tanh(),
    "clamp": lambda x, w: x.clamp(min=0), "softmax": lambda x, w: x.softmax(1),
    "select": lambda x, w: x[0], "slice": lambda x, w: x[:, 1:], "clone": lambda x, w: x.clone(),
    "permute": lambda x, w: x.permute(1, 0), "unsqueeze": lambda x, w: x.unsqueeze(0),
    "rsub": lambda x, w: 1 - x, "rdiv": lambda x, w: 1 / x, "max": lambda x, w: x.max(),
    "index_select": lambda x, w: x.index_select(1, x.new_tensor([1, 0]).long()),
    "gather": lambda x, w: x.gather(1, x.new_tensor([[0], [1]]).long()),
    "take_along_dim": lambda x, w: x.take_along_dim(x.new_tensor([[0], [1]]).long(), 1),
    "take": lambda x, w: x.take(x.new_tensor([0, 3]).long()),
    "index": lambda x, w: x[x.new_tensor([1, 0]).long()],
}


@pytest.mark.skipif(torch is None, reason="PyTorch gives the reference names")
@pytest.mark.parametrize("op", sorted(NAMED_OPS))
def test_grad_fn_names_match_pytorch(op):
    fn = NAMED_OPS[op]
    ours = fn(leaf(), leaf(W)).grad_fn.name()
    theirs = fn(torch.tensor(A, requires_grad=True), torch.tensor(W, requires_grad=True))
    assert ours == theirs.grad_fn.name()


def test_next_functions():
    x1 = cg.ones(2, 2, requires_grad=True)
    x2 = cg.tensor(1.1, requires_grad=True)
    y = x1 * (x2 + 2)
    out = (y.pow(2) * 3).mean()
    mul = out.grad_fn.next_functions[0][0]
    assert out.grad_fn.name() == "MeanBackward0" and mul.name() == "MulBackward0"
    pow_ = mul.next_functions[0][0]
    assert pow_.name() == "PowBackward0"
    (acc, _), (add, _) = pow_.next_functions[0][0].next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc.variable is x1
    assert add.name() == "AddBackward0" and add.next_functions[0][0].variable is x2
    assert "grad_fn=<MeanBackward0>" in repr(out)


def test_retain_grad_and_walkthrough_numbers():
    x1 = cg.ones(2, 2, requires_grad=True)
    x2 = cg.tensor(1.1, requires_grad=True)
    y = x1 * (x2 + 2)
    z = y.pow(2) * 3
    y.retain_grad()
    z.retain_grad()
    z.mean().backward()
    assert y.retains_grad and not x1.retains_grad
    np.testing.assert_allclose(z.grad.numpy(), np.full((2, 2), 0.25))
    np.testing.assert_allclose(y.grad.numpy(), np.full((2, 2), 4.65), rtol=1e-6)
    np.testing.assert_allclose(x1.grad.numpy(), np.full((2, 2), 14.415), rtol=1e-6)
    np.testing.assert_allclose(x2.grad.numpy(), 18.6, rtol=1e-6)


def test_hooks_see_and_replace_gradients():
    """Values as PyTorch gives them: a leaf's hook runs before accumulation, a non-leaf's
    before its gradient flows on and before retain_grad keeps it; a tensor used twice calls
    its hook once, with the sum."""
    x = leaf()
    seen = []
    handle = x.register_hook(lambda g: seen.append(g.numpy()) or g * 2)
    (x * 3 + x).sum().backward()
    assert len(seen) == 1
    np.testing.assert_allclose(seen[0], np.full_like(A, 4))
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 8))
    y = x * 3
    y.retain_grad()
    y.register_hook(lambda g: g + 1)
    x.grad = None
    y.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full_like(A, 2))
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 12))
    handle.remove()
    x.grad = None
    (x * 3).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full_like(A, 3))


def test_hooks_run_for_autograd_grad_and_until_removed():
    x = leaf()
    with x.register_hook(lambda g: g * 10):
        (gx,) = cg.autograd.grad((x * 3).sum(), x)
        h = x * 1
        h.register_hook(lambda g: g * 10)
        (gh,) = cg.autograd.grad((h * 3).sum(), h)
    (gx_after,) = cg.autograd.grad((x * 3).sum(), x)
    np.testing.assert_allclose(gx.numpy(), np.full_like(A, 30))
    np.testing.assert_allclose(gh.numpy(), np.full_like(A, 30))
    np.testing.assert_allclose(gx_after.numpy(), np.full_like(A, 3))


def test_hook_errors():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        cg.tensor(A).register_hook(lambda g: g)
    x = leaf()
    y = x * 2

    def to_scalar(g):
        return g.sum()
    y.register_hook(to_scalar)
    with pytest.raises(RuntimeError, match="hook 'to_scalar' has changed the size of value"):
        y.sum().backward()


def test_tensor_used_twice():
    x = leaf()
    (x * x + x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), 2 * A + 1)


def test_broadcasting_is_summed_back():
    a = leaf(np.arange(3, dtype=np.float32).reshape(3, 1))
    b = leaf(np.arange(4, dtype=np.float32))
    s = cg.tensor(2.0, requires_grad=True)
    ((a + b) * s).sum().backward()
    assert a.grad.shape == (3, 1) and b.grad.shape == (4,) and s.grad.shape == ()
    np.testing.assert_allclose(a.grad.numpy(), np.full((3, 1), 8))
    np.testing.assert_allclose(b.grad.numpy(), np.full(4, 6))
    np.testing.assert_allclose(s.grad.numpy(), (np.arange(3)[:, None] + np.arange(4)).sum())


def test_two_leaves_with_equal_values_get_their_own_gradients():
    a = cg.zeros(3, requires_grad=True)
    b = cg.zeros(3, requires_grad=True)
    ((a + 1) * (b + 2)).sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), [2, 2, 2])
    np.testing.assert_allclose(b.grad.numpy(), [1, 1, 1])


def test_inputs_without_grad_get_none_and_stop_the_walk():
    """An op's inputs that need no gradient get none built; the derivation stops at them even
    where the graph also reaches them through an input that does need one."""
    a = cg.tensor(A)                        # no grad
    b = a * 2                               # computed, no grad
    w = leaf()
    out = b * w + b * (a + w)               # one recorded op chain; b and a are given
    out.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), 2 * (2 * A), rtol=1e-6)
    assert out.grad_fn.next_functions[0][0] is not None
    y = cg.nn.functional.conv2d(b.reshape(1, 1, 2, 3), w.reshape(1, 1, 2, 3)[:, :, :, :2])
    (dw,) = cg.autograd.grad(y.sum(), [w])
    expect = np.zeros_like(A)
    expect[:, :2] = 2 * (A[:, :2] + A[:, 1:])    # each weight meets two input columns
    np.testing.assert_allclose(dw.numpy(), expect)


def test_autograd_grad_leaves_dot_grad_alone():
    x, w = leaf(), leaf(W)
    out = x.mm(w).sum()
    gx, gw = cg.autograd.grad(out, (x, w))
    np.testing.assert_allclose(gx.numpy(), np.tile(W.sum(1), (2, 1)))
    np.testing.assert_allclose(gw.numpy(), np.tile(A.sum(0)[:, None], (1, 2)))
    assert x.grad is None and w.grad is None
    unused = leaf()
    with pytest.raises(RuntimeError, match="allow_unused=True"):
        cg.autograd.grad(x.sum(), (x, unused))
    assert cg.autograd.grad(x.sum(), (x, unused), allow_unused=True)[1] is None


def test_second_and_third_derivatives():
    x = leaf()
    y = x.pow(3).sum()
    (g,) = cg.autograd.grad(y, x, create_graph=True)
    assert g.requires_grad
    (gg,) = cg.autograd.grad(g.sum(), x, create_graph=True)
    (ggg,) = cg.autograd.grad(gg.sum(), x)
    np.testing.assert_allclose(g.detach().numpy(), 3 * A ** 2, rtol=1e-6)
    np.testing.assert_allclose(gg.detach().numpy(), 6 * A, rtol=1e-6)
    np.testing.assert_allclose(ggg.numpy(), np.full_like(A, 6), rtol=1e-5)


def test_backward_with_create_graph_then_grad_of_grad():
    x = leaf()
    (x.sin() * x).sum().backward(create_graph=True)
    (h,) = cg.autograd.grad(x.grad.sum(), x)
    np.testing.assert_allclose(h.numpy(), 2 * np.cos(A) - A * np.sin(A), rtol=1e-5, atol=1e-6)


def test_gradcheck():
    x = leaf(A.astype(np.float64), dtype=cg.float64)
    w = leaf(W.astype(np.float64), dtype=cg.float64)
    assert cg.autograd.gradcheck(lambda a, b: (a.mm(b).tanh() * 2).softmax(1), (x, w))
    u, v = (cg.tensor(values, dtype=cg.float64, requires_grad=True)
            for values in ([0.5, -1.0], [2.0, 3.0]))
    assert cg.autograd.gradcheck(lambda a, b: (a * b, b), (u, v))    # an input returned as is
    with pytest.raises(ValueError, match="float64"):
        cg.autograd.gradcheck(lambda a: a * 2, (leaf(),))


def test_saved_input_modified_in_place():
    x = leaf()
    a = x * 1
    y = a.sin()
    a.mul_(2)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation.*SinBackward0.*"
                                           r"version 1; expected version 0"):
        y.sum().backward()


def test_in_place_on_unsaved_input_is_fine():
    x = leaf()
    a = x * 1
    y = a + 1                      # add's gradient does not read a
    a.mul_(2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.ones_like(A))


def test_in_place_on_leaf_that_requires_grad():
    x = leaf()
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        x.add_(1)
    with cg.no_grad():
        x.sub_(1)
        x[x < 0] = 0
    assert x._version == 2
    np.testing.assert_allclose(x.detach().numpy(), np.maximum(A - 1, 0))


def test_in_place_records_into_the_graph():
    x = leaf()
    y = x * 1
    y.mul_(3)
    y[0] = 0
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [[0, 0, 0], [3, 3, 3]])


def test_backward_of_elementwise_chain_is_one_kernel():
    x = cg.randn(4096, requires_grad=True)
    out = (((((x * 0.5 + 1).sin() * x).tanh() - 0.5).sigmoid() / 3).exp())
    assert len(cg.compile(out)) == 1
    (g,) = cg.autograd.grad(out.sum(), x)
    step = cg.compile(g)
    assert len(step) == 1 and step[0].kind == "elementwise"
    a = x.detach().numpy().astype(np.float64)
    f = lambda v: np.exp(1 / (1 + np.exp(-(np.tanh(np.sin(v * 0.5 + 1) * v) - 0.5))) / 3)
    eps = 1e-6
    np.testing.assert_allclose(g.numpy(), (f(a + eps) - f(a - eps)) / (2 * eps), rtol=1e-4, atol=1e-5)


def test_gradient_reaches_an_input_read_both_directly_and_through_a_folded_view():
    """v4[None] folds into a view of v4's source, while v4[2] reads v4 itself: the gradient
    through the folded read was lost (fuzz seed 24291)."""
    x = cg.tensor([[1.0], [2.0], [3.0], [4.0]], requires_grad=True)
    v4 = (x * 1).reshape(4)
    picked = v4[2]
    out = cg.where(v4[None] != 0.3, v4, picked)
    (out * cg.tensor([[1.0, 10.0, 100.0, 1000.0]])).sum().backward()
    assert x.grad.numpy().ravel().tolist() == [1.0, 10.0, 100.0, 1000.0]
    y = cg.tensor([[1.0], [2.0]], requires_grad=True)
    w = (y * 1).reshape(2)
    (w[None] * w[0] + w).sum().backward()      # folded and direct reads, both differentiated
    np.testing.assert_allclose(y.grad.numpy().ravel(), [1 + 1 + 3, 1 + 1])


def test_an_input_given_twice_through_a_folded_view_gets_its_gradient_once():
    """where(c, s, s) lists s twice; s (a reshape of a sum) is read folded into the
    broadcast, and each listing added the folded gradient again: twice torch's (seed 81957)."""
    c = np.array([[True, False], [False, True]])
    check(lambda x: library(x).where(library(x).tensor(c), x.sum(), x.sum()), (3,))
    check(lambda x: library(x).where(library(x).tensor(c), x @ x, x @ x), (3,))


def test_two_views_of_one_value_read_through_one_fold_share_its_gradient():
    """y and y.reshape(3, 1) are both views of a sum's (1, 3) node, and the broadcast folds
    y's read into one of that node: each of the two inputs was given the node's whole
    gradient, counted twice (fuzz edge seed 7300250, every runtime)."""
    check(lambda x: (x.sum(0).reshape(3, 1) * x.sum(0)).sum(), (2, 3))
    check(lambda a, b: ((a @ b).reshape(3, 1) * (a @ b))[2, 1], (4,), (4, 3))
    check(lambda a, b: ((a @ b).reshape(1, 3, 1) / (a @ b))[:, 2, -2], (13,), (13, 3))


def test_only_floating_results_require_grad():
    """As in PyTorch: comparisons, integer casts and argmax of a tensor that requires grad
    give tensors outside autograd, and a float result of them does not require grad."""
    x = cg.tensor([0.2, 0.7, 1.5], requires_grad=True)
    for out in (x > 0.5, x.eq(x), x.to(cg.int64), x.long(), x.argmax(), x.isnan()):
        assert not out.requires_grad and out.grad_fn is None
    assert not (x > 0.5).float().requires_grad
    (x * (x > 0.5).float()).sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("make", [
    lambda: cg.full((2,), 3.0, requires_grad=True),
    lambda: cg.full((2,), 3.0).requires_grad_(),
])
def test_equal_leaves_made_alike_are_variables_of_their_own(make):
    """Lazy nodes are interned, and so is the buffer node of their computed value: two
    full((2,), 3.0) leaves were one node, so x * y gave x the gradient 6 and y none."""
    x, y = make(), make()
    (x * y).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])
    np.testing.assert_array_equal(y.grad.numpy(), [3.0, 3.0])


SLOPED = {      # ops whose gradient comes from a PyTorch formula (ir.sloped), not their value
    "log1p": lambda fw, t: t.log1p(), "expm1": lambda fw, t: t.expm1(),
    "digamma": lambda fw, t: t.digamma(), "nan_to_num": lambda fw, t: t.nan_to_num() * t,
    "silu": lambda fw, t: fw.nn.functional.silu(t), "mish": lambda fw, t: fw.nn.functional.mish(t),
    "logsigmoid": lambda fw, t: fw.nn.functional.logsigmoid(t),
    "softplus": lambda fw, t: fw.nn.functional.softplus(t),
    "glu": lambda fw, t: fw.nn.functional.glu(t, 0),
    "gelu": lambda fw, t: fw.nn.functional.gelu(t),
    "gelu_tanh": lambda fw, t: fw.nn.functional.gelu(t, approximate="tanh"),
    "elu": lambda fw, t: fw.nn.functional.elu(t, 0.7),
    "selu": lambda fw, t: fw.nn.functional.selu(t),
    "celu": lambda fw, t: fw.nn.functional.celu(t, 0.5),
    "logaddexp": lambda fw, t: fw.logaddexp(t, t * t - 1),
    "logaddexp2": lambda fw, t: fw.logaddexp2(t * 0.5, -t),
    "logcumsumexp": lambda fw, t: (t * t).reshape(4, 1).logcumsumexp(1),
    "remainder": lambda fw, t: (t % 0.75) * t,
    "kl_div": lambda fw, t: fw.nn.functional.kl_div(t, t.softmax(0), reduction="sum"),
}


@pytest.mark.skipif(torch is None, reason="PyTorch gives the reference derivatives")
@pytest.mark.parametrize("name", SLOPED)
def test_second_derivative_through_a_derivative_formula(name):
    """The formula's own dependence on x is differentiated at the second order."""
    x = np.array([-2.5, -0.5, 0.3, 2.0], np.float32)
    results = []
    for fw in (cg, torch):
        t = fw.tensor(x, requires_grad=True)
        (g,) = fw.autograd.grad(SLOPED[name](fw, t).sum(), t, create_graph=True)
        (h,) = fw.autograd.grad((g * g).sum(), t)
        results.append((g.detach().numpy(), h.numpy()))
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-3, atol=1e-5)



@pytest.mark.parametrize("op", ["heaviside", "floor_divide", "heaviside_", "floor_divide_"])
def test_ops_without_a_derivative_refuse_in_backward(op):
    """PyTorch records heaviside and floor_divide with a NotImplemented grad_fn: the result
    requires grad, and backward through it raises naming the op, in place too (where leaving
    the op outside autograd passed the incoming gradient on unchanged)."""
    results = {}
    for lib in (cg, torch):
        x = lib.tensor([-1.5, 0.0, 2.5], requires_grad=True)
        y = lib.tensor([0.5, 0.5, 0.5])
        if op.endswith("_"):
            out = x * 1
            getattr(out, op)(y)
        else:
            out = getattr(lib, op)(x, y)
        with pytest.raises(RuntimeError) as error:
            (out * 2).sum().backward()
        results[lib.__name__] = out.requires_grad, out.grad_fn.name(), str(error.value)
    assert results["clgrad"] == results["torch"] == (
        True, "torch::autograd::NotImplemented", f"derivative for aten::{op} is not implemented")


def test_floor_division_by_rounding_mode_and_nextafter_have_pytorchs_gradients():
    """div(..., rounding_mode='floor') has the zero gradient floor_divide lacks; nextafter
    passes g to self and zeros to other."""
    a = np.array([-1.5, 0.0, 2.5, np.inf], np.float32)
    b = np.array([0.5, -2.0, 0.75, 1.0], np.float32)
    check(lambda x, y: [x.div(y, rounding_mode="floor"), x.div(y, rounding_mode="trunc"),
                        x.nextafter(y)], a, b, atol=0, rtol=0)
    x, y = leaf(a[None]), leaf(b[None])
    assert [t.grad_fn.name() for t in (x.div(y, rounding_mode="floor"), x.nextafter(y))] == \
        ["DivBackward2", "NextafterBackward0"]
