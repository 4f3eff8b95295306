"""nn.utils parametrizations against torch: parametrize (chains, right_inverse, cached,
removal), parametrizations.weight_norm/spectral_norm/orthogonal, their legacy hook-based forms,
batch-norm fusion and functional_call. Values and gradients go through functional_call: the
tensors check makes take the place of a layer's originals."""
import copy
import warnings

import numpy as np
import pytest

import clgrad as cg
from helpers import check, library, make, nn, torch

U, V = make((3,), seed=5), make((4,), seed=6)      # power-iteration vectors for a (3, 4) weight


def call(module, tensors: dict, *args):
    return library(args[0]).func.functional_call(module, tensors, args)


def quiet(register):
    """register(...) without the legacy weight_norm's deprecation warning."""
    def run(*args, **kwargs):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return register(*args, **kwargs)
    return run


def weight_normed(dim, legacy=False):
    """fn for check: a weight-normed Linear(4, 3) with g and v (and bias) the inputs."""
    def fn(x, g, v, b):
        utils = nn(x).utils
        m = nn(x).Linear(4, 3)
        if legacy:
            quiet(utils.weight_norm)(m, dim=dim)
            names = {"weight_g": g, "weight_v": v, "bias": b}
        else:
            utils.parametrizations.weight_norm(m, dim=dim)
            names = {"parametrizations.weight.original0": g,
                     "parametrizations.weight.original1": v, "bias": b}
        return call(m, names, x)
    return fn


@pytest.mark.parametrize("dim,g_shape,legacy", [(0, (3, 1), False), (1, (1, 4), False),
                                                (None, (), False), (0, (3, 1), True)])
def test_weight_norm(dim, g_shape, legacy):
    check(weight_normed(dim, legacy), (2, 4), make(g_shape, low=0.5, high=2.0), (3, 4), (3,))


def spectral_normed(training, legacy=False, **kwargs):
    """fn for check: a spectral-normed Linear(4, 3) with power-iteration vectors U and V;
    returns its output on x and the vectors after the call."""
    def fn(x, w):
        lib = library(x)
        m = lib.nn.Linear(4, 3, bias=False)
        if legacy:
            lib.nn.utils.spectral_norm(m, **kwargs)
            holder, names = m, ("weight_u", "weight_v", "weight_orig")
        else:
            lib.nn.utils.parametrizations.spectral_norm(m, **kwargs)
            holder = m.parametrizations.weight[0]
            names = ("_u", "_v", "parametrizations.weight.original")
        u, v = (U, V) if kwargs.get("dim", 0) == 0 else (V, U)
        setattr(holder, names[0], lib.tensor(u))
        setattr(holder, names[1], lib.tensor(v))
        m.train(training)
        out = call(m, {names[2]: w}, x)
        return out, getattr(holder, names[0]) * 1, getattr(holder, names[1]) * 1
    return fn


@pytest.mark.parametrize("training,legacy,kwargs", [
    (True, False, {}),
    (False, False, {}),
    (True, False, {"n_power_iterations": 3, "dim": 1}),
    (True, True, {"n_power_iterations": 2}),
    (False, True, {}),
])
def test_spectral_norm(training, legacy, kwargs):
    check(spectral_normed(training, legacy, **kwargs), (2, 4), (3, 4))


def test_spectral_norm_of_a_vector_and_its_own_vectors():
    """A 1-D weight is only normalised; a fresh spectral_norm's vectors have unit length and
    ran 15 power steps (so sigma is close to the largest singular value)."""
    def fn(x, w, b):
        m = nn(x).Linear(4, 3)
        nn(x).utils.parametrizations.spectral_norm(m, "bias", eps=1e-3)
        return call(m, {"weight": w, "parametrizations.bias.original": b}, x)
    check(fn, (2, 4), (3, 4), (3,))
    cg.manual_seed(0)
    m = cg.nn.utils.parametrizations.spectral_norm(cg.nn.Linear(6, 5))
    sn = m.parametrizations.weight[0]
    assert np.isclose(np.linalg.norm(sn._u.numpy()), 1, atol=1e-5)
    w = m.parametrizations.weight.original.detach().numpy()
    assert np.isclose(np.linalg.norm(m.weight.detach().numpy(), 2), 1, atol=0.05)
    assert np.isclose(float(sn._u.numpy() @ w @ sn._v.numpy()), np.linalg.norm(w, 2), rtol=0.05)


def parametrization_classes(lib):
    """Two parametrizations written once for either library: a symmetric matrix from its upper
    triangle (right_inverse: itself) and a scaling by 2 (right_inverse: halving)."""
    class Symmetric(lib.nn.Module):
        def forward(self, x):
            return x.triu() + x.triu(1).transpose(0, 1)

        def right_inverse(self, a):
            return a.triu()

    class Double(lib.nn.Module):
        def forward(self, x):
            return x * 2

        def right_inverse(self, y):
            return y / 2
    return Symmetric, Double


def test_a_chain_of_parametrizations():
    def fn(x, w):
        lib = library(x)
        symmetric, double = parametrization_classes(lib)
        m = lib.nn.Linear(3, 3, bias=False)
        lib.nn.utils.parametrize.register_parametrization(m, "weight", symmetric())
        lib.nn.utils.parametrize.register_parametrization(m, "weight", double())
        return call(m, {"parametrizations.weight.original": w}, x)
    check(fn, (2, 3), (3, 3))


def test_assigning_and_removing_a_parametrized_tensor():
    """module.weight = A runs right_inverse into the original; removal keeps the parametrized
    value (in the original, here shared with a twin) or the original; cached() computes a
    parametrized tensor once."""
    a = make((3, 3), seed=9)
    results = []
    for lib in (cg, torch) if torch is not None else (cg,):
        p = lib.nn.utils.parametrize
        symmetric, double = parametrization_classes(lib)
        m = lib.nn.Linear(3, 3, bias=False)
        p.register_parametrization(m, "weight", symmetric())
        p.register_parametrization(m, "weight", double())
        assert type(m).__name__ == "ParametrizedLinear"
        assert p.type_before_parametrizations(m) is lib.nn.Linear
        m.weight = lib.tensor(a + a.T)
        with p.cached():
            assert m.weight is m.weight
        assert m.weight is not m.weight
        original = m.parametrizations.weight.original.detach().numpy().copy()
        twin = lib.nn.Linear(3, 3, bias=False)
        p.transfer_parametrizations_and_params(m, twin)
        assert twin.parametrizations.weight.original is m.parametrizations.weight.original
        p.remove_parametrizations(m, "weight")
        assert type(m) is lib.nn.Linear and not p.is_parametrized(m)
        assert [n for n, _ in m.named_parameters()] == ["weight"]
        p.remove_parametrizations(twin, "weight", leave_parametrized=False)
        results.append((original, m.weight.detach().numpy(), twin.weight.detach().numpy()))
    np.testing.assert_allclose(results[0][0], np.triu(a + a.T) / 2, rtol=1e-6)
    np.testing.assert_allclose(results[0][1], a + a.T, rtol=1e-6)
    np.testing.assert_allclose(results[0][2], a + a.T, rtol=1e-6)     # the shared original
    for ours, theirs in zip(results[0], results[-1]):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)


def test_state_dicts():
    """Parametrized and legacy layouts name their tensors as PyTorch's; weight_norm reads a
    legacy state dict; a parametrized module deep-copies."""
    m = cg.nn.utils.parametrizations.weight_norm(cg.nn.Linear(4, 3))
    legacy = quiet(cg.nn.utils.weight_norm)(cg.nn.Linear(4, 3))
    assert list(legacy.state_dict()) == ["bias", "weight_g", "weight_v"]
    assert list(m.state_dict()) == ["bias", "parametrizations.weight.original0",
                                    "parametrizations.weight.original1"]
    m.load_state_dict(legacy.state_dict())
    np.testing.assert_allclose(m.weight.detach().numpy(), legacy.weight.detach().numpy(),
                               rtol=1e-6)
    twin = copy.deepcopy(m)
    assert type(twin) is type(m) and twin.parametrizations.weight.original1 is not \
        m.parametrizations.weight.original1
    s = cg.nn.utils.spectral_norm(cg.nn.Conv2d(2, 3, 3))
    assert list(s.state_dict()) == ["bias", "weight_orig", "weight_u", "weight_v"]
    assert s.weight_u.shape == (3,) and s.weight_v.shape == (18,)
    t = cg.nn.utils.spectral_norm(cg.nn.ConvTranspose2d(2, 3, 3))     # dim 1 by default
    assert t.weight_u.shape == (3,) and t.weight_v.shape == (18,)
    cg.nn.utils.remove_spectral_norm(s)
    assert list(s.state_dict()) == ["bias", "weight"] and not s._forward_pre_hooks


def fused(fuse, transpose=False):
    def fn(w, b, mean, var, bn_w, bn_b):
        utils = nn(w).utils
        if fuse == "linear":
            return utils.fuse_linear_bn_weights(w, b, mean, var, 1e-5, bn_w, bn_b)
        return utils.fuse_conv_bn_weights(w, b, mean, var, 1e-3, bn_w, bn_b, transpose)
    return fn


@pytest.mark.parametrize("fuse,transpose,w_shape", [("linear", False, (3, 4)),
                                                    ("conv", False, (3, 2, 2, 2)),
                                                    ("conv", True, (2, 3, 2))])
def test_fuse_weights(fuse, transpose, w_shape):
    stats = [make((3,), seed=k) for k in range(3, 7)]
    stats[1] = np.abs(stats[1]) + 0.1       # a variance
    check(fused(fuse, transpose), w_shape, (3,), *stats, grad=False)


def test_fused_layers_compute_the_layer_then_batch_norm():
    x = cg.tensor(make((2, 2, 5, 5)))
    conv, bn = cg.nn.Conv2d(2, 3, 3, bias=False).eval(), cg.nn.BatchNorm2d(3).eval()
    bn.running_mean, bn.running_var = cg.tensor(make((3,), seed=1)), cg.tensor(make((3,)) ** 2)
    np.testing.assert_allclose(cg.nn.utils.fuse_conv_bn_eval(conv, bn)(x).detach().numpy(),
                               bn(conv(x)).detach().numpy(), rtol=1e-4, atol=1e-5)
    linear, bn1 = cg.nn.Linear(4, 3).eval(), cg.nn.BatchNorm1d(3).eval()
    bn1.running_var = cg.tensor(make((3,)) ** 2)
    y = cg.tensor(make((2, 4)))
    np.testing.assert_allclose(cg.nn.utils.fuse_linear_bn_eval(linear, bn1)(y).detach().numpy(),
                               bn1(linear(y)).detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(AssertionError, match="Fusion only for eval"):
        cg.nn.utils.fuse_linear_bn_eval(linear.train(), bn1)


def test_functional_call():
    """Tied weights take one value, sequences of dicts merge, the module keeps its own
    tensors afterwards, strict names the keys it lacks."""
    def fn(x, w):
        lib = library(x)
        m = lib.nn.Sequential(lib.nn.Linear(3, 3, bias=False), lib.nn.Tanh(),
                              lib.nn.Linear(3, 3, bias=False))
        m[2].weight = own = m[0].weight
        out = lib.func.functional_call(m, ({"0.weight": w},), x)
        assert m[0].weight is own and m[2].weight is own
        return out
    check(fn, (2, 3), (3, 3))
    m = cg.nn.Linear(2, 2)
    with pytest.raises(RuntimeError, match="Missing key\\(s\\): 'bias'"):
        cg.func.functional_call(m, {"weight": cg.ones(2, 2)}, cg.ones(1, 2), strict=True)
    with pytest.raises(ValueError, match="multiple dictionaries"):
        cg.func.functional_call(m, [{"bias": cg.ones(2)}, {"bias": cg.ones(2)}], cg.ones(1, 2))
    with pytest.warns(FutureWarning, match="torch.func.functional_call"):
        cg.nn.utils.stateless.functional_call(m, {}, cg.ones(1, 2))


def orthogonalized(shape, orthogonal_map, use_trivialization=True):
    """A float64 Linear with weight W made orthogonal (W's registration: right_inverse)."""
    def make_layer(W):
        lib = library(W)
        m = lib.nn.Linear(shape[1], shape[0], bias=False, dtype=lib.float64)
        with lib.no_grad():
            m.weight.copy_(W)
        return lib.nn.utils.parametrizations.orthogonal(m, orthogonal_map=orthogonal_map,
                                                        use_trivialization=use_trivialization)
    return make_layer


@pytest.mark.parametrize("shape,orthogonal_map,use_trivialization", [
    ((3, 3), None, True),               # not orthogonal: made so by QR
    ((4, 3), "householder", False),     # geqrf's reflectors
])
def test_orthogonal_registration(shape, orthogonal_map, use_trivialization):
    """The weight and the state dict (original, base) registering W leaves."""
    def fn(W):
        m = orthogonalized(shape, orthogonal_map, use_trivialization)(W)
        return (m.weight, *m.state_dict().values())
    check(fn, make(shape, np.float64), grad=False, atol=1e-12)


@pytest.mark.parametrize("shape,orthogonal_map,use_trivialization", [
    ((3, 3), "matrix_exp", True),
    ((4, 2), "cayley", True),
    ((2, 4), "householder", True),      # wide: parametrized as its transpose
    ((4, 3), "householder", False),
])
def test_orthogonal(shape, orthogonal_map, use_trivialization):
    """The weight and its gradient from given originals (and base) through functional_call."""
    n = max(shape)
    bases = (make((n, n), np.float64, seed=3),) if use_trivialization else ()

    def fn(x, original, *base):
        m = orthogonalized(shape, orthogonal_map, use_trivialization)(original.detach())
        tensors = {"parametrizations.weight.original": original}
        tensors.update({"parametrizations.weight.0.base": b for b in base})
        return call(m, tensors, x)
    check(fn, make((2, shape[1]), np.float64), make(shape, np.float64, seed=2), *bases,
          atol=1e-10, rtol=1e-9)


def _register_weight_norm_twice(lib):
    m = lib.nn.Linear(2, 2)
    quiet(lib.nn.utils.weight_norm)(m)
    quiet(lib.nn.utils.weight_norm)(m)


def _remove_missing(lib):
    lib.nn.utils.remove_spectral_norm(lib.nn.Linear(2, 2))


def _add_shape_changer(lib):
    class Row(lib.nn.Module):
        def forward(self, x):
            return x[:1]
    lib.nn.utils.parametrize.register_parametrization(lib.nn.Linear(2, 2), "weight", Row())


def _assign_untrivialized_matrix_exp(lib):
    m = lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2), use_trivialization=False)
    m.weight = lib.eye(2)


def _unparametrize_weight_norm(lib):
    m = lib.nn.utils.parametrizations.weight_norm(lib.nn.Linear(2, 2))
    lib.nn.utils.parametrize.remove_parametrizations(m, "weight", leave_parametrized=False)


ERRORS = [
    (lambda lib: lib.nn.utils.parametrize.remove_parametrizations(lib.nn.Linear(2, 2), "weight"),
     ValueError, "does not have a parametrization on weight"),
    (lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), "gain"),
     ValueError, "has no parameter or buffer with name 'gain'"),
    (lambda lib: lib.nn.utils.parametrizations.spectral_norm(lib.nn.Linear(2, 2), dim=2),
     IndexError, "Dimension out of range"),
    (lambda lib: lib.nn.utils.spectral_norm(lib.nn.Linear(2, 2), n_power_iterations=0),
     ValueError, "n_power_iterations to be positive"),
    (_register_weight_norm_twice, RuntimeError, "Cannot register two weight_norm hooks"),
    (_remove_missing, ValueError, "spectral_norm of 'weight' not found"),
    (_add_shape_changer, ValueError, "may not change the shape"),
    (_unparametrize_weight_norm, ValueError, "Cannot leave unparametrized"),
    (lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2), "bias"),
     ValueError, "Expected a matrix or batch of matrices. Got a tensor of 1 dimensions"),
    (lambda lib: lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2), "weight", "qr"),
     ValueError, 'orthogonal_map has to be one of .* Got: qr'),
    (_assign_untrivialized_matrix_exp, NotImplementedError, "use_trivialization=False"),
    (lambda lib: setattr(lib.nn.utils.parametrizations.orthogonal(lib.nn.Linear(2, 2)),
                         "weight", lib.ones(3, 2)), ValueError, "Expected a matrix or batch"),
]


@pytest.mark.parametrize("call_with,error,match", ERRORS)
def test_errors(call_with, error, match):
    for lib in (cg, torch) if torch is not None else (cg,):
        with pytest.raises(error, match=match):
            call_with(lib)


@pytest.mark.skipif(torch is None, reason="compares signatures with torch's")
def test_signatures_match_torchs():
    import inspect
    pairs = [(getattr(ours, name), getattr(theirs, name))
             for ours, theirs in ((cg.nn.utils, torch.nn.utils),
                                  (cg.nn.utils.parametrize, torch.nn.utils.parametrize),
                                  (cg.nn.utils.parametrizations, torch.nn.utils.parametrizations),
                                  (cg.nn.utils.stateless, torch.nn.utils.stateless),
                                  (cg.func, torch.func))
             for name in ours.__all__ if callable(getattr(ours, name))]
    pairs += [(getattr(cg.nn.Module, name), getattr(torch.nn.Module, name))
              for name in ("register_forward_hook", "register_forward_pre_hook")]
    for ours, theirs in pairs:
        expected = [(p.name, p.default) for p in inspect.signature(theirs).parameters.values()]
        got = [(p.name, p.default) for p in inspect.signature(ours).parameters.values()]
        assert got == expected, ours
