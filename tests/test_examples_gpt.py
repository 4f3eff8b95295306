"""Example 7 of the spec: a short character-level GPT run learns, its checkpoint reloads, and
generation with the key-value cache gives the full forward's logits and compiles once."""
import sys
from pathlib import Path

import numpy as np
import pytest

import clgrad as cg
from clgrad.runtime import cache

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@pytest.fixture(scope="module")
def gpt():
    sys.path.insert(0, str(EXAMPLES))
    try:
        import train_gpt
    finally:
        sys.path.remove(str(EXAMPLES))
    return train_gpt


def test_gpt_short_run_learns_reloads_and_generates(gpt, tmp_path):
    result = gpt.train(steps=40, eval_every=20, out=str(tmp_path), generate_count=80,
                       quiet=True)
    assert result["first_loss"] > result["chance"] - 0.5       # starts near uniform
    assert result["val_loss"] < result["chance"] - 1.0         # and learns
    assert result["reloaded_val_loss"] == result["val_loss"]
    assert Path(result["checkpoint"]).stat().st_size > 0
    assert Path(result["curves"]).read_bytes()[:4] == b"\x89PNG"
    assert len(result["sample"]) == 80 and set(result["sample"]) <= set(gpt.CHARS)


def test_the_text_is_the_standard_library_in_its_characters(gpt):
    text = gpt.load_text()
    assert len(text) > 1_000_000 and text.min() >= 0 and text.max() < len(gpt.CHARS)
    assert "def __init__(self" in gpt.decode_text(text[:200_000])


def _small(gpt, seed=0):
    cg.manual_seed(seed)
    return gpt.GPT(width=32, layers=2, heads=2, block=8)


def _decoded(step, tokens):
    """Logits after each of tokens, decoded one at a time from position 0."""
    with cg.no_grad():
        return np.stack([step(cg.tensor([[t]]), cg.tensor([i])).numpy()[0]
                         for i, t in enumerate(tokens)])


def test_decoding_with_the_cache_gives_the_full_forward_logits(gpt):
    model = _small(gpt)
    rng = np.random.default_rng(1)
    first, second = rng.integers(0, len(gpt.CHARS), 8), rng.integers(0, len(gpt.CHARS), 5)
    with cg.no_grad():
        full = [model(cg.tensor(t[None])).numpy()[0] for t in (first, second)]
    np.testing.assert_allclose(_decoded(model.decode, first), full[0], rtol=1e-4, atol=1e-5)
    # the cache still holds the first sequence's keys past position 4: masked out
    np.testing.assert_allclose(_decoded(model.decode, second), full[1], rtol=1e-4, atol=1e-5)


def test_generation_replays_one_compiled_step_past_a_full_cache(gpt):
    model = _small(gpt)
    step = cg.jit(model.decode)
    reference = model.decode
    assert gpt.generate(step, 8, count=3) == gpt.generate(reference, 8, count=3)
    programs = len(cache.memory)
    sample = gpt.generate(step, 8, prompt="def ", count=30, seed=2)
    assert step.replaying and len(cache.memory) == programs
    assert sample == gpt.generate(reference, 8, prompt="def ", count=30, seed=2)
