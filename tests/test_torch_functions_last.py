"""ormqr (frontend/householder.py), lobpcg (lobpcg.py, lobpcg_gradient.py) and from_file
(array_interop.py) against PyTorch and NumPy."""
import os

import numpy as np
import pytest

from helpers import check, library, make, torch

import clgrad as cg

# ---- ormqr ----


def reflectors(shape, seed=0):
    """geqrf's (a, tau) of a random matrix, as float32 arrays."""
    a, tau = torch.geqrf(torch.tensor(make(shape, seed=seed)))
    return a.numpy(), tau.numpy()


@pytest.mark.parametrize("left,transpose", [(True, False), (True, True), (False, False),
                                            (False, True)])
def test_ormqr(left, transpose):
    a, tau = reflectors((5, 3))
    other = make((5, 2) if left else (2, 5), seed=3)
    out = check(lambda a, tau, c: library(a).ormqr(a, tau, c, left=left, transpose=transpose),
                a, tau, other)[0]
    assert out.grad_fn.name() == "OrmqrBackward0"


def test_ormqr_of_a_wide_input_a_batch_and_the_method():
    # (the gradients are test_ormqr's: the same products of other shapes)
    a, tau = reflectors((3, 5))
    check(lambda a, tau, c: a.ormqr(tau, c, left=False), a, tau, make((2, 3)), grad=False)
    a, tau = reflectors((2, 5, 3))
    check(lambda a, tau, c: library(a).ormqr(a, tau, c, transpose=True), a, tau,
          make((2, 5, 2)), grad=False)


def test_ormqr_of_no_reflectors_and_no_columns():
    a, tau = reflectors((5, 3))
    check(lambda a, tau, c: a.ormqr(tau, c), a[:, :0], tau[:0], make((5, 2)))
    check(lambda a, tau, c: a.ormqr(tau, c), a, tau, make((5, 0)))


ORMQR_ERRORS = [  # input, tau, other shapes, dtype, left
    ((5,), (3,), (5, 2), np.float32, True),
    ((5, 3), (3,), (5,), np.float32, True),
    ((5, 3), (3,), (2, 5), np.float32, True),
    ((5, 3), (3,), (5, 2), np.float32, False),
    ((5, 3), (2,), (5, 2), np.float32, True),
    ((5, 3), (1, 3), (5, 2), np.float32, True),
    ((2, 5, 3), (2, 3), (5, 2), np.float32, True),
    ((2, 5, 3), (3, 3), (2, 5, 2), np.float32, True),
    ((2, 5, 3), (2, 3), (3, 5, 2), np.float32, True),
    ((5, 3), (3,), (5, 2), np.int64, True),
]


@pytest.mark.parametrize("shapes,dtype,left", [(s[:3], s[3], s[4]) for s in ORMQR_ERRORS])
def test_ormqr_errors_are_pytorchs(shapes, dtype, left):
    arrays = [make(shape, dtype) for shape in shapes]

    def raised(lib):
        with pytest.raises(Exception) as info:
            lib.ormqr(*(lib.tensor(x) for x in arrays), left=left)
        return info.value

    ours, theirs = raised(cg), raised(torch)
    assert type(ours) is type(theirs) and str(ours) == str(theirs)


def test_ormqr_refuses_mixed_dtypes_as_pytorch():
    a, tau = reflectors((5, 3))
    with pytest.raises(RuntimeError, match="input has dtypeDouble and tau has dtype Float"):
        cg.ormqr(cg.tensor(a).double(), cg.tensor(tau), cg.tensor(make((5, 2))))


# ---- lobpcg ----

M = 12
SPECTRUM = np.linspace(1.0, 12.0, M)        # well separated eigenvalues


def symmetric(spectrum=SPECTRUM, seed=0):
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((len(spectrum),) * 2))
    return (q * spectrum) @ q.T


def assert_eigenpairs(A, E, X, expected, atol):
    """E are the expected eigenvalues, and X's columns orthonormal eigenvectors of A (to
    lobpcg's tolerance on the residual, relative to A's norm)."""
    E, X = E.numpy(), X.numpy()
    np.testing.assert_allclose(E, expected, atol=atol)
    np.testing.assert_allclose(A @ X, X * E, atol=100 * atol)
    np.testing.assert_allclose(X.T @ X, np.eye(X.shape[-1]), atol=100 * atol)


# each run shares its kernels with the others of its shapes (A of 12 rows, 2 eigenpairs)
@pytest.mark.parametrize("largest,method", [(True, None), (False, "basic")])
def test_lobpcg_against_numpy_and_torch(largest, method):
    A = symmetric()
    E, X = cg.lobpcg(cg.tensor(A), k=2, largest=largest, method=method)
    every = np.linalg.eigvalsh(A)
    expected = every[::-1][:2] if largest else every[:2]
    assert_eigenpairs(A, E, X, expected, 1e-8)
    E_torch, X_torch = torch.lobpcg(torch.tensor(A), k=2, largest=largest, method=method)
    np.testing.assert_allclose(E.numpy(), E_torch.numpy(), atol=1e-8)
    # the same vectors, up to their signs
    np.testing.assert_allclose(np.abs(X.numpy().T @ X_torch.numpy()), np.eye(2), atol=1e-6)


def test_lobpcg_in_float32_from_a_given_basis_with_a_tracker():
    A = symmetric().astype(np.float32)
    X0 = make((M, 3), seed=4)
    steps = []
    E, X = cg.lobpcg(cg.tensor(A), k=2, X=cg.tensor(X0), largest=False,
                     tracker=lambda worker: steps.append(worker.ivars["istep"]))
    assert E.dtype == cg.float32 and X.shape == (M, 2)
    assert_eigenpairs(A, E, X, SPECTRUM[:2], 1e-4)
    assert steps == list(range(1, len(steps) + 1))


def test_lobpcg_generalized_and_batched():
    A, B = symmetric(), symmetric(np.linspace(1.0, 2.0, M), seed=1)
    E, X = cg.lobpcg(cg.tensor(A), k=2, B=cg.tensor(B))
    E_torch, _ = torch.lobpcg(torch.tensor(A), k=2, B=torch.tensor(B))
    np.testing.assert_allclose(E.numpy(), E_torch.numpy(), atol=1e-8)
    np.testing.assert_allclose(A @ X.numpy(), B @ X.numpy() * E.numpy(), atol=1e-6)
    batch = np.stack([A, symmetric(seed=2) * 2])
    E, X = cg.lobpcg(cg.tensor(batch), k=2)
    assert E.shape == (2, 2) and X.shape == (2, M, 2)
    np.testing.assert_allclose(E.numpy(), [[12.0, 11.0], [24.0, 22.0]], atol=1e-8)


def test_lobpcg_gradient_is_pytorchs():
    A = symmetric()
    G = make((M, M), np.float64, seed=6)
    g = np.array([0.5, -1.0])

    def loss_and_gradient(lib):
        a = lib.tensor(A, requires_grad=True)
        E, X = lib.lobpcg(a, k=2)
        # a loss the eigenvectors' signs do not change
        ((E * lib.tensor(g)).sum() + ((X @ X.mT) * lib.tensor(G)).sum()).backward()
        return E.grad_fn.name(), a.grad.numpy()

    (name, ours), (torch_name, theirs) = loss_and_gradient(cg), loss_and_gradient(torch)
    assert name == torch_name == "LOBPCGAutogradFunctionBackward"
    np.testing.assert_allclose(ours, theirs, atol=1e-6)


def test_lobpcg_errors_are_pytorchs():
    for lib in (cg, torch):
        with pytest.raises(ValueError, match=r"smaller than 3 x the number of requested "
                                             r"eigenpairs \(=5\)"):
            lib.lobpcg(lib.tensor(symmetric()), k=5)
        with pytest.raises(AssertionError, match="A must be square"):
            lib.lobpcg(lib.zeros(12, 9))
        A = lib.tensor(symmetric(), requires_grad=True)
        E, _ = lib.lobpcg(A, k=2, B=lib.tensor(symmetric(np.linspace(1.0, 2.0, M), seed=1)))
        with pytest.raises(ValueError, match="does not support backward with B != I"):
            E.sum().backward()


# ---- from_file ----


@pytest.fixture
def numbers(tmp_path):
    path = tmp_path / "numbers.bin"
    np.arange(10, dtype=np.float32).tofile(path)
    return str(path)


@pytest.mark.parametrize("size,dtype", [(0, None), (10, None), (5, "int32"), (3, "float64"),
                                        (7, "bool"), (5, "bfloat16"), (4, "uint8")])
def test_from_file_reads_as_pytorch(numbers, size, dtype):
    ours = cg.from_file(numbers, size=size, dtype=dtype and getattr(cg, dtype))
    theirs = torch.from_file(numbers, size=size, dtype=dtype and getattr(torch, dtype))
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", "")
    np.testing.assert_array_equal(ours.float().numpy(), theirs.float().numpy())


@pytest.mark.usefixtures("cpu_device")      # (a GPU cannot map a file)
def test_from_file_shared_writes_the_file(numbers, tmp_path):
    x = cg.from_file(numbers, shared=True, size=3)
    x.add_(100)
    np.testing.assert_array_equal(np.fromfile(numbers, np.float32)[:4], [100, 101, 102, 3])
    y = cg.from_file(numbers, shared=False, size=3)
    y.add_(100)                             # a copy: the file stays
    np.testing.assert_array_equal(np.fromfile(numbers, np.float32)[:3], [100, 101, 102])
    grown = str(tmp_path / "new.bin")       # made, with zeros, to hold size elements
    assert cg.from_file(grown, shared=True, size=6, dtype=cg.int16).tolist() == [0] * 6
    assert os.path.getsize(grown) == 12


@pytest.mark.usefixtures("cpu_device")      # (a GPU cannot map a file)
def test_from_file_shares_only_what_clgrad_can_map(numbers):
    with pytest.raises(NotImplementedError, match="NumPy has no bfloat16"):
        cg.from_file(numbers, shared=True, size=2, dtype=cg.bfloat16)
    with pytest.raises(NotImplementedError, match="clgrad stores as 0 or 1"):
        cg.from_file(numbers, shared=True, size=8, dtype=cg.bool)    # 1.0's bytes: 0x80
    assert cg.from_file(numbers, shared=True, size=4, dtype=cg.bool).tolist() == [False] * 4


@pytest.mark.usefixtures("cpu_device")      # (one maps the file: a CPU's)
@pytest.mark.parametrize("arguments", [
    {"size": 11}, {"size": 6, "dtype": "float64"}, {"size": -1},
    {"size": 1, "filename": "/nonexistent/file"},
    {"size": 1, "filename": "/nonexistent/file", "shared": True},
])
def test_from_file_errors_are_pytorchs(numbers, arguments):
    def raised(lib):
        kwargs = dict(arguments, filename=arguments.get("filename", numbers))
        if "dtype" in kwargs:
            kwargs["dtype"] = getattr(lib, kwargs["dtype"])
        with pytest.raises(Exception) as info:
            lib.from_file(**kwargs)
        return info.value

    ours, theirs = raised(cg), raised(torch)
    assert type(ours) is type(theirs) and str(ours) == str(theirs)
