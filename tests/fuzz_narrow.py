"""The fuzzer's family of 16-bit float lines (see fuzz_ops for what a family is): casts of
float values to float16 and bfloat16, lines of the other families on 16-bit values that stay
in their dtype, and casts back. A 16-bit value is a float in the pool, so every family may
also take it as an operand where it draws one (mixing it with float32 values, which PyTorch
promotes to float32). fuzz_harness judges what 16-bit values reach against PyTorch's own
16-bit run, by the tolerance model written there."""
from __future__ import annotations

import torch

from fuzz_gen import SIXTEEN_BIT, Builder

CASTS = {torch.float16: ("{x}.half()", "{x}.to(fw.float16)"),
         torch.bfloat16: ("{x}.bfloat16()", "{x}.to(fw.bfloat16)")}
BACK = ("{x}.float()", "{x}.to(fw.float32)")


def _on_16_bit() -> dict:
    """The families a 16-bit value is handed to, by weight (late: fuzz_ops imports this
    module for its table of families)."""
    import fuzz_nn
    import fuzz_ops
    return {fuzz_ops.unary: 6, fuzz_ops.binary: 5, fuzz_ops.reduce_: 5, fuzz_ops.matmul: 3,
            fuzz_nn.activation: 4, fuzz_nn.normalization: 3, fuzz_ops.scan: 2,
            fuzz_ops.clamp: 1, fuzz_ops.where: 1, fuzz_ops.in_place: 1, fuzz_nn.loss: 2,
            fuzz_ops.join: 1, fuzz_ops.scatter: 1, fuzz_ops.conv: 1}


def sixteen_bit(b: Builder) -> str | None:
    """A cast of a float value to float16 or bfloat16 (the first 16-bit line of a program),
    a cast of a 16-bit value back to float32, or another family's line on a 16-bit value
    whose new float inputs come in its dtype."""
    values = [v for v in b.pool if v.t.dtype in SIXTEEN_BIT]
    if not values or b.ch.chance(20):
        x = b.operand(("float",))       # a float32 value, or a 16-bit one of either type
        return b.ch.pick(CASTS[b.ch.pick(list(CASTS))]).format(x=x.name)
    h = values[-1] if b.ch.chance(40) else b.ch.pick(values)
    if b.ch.chance(15):
        return b.ch.pick(BACK).format(x=h.name)
    family = b.ch.weighted(_on_16_bit())
    with b.narrowed(h):
        return family(b)
