"""Train a small CNN on the handwritten digits that ship with scikit-learn (no download).

    python examples/train_digits.py [--epochs 12] [--out out/]
    mpiexec -n 2 python examples/train_digits.py --distributed

1,797 8x8 images, a fixed stratified 75/25 split; prints a progress bar, reaches >= 97% test
accuracy, writes out/digits_cnn.safetensors (model + optimizer state) and out/digits_curves.png,
then reloads the checkpoint into a fresh model and checks its accuracy again. The training step
runs under cg.jit: from its fourth call on, only its kernels are launched again, with the same
numbers as the eager step. With --distributed, the processes mpiexec starts train one model
data-parallel over MPI (pip install 'clgrad[distributed]'): each takes its share of every
batch (DistributedSampler), DistributedDataParallel averages their gradients after each
backward pass (a replay of the step sums them over MPI between its kernels), and rank 0
reports and writes the files.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from tqdm import tqdm

import clgrad as cg
import clgrad.distributed as dist
import clgrad.nn.functional as F
from clgrad import nn, optim
from clgrad.utils.data import DistributedSampler


class DigitsCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)    # 16 x 8 x 8
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)   # 32 x 8 x 8 -> pool -> 32 x 4 x 4
        self.fc1 = nn.Linear(32 * 4 * 4, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.fc1(x.flatten(1)))
        return self.fc2(x)


def load_data(seed: int):
    digits = load_digits()
    images = (digits.images / 16.0).astype(np.float32)[:, None]     # N, 1, 8, 8 in [0, 1]
    return train_test_split(images, digits.target.astype(np.int64), test_size=0.25,
                            random_state=seed, stratify=digits.target)


def accuracy(model: nn.Module, x: cg.Tensor, y: np.ndarray) -> float:
    model.eval()
    with cg.no_grad():
        predicted = model(x).argmax(1).numpy()
    model.train()
    return float((predicted == y).mean())


def save_curves(history: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.plot(history["step"], history["loss"], lw=0.8)
    left.set(title="training loss", xlabel="step", ylabel="cross entropy")
    right.plot(range(1, len(history["test_acc"]) + 1), history["test_acc"], marker="o")
    right.set(title="test accuracy", xlabel="epoch", ylabel="accuracy", ylim=(0, 1))
    right.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def train(epochs: int = 12, batch_size: int = 64, lr: float = 3e-3, seed: int = 0,
          out: str = "out", quiet: bool = False, distributed: bool = False) -> dict:
    cg.manual_seed(seed)
    rng = np.random.default_rng(seed)
    x_train, x_test, y_train, y_test = load_data(seed)
    rank, ranks = 0, 1
    if distributed:
        dist.init_process_group("mpi")
        rank, ranks = dist.get_rank(), dist.get_world_size()
        quiet = quiet or rank != 0
    model = DigitsCNN()
    net = nn.parallel.DistributedDataParallel(model) if distributed else model
    optimizer = optim.Adam(model.parameters(), lr=lr)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    test_x = cg.tensor(x_test)
    batches = len(x_train) // batch_size     # full batches only: one set of kernel shapes
    share = batch_size // ranks              # each process's part of a batch

    def train_step(x, y):
        loss = F.cross_entropy(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss
    train_step = cg.jit(train_step)     # from the fourth step on, replays its kernels alone

    history = {"step": [], "loss": [], "test_acc": []}
    start = time.perf_counter()
    for epoch in range(epochs):
        if distributed:
            sampler = DistributedSampler(x_train, seed=seed)
            sampler.set_epoch(epoch)
            order = np.fromiter(sampler, np.int64)
        else:
            order = rng.permutation(len(x_train))
        bar = tqdm(range(batches), desc=f"epoch {epoch + 1}/{epochs}", leave=False,
                   disable=quiet, ncols=90)
        for b in bar:
            idx = order[b * share:(b + 1) * share]
            loss = train_step(cg.tensor(x_train[idx]), cg.tensor(y_train[idx]))
            history["step"].append(epoch * batches + b)
            history["loss"].append(loss.item())
            bar.set_postfix(loss=f"{history['loss'][-1]:.3f}")
        scheduler.step()
        history["test_acc"].append(accuracy(model, test_x, y_test))
        if not quiet:
            tqdm.write(f"epoch {epoch + 1:2d}  loss {np.mean(history['loss'][-batches:]):.4f}  "
                       f"test accuracy {history['test_acc'][-1]:.4f}")
    seconds = time.perf_counter() - start
    if rank != 0:
        return {"test_acc": history["test_acc"][-1], "seconds": seconds,
                "first_loss": history["loss"][0], "last_loss": history["loss"][-1]}

    os.makedirs(out, exist_ok=True)
    checkpoint = os.path.join(out, "digits_cnn.safetensors")
    cg.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "epoch": epochs}, checkpoint)
    curves = os.path.join(out, "digits_curves.png")
    save_curves(history, curves)

    restored = DigitsCNN()
    state = cg.load(checkpoint)
    restored.load_state_dict(state["model"])
    reloaded_acc = accuracy(restored, test_x, y_test)
    result = {"test_acc": history["test_acc"][-1], "reloaded_acc": reloaded_acc,
              "seconds": seconds, "checkpoint": checkpoint, "curves": curves,
              "first_loss": history["loss"][0], "last_loss": history["loss"][-1]}
    if not quiet:
        processes = f" on {ranks} processes" if distributed else ""
        print(f"trained {epochs} epochs{processes} in {seconds:.1f} s: test accuracy "
              f"{result['test_acc']:.4f} on {len(y_test)} images")
        print(f"checkpoint {checkpoint}, curves {curves}; reloaded model accuracy "
              f"{reloaded_acc:.4f}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out", help="output directory (default out/)")
    parser.add_argument("--distributed", action="store_true",
                        help="train data-parallel over MPI, one process per mpiexec rank")
    args = parser.parse_args()
    train(args.epochs, args.batch_size, args.lr, args.seed, args.out,
          distributed=args.distributed)


if __name__ == "__main__":
    main()
