"""Train a character-level GPT on the Python standard library's own sources (no download).

    python examples/train_gpt.py [--steps 1500] [--out out/]

The text is every top-level module of the running Python's standard library, in printable
ASCII; the last tenth is held out for validation. The model: 4 pre-norm transformer blocks of
4 heads, 128 wide, over 64 characters. The training step runs under cg.jit (from its fourth
call on, only its kernels are launched again); a progress bar shows the training loss, and the
validation loss is measured every --eval-every steps. At the end it writes out/gpt.safetensors
(model + optimizer state) and out/gpt_curves.png, reloads the checkpoint into a fresh model
and checks its validation loss, then generates 300 characters of Python. Generation keeps each
layer's keys and values in a cache, so a new character costs one position's work, and every
position runs the same jitted step: the cache is written and read under masks, the position
is a tensor, so nothing in the step's kernels changes from one character to the next.
"""
from __future__ import annotations

import argparse
import math
import os
import sysconfig
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import clgrad as cg
import clgrad.nn.functional as F
from clgrad import nn, optim

CHARS = "\n" + "".join(map(chr, range(32, 127)))    # newline and printable ASCII


def load_text() -> np.ndarray:
    """The standard library's top-level sources as character indices (others dropped)."""
    table = np.full(256, -1, np.int64)
    for i, c in enumerate(CHARS):
        table[ord(c)] = i
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    raw = b"".join(path.read_bytes() for path in sorted(stdlib.glob("*.py")))
    codes = table[np.frombuffer(raw, np.uint8)]
    return codes[codes >= 0]


def decode_text(indices) -> str:
    return "".join(CHARS[i] for i in indices)


class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int, block: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        # generation's cache: slot i holds the key and value of the character at position i
        cache = (1, heads, block, width // heads)
        self.register_buffer("k_cache", cg.zeros(cache), persistent=False)
        self.register_buffer("v_cache", cg.zeros(cache), persistent=False)
        self.register_buffer("slots", cg.arange(block), persistent=False)

    def split_heads(self, x):
        """(B, T, C) -> (B, heads, T, C / heads)."""
        B, T, C = x.shape
        return x.view(B, T, self.heads, C // self.heads).transpose(1, 2)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = map(self.split_heads, self.qkv(x).split(C, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))

    def decode(self, x, pos):
        """x (1, 1, C), the character at position pos (a tensor of one index): its key and
        value go into the cache's slot pos, and it attends to slots 0 ... pos."""
        C = x.shape[-1]
        q, k, v = map(self.split_heads, self.qkv(x).split(C, dim=2))
        here = (self.slots == pos).view(1, 1, -1, 1)
        self.k_cache.copy_(cg.where(here, k, self.k_cache))
        self.v_cache.copy_(cg.where(here, v, self.v_cache))
        seen = (self.slots <= pos).view(1, 1, 1, -1)
        y = F.scaled_dot_product_attention(q, self.k_cache, self.v_cache, attn_mask=seen)
        return self.proj(y.transpose(1, 2).reshape(1, 1, C))


class Block(nn.Module):
    def __init__(self, width: int, heads: int, block: int):
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, block)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))

    def decode(self, x, pos):
        x = x + self.attn.decode(self.norm1(x), pos)
        return x + self.mlp(self.norm2(x))


class GPT(nn.Module):
    def __init__(self, vocab: int = len(CHARS), width: int = 128, layers: int = 4,
                 heads: int = 4, block: int = 64):
        super().__init__()
        self.block = block
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(block, width)
        self.blocks = nn.ModuleList(Block(width, heads, block) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab)
        self.register_buffer("where", cg.arange(block), persistent=False)

    def forward(self, idx):
        """Logits (B, T, vocab) of the character after each of idx's (B, T)."""
        h = self.tokens(idx) + self.positions(self.where[:idx.shape[1]])
        for block in self.blocks:
            h = block(h)
        return self.head(self.norm(h))

    def decode(self, token, pos):
        """Logits (1, vocab) of the character after token (1, 1) at position pos (1,), which
        attends to the characters decoded before it at positions 0 ... pos - 1."""
        h = self.tokens(token) + self.positions(pos)
        for block in self.blocks:
            h = block.decode(h, pos)
        return self.head(self.norm(h))[:, -1]


def batch(data: np.ndarray, starts: np.ndarray, block: int):
    rows = starts[:, None] + np.arange(block + 1)
    chunk = data[rows]
    return cg.tensor(chunk[:, :-1]), cg.tensor(chunk[:, 1:])


def evaluator(model: GPT, batches: list):
    """A function giving model's mean loss over batches (the same batches each time)."""
    @cg.jit
    def loss_of(x, y):
        return F.cross_entropy(model(x).view(-1, len(CHARS)), y.view(-1))

    def validation_loss() -> float:
        model.eval()
        with cg.no_grad():
            losses = [loss_of(x, y) for x, y in batches]
        model.train()
        return float(np.mean([loss.item() for loss in losses]))
    return validation_loss


def generate(step, block: int, prompt: str = "\n", count: int = 300,
             temperature: float = 0.8, seed: int = 0) -> str:
    """count characters after prompt, sampled one at a time from the logits of step(token,
    pos): a model's decode, jitted (every call has the same shapes). When the cache is full,
    its second half is decoded again from position 0 (the positions the model knows end at
    block), so at least block / 2 characters of context remain."""
    rng = np.random.default_rng(seed)
    text = [CHARS.index(c) for c in prompt]
    start, fed = 0, 0   # the cache holds text[start:start + fed], at positions 0 ... fed - 1
    with cg.no_grad():
        while len(text) < len(prompt) + count:
            if fed == block:
                start, fed = len(text) - block // 2, 0
            logits = step(cg.tensor([[text[start + fed]]]), cg.tensor([fed]))
            fed += 1
            if start + fed < len(text):
                continue        # still reading the prompt or the context kept
            scaled = logits.numpy()[0] / temperature
            weights = np.exp(scaled - scaled.max())
            text.append(int(rng.choice(len(CHARS), p=weights / weights.sum())))
    return decode_text(text[len(prompt):])


def save_curves(history: dict, path: str) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.plot(history["step"], history["loss"], lw=0.6, alpha=0.7, label="training")
    ax.plot(history["val_step"], history["val_loss"], marker="o", label="validation")
    ax.set(title="character-level GPT on the standard library", xlabel="step",
           ylabel="cross entropy (nats)")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def train(steps: int = 1500, batch_size: int = 16, lr: float = 1e-3, eval_every: int = 250,
          seed: int = 0, out: str = "out", generate_count: int = 300,
          quiet: bool = False) -> dict:
    cg.manual_seed(seed)
    rng = np.random.default_rng(seed)
    text = load_text()
    split = len(text) * 9 // 10
    train_data, val_data = text[:split], text[split:]
    model = GPT()
    block = model.block
    optimizer = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    scheduler = optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=steps, eta_min=lr / 10)
    val_batches = [batch(val_data, rng.integers(0, len(val_data) - block, batch_size), block)
                   for _ in range(8)]
    validation_loss = evaluator(model, val_batches)

    @cg.jit     # from the fourth step on, replays the step's kernels without this Python
    def train_step(x, y):
        loss = F.cross_entropy(model(x).view(-1, len(CHARS)), y.view(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss

    history = {"step": [], "loss": [], "val_step": [], "val_loss": []}
    start = time.perf_counter()
    bar = tqdm(range(1, steps + 1), desc="training", disable=quiet, ncols=90)
    for step in bar:
        x, y = batch(train_data, rng.integers(0, len(train_data) - block, batch_size), block)
        loss = train_step(x, y)
        scheduler.step()
        history["step"].append(step)
        history["loss"].append(loss.item())
        if step % eval_every == 0 or step == steps:
            history["val_step"].append(step)
            history["val_loss"].append(validation_loss())
        if step % 10 == 0 or step == steps:
            shown = {"loss": f"{np.mean(history['loss'][-10:]):.3f}"}
            if history["val_loss"]:
                shown["val"] = f"{history['val_loss'][-1]:.3f}"
            bar.set_postfix(shown)
    seconds = time.perf_counter() - start

    os.makedirs(out, exist_ok=True)
    checkpoint = os.path.join(out, "gpt.safetensors")
    cg.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": steps},
            checkpoint)
    curves = os.path.join(out, "gpt_curves.png")
    save_curves(history, curves)

    restored = GPT()
    restored.load_state_dict(cg.load(checkpoint)["model"])
    reloaded_val = evaluator(restored, val_batches)()

    begin = time.perf_counter()
    sample = generate(cg.jit(restored.decode), block, count=generate_count, seed=seed)
    generate_seconds = time.perf_counter() - begin
    result = {"first_loss": history["loss"][0], "last_loss": history["loss"][-1],
              "val_loss": history["val_loss"][-1], "reloaded_val_loss": reloaded_val,
              "seconds": seconds, "checkpoint": checkpoint, "curves": curves,
              "sample": sample, "generate_seconds": generate_seconds,
              "chance": math.log(len(CHARS))}
    if not quiet:
        print(f"trained {steps} steps in {seconds:.1f} s: validation loss "
              f"{result['val_loss']:.3f} nats a character (uniform: {result['chance']:.3f})")
        print(f"checkpoint {checkpoint}, curves {curves}; reloaded model's validation loss "
              f"{reloaded_val:.3f}")
        print(f"{generate_count} characters generated in {generate_seconds:.1f} s:")
        print(sample)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--eval-every", type=int, default=250)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="out", help="output directory (default out/)")
    args = parser.parse_args()
    train(args.steps, args.batch_size, args.lr, args.eval_every, args.seed, args.out)


if __name__ == "__main__":
    main()
