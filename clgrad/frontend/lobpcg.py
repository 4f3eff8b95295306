"""torch.lobpcg: the k largest (or smallest) eigenpairs of a symmetric positive definite
generalized eigenproblem A x = e B x, by LOBPCG (Knyazev 2001) with PyTorch's two methods:
"ortho" (the default: the search basis made B-orthonormal, Stathopoulos and Wu 2002, with
the convergence test of Duersch et al. 2018) and "basic". It runs as PyTorch's
torch/_lobpcg.py does, on clgrad's matmul, cholesky, solve_triangular, eigh and qr, reading
the few norms each iteration's decisions need on the host (as PyTorch's does). The starting
basis, when X is not given, comes from clgrad's generator: results agree with PyTorch's to
the tolerance, not bit for bit, and eigenvectors up to their sign. A tracker sees the
worker's state as PyTorch's does (ivars, fvars, bvars, tvars, A, B, iK, E, X, S, R).

When A or B requires grad, both are made symmetric ((A + A^T) / 2), so that A - t A.grad is
too, and the eigenpairs get PyTorch's gradient (lobpcg_gradient.py), which has none for a
given B: backward then raises, as PyTorch's does."""
from __future__ import annotations

from ..compiler import dtype as dt
from . import creation
from .eigen import eigh
from .elementwise import where
from .function import Function
from .joining import stack
from .lobpcg_gradient import symeig_backward
from .qr import linalg_qr
from .triangular import linalg_cholesky, solve_triangular


def _matmul(A, X):
    """A X, with None standing for the identity."""
    return X if A is None else A @ X


def _qform(A, S):
    """S^T A S."""
    return S.mT @ _matmul(A, S)


def _symeig(A, largest: bool = False):
    """Eigenvalues and eigenvectors, ascending (descending when largest)."""
    E, Z = eigh(A, UPLO="U")
    return (E.flip(-1), Z.flip(-1)) if largest else (E, Z)


def _where(condition):
    """The positions where a 1-D condition holds (read on the host)."""
    return condition.nonzero(as_tuple=True)[0]


class LOBPCG:
    """The iteration's state: iparams, fparams and bparams (integer, float and boolean
    parameters), ivars, fvars, bvars and tvars (the same kinds of iteration variables, and
    tensors), the eigenvalue and eigenvector estimates E and X, the search basis S and the
    residual R. A tracker may set bvars["force_stop"] to end the iterations."""

    def __init__(self, A, B, X, iK, iparams, fparams, bparams, method: str, tracker):
        self.A, self.B, self.iK = A, B, iK
        self.iparams, self.fparams, self.bparams = iparams, fparams, bparams
        self.method, self.tracker = method, tracker
        m, n = iparams["m"], iparams["n"]
        self.X = X
        self.E = creation.zeros(n, dtype=X.dtype, device=X.device)
        self.R = creation.zeros(m, n, dtype=X.dtype, device=X.device)
        self.S = creation.zeros(m, 3 * n, dtype=X.dtype, device=X.device)
        self.tvars: dict = {}
        self.ivars: dict = {"istep": 0}
        self.fvars: dict = {"_": 0.0}
        self.bvars: dict = {"_": False}

    def __str__(self) -> str:
        names = ("iparams", "fparams", "bparams", "ivars", "fvars", "bvars", "tvars", "A", "B",
                 "iK", "X", "E")
        return "".join(["LOBPCG:\n"] + [f"  {name}={getattr(self, name)}\n" for name in names])

    def update(self) -> None:
        """One iteration (the first sets up the norms the convergence test scales by)."""
        if self.ivars["istep"] == 0:
            X_norm = float(self.X.norm())
            self.fvars["X_norm"] = X_norm
            self.fvars["A_norm"] = float(_matmul(self.A, self.X).norm()) / X_norm
            self.fvars["B_norm"] = float(_matmul(self.B, self.X).norm()) / X_norm
            self.ivars["iterations_left"] = self.iparams["niter"]
            self.ivars["converged_count"] = 0
            self.ivars["converged_end"] = 0
        if self.method == "ortho":
            self._update_ortho()
        else:
            self._update_basic()
        self.ivars["iterations_left"] -= 1
        self.ivars["istep"] += 1

    def update_residual(self) -> None:
        self.R = _matmul(self.A, self.X) - _matmul(self.B, self.X) * self.E

    def update_converged_count(self) -> int:
        """How many leading eigenpairs passed the backward-stable test of Duersch et al.
        (their Sec. 4.3): the count never decreases, pairs past the first failure wait."""
        previous = self.ivars["converged_count"]
        E, X, R = self.E, self.X, self.R
        rerr = R.norm(2, (0,)) / (X.norm(2, (0,)) * (
            self.fvars["A_norm"] + E[:X.shape[-1]].abs() * self.fvars["B_norm"]))
        count = 0
        for converged in (rerr < self.fparams["tol"]).tolist():
            if not converged:
                break
            count += 1
        if count < previous:
            raise AssertionError(f"the number of converged eigenpairs (was {previous}, got "
                                 f"{count}) cannot decrease")
        self.ivars["converged_count"] = count
        self.tvars["rerr"] = rerr
        return count

    def stop_iteration(self) -> bool:
        return (self.bvars.get("force_stop", False) or self.ivars["iterations_left"] == 0
                or self.ivars["converged_count"] >= self.iparams["k"])

    def run(self) -> None:
        self.update()
        self.call_tracker()
        while not self.stop_iteration():
            self.update()
            self.call_tracker()

    def call_tracker(self) -> None:
        if self.tracker is not None:
            self.tracker(self)

    def _rayleigh_ritz_start(self):
        """The first iteration's Rayleigh-Ritz step on the starting basis X: (E, Z, Ri)."""
        Ri = self._get_rayleigh_ritz_transform(self.X)
        E, Z = _symeig(_qform(_qform(self.A, self.X), Ri), self.bparams["largest"])
        return E, Z, Ri

    def _update_basic(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n = self.iparams["n"]
        if self.ivars["istep"] == 0:
            E, Z, Ri = self._rayleigh_ritz_start()
            self.X[:] = self.X @ (Ri @ Z)       # (in place, as PyTorch's: a given X changes)
            self.E[:] = E
            np_ = 0
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = _matmul(self.iK, self.R)
        else:
            S_ = self.S[:, nc:ns]
            Ri = self._get_rayleigh_ritz_transform(S_)
            E_, Z = _symeig(_qform(_qform(self.A, S_), Ri), self.bparams["largest"])
            self.X[:, nc:] = S_ @ (Ri @ Z[:, :n - nc])
            self.E[nc:] = E_[:n - nc]
            P = S_ @ (Ri @ Z[:, n:2 * n - nc])
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n:n + np_] = P
            W = _matmul(self.iK, self.R[:, nc:])
        ns = self.ivars["converged_end"] = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _update_ortho(self) -> None:
        ns, nc = self.ivars["converged_end"], self.ivars["converged_count"]
        n = self.iparams["n"]
        if self.ivars["istep"] == 0:
            # (E stays 0 until the next step, as in PyTorch's: the first residual is A X)
            _, Z, Ri = self._rayleigh_ritz_start()
            self.X = self.X @ (Ri @ Z)
            self.update_residual()
            np_ = 0
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            W = self._get_ortho(self.R, self.X)
        else:
            S_ = self.S[:, nc:ns]
            E_, Z = _symeig(_qform(self.A, S_), self.bparams["largest"])     # Rayleigh-Ritz
            self.X[:, nc:] = S_ @ Z[:, :n - nc]
            self.E[nc:] = E_[:n - nc]
            P = S_ @ (Z[:, n - nc:] @ linalg_qr(Z[:n - nc, n - nc:].mT).Q)
            np_ = P.shape[-1]
            self.update_residual()
            nc = self.update_converged_count()
            self.S[:, :n] = self.X
            self.S[:, n:n + np_] = P
            W = self._get_ortho(self.R[:, nc:], self.S[:, :n + np_])
        ns = self.ivars["converged_end"] = n + np_ + W.shape[-1]
        self.S[:, n + np_:ns] = W

    def _get_rayleigh_ritz_transform(self, S):
        """Ri, upper triangular, that reduces (S^T A S) C = (S^T B S) C E to the standard
        problem (Ri^T S^T A S Ri) Z = Z E with C = Ri Z: with d the inverse square roots of
        S^T B S's diagonal, R^T R = cholesky(d d^T * S^T B S) and Ri = R^-1 * d."""
        SBS = _qform(self.B, S)
        d_row = SBS.diagonal(0, -2, -1) ** -0.5
        d_col = d_row.reshape(d_row.shape[0], 1)
        R = linalg_cholesky((SBS * d_row) * d_col, upper=True)
        return solve_triangular(R, d_row.diag_embed(), upper=True, left=False)

    def _get_svqb(self, U, drop: bool, tau: float):
        """U made B-orthonormal (U^T B U = I; Algorithm 4 of Duersch's thesis, 2015); exactly
        zero columns are dropped first, and with drop, the columns adding little to U's
        span (those of eigenvalues up to tau times the largest)."""
        if U.numel() == 0:
            return U
        UBU = _qform(self.B, U)
        d = UBU.diagonal(0, -2, -1)
        nonzero = _where(d.abs() != 0.0)
        if len(nonzero) < len(d):
            U = U[:, nonzero]
            if U.numel() == 0:
                return U
            UBU = _qform(self.B, U)
            d = UBU.diagonal(0, -2, -1)
        d_col = (d ** -0.5).reshape(d.shape[0], 1)
        E, Z = _symeig((UBU * d_col) * d_col.mT)
        t = tau * E.abs().max()
        if drop:
            keep = _where(E > t)
            E, Z, d_col = E[keep], Z[:, keep], d_col[keep]
        else:
            E = where(E < t, t, E)
        return (U * d_col.mT) @ (Z * E ** -0.5)

    def _get_ortho(self, U, V):
        """U made B-orthonormal and B-orthogonal to V (Algorithm 3 of Duersch's thesis, or
        with ortho_use_drop its Algorithm 6); empty when all of U lies in V's span."""
        m = self.iparams["m"]
        tau_ortho = self.fparams["ortho_tol"]
        tau_drop, tau_replace = self.fparams["ortho_tol_drop"], self.fparams["ortho_tol_replace"]
        i_max, j_max = self.iparams["ortho_i_max"], self.iparams["ortho_j_max"]
        use_drop = self.bparams["ortho_use_drop"]
        for key in [k for k in self.fvars if k.startswith("ortho_") and k.endswith("_rerr")]:
            self.fvars.pop(key)
        self.ivars.pop("ortho_i", 0)
        self.ivars.pop("ortho_j", 0)
        BV_norm = _matmul(self.B, V).norm()
        BU = _matmul(self.B, U)
        VBU = V.mT @ BU
        i = j = 0
        for i in range(i_max):
            U = U - V @ VBU
            drop, tau_svqb = False, tau_drop
            for j in range(j_max):
                if use_drop:
                    U = self._get_svqb(U, drop, tau_svqb)
                    drop, tau_svqb = True, tau_replace
                else:
                    U = self._get_svqb(U, False, tau_replace)
                if U.numel() == 0:      # all of U was in V's span
                    self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
                    return U
                BU = _matmul(self.B, U)
                UBU = U.mT @ BU
                R = UBU - creation.eye(UBU.shape[-1], dtype=UBU.dtype, device=UBU.device)
                rerr = float(R.norm()) / float(BU.norm() * U.norm())
                self.fvars[f"ortho_UBUmI_rerr[{i}, {j}]"] = rerr
                if rerr < tau_ortho:
                    break
            VBU = V.mT @ BU
            rerr = float(VBU.norm()) / float(BV_norm * U.norm())
            self.fvars[f"ortho_VBU_rerr[{i}]"] = rerr
            if rerr < tau_ortho:
                break
            if m < U.shape[-1] + V.shape[-1]:
                if self.B is None:      # (PyTorch's check of B comes first)
                    raise AssertionError("B must not be None")
                raise ValueError(f"Overdetermined shape of U: #B-cols(={self.B.shape[-1]}) >= "
                                 f"#U-cols(={U.shape[-1]}) + #V-cols(={V.shape[-1]}) must hold")
        self.ivars["ortho_i"], self.ivars["ortho_j"] = i, j
        return U


def _run(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams, ortho_fparams,
         ortho_bparams):
    """The eigenpairs (E (..., k), X (..., m, k)), one worker per matrix of a batch."""
    if A.shape[-2] != A.shape[-1]:
        raise AssertionError(f"A must be square, got shape {A.shape}")
    if B is not None and A.shape != B.shape:
        raise AssertionError(f"A and B must have same shape, got {A.shape} vs {B.shape}")
    dtype = A.dtype if A.dtype.is_float else dt.float32
    if tol is None:
        tol = {dt.float32: 1.2e-07, dt.float64: 2.23e-16}[dtype] ** 0.5
    m = A.shape[-1]
    k = (1 if X is None else X.shape[-1]) if k is None else k
    n = (k if n is None else n) if X is None else X.shape[-1]
    if m < 3 * n:
        raise ValueError(f"LOBPCG algorithm is not applicable when the number of A rows (={m}) "
                         f"is smaller than 3 x the number of requested eigenpairs (={n})")
    method = "ortho" if method is None else method
    iparams = {"m": m, "n": n, "k": k, "niter": 1000 if niter is None else niter}
    fparams = {"tol": tol}
    bparams = {"largest": True if largest is None else largest}
    if method == "ortho":
        iparams.update(ortho_iparams or {})
        fparams.update(ortho_fparams or {})
        bparams.update(ortho_bparams or {})
        iparams.setdefault("ortho_i_max", 3)
        iparams.setdefault("ortho_j_max", 3)
        for name in ("ortho_tol", "ortho_tol_drop", "ortho_tol_replace"):
            fparams.setdefault(name, tol)
        bparams.setdefault("ortho_use_drop", False)

    def solve(A_, B_, X_):
        X_ = creation.randn(m, n, dtype=dtype, device=A.device) if X_ is None else X_
        if tuple(X_.shape) != (m, n):
            raise AssertionError(f"X shape mismatch: got {X_.shape}, expected {(m, n)}")
        worker = LOBPCG(A_, B_, X_, iK, iparams, fparams, bparams, method, tracker)
        worker.run()
        return worker.E[:k], worker.X[:, :k]

    if A.ndim == 2:
        return solve(A, B, X)
    batch = tuple(A.shape[:-2])
    count = 1
    for size in batch:
        count *= size

    def matrices(T):
        return [None] * count if T is None else list(T.reshape((count,) + T.shape[-2:]))

    pairs = []
    for i, (A_, B_, X_) in enumerate(zip(matrices(A), matrices(B), matrices(X))):
        iparams["batch_index"] = i
        pairs.append(solve(A_, B_, X_))
    if not pairs:
        return (creation.zeros(batch + (k,), dtype=dtype, device=A.device),
                creation.zeros(batch + (m, k), dtype=dtype, device=A.device))
    return (stack([E for E, _ in pairs]).reshape(batch + (k,)),
            stack([V for _, V in pairs]).reshape(batch + (m, k)))


class LOBPCGAutogradFunction(Function):
    """PyTorch's name for lobpcg's custom gradient (LOBPCGAutogradFunctionBackward)."""

    @staticmethod
    def forward(ctx, A, k=None, B=None, X=None, n=None, iK=None, niter=None, tol=None,
                largest=None, method=None, tracker=None, ortho_iparams=None, ortho_fparams=None,
                ortho_bparams=None):
        D, U = _run(A, k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                    ortho_fparams, ortho_bparams)
        ctx.save_for_backward(A, B, D, U)
        ctx.largest = largest
        return D, U

    @staticmethod
    def backward(ctx, D_grad, U_grad):
        A, B, D, U = ctx.saved_tensors
        if B is not None:
            raise ValueError("lobpcg.backward does not support backward with B != I yet.")
        largest = True if ctx.largest is None else ctx.largest
        return (symeig_backward(D_grad, U_grad, A, D, U, largest),) + (None,) * 13


def lobpcg(A, k: int | None = None, B=None, X=None, n: int | None = None, iK=None,
           niter: int | None = None, tol: float | None = None, largest: bool | None = None,
           method: str | None = None, tracker=None, ortho_iparams: dict | None = None,
           ortho_fparams: dict | None = None, ortho_bparams: dict | None = None):
    """(E (..., k), X (..., m, k)): the k largest eigenvalues of A x = e B x (smallest when
    largest=False) and their eigenvectors, from a starting basis X of n >= k columns (random
    when None; m >= 3 n) preconditioned by iK, within niter iterations (-1: until converged)
    to the relative residual tol."""
    arguments = (k, B, X, n, iK, niter, tol, largest, method, tracker, ortho_iparams,
                 ortho_fparams, ortho_bparams)
    if A.requires_grad or (B is not None and B.requires_grad):
        A = (A + A.mT) / 2
        B = None if B is None else (B + B.mT) / 2
        return LOBPCGAutogradFunction.apply(A, k, B, *arguments[2:])
    return _run(A, *arguments)


FUNCTIONS = {"lobpcg": lobpcg}
