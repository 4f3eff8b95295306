"""SPEC §3 examples 1-4, each run as a user would (`python examples/X.py`), their printed
numbers checked."""
import pathlib
import re
import subprocess
import sys

import pytest

try:
    import torch
except ImportError:
    torch = None

ROOT = pathlib.Path(__file__).resolve().parents[1]


def run_example(name: str, timeout: int = 300) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "examples" / name)], cwd=ROOT,
                            capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr
    return result.stdout


def numbers_after(label: str, text: str) -> list[float]:
    """The numbers printed on the line that starts with label."""
    line = next(line for line in text.splitlines() if line.startswith(label))
    return [float(v) for v in re.findall(r"-?\d+(?:\.\d*)?(?:e[-+]?\d+)?", line[len(label):])]


def losses(text: str) -> dict[int, float]:
    rows = (line.split() for line in text.splitlines())
    return {int(r[0]): float(r[1]) for r in rows if len(r) == 2 and r[0].isdigit()}


def test_custom_relu():
    out = losses(run_example("custom_relu.py"))
    assert sorted(out) == [1, 100, 200, 300, 400, 500]
    assert 1e7 < out[1] < 1e8                 # ~3e7 from random weights
    assert out[500] < 1e-2
    assert all(out[a] > out[b] for a, b in [(1, 100), (100, 200), (200, 300), (300, 400)])


def test_autograd_basics():
    text = run_example("autograd_basics.py")
    chain = text.split("grad_fn chain of out:")[1].split("z.grad")[0].split()
    assert chain == ["MeanBackward0", "MulBackward0", "PowBackward0", "MulBackward0",
                     "torch::autograd::AccumulateGrad", "AddBackward0",
                     "torch::autograd::AccumulateGrad"]
    block = text.split("z.grad =")[1]
    assert set(numbers_after("", block.split("y.grad")[0].replace("\n", " "))) == {0.25}
    assert set(numbers_after("y.grad =", text[text.index("y.grad ="):].replace("\n ", " "))) \
        == {4.65}
    assert set(numbers_after("x1.grad =", text[text.index("x1.grad ="):].replace("\n ", " "))) \
        == {14.415}
    assert numbers_after("x2.grad =", text) == [18.6]


def test_two_layer_net():
    out = losses(run_example("two_layer_net.py"))
    assert sorted(out) == list(range(10, 201, 10))
    assert out[200] < out[10] / 5
    assert all(out[t] > out[t + 10] for t in range(10, 200, 10))


def test_custom_functions():
    text = run_example("custom_functions.py")
    assert "linear: LinearFunctionBackward (4, 2)" in text
    assert "linear without bias: LinearFunctionBackward (4, 2)" in text
    assert "mul_constant: MulConstantBackward" in text
    assert numbers_after("b.grad =", text) == [4.0, 4.0]
    last = text[text.rindex("x.grad ="):].replace("\n", " ")
    assert set(numbers_after("x.grad =", last)) == {2.0}


@pytest.mark.skipif(torch is None, reason="PyTorch gives the reference")
def test_custom_functions_match_pytorch():
    """The linear Function's gradients against PyTorch's own linear."""
    import numpy as np

    import clgrad as cg
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        from custom_functions import linear
    finally:
        sys.path.remove(str(ROOT / "examples"))
    x, w, b = (np.random.default_rng(k).standard_normal(s).astype(np.float32)
               for k, s in enumerate([(4, 3), (2, 3), (2,)]))
    ours = [cg.tensor(v, requires_grad=True) for v in (x, w, b)]
    theirs = [torch.tensor(v, requires_grad=True) for v in (x, w, b)]
    (linear(*ours) ** 2).sum().backward()
    (torch.nn.functional.linear(*theirs) ** 2).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-5)
