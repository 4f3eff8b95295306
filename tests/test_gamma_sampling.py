"""cg._standard_gamma, cg._sample_dirichlet and the reparameterized gradients of Gamma and
Beta samples (cg._standard_gamma_grad, cg._dirichlet_grad) against PyTorch's."""
import numpy as np
import pytest

import clgrad as cg

torch = pytest.importorskip("torch")


def _gamma_grid():
    """(alpha, x) pairs through every branch of PyTorch's approximation: x < 0.8 (the
    series), alpha > 8 near and away from x = alpha (Rice's expansion), and the rational
    approximation between, with draws of each alpha."""
    rng = np.random.default_rng(3)
    alpha = np.concatenate([rng.uniform(0.05, 20, 3000), [0.5, 1, 9, 9, 9, 100, 100, 1e3]])
    x = np.concatenate([rng.gamma(alpha[:3000]), [0.3, 2, 8.5, 9.5, 3, 101, 150, 900]])
    return alpha.astype(np.float32), x.astype(np.float32)


def test_standard_gamma_grad_is_pytorchs():
    alpha, x = _gamma_grid()
    ours = cg._standard_gamma_grad(cg.tensor(alpha), cg.tensor(x)).numpy()
    ref = torch._standard_gamma_grad(torch.tensor(alpha), torch.tensor(x)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=2e-5, atol=1e-7)


def test_dirichlet_grad_is_pytorchs():
    """Samples of Beta(alpha, total - alpha) near 0, near 1, with both concentrations large,
    and between (the rational correction)."""
    rng = np.random.default_rng(4)
    concentration = np.concatenate([rng.uniform(0.1, 15, (2000, 2)),
                                    rng.uniform(6.5, 40, (500, 2))]).astype(np.float32)
    x = rng.beta(concentration[:, 0], concentration[:, 1]).astype(np.float32)
    x = np.concatenate([x, [1e-4, 0.9999, 0.5]]).astype(np.float32)
    alpha = np.concatenate([concentration[:, 0], [0.3, 2.0, 20.0]]).astype(np.float32)
    total = np.concatenate([concentration.sum(1), [2.0, 2.5, 40.0]]).astype(np.float32)
    ours = cg._dirichlet_grad(cg.tensor(x), cg.tensor(alpha), cg.tensor(total)).numpy()
    ref = torch._dirichlet_grad(torch.tensor(x), torch.tensor(alpha),
                                torch.tensor(total)).numpy()
    np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("dtype", [cg.float32, cg.float64])
def test_standard_gamma_draws_gamma_and_carries_the_implicit_gradient(dtype):
    alpha_values = np.array([0.2, 1.0, 3.5, 30.0])
    alpha = cg.tensor(np.repeat(alpha_values[:, None], 20000, 1), dtype=dtype,
                      requires_grad=True)
    sample = cg._standard_gamma(alpha)
    assert sample.dtype == dtype and sample.shape == alpha.shape
    assert sample.grad_fn.name() == "StandardGammaBackward0"
    values = sample.detach().numpy().astype(np.float64)
    assert (values >= np.finfo(np.float32).tiny).all()
    error = np.sqrt(alpha_values / 20000)           # the standard error of each mean
    np.testing.assert_array_less(np.abs(values.mean(1) - alpha_values), 5 * error)
    np.testing.assert_allclose(values.var(1), alpha_values, rtol=0.1)
    sample.sum().backward()
    torch_dtype = torch.float32 if dtype == cg.float32 else torch.float64
    expected = torch._standard_gamma_grad(
        torch.tensor(alpha.detach().numpy(), dtype=torch_dtype),
        torch.tensor(values, dtype=torch_dtype)).numpy()
    np.testing.assert_allclose(alpha.grad.numpy(), expected, rtol=1e-5, atol=1e-7)


def test_standard_gamma_edges_and_generator():
    """Zero concentration gives the smallest normal number (PyTorch's clamp); a generator
    makes the draws reproducible."""
    values = cg._standard_gamma(cg.tensor([0.0, 1e-30])).numpy()
    np.testing.assert_array_equal(values, np.float32(np.finfo(np.float32).tiny))
    alpha = cg.full((5,), 2.0)
    first = cg._standard_gamma(alpha, generator=cg.Generator().manual_seed(7)).numpy()
    again = cg._standard_gamma(alpha, generator=cg.Generator().manual_seed(7)).numpy()
    np.testing.assert_array_equal(first, again)
    with pytest.raises(RuntimeError, match="floating point"):
        cg._standard_gamma(cg.tensor([1, 2]))


def test_sample_dirichlet_lies_on_the_simplex_with_dirichlet_moments():
    concentration = np.array([[0.5, 1.0, 3.0], [2.0, 2.0, 2.0]], np.float32)
    alpha = cg.tensor(np.repeat(concentration[None], 20000, 0))
    sample = cg._sample_dirichlet(alpha).numpy().astype(np.float64)
    assert sample.shape == (20000, 2, 3)
    np.testing.assert_allclose(sample.sum(-1), 1, atol=1e-6)
    mean = concentration / concentration.sum(-1, keepdims=True)
    total = concentration.sum(-1, keepdims=True)
    std = np.sqrt(mean * (1 - mean) / (total + 1) / 20000)
    np.testing.assert_array_less(np.abs(sample.mean(0) - mean), 5 * std)
    edges = cg._sample_dirichlet(cg.tensor([[0.0, 0.0], [1e-30, 1.0]])).numpy()
    np.testing.assert_allclose(edges[0], [0.5, 0.5])
    assert edges[1, 0] == np.float32(np.finfo(np.float32).tiny) and edges[1, 1] == 1
