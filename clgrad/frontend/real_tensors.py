"""PyTorch's complex-number API as it answers for real tensors (clgrad has no complex dtypes):
conj and real are the tensor itself, imag an error, angle 0 or pi, is_complex and is_conj
False; and the transposes of matrices (mT, and mH, H and adjoint, which conjugate too).
Installed on Tensor by tensor.py from METHODS; functions.py makes torch.* functions of them."""
from __future__ import annotations

import math
import warnings

from ..compiler import dtype as dt
from . import elementwise as ew
from .backward import record
from .operands import as_float


def angle(self):
    """The argument of each value: pi below 0 (-inf included), 0 from -0.0 up, NaN for NaN;
    integers give floats. Its gradient is 0, PyTorch's for real tensors."""
    x = as_float(self.node)
    argument = x.ne(x).where(x.detach(), (x < 0).where(math.pi, x.const_like(0)))
    return record("angle", argument, self.device, [self],
                  derivation=ew.zero_gradient(argument, x))


def isreal(self):
    """True everywhere."""
    return ew.cast(self, dt.bool_).logical_or(True)


def real(input):  # noqa: A002  (PyTorch's name, a keyword of torch.real)
    return input


def imag(input):  # noqa: A002
    raise RuntimeError("imag is not implemented for tensors with non-complex dtypes.")


def _transpose_of_matrices(name: str, batches: bool):
    """The transpose of the last two dims (of a 2-D tensor only, unless batches); a 0-D
    tensor is itself, with PyTorch's deprecation warning."""
    called, owner = (f"{name}()", "") if name == "adjoint" else (name, "Tensor.")

    def transpose(self):
        if self.ndim == 0:
            advice = "This function is the identity in these cases." if name == "mT" \
                else "Consider using x.conj()."
            warnings.warn(f"{owner}{called} is deprecated on 0-D tensors. {advice}",
                          UserWarning, stacklevel=2)
            return self
        if self.ndim == 1 or (self.ndim > 2 and not batches):
            kind = "matrices or batches of matrices" if batches else "matrices (2-D tensors)"
            hint = "" if self.ndim == 1 else \
                f" For batches of matrices, consider using tensor.m{name}"
            raise RuntimeError(f"tensor.{called} is only supported on {kind}. Got "
                               f"{self.ndim}-D tensor.{hint}")
        return self.transpose(-2, -1)
    return transpose


def _itself(self):
    return self


def _false(self) -> bool:
    return False


METHODS = [
    ("conj", _itself), ("conj_physical", _itself), ("conj_physical_", _itself),
    ("resolve_conj", _itself), ("resolve_neg", _itself),
    ("is_conj", _false), ("is_neg", _false), ("is_complex", _false),
    ("real", property(real)), ("imag", property(imag)), ("angle", angle),
    ("isreal", isreal),
    ("mT", property(_transpose_of_matrices("mT", batches=True))),
    ("mH", property(_transpose_of_matrices("mH", batches=True))),
    ("H", property(_transpose_of_matrices("H", batches=False))),
    ("adjoint", _transpose_of_matrices("adjoint", batches=True)),
]

# torch.* functions of what are properties of tensors
FUNCTIONS = {"real": real, "imag": imag}
