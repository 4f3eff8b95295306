"""Kernel counts from cg.compile: what fuses, and that fused results stay correct."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn.functional as F

from helpers import check

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from custom_relu import MyReLU  # noqa: E402  (the seed program's Function)


def chain(x):
    return (((x * 2 + 1).relu() * x - 0.5).exp() * 0.25 + x).abs().sqrt()


def test_eight_op_chain_is_one_kernel():
    x = cg.randn(1000)
    y = chain(x)
    assert len(cg.compile(y)) == 1
    a = x.numpy()
    expected = np.sqrt(np.abs(np.exp(np.maximum(a * 2 + 1, 0) * a - 0.5) * 0.25 + a))
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5)


def test_softmax_and_log_softmax_are_one_kernel_each():
    x = cg.randn(37, 50)
    assert len(cg.compile(x.softmax(-1))) == 1
    assert len(cg.compile(x.log_softmax(-1))) == 1
    a = x.numpy().astype(np.float64)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(x.softmax(-1).numpy(), e / e.sum(1, keepdims=True), atol=1e-6)


def test_softmax_over_two_axes_keeps_its_exp_in_vectors():
    """A row over trailing axes (12, 2) is contiguous, though 2 is narrower than a vector: its
    lanes load, keep (the exp, stored by the sum's loop) and reload as whole vectors, without
    remainders. Relinearising the row's dimensions lost that, and the reload leaked the lane
    into a scalar index (fuzz seed 1501691)."""
    def softmax(x):
        e = x.exp()
        return e / e.sum((1, 2), keepdim=True)
    check(softmax, (2, 12, 2))
    (kernel,) = cg.compile(softmax(cg.randn(2, 12, 2))).kernels
    assert "%" not in kernel.source


def test_row_statistics_fuse_with_their_consumers():
    x = cg.randn(37, 50)
    normalized = (x - x.mean(-1, keepdim=True)) / (x.var(-1, keepdim=True) + 1e-5).sqrt()
    assert len(cg.compile(normalized)) == 1
    assert len(cg.compile(x.mean(1) * 3 + 1)) == 1
    a = x.numpy().astype(np.float64)
    ref = (a - a.mean(-1, keepdims=True)) / np.sqrt(a.var(-1, ddof=1, keepdims=True) + 1e-5)
    np.testing.assert_allclose(normalized.numpy(), ref, atol=1e-4)


def test_matmul_epilogue_fuses_bias_and_relu():
    x, w, b = cg.randn(16, 24), cg.randn(24, 40), cg.randn(40)
    y = (x @ w + b).relu()
    assert len(cg.compile(y)) == 1
    ref = np.maximum(x.numpy() @ w.numpy() + b.numpy(), 0)
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)


def _outputs(kernel) -> int:
    return len(re.findall(r"__global \w+\* restrict out\d+", kernel.source))


@pytest.mark.parametrize("rows, width", [(1, 1), (4, 5), (64, 3)])
def test_a_linear_on_three_dims_adds_its_bias_in_the_products_kernel(rows, width):
    """A Linear on (B, T, C) multiplies (B*T, C) and adds the bias to a reshape of the
    product: the add joins the product's kernel, which stores the product too only when
    something else reads it."""
    x, w, b = cg.randn(rows, width, 24), cg.randn(40, 24), cg.randn(40)
    ref = x.numpy() @ w.numpy().T + b.numpy()
    for grad in (True, False):
        with cg.set_grad_enabled(grad):
            y = F.linear(x, w, b)
            gelu = F.gelu(F.linear(x, w, b))
            product = x.reshape(-1, 24) @ w.T
        (alone,) = cg.compile(y).kernels
        (read_too,) = cg.compile(gelu, product).kernels
        assert alone.name.startswith("M_") and (_outputs(alone), _outputs(read_too)) == (1, 2)
        np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)
        cg.realize(gelu, product)
        np.testing.assert_allclose(product.numpy(), ref.reshape(-1, 40) - b.numpy(),
                                   rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(gelu.numpy(), F.gelu(cg.tensor(ref)).numpy(), rtol=1e-4,
                                   atol=1e-4)


def test_transposed_matmul_epilogue_stores_per_lane():
    # N = 6 is no multiple of 8 and M = 64 is: on the CPU the kernel computes C^T = B^T A^T,
    # its lanes run down C's columns and every epilogue output is stored lane by lane
    x, w, c = cg.randn(64, 37), cg.randn(37, 6), cg.randn(64, 6)
    y = (x @ w) * 2 + c
    above, half = (x @ w) * 2 + c > 0, (x.half() @ w.half())
    assert len(cg.compile(y)) == len(cg.compile(above)) == 1
    ref = x.numpy() @ w.numpy() * 2 + c.numpy()
    np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(above.numpy(), y.numpy() > 0)
    np.testing.assert_allclose(half.numpy().astype(np.float32), x.numpy() @ w.numpy(),
                               rtol=2e-2, atol=5e-2)


def test_concatenation_is_one_kernel():
    parts = [cg.randn(3, 5), cg.randn(2, 5), cg.randn(4, 5)]
    out = cg.cat(parts)
    assert len(cg.compile(out)) == 1
    np.testing.assert_array_equal(out.numpy(), np.concatenate([p.numpy() for p in parts]))


def test_a_value_used_by_two_kernels_stays_correct():
    x = cg.randn(37, 50)
    e = x.exp()
    column_sums, doubled = e.sum(0), e * 2      # e feeds a column reduction and a map
    assert len(cg.compile(column_sums, doubled)) == 2
    cg.realize(column_sums, doubled)
    a = np.exp(x.numpy().astype(np.float64))
    np.testing.assert_allclose(column_sums.numpy(), a.sum(0), rtol=1e-5)
    np.testing.assert_allclose(doubled.numpy(), 2 * a, rtol=1e-5)


def test_few_long_rows_do_not_fuse_their_broadcast_consumer():
    x = cg.randn(2, 20000)
    y = x / x.sum(1, keepdim=True)
    assert len(cg.compile(y)) == 2
    a = x.numpy().astype(np.float64)
    np.testing.assert_allclose(y.numpy(), a / a.sum(1, keepdims=True), rtol=1e-3, atol=1e-6)


def test_realized_intermediates_are_loaded_not_recomputed():
    x = cg.randn(37, 50)
    m = x.sum(1, keepdim=True).realize()
    y = x - m
    schedule = cg.compile(y)
    assert len(schedule) == 1 and "sum" not in schedule[0].name
    np.testing.assert_allclose(y.numpy(), x.numpy() - x.numpy().sum(1, keepdims=True), atol=1e-5)


def test_a_gather_reads_rows_of_a_buffer_where_they_lie():
    """gather, take_along_dim, take, topk and indexing read a tensor in a buffer through the
    view that lays out its rows (a reshape, a permutation, a slice): no copy of it first (a
    (4096, 1024) topk spent 1 ms of its 5 copying its input; x[:, i] of a (4096, 4096) x 65
    ms transposing it, 0.35 ms now); a computed tensor is the one kernel more."""
    x = cg.randn(64, 32).realize()
    at, cols = cg.tensor(np.array([[3, 1]] * 64)), cg.tensor([5, 0, 31, 5])
    picks = {"gather": (x.gather(1, at), 1), "take_along_dim": (x.take_along_dim(at, 1), 1),
             "take": (x.take(cg.tensor([5, 70])), 1), "topk": (x.topk(2).values, 2),
             "gather along dim 0": (x.gather(0, at.T[:, :32]), 1), "x[:, i]": (x[:, cols], 1),
             "index_select along dim 1": (x.index_select(1, cols), 1),
             "x[::2, i]": (x[::2, cols], 1), "x.T[i]": (x.T[cols], 1),
             "gather of a computed tensor": ((x * 2).gather(1, at), 2)}
    for name, (y, kernels) in picks.items():
        assert len(cg.compile(y)) == kernels, name
    a, c = x.numpy(), cols.numpy()
    np.testing.assert_array_equal(x.gather(1, at).numpy(), np.take_along_axis(a, at.numpy(), 1))
    np.testing.assert_array_equal(x.gather(0, at.T[:, :32]).numpy(),
                                  np.take_along_axis(a, at.numpy().T[:, :32], 0))
    np.testing.assert_array_equal(x[:, cols].numpy(), a[:, c])
    np.testing.assert_array_equal(x[::2, cols].numpy(), a[::2][:, c])
    np.testing.assert_array_equal(x.T[cols].numpy(), a.T[c])
    np.testing.assert_array_equal(x.take(cg.tensor([5, 70])).numpy(), a.reshape(-1)[[5, 70]])
    np.testing.assert_array_equal((x * 2).gather(1, at).numpy(),
                                  np.take_along_axis(a * 2, at.numpy(), 1))
    np.testing.assert_array_equal(x.topk(2).values.numpy(), -np.sort(-a, 1)[:, :2])


def test_a_gather_beside_its_source_s_view_as_an_output():
    """A view computed in the same schedule as a gather of the same rows (x.view(-1, 1) and
    x[i], whose rows are that view): the gather reads the view's own buffer there (fuzz seed
    101500390: the plan looked for x's among the kernel's buffers and raised ValueError)."""
    a = np.arange(7, dtype=np.float32)
    x = cg.tensor(a)
    column, picked = x.view(-1, 1), x[cg.tensor([-4, -2])]
    cg.realize(column, picked)
    np.testing.assert_array_equal(column.numpy(), a.reshape(-1, 1))
    np.testing.assert_array_equal(picked.numpy(), a[[-4, -2]])


def test_several_outputs_realize_in_one_schedule():
    x = cg.randn(37, 50)
    a, b = x * 2, x.sum(0)
    cg.realize(a, b)
    np.testing.assert_allclose(a.numpy(), x.numpy() * 2)
    np.testing.assert_allclose(b.numpy(), x.numpy().sum(0), rtol=1e-5, atol=1e-5)


def test_detached_values_compute_nothing_extra():
    x = cg.randn(1000)
    assert len(cg.compile((x.detach() * 2).exp() + x)) == 1


def test_kernels_reading_each_others_results_merge_into_one():
    from clgrad import optim
    params = [cg.randn(1000, requires_grad=True) for _ in range(2)]
    for p in params:
        p.grad = cg.randn(1000)
    opt = optim.Adam(params, lr=1e-2)
    opt.step()                      # the first step also fills the zero state buffers
    with cg.profile() as prof:
        opt.step()
    # parameter, exp_avg and exp_avg_sq of each parameter come out of one kernel
    assert sum(row.calls for row in prof.rows) == len(params)


def test_a_linear_layers_sgd_updates_join_their_gradients_kernels():
    """nn.Linear's weight gradient is computed in the weight's layout and its bias gradient
    is a sum over the batch: SGD's update of each (momentum buffer and parameter) joins the
    kernel computing the gradient, so a step has no kernel of elementwise updates left."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((16, 1),
                                                                              dtype=np.float32)
    models = []
    for fw in (cg, torch):
        fw.manual_seed(0)
        model = fw.nn.Sequential(fw.nn.Linear(8, 32), fw.nn.ReLU(), fw.nn.Linear(32, 1))
        opt = fw.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
        models.append((fw, model, opt))
    models[1][1].load_state_dict({k: torch.tensor(v.numpy())
                                  for k, v in models[0][1].state_dict().items()})
    for step in range(3):
        for fw, model, opt in models:
            with cg.profile() as prof:
                opt.zero_grad()
                fw.nn.MSELoss()(model(fw.tensor(x)), fw.tensor(y)).backward()
                opt.step()
                if fw is cg:
                    cg.realize(*model.parameters())
            if fw is cg and step:
                assert not [row.name for row in prof.rows if row.name.startswith("E_")]
    for ours, theirs in zip(models[0][1].parameters(), models[1][1].parameters()):
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), atol=1e-5)
        np.testing.assert_allclose(ours.grad.numpy(), theirs.grad.numpy(), atol=1e-5)


def test_a_merged_kernel_still_computes_every_output():
    x = cg.randn(50)
    a = x.exp()
    b = a * 2 + x
    a2, b2 = a.clone(), b.clone()
    assert len(cg.compile(a, b)) == 1
    cg.realize(a2, b2)
    np.testing.assert_allclose(a2.numpy(), np.exp(x.numpy()), rtol=1e-6)
    np.testing.assert_allclose(b2.numpy(), 2 * np.exp(x.numpy()) + x.numpy(), rtol=1e-6)


def test_a_merged_kernel_runs_after_every_kernel_it_reads():
    # the gradient of an index that selects nothing is a scatter of nothing: its fill kernel
    # writes it, and the gradient kernel that reads it joined tanh's kernel, which ran first
    # (it read a recycled buffer's old values: fuzz seed 11533)
    cg.full((2, 128), 7.0).realize()
    x = cg.randn(2, 64, requires_grad=True)
    y = x.tanh()
    picked = cg.maximum(x, x)[cg.tensor([False, False])]
    cg.autograd.backward([y, picked * 2], [cg.ones(2, 64), cg.ones(0, 64)])
    cg.realize(y, picked, x.grad)
    np.testing.assert_allclose(x.grad.numpy(), 1 - np.tanh(x.detach().numpy()) ** 2, atol=1e-6)


def test_kernels_differing_only_in_a_constant_sign_of_zero_are_not_shared():
    x = cg.ones(3)
    np.testing.assert_array_equal((1 / (x * 0.0)).numpy(), [np.inf] * 3)
    np.testing.assert_array_equal((1 / (x * -0.0)).numpy(), [-np.inf] * 3)


@pytest.mark.usefixtures("cpu_codegen")
def test_rows_vectors_do_not_tile_put_lanes_down_another_axis():
    # rows of 10 through a permute: the flat form would divide per lane, so lanes run down the
    # batch axis (32, whole vectors of 8 or 16) with named dims; a plain contiguous kernel
    # keeps its flat vector loads
    x = cg.randn(32, 3, 10, 10)
    y = x.permute(0, 1, 3, 2) * 2
    (permuted,), (flat,) = cg.compile(y), cg.compile(x * 2)
    assert "gid0" in permuted.source and "gid0" not in flat.source
    np.testing.assert_allclose(y.numpy(), x.numpy().transpose(0, 1, 3, 2) * 2)


def test_a_chain_thousands_of_ops_deep_computes():
    """A loop changing a tensor in place without reading it builds one long chain; the
    schedule cuts it where it passes the depth the kernel writer's recursion allows (the
    pieces may still share a kernel, computed one after another)."""
    x = cg.tensor(np.zeros(100, dtype=np.float32))
    for _ in range(3000):
        x.add_(1)
    assert x[0].item() == 3000.0
    y = cg.ones(4, requires_grad=True)
    z = y
    for _ in range(600):
        z = z * 1.001
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full(4, 1.001 ** 600), rtol=1e-4)


def _graph_size(t) -> int:
    from clgrad.compiler.ir import toposort
    return len(toposort([t.node], stop=lambda n: n.buffer is not None))


def test_steps_stay_steps_a_backward_computes_the_updates_before_it():
    """Manual SGD steps that read nothing: each backward() computes the previous step's
    pending update, so the graph behind the weights is one step's, whatever the steps."""
    rng = np.random.default_rng(0)
    x0, w0 = rng.standard_normal((16, 8), dtype=np.float32), rng.standard_normal((8, 4),
                                                                                 dtype=np.float32)
    x, w = cg.tensor(x0), cg.tensor(w0, requires_grad=True)
    sizes = []
    for _ in range(6):
        loss = (x @ w).square().sum()
        w.grad = None
        loss.backward()
        with cg.no_grad():
            w -= 1e-3 * w.grad
        sizes.append(_graph_size(w))
    # the first step starts from the upload's buffer node, later ones from a computed node
    assert len(set(sizes[1:])) == 1 and sizes[1] <= sizes[0] + 1
    expected = w0.astype(np.float64)
    for _ in range(6):
        expected = expected - 1e-3 * 2 * x0.T @ (x0 @ expected)
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-4)


def test_a_hand_written_step_runs_when_its_no_grad_block_ends_the_same_plan_every_step():
    """A tutorial's loop (nn.Sequential, MSELoss, model.zero_grad(), p -= lr * p.grad under
    no_grad): leaving the block runs the step with its loss and gradients, so every step,
    the last one the user reads too, is one schedule of one plan (K steps compile one
    step's kernels), and reading the loss computes nothing more."""
    from clgrad.compiler.ops import Op
    from clgrad.engine.run import listen
    model = cg.nn.Sequential(cg.nn.Linear(8, 16), cg.nn.ReLU(), cg.nn.Linear(16, 2))
    x, y = cg.randn(4, 8), cg.randn(4, 2)
    plans = []
    for _ in range(4):
        with listen() as heard:
            loss = cg.nn.MSELoss()(model(x), y)
            model.zero_grad()
            loss.backward()
            with cg.no_grad():
                for p in model.parameters():
                    p -= 0.1 * p.grad
        plans.append([plan for plan, *_ in heard])
        assert loss.node.op is Op.BUFFER and all(p.grad.node.op is Op.BUFFER
                                                 for p in model.parameters())
    assert [len(step) for step in plans] == [1, 1, 1, 1]
    assert all(step[0] is plans[0][0] for step in plans)


def test_a_large_steps_backward_computes_its_loss_and_gradients_when_it_ends(monkeypatch):
    """A step large enough that the device's work is worth starting early, whose forward
    does not fit in the cache the device reports (set here, as CPUs report different ones):
    backward() computes the loss and the gradients at once (on a device that starts a
    backward early); a small one leaves them to the step's end."""
    from clgrad.compiler.ops import Op
    monkeypatch.setattr(cg.device(), "cache_bytes", 1 << 10)
    for width, large in ((1024, True), (8, False)):
        x, w = cg.randn(64, width), cg.randn(width, 16, requires_grad=True)
        early = large and x.device.starts_backward_early
        loss = (x @ w).relu().sum()
        loss.backward()
        assert (loss.node.op is Op.BUFFER) is early and (w.grad.node.op is Op.BUFFER) is early
        expected = x.numpy().T @ ((x.numpy() @ w.detach().numpy()) > 0)
        np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-4, atol=1e-3)


def test_a_backward_started_early_stores_the_products_its_gradients_read(monkeypatch):
    """A step whose forward fits in the cache the device reports (set here, as CPUs report
    different ones), on a device that starts a backward early, launches its forward as
    backward() begins; the forward then also stores the values the backward nodes hold that
    a product made, so that the gradients read them instead of computing the product again:
    here the product the seed program's custom ReLU saved, which the loss alone would not
    store. The gradients wait for the step's end, whose updates fuse into their kernels."""
    from clgrad.compiler.ops import Op
    monkeypatch.setattr(cg.device(), "cache_bytes", 1 << 30)
    for width in (1000, 8):
        x, w = cg.randn(64, width), cg.randn(width, 100, requires_grad=True)
        product = x @ w
        loss = MyReLU.apply(product).sum()
        loss.backward()
        # (width 1000: its forward ops read and write 176,801 elements; width 8 too few)
        early = width == 1000 and x.device.starts_backward_early
        assert (product.node.op is Op.BUFFER) is early, width
        assert (loss.node.op is Op.BUFFER) is early and w.grad.node.op is not Op.BUFFER, width
        expected = x.numpy().T @ ((x.numpy() @ w.detach().numpy()) > 0)
        np.testing.assert_allclose(w.grad.numpy(), expected, rtol=1e-4, atol=1e-3)


def test_a_no_grad_block_computes_nothing_unless_it_ends_a_step():
    """Changing a leaf under no_grad before any backward() (initialising it), or computing
    under no_grad after one without changing a leaf (evaluating), stays lazy."""
    from clgrad.compiler.ops import Op
    w = cg.zeros(3, requires_grad=True)
    with cg.no_grad():
        w += 1
    assert w.node.op is not Op.BUFFER
    (w * 2).sum().backward()
    with cg.no_grad():
        evaluated = w * 3
    assert evaluated.node.op is not Op.BUFFER and w.grad.node.op is not Op.BUFFER
    np.testing.assert_array_equal(evaluated.numpy(), [3, 3, 3])
    np.testing.assert_array_equal(w.grad.numpy(), [2, 2, 2])


def test_gradients_accumulated_but_not_read_do_not_chain_from_step_to_step():
    """backward() into a .grad nobody reads (a layer's other parameters, gradient
    accumulation) computes the previous sum first: it chained every step's gradient into one
    graph, compiled anew, and ever larger, at each later read."""
    x, w, b = cg.randn(16, 8), cg.randn(8, 4, requires_grad=True), cg.randn(4, requires_grad=True)
    sizes = []
    for _ in range(5):
        (x @ w + b).square().sum().backward()
        sizes.append(_graph_size(b.grad))
    assert len(set(sizes[1:])) == 1
    expected = 5 * 2 * (x.numpy() @ w.detach().numpy() + b.detach().numpy()).sum(0)
    np.testing.assert_allclose(b.grad.numpy(), expected, rtol=1e-5)


def test_a_shared_value_with_a_long_expression_gets_a_buffer():
    """An elementwise value read by several ops is computed again by each: a recurrence's
    gradient carried back from step to step then grew each later kernel by the whole chain
    before it (a hand-written GRU's backward pass: sources 3x as long for twice the steps)."""
    def total_source(steps: int) -> int:
        cg.manual_seed(0)
        wz, wh = cg.randn(7, 4, requires_grad=True), cg.randn(7, 4, requires_grad=True)
        x, h = cg.randn(steps, 2, 3), cg.zeros(2, 4)
        for t in range(steps):
            z = (cg.cat([x[t], h], 1) @ wz).sigmoid()
            h = (1 - z) * h + z * (cg.cat([x[t], z * h], 1) @ wh).tanh()
        return sum(len(k.source) for k in cg.compile(*cg.autograd.grad(h.sum(), [wz, wh])))
    assert total_source(16) < 2.3 * total_source(8)


def test_a_row_value_moved_to_another_axis_does_not_fuse_into_its_rows():
    """A sum over axis 0 of (16, 16, 3) keeps rows (1, 16, 3); reshaped to (16, 1, 3) and
    broadcast along axis 1, its rows lie along another axis than the reduction's, so its
    consumer may not run in the reduction's loop (it did, reading the wrong row: seed 81033)."""
    a = np.random.default_rng(0).standard_normal((16, 16, 3)).astype(np.float32)
    x = cg.tensor(a)
    y = x.sum(0, keepdim=True).reshape(16, 1, 3) * x.exp()
    expected = a.sum(0).reshape(16, 1, 3) * np.exp(a)
    np.testing.assert_allclose(y.numpy(), expected, rtol=1e-5, atol=1e-5)
