"""Python indices are read from buffers, not compiled into kernels: a loop over a tensor's rows
(x[i], x[:, i], narrow, select, y[i] = v) builds its kernels once (frontend/index_inputs.py)."""
import numpy as np
import pytest
import torch

import clgrad as cg
from clgrad.engine import plan

X = np.arange(60, dtype=np.float32).reshape(3, 4, 5) / 7 - 4

READS = {
    "row": lambda x, i: x[i],
    "negative row": lambda x, i: x[-1 - i],
    "column": lambda x, i: x[:, i],
    "element": lambda x, i: x[i, i + 1, i],
    "inner": lambda x, i: x[i, :, i],
    "select": lambda x, i: x.select(2, i),
    # (a start of 0 is a view of its own, and so is a slice of the last dim: see gathered)
    "narrow": lambda x, i: x.narrow(1, 1 + i % 2, 2),
    "stepped": lambda x, i: x[i:i + 1, 1::2],
    "unbind": lambda x, i: x.unbind(1)[i],
}


@pytest.mark.parametrize("read", READS)
def test_reads_at_changing_indices_plan_once_and_are_pytorch_s(read):
    """Values and gradients (a square's, accumulated over the loop) against PyTorch's."""
    f = READS[read]
    x = cg.tensor(X, requires_grad=True)
    tx = torch.tensor(X, requires_grad=True)
    plans = []
    for i in (0, 1, 2, 0, 2):   # (the first two steps differ: no gradient yet, a lazy one)
        out, want = f(x, i), f(tx, i)
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        (out * out).sum().backward()
        (want * want).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
        plans.append(len(plan._plans))
    assert plans[1] == plans[-1]


@pytest.mark.parametrize("dtype", ["int64", "bool", "float16", "int8"])
def test_rows_and_writes_of_each_dtype(dtype):
    x = cg.tensor(X).to(getattr(cg, dtype))
    tx = torch.tensor(X).to(getattr(torch, dtype))
    for i in (0, 2):
        np.testing.assert_array_equal(x[i].numpy(), tx[i].numpy())
        y, ty = x.clone(), tx.clone()
        y[i] = 1
        ty[i] = 1
        y[:, i + 1] = x[0, 0]
        ty[:, i + 1] = tx[0, 0]
        np.testing.assert_array_equal(y.numpy(), ty.numpy())


def test_writes_at_changing_indices_plan_once_and_are_pytorch_s():
    """y[i] = a changing number, y[:, i] = a broadcast tensor, y[i, j, k] = a 0-d one; the
    gradients of the base (zero where written) and of the written tensor."""
    def step(lib, x, w, i):
        y = x * 1.0
        y[i] = 0.5 + i
        y[:, i + 1] = w * 3
        y[i, 0, i] = w[0]
        return y

    x, w = cg.tensor(X, requires_grad=True), cg.tensor(X[0, 0], requires_grad=True)
    tx, tw = torch.tensor(X, requires_grad=True), torch.tensor(X[0, 0], requires_grad=True)
    plans = []
    for i in (0, 1, 2, 1):
        out, want = step(cg, x, w, i), step(torch, tx, tw, i)
        np.testing.assert_array_equal(out.detach().numpy(), want.detach().numpy())
        (out * out).sum().backward()
        (want * want).sum().backward()
        np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
        np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)
        plans.append(len(plan._plans))
    assert plans[1] == plans[-1]


def test_a_row_stays_a_view_of_its_base():
    """Writes through x[i] reach x, and x's later changes reach x[i], as PyTorch's views."""
    x, tx = cg.tensor(X), torch.tensor(X)
    row, trow = x[1], tx[1]
    row.mul_(2)
    trow.mul_(2)
    x.add_(1)
    tx.add_(1)
    np.testing.assert_array_equal(row.numpy(), trow.numpy())
    np.testing.assert_array_equal(x.numpy(), tx.numpy())


def test_edge_shapes():
    """An empty row, size-1 dims, a 1-d tensor's element and the last row of a long one."""
    for shape, index in (((3, 0), 1), ((1, 1, 4), (0, 0)), ((5,), 4), ((4097, 2), -1)):
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        x = cg.tensor(a)
        np.testing.assert_array_equal(x[index].numpy(), torch.tensor(a)[index].numpy())
        y = x.clone()
        y[index] = -1
        ty = torch.tensor(a)
        ty[index] = -1
        np.testing.assert_array_equal(y.numpy(), ty.numpy())
