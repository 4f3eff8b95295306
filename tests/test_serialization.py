"""cg.save / cg.load round trips: module state dicts, optimizer state, nested values."""
import numpy as np
import pytest

import clgrad as cg
from clgrad import nn, optim


def test_module_and_optimizer_round_trip(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    opt = optim.Adam(model.parameters(), lr=0.01)
    for _ in range(2):
        opt.zero_grad()
        model(cg.randn(5, 3)).sum().backward()
        opt.step()
    path = tmp_path / "ckpt.safetensors"
    cg.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": 2,
             "tag": "x", "shape": (1, 2)}, path)
    loaded = cg.load(path)
    assert loaded["epoch"] == 2 and loaded["tag"] == "x" and loaded["shape"] == (1, 2)
    state = loaded["model"]
    assert list(state) == list(model.state_dict())
    assert state["1.num_batches_tracked"].dtype == cg.int64
    for key, value in model.state_dict().items():
        np.testing.assert_array_equal(state[key].numpy(), value.numpy())
    fresh = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    fresh.load_state_dict(state)
    fresh_opt = optim.Adam(fresh.parameters(), lr=0.01)
    fresh_opt.load_state_dict(loaded["optim"])
    first = next(iter(fresh.parameters()))
    assert float(fresh_opt.state[first]["step"].item()) == 2.0
    np.testing.assert_array_equal(fresh_opt.state[first]["exp_avg"].numpy(),
                                  opt.state[next(iter(model.parameters()))]["exp_avg"].numpy())
    x = cg.randn(5, 3)
    model.eval(), fresh.eval()
    np.testing.assert_allclose(fresh(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)


def test_plain_state_dict_is_a_safetensors_file(tmp_path):
    from safetensors.numpy import load_file
    lin = nn.Linear(2, 3)
    cg.save(lin.state_dict(), tmp_path / "lin.safetensors")
    raw = load_file(str(tmp_path / "lin.safetensors"))
    assert sorted(raw) == ["bias", "weight"] and raw["weight"].shape == (3, 2)
    back = cg.load(tmp_path / "lin.safetensors")
    np.testing.assert_array_equal(back["weight"].numpy(), lin.weight.detach().numpy())


def test_save_rejects_what_it_cannot_store(tmp_path):
    with pytest.raises(TypeError, match="cannot store a object"):
        cg.save({"x": object()}, tmp_path / "bad.safetensors")


@pytest.mark.parametrize("state", [lambda a, b: {"a/b": a, "a": {"b": b}},
                                   lambda a, b: {1: a, "1": b}])
def test_keys_that_name_one_tensor_are_refused(tmp_path, state):
    path = tmp_path / "clash.safetensors"
    with pytest.raises(ValueError, match="two keys name the tensor"):
        cg.save(state(cg.ones(2), cg.zeros(2)), path)
    assert not path.exists()


@pytest.mark.parametrize("damage", [lambda data: data[: len(data) // 2],
                                    lambda data: b"garbage" * 10, lambda data: b""])
def test_a_damaged_checkpoint_names_its_file(tmp_path, damage):
    good, bad = tmp_path / "good.safetensors", tmp_path / "bad.safetensors"
    cg.save({"w": cg.ones(3, 4)}, good)
    bad.write_bytes(damage(good.read_bytes()))
    with pytest.raises(RuntimeError, match=f"load: {bad} is not a readable safetensors file"):
        cg.load(bad)
