"""Examples 5 and 6 of the spec: the LeNet walk-through runs; a short digits run learns."""
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def test_lenet_example_runs():
    out = subprocess.run([sys.executable, str(EXAMPLES / "lenet.py")], capture_output=True,
                         text=True, timeout=300, check=True).stdout
    for line in ["conv1.weight (6, 1, 3, 3)", "fc1.weight   (120, 576)", "fc3.bias     (10,)",
                 "MseLossBackward0 -> AddmmBackward0 -> ReluBackward0",
                 "conv1.bias.grad after backward"]:
        assert line in out
    losses = [float(line.split()[-1]) for line in out.splitlines() if line.startswith("SGD step")]
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_digits_short_run_learns_and_checkpoint_reloads(tmp_path):
    sys.path.insert(0, str(EXAMPLES))
    try:
        import train_digits
    finally:
        sys.path.remove(str(EXAMPLES))
    result = train_digits.train(epochs=2, out=str(tmp_path), quiet=True)
    assert result["test_acc"] > 0.7          # chance is 0.1
    assert result["last_loss"] < result["first_loss"] / 2
    assert result["reloaded_acc"] == result["test_acc"]
    assert Path(result["checkpoint"]).stat().st_size > 0
    assert Path(result["curves"]).read_bytes()[:4] == b"\x89PNG"
