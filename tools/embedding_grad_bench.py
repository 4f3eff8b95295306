"""Time and memory of an embedding gradient (issue 13's target: a 50,000 x 64 float32 table,
4,096 random tokens, under 10 ms and 100 MB).

    CLGRAD_DEVICE=cpu:pocl python tools/embedding_grad_bench.py

Prints the median and fastest of 20 steps (forward, backward, gradient read back), the bytes
of the buffers one step writes, and the kernels' device times.
"""
import time

import numpy as np

import clgrad as cg
from clgrad import engine


def main() -> None:
    emb = cg.nn.Embedding(50000, 64)
    rng = np.random.default_rng(0)
    tokens = [cg.tensor(rng.integers(0, 50000, 4096)) for _ in range(22)]

    def step(t):
        emb.weight.grad = None
        emb(t).sum().backward()
        return emb.weight.grad.numpy()

    counts = np.bincount(tokens[0].numpy(), minlength=50000)
    assert np.allclose(step(tokens[0]), counts[:, None])     # also builds the kernels
    times = []
    for t in tokens[2:]:
        start = time.perf_counter()
        step(t)
        times.append(time.perf_counter() - start)
    with engine.listen() as heard:
        step(tokens[1])
    written = sum(ref.nbytes for _, _, refs in heard for ref in refs)
    with cg.profile() as kernels:
        step(tokens[1])
    print(f"{cg.device(None)}: median {np.median(times) * 1e3:.2f} ms, fastest "
          f"{min(times) * 1e3:.2f} ms; one step writes {written / 1e6:.1f} MB")
    print(kernels)


if __name__ == "__main__":
    main()
