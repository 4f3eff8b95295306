"""Run by tests/test_distributed.py under `mpiexec -n 2`: collectives and DistributedDataParallel
checked on each rank, which prints `rank R ok` when every check passed."""
import contextlib
import warnings

import numpy as np

import clgrad as cg
import clgrad.distributed as dist
import clgrad.nn.functional as F
from clgrad import nn, optim


def raises(bad, error) -> None:
    try:
        bad()
    except error:
        return
    raise AssertionError(f"{bad} did not raise {error.__name__}")


dist.init_process_group("mpi")
rank, size = dist.get_rank(), dist.get_world_size()
assert dist.is_initialized() and size == 2

# collectives: in place, every rank gets the same answer
values = cg.tensor([1.0, -2.0, 3.0]) * (rank + 1)
for op, expected in [(dist.ReduceOp.SUM, [3, -6, 9]), (dist.ReduceOp.MAX, [2, -2, 6]),
                     (dist.ReduceOp.MIN, [1, -4, 3]), (dist.ReduceOp.PRODUCT, [2, 8, 18])]:
    t = values.clone()
    assert dist.all_reduce(t, op=op) is None
    np.testing.assert_array_equal(t.numpy(), expected)
counts = cg.arange(4) + 10 * rank
dist.broadcast(counts, src=1)
np.testing.assert_array_equal(counts.numpy(), [10, 11, 12, 13])
gathered = [cg.zeros(2, dtype=cg.int64) for _ in range(size)]
work = dist.all_gather(gathered, cg.tensor([rank, rank * rank]), async_op=True)
assert work.wait() and [g.tolist() for g in gathered] == [[0, 0], [1, 1]]
halves = cg.tensor([0.5, -1.5, 2048.0], dtype=cg.float16) * (rank + 1)
dist.all_reduce(halves)             # float16: MPICH has a type for it
assert halves.dtype == cg.float16 and halves.tolist() == [1.5, -4.5, 6144.0]
grid = cg.zeros(2, 3) + rank
dist.all_reduce(grid[:, 1])         # a view: its base changes
np.testing.assert_array_equal(grid.numpy(), [[rank, 1, rank]] * 2)
dist.barrier()
for bad, error in [(lambda: dist.broadcast(cg.ones(2), src=2), ValueError),
                   (lambda: dist.all_reduce(cg.ones(2, dtype=cg.bool)), TypeError),
                   (lambda: dist.all_reduce(cg.ones(2), op="mean"), ValueError),
                   (lambda: dist.init_process_group("mpi"), ValueError)]:
    raises(bad, error)

# the rest of torch.distributed's calls
part = cg.tensor([rank + 1.0, 10.0 * rank])
dist.reduce(part, dst=1)            # only rank 1's changes
assert part.tolist() == ([1.0, 0.0] if rank == 0 else [3.0, 10.0])
joined, stacked = cg.zeros(4), cg.zeros(2, 2)
dist.all_gather_into_tensor(joined, cg.tensor([rank, rank + 0.5]))
dist.all_gather_into_tensor(stacked, cg.tensor([rank, rank + 0.5]))
assert joined.tolist() == [0, 0.5, 1, 1.5] and stacked.tolist() == [[0, 0.5], [1, 1.5]]
mine = cg.zeros(2)
dist.reduce_scatter_tensor(mine, cg.arange(4.0) * (rank + 1))     # the sum is [0, 3, 6, 9]
assert mine.tolist() == ([0.0, 3.0] if rank == 0 else [6.0, 9.0])
if rank == 0:
    dist.send(cg.tensor([7, 8]), dst=1)
else:
    received = cg.zeros(2, dtype=cg.int64)
    assert dist.recv(received) == 0 and received.tolist() == [7, 8]
objects = [None, None]
dist.all_gather_object(objects, {"rank": rank})
assert objects == [{"rank": 0}, {"rank": 1}]
listed = [rank, "from rank %d" % rank]
dist.broadcast_object_list(listed, src=1)
assert listed == [1, "from rank 1"]
for bad, error in [(lambda: dist.reduce_scatter_tensor(cg.zeros(3), cg.zeros(4)), RuntimeError),
                   (lambda: dist.all_gather_into_tensor(cg.zeros(4, dtype=cg.int32),
                                                        cg.zeros(2)), RuntimeError),
                   (lambda: dist.send(cg.zeros(1), dst=rank), ValueError),
                   (lambda: dist.reduce(cg.zeros(1)), ValueError),
                   (lambda: dist.all_gather_object([None], 1), IndexError)]:
    raises(bad, error)

# DistributedDataParallel: rank 0's weights everywhere, gradients averaged over the ranks
cg.manual_seed(rank)        # different initial weights: DDP replaces them with rank 0's
model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
ddp = nn.parallel.DistributedDataParallel(model)
rng = np.random.default_rng(0)
x, y = rng.standard_normal((8, 5)).astype("f"), rng.standard_normal((8, 2)).astype("f")
mine = slice(4 * rank, 4 * rank + 4)
F.mse_loss(ddp(cg.tensor(x[mine])), cg.tensor(y[mine])).backward()

reference = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
reference.load_state_dict(model.state_dict())
F.mse_loss(reference(cg.tensor(x)), cg.tensor(y)).backward()   # the whole batch, one process
for p, q in zip(model.parameters(), reference.parameters()):
    np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-5, atol=1e-6)
weights = model[0].weight.detach().clone()
dist.broadcast(weights, src=0)
np.testing.assert_array_equal(weights.numpy(), model[0].weight.detach().numpy())

# no_sync: local sums, then one averaged pass over all of them
model.zero_grad()
reference.zero_grad()
with ddp.no_sync():
    F.mse_loss(ddp(cg.tensor(x[mine])), cg.tensor(y[mine])).backward()
local = model[2].bias.grad.numpy().copy()
F.mse_loss(ddp(cg.tensor(x[mine])), cg.tensor(y[mine])).backward()
F.mse_loss(reference(cg.tensor(x)), cg.tensor(y)).backward()
np.testing.assert_allclose(model[2].bias.grad.numpy(), 2 * reference[2].bias.grad.numpy(),
                           rtol=1e-5, atol=1e-6)
assert not np.allclose(local * 2, model[2].bias.grad.numpy())  # the pass did average


class TwoDtypes(nn.Module):
    """A float32 and a float64 parameter: a bucket for each, in the same order on each rank."""

    def __init__(self):
        super().__init__()
        self.a = nn.Parameter(cg.ones(3))
        self.b = nn.Parameter(cg.ones(2, dtype=cg.float64))

    def forward(self, x):
        return (self.a * x).sum() + (self.b * x[:2].double()).sum()


two = nn.parallel.DistributedDataParallel(TwoDtypes())
two(cg.full((3,), rank + 1.0)).backward()
np.testing.assert_array_equal(two.module.a.grad.numpy(), [1.5] * 3)
np.testing.assert_array_equal(two.module.b.grad.numpy(), [1.5] * 2)
assert two.module.b.grad.dtype == cg.float64


def train(jit: bool):
    """Eight Adam steps of a DDP model, each rank on batches of its own; under cg.jit the
    averaging between the step's kernels is replayed, not skipped."""
    cg.manual_seed(rank)
    net = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 2))
    parallel = nn.parallel.DistributedDataParallel(net)
    opt = optim.Adam(net.parameters(), lr=1e-2)

    def step(inputs, targets):
        opt.zero_grad()
        loss = F.mse_loss(parallel(inputs), targets)
        loss.backward()
        opt.step()
        return loss
    stepper = cg.jit(step) if jit else step
    batches = np.random.default_rng(rank).standard_normal((8, 4, 7)).astype("f")
    losses = [stepper(cg.tensor(b[:, :5]), cg.tensor(b[:, 5:])).item() for b in batches]
    assert not jit or stepper.replaying
    return losses, [p.grad.numpy() for p in net.parameters()], [
        p.detach().numpy() for p in net.parameters()]


eager, jitted = train(jit=False), train(jit=True)
assert eager[0] == jitted[0]
for ours, theirs in zip(eager[1] + eager[2], jitted[1] + jitted[2]):
    np.testing.assert_array_equal(ours, theirs)
grads = [cg.zeros(jitted[1][0].shape) for _ in range(size)]
dist.all_gather(grads, cg.tensor(jitted[1][0]))    # every rank has the same, averaged, .grad
np.testing.assert_array_equal(grads[0].numpy(), grads[1].numpy())


@cg.jit
def exchange(x):
    total = x * (rank + 1)
    dist.all_reduce(total)
    theirs = x + 0
    dist.broadcast(theirs, src=1)
    return total, theirs


for i in range(5):      # replays exchange each call's values
    total, theirs = exchange(cg.tensor([i + rank, 1.0]))
    assert total.tolist() == [3.0 * i + 2, 3.0] and theirs.tolist() == [i + 1.0, 1.0]
assert exchange.replaying


def accumulate(jit: bool):
    """Gradients summed locally over three no_sync passes, then averaged by a fourth."""
    cg.manual_seed(0)
    net = nn.parallel.DistributedDataParallel(nn.Linear(3, 1))

    passes = iter(range(8))

    def step(x):            # which passes sync is Python a replay does not see
        with contextlib.nullcontext() if next(passes) % 4 == 3 else net.no_sync():
            net(x).sum().backward()
    stepper = cg.jit(step) if jit else step
    for i in range(8):
        stepper(cg.full((2, 3), float(rank + i)))
    return net.module.weight.grad.numpy()


with warnings.catch_warnings():
    warnings.simplefilter("ignore")     # the alternating step may be left eager
    np.testing.assert_array_equal(accumulate(jit=True), accumulate(jit=False))
print(f"rank {rank} ok", flush=True)
