"""More torch.* functions against PyTorch: the incomplete gamma functions, the linear algebra
PyTorch removed or deprecated, the functional recurrent cells and multi-layer loops, the
autocast flags and other process-wide helpers, the sym_* number helpers, cond, while_loop and
vmap."""
import warnings

import numpy as np
import pytest
import torch

import clgrad as cg
from helpers import check, library, make


def _same_error(call):
    """call(lib) raises the same exception type in clgrad as in PyTorch; returns both."""
    errors = []
    for lib in (torch, cg):
        with pytest.raises(Exception) as info, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            call(lib)
        errors.append(info.value)
    assert type(errors[1]) is type(errors[0]), errors
    return errors


# ---- igamma and igammac ----

_A = np.array([0.1, 0.5, 1.0, 2.5, 7.0, 15.0, 30.0, 3.0, 0.7, 20.0, 12.0, 1.5], np.float32)
_X = np.array([0.05, 2.0, 0.3, 2.4, 9.0, 14.0, 45.0, 0.01, 60.0, 21.5, 3.0, 1.5], np.float32)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_incomplete_gamma_values_and_gradient_of_x(name):
    # both branches (series below x = a + 1, continued fraction above); a's gradient is refused
    check(lambda a, x: getattr(library(x), name)(a.detach(), x), _A, _X, rtol=1e-4, atol=1e-6)
    check(lambda a, x: getattr(a.detach(), name)(x), _A[:, None], _X[:4], rtol=1e-4,
          atol=1e-6, grad=False)


def test_incomplete_gamma_float64_and_edges():
    check(lambda a, x: library(a).igammac(a, x), _A.astype(np.float64), _X.astype(np.float64),
          grad=False, rtol=1e-8, atol=1e-12)
    inf, nan = np.inf, np.nan
    a = np.array([0, -1, 1, 1, nan, 0, inf, 2, inf, 3, 2], np.float32)
    x = np.array([1, 1, -1, 0, 1, 0, 1, inf, inf, nan, 1e-30], np.float32)
    check(lambda a, x: (library(a).igamma(a, x), library(a).igammac(a, x)), a, x, grad=False)
    check(lambda a, x: a.igamma(x), (0,), (0,), grad=False)


def test_incomplete_gamma_in_place_and_errors():
    check(lambda a, x: a.detach().clone().igammac_(x), _A, _X, grad=False, rtol=1e-4)
    _same_error(lambda lib: lib.igamma(lib.tensor([1, 2]), lib.tensor([1, 2])))
    _same_error(lambda lib: lib.igamma(lib.tensor([1.0]), 2.0))
    _same_error(lambda lib: lib.tensor([1, 2]).igamma_(lib.tensor([1.0, 2.0])))
    # the gradient at x = 0 is the density's limit there (inf, NaN or 0), as PyTorch's
    check(lambda a, x: library(x).igamma(a.detach(), x), np.array([0.5, 1, 2], np.float32),
          np.zeros(3, np.float32))
    for name in ("igamma", "igammac"):
        a_grad, x_grad = _same_error(lambda lib: getattr(lib, name)(
            lib.tensor([2.0], requires_grad=True), lib.tensor([1.0])).sum().backward())
        assert str(a_grad) == str(x_grad) == f"the derivative for '{name}: input' is not " \
                                             f"implemented."


# ---- linear algebra PyTorch removed (they raise) or deprecated ----

@pytest.mark.parametrize("call", [
    lambda lib, a: lib.matrix_rank(a), lambda lib, a: lib.lstsq(a, a),
    lambda lib, a: a.lstsq(a), lambda lib, a: lib.solve(a, a), lambda lib, a: a.solve(a),
    lambda lib, a: lib.symeig(a, True), lambda lib, a: a.symeig(), lambda lib, a: lib.eig(a),
    lambda lib, a: a.eig(True),
])
def test_removed_linear_algebra_raises_naming_the_replacement(call):
    theirs, ours = _same_error(lambda lib: call(lib, lib.eye(3)))
    assert str(ours).startswith(str(theirs))     # (eig adds what clgrad offers instead)


@pytest.mark.filterwarnings("ignore:at::")
def test_nuclear_and_frobenius_norms():
    check(lambda x: library(x).nuclear_norm(x), (3, 4))
    check(lambda x: library(x).nuclear_norm(x, (0, 2), True), (3, 2, 4), rtol=1e-3)
    check(lambda x: library(x).frobenius_norm(x, (0, 2), True), (2, 3, 4))
    check(lambda x: (library(x).frobenius_norm(x, ()), library(x).frobenius_norm(x, 1)),
          (2, 3))
    for call in (lambda lib: lib.frobenius_norm(lib.ones(2, 2, 2), (0, 1, 2)),
                 lambda lib: lib.frobenius_norm(lib.ones(2, 2, dtype=lib.int32), (0,)),
                 lambda lib: lib.nuclear_norm(lib.ones(2, 2), (0,)),
                 lambda lib: lib.nuclear_norm(lib.ones(2, 2), (1, 1)),
                 lambda lib: lib.nuclear_norm(lib.ones(3)),
                 lambda lib: lib.frobenius_norm(lib.ones(2))):
        _same_error(call)
    with pytest.warns(UserWarning, match="nuclear_norm is deprecated"):
        cg.nuclear_norm(cg.eye(2))


# ---- the functional recurrent cells ----

@pytest.mark.parametrize("name, gates", [("rnn_tanh_cell", 1), ("rnn_relu_cell", 1),
                                         ("gru_cell", 3)])
def test_recurrent_cells(name, gates):
    check(lambda x, h, w, u, b, c: getattr(library(x), name)(x, h, w, u, b, c),
          (2, 3), (2, 4), (4 * gates, 3), (4 * gates, 4), (4 * gates,), (4 * gates,),
          rtol=1e-4, atol=1e-5)


def test_lstm_cell_takes_and_returns_a_pair():
    check(lambda x, h, c, w, u: library(x).lstm_cell(x, (h, c), w, u), (2, 3), (2, 4), (2, 4),
          (16, 3), (16, 4))


@pytest.mark.parametrize("call", [
    lambda lib, R: lib.rnn_tanh_cell(R(3), R(4), R(4, 3), R(4, 4)),           # unbatched
    lambda lib, R: lib.rnn_tanh_cell(R(2, 3), R(2, 4), R(4, 5), R(4, 4)),     # input_size
    lambda lib, R: lib.rnn_tanh_cell(R(2, 3), R(1, 4), R(4, 3), R(4, 4)),     # batch
    lambda lib, R: lib.rnn_tanh_cell(R(2, 3), R(2, 5), R(4, 3), R(4, 4)),     # hidden_size
    lambda lib, R: lib.gru_cell(R(2, 3), R(2, 4), R(4, 3), R(4, 4)),          # gates
    lambda lib, R: lib.rnn_relu_cell(R(2, 3), R(2, 4), R(4, 3), R(5, 4)),
    lambda lib, R: lib.rnn_tanh_cell(R(2, 3), None, R(4, 3), R(4, 4)),
    lambda lib, R: lib.lstm_cell(R(2, 3), R(2, 4), R(16, 3), R(16, 4)),
    lambda lib, R: lib.lstm_cell(R(2, 3), (R(2, 4),), R(16, 3), R(16, 4)),
    lambda lib, R: lib.lstm_cell(R(2, 3), (R(2, 4), R(1, 4)), R(16, 3), R(16, 4)),
])
def test_recurrent_cell_errors(call):
    theirs, ours = _same_error(lambda lib: call(lib, lambda *shape: lib.tensor(make(shape))))
    if isinstance(theirs, RuntimeError):
        assert str(theirs).split(",")[0].split(":")[0] in str(ours)


def _rnn_param_shapes(gates, layers=1, directions=1, bias=True, proj=0, input_size=3, hidden=4):
    """nn.RNN's flat weights: w_ih, w_hh, [b_ih, b_hh], [w_hr] per layer and direction."""
    out_size = proj or hidden
    shapes = []
    for layer in range(layers):
        width = input_size if layer == 0 else out_size * directions
        for _ in range(directions):
            shapes += [(gates * hidden, width), (gates * hidden, out_size)]
            shapes += [(gates * hidden,)] * 2 if bias else []
            shapes += [(proj, hidden)] if proj else []
    return shapes


@pytest.mark.parametrize("name, gates, layers, directions, bias, batch_first", [
    ("rnn_tanh", 1, 1, 1, True, False),
    ("rnn_relu", 1, 2, 1, False, True),
    ("gru", 3, 1, 2, True, False),
])
def test_recurrent_loops(name, gates, layers, directions, bias, batch_first):
    """(output, h_n) from input (3, 2, 3) (batch first: 2 sequences of 3 steps) and h_0."""
    def fn(x, h, *params):
        return getattr(library(x), name)(x, h, list(params), bias, layers, 0.0, True,
                                         directions == 2, batch_first)
    batch = 3 if batch_first else 2
    check(fn, (3, 2, 3), (layers * directions, batch, 4),
          *_rnn_param_shapes(gates, layers, directions, bias))


def test_lstm_loop_with_projections():
    def fn(x, h, c, *params):
        return library(x).lstm(x, (h, c), list(params), True, 2, 0.0, True, False, False)
    check(fn, (3, 2, 3), (2, 2, 2), (2, 2, 4), *_rnn_param_shapes(4, layers=2, proj=2))


@pytest.mark.parametrize("name, gates, directions", [("gru", 3, 1), ("lstm", 4, 2)])
def test_recurrent_loops_over_packed_data(name, gates, directions):
    """The (data, batch_sizes, ...) overload: sequences of lengths 3, 2; output is data."""
    def fn(data, batch_sizes, h, c, *params):
        hx = (h, c) if name == "lstm" else h
        return getattr(library(data), name)(data, batch_sizes, hx, list(params), True, 1, 0.0,
                                            True, directions == 2)
    check(fn, (5, 3), np.array([2, 2, 1]), (directions, 2, 4), (directions, 2, 4),
          *_rnn_param_shapes(gates, directions=directions))


@pytest.mark.parametrize("call", [
    lambda lib, R: lib.gru(R(3, 2, 3), R(1, 2, 4), [R(12, 3), R(12, 4), R(12)], True, 1, 0.0,
                           True, False, False),                        # a bias missing
    lambda lib, R: lib.rnn_tanh(R(3, 2, 3), R(1, 2, 4), [R(4, 5), R(4, 4)], False, 1, 0.0,
                                True, False, False),                   # input_size
    lambda lib, R: lib.gru(R(2, 3), R(1, 4), [R(12, 3), R(12, 4)], False, 1, 0.0, True,
                           False, False),                              # unbatched input
    lambda lib, R: lib.rnn_tanh(R(3, 2, 3), None, [R(4, 3), R(4, 4)], False, 1, 0.0, True,
                                False, False),
    lambda lib, R: lib.lstm(R(3, 2, 3), R(1, 2, 4), [R(16, 3), R(16, 4)], False, 1, 0.0, True,
                            False, False),                             # hx not a pair
])
def test_recurrent_loop_errors(call):
    _same_error(lambda lib: call(lib, lambda *shape: lib.tensor(make(shape))))


# ---- process-wide flags and helpers ----

def _autocast_calls(lib):
    """A sequence of the autocast functions; what each returned."""
    seen = [lib.is_autocast_enabled(), lib.is_autocast_enabled("cpu"),
            lib.get_autocast_dtype("cpu"), lib.get_autocast_dtype("cuda"),
            lib.get_autocast_dtype("xla"), lib.is_autocast_cache_enabled()]
    lib.set_autocast_enabled(True)
    lib.set_autocast_enabled("cpu", True)
    lib.set_autocast_dtype("cpu", lib.float16)
    lib.set_autocast_gpu_dtype(lib.bfloat16)
    lib.set_autocast_cache_enabled(False)
    seen += [lib.is_autocast_enabled("cuda"), lib.is_autocast_cpu_enabled(),
             lib.get_autocast_cpu_dtype(), lib.get_autocast_gpu_dtype(),
             lib.is_autocast_cache_enabled(), lib.clear_autocast_cache()]
    lib.set_autocast_cpu_enabled(False)
    lib.set_autocast_enabled(False)
    lib.set_autocast_cpu_dtype(lib.bfloat16)
    lib.set_autocast_dtype("cuda", lib.float16)
    lib.set_autocast_cache_enabled(True)
    seen += [lib.is_autocast_enabled(), lib.is_autocast_enabled("cpu"),
             lib.get_autocast_dtype("cpu")]
    return [str(v).split(".")[-1] for v in seen]


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_autocast_state_is_kept_and_reported():
    assert _autocast_calls(cg) == _autocast_calls(torch)
    for call in (lambda lib: lib.is_autocast_enabled(None),
                 lambda lib: lib.is_autocast_enabled("gpu0"),
                 lambda lib: lib.set_autocast_enabled(1),
                 lambda lib: lib.set_autocast_cache_enabled(1),
                 lambda lib: lib.get_autocast_dtype()):
        _same_error(call)


def test_default_tensor_type_and_typename():
    try:
        for t in ("torch.DoubleTensor", "FloatTensor", "HalfTensor"):
            for lib in (torch, cg):     # (PyTorch warns once per process)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    lib.set_default_tensor_type(getattr(lib, t) if "." not in t else t)
            assert str(cg.get_default_dtype()).split(".")[-1] == \
                str(torch.get_default_dtype()).split(".")[-1]
            assert cg.tensor([1.5]).dtype.name == str(torch.tensor([1.5]).dtype)[6:]
        with pytest.warns(UserWarning, match="set_default_tensor_type.. is deprecated"):
            cg.set_default_tensor_type("clgrad.FloatTensor")
    finally:
        torch.set_default_dtype(torch.float32)
        cg.set_default_dtype(cg.float32)
    for bad in ("LongTensor", "float64", "'foo'", "'torch.Foo'"):
        _same_error(lambda lib: lib.set_default_tensor_type(eval(bad, {}, vars(lib))))
    # as a PyTorch built without CUDA (a CUDA build would make every later tensor a CUDA one)
    with pytest.raises(TypeError, match="torch.cuda.FloatTensor not available"):
        cg.set_default_tensor_type("torch.cuda.FloatTensor")
    for make_value in (lambda lib: lib.zeros(2), lambda lib: lib.zeros(2, dtype=lib.int64),
                       lambda lib: 3, lambda lib: None, lambda lib: "a"):
        ours, theirs = cg.typename(make_value(cg)), torch.typename(make_value(torch))
        assert ours.replace("clgrad.", "torch.") == theirs


def test_flush_denormal_and_thread_init():
    # clgrad cannot set the OpenCL runtime's denormal mode: False, as PyTorch where it can't
    assert cg.set_flush_denormal(True) is False and cg.set_flush_denormal(False) is False
    _same_error(lambda lib: lib.set_flush_denormal(1))
    assert cg.init_num_threads() is None
    _same_error(lambda lib: lib.init_num_threads(1))


@pytest.mark.parametrize("call", [
    lambda lib: lib.sym_int(3.7), lambda lib: lib.sym_int(-2.5), lambda lib: lib.sym_float(2),
    lambda lib: lib.sym_max(1, 2.0), lambda lib: lib.sym_max(3, 2),
    lambda lib: lib.sym_min(np.int64(3), 2), lambda lib: lib.sym_min(1.5, np.float32(0.5)),
    lambda lib: lib.sym_not(0), lambda lib: lib.sym_not(True), lambda lib: lib.sym_sqrt(2),
    lambda lib: lib.sym_sum([1, 2, 3]), lambda lib: lib.sym_sum(1.5, 2),
    lambda lib: lib.sym_sum(()), lambda lib: lib.sym_ite(False, 1, 2),
])
def test_sym_functions_on_numbers(call):
    ours, theirs = call(cg), call(torch)
    assert ours == theirs and type(ours) is type(theirs)


@pytest.mark.parametrize("call", [lambda lib: lib.sym_ite(1, 1, 2),
                                  lambda lib: lib.sym_ite(True, 1, 2.0),
                                  lambda lib: lib.sym_max("a", 1)])
def test_sym_function_errors(call):
    _same_error(call)


# ---- cond, while_loop, vmap ----

def test_cond_runs_the_branch_its_predicate_picks():
    # (PyTorch compiles the branches and wants outputs of one shape; clgrad runs one branch)
    for pred in (lambda x: x.sum() > 100, lambda x: x.sum() < 100, lambda x: 0):
        check(lambda x: library(x).cond(pred(x), lambda a: a * 2, lambda a: a.exp(), (x,)),
              (2, 3))
    for call in (lambda lib: lib.cond(lib.ones(2) > 0, lambda a: a, lambda a: a, (lib.ones(2),)),
                 lambda lib: lib.cond("a", lambda: 1, lambda: 2),
                 lambda lib: lib.cond(lib.tensor(True), 3, lambda: 1),
                 lambda lib: lib.cond(lib.tensor(True), lambda a: a, lambda a: a, (1,))):
        _same_error(call)


def test_while_loop_carries_its_values():
    def run(x):
        lib = library(x)
        return lib.while_loop(lambda i, a: i < 3, lambda i, a: (i + 1, a * a + 1),
                              (lib.tensor(0), x))
    check(run, (3,), rtol=1e-4)
    check(lambda x: library(x).while_loop(lambda a: a.sum() < 0, lambda a: a + 1, (x,)), (3,))
    for call in (lambda lib: lib.while_loop(3, lambda i: (i + 1,), (1,)),
                 lambda lib: lib.while_loop(lambda i: i < 3, lambda i: (i + 1,), ("a",))):
        _same_error(call)


def test_vmap_maps_any_function_by_a_loop():
    check(lambda x, y: library(x).vmap(library(x).dot)(x, y), (3, 4), (3, 4))
    check(lambda x, y: library(x).vmap(library(x).mv, in_dims=(None, 1))(x, y), (3, 4), (4, 2))
    check(lambda x: library(x).vmap(lambda a: (a.exp(), a.sum()), in_dims=1,
                                    out_dims=(1, 0))(x), (2, 3))
    check(lambda x: library(x).vmap(library(x).vmap(lambda a, s: a * s, in_dims=(0, None)),
                                    in_dims=(1, None))(
        x, 2.0), (2, 3))
    check(lambda x: library(x).vmap(lambda d: d["a"].sum(), in_dims=({"a": 1},))({"a": x}),
          (2, 3))
    check(lambda x: library(x).vmap(lambda a: a * 2)(x[:0]), (2, 3), grad=False)
    assert cg.func.vmap is cg.vmap


@pytest.mark.parametrize("call", [
    lambda lib, x: lib.vmap(lib.dot)(x, x.T), lambda lib, x: lib.vmap(lib.sum, in_dims=None)(x),
    lambda lib, x: lib.vmap(lib.sum, in_dims=2)(x), lambda lib, x: lib.vmap(lambda a: 3)(x),
    lambda lib, x: lib.vmap(lambda a: a + lib.rand(()))(x),
    lambda lib, x: lib.vmap(lambda a: a, randomness="foo")(x),
    lambda lib, x: lib.vmap(lambda a: a, chunk_size=0)(x),
    lambda lib, x: lib.vmap(lambda a, s: a * s)(x, 2), lambda lib, x: lib.vmap(lib.sum)(),
    lambda lib, x: lib.vmap(lambda a: a, out_dims=(1, 0))(x),
])
def test_vmap_errors(call):
    _same_error(lambda lib: call(lib, lib.ones(3, 4)))


def test_vmap_randomness_same_and_different():
    for lib in (torch, cg):
        lib.manual_seed(0)
        same = lib.vmap(lambda a: a + lib.rand(()), randomness="same")(lib.zeros(4))
        different = lib.vmap(lambda a: a + lib.rand(()), randomness="different")(lib.zeros(4))
        assert same.std().item() == 0 and different.std().item() > 0
