"""The Distribution base class, as torch.distributions.Distribution: shapes, argument and
sample validation (PyTorch's ValueErrors), sample as rsample without gradients."""
from __future__ import annotations

import warnings

from .. import frontend as ops
from ..frontend.grad_mode import no_grad
from ..frontend.size import Size
from ..frontend.tensor import Tensor
from . import constraints
from .utils import (batch_shape_of, broadcast_all, extended_size, is_all_true, lazy_property,
                    shown)


class Distribution:
    """A probability distribution over values of shape batch_shape + event_shape: batch_shape
    indexes independent distributions (one per parameter set), event_shape is one sample's."""
    has_rsample = False
    has_enumerate_support = False
    _validate_args = __debug__

    @staticmethod
    def set_default_validate_args(value: bool) -> None:
        """Whether distributions validate their arguments and samples unless told (on by
        default, off under `python -O`, as PyTorch's)."""
        if value not in (True, False):
            raise ValueError
        Distribution._validate_args = value

    def __init__(self, batch_shape=Size(), event_shape=Size(), validate_args=None):
        self._batch_shape = extended_size(batch_shape)
        self._event_shape = extended_size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            self._check_arguments()
        super().__init__()

    def _check_arguments(self) -> None:
        try:
            arg_constraints = self.arg_constraints
        except NotImplementedError:
            arg_constraints = {}
            warnings.warn(f"{self.__class__} does not define `arg_constraints`. Please set "
                          "`arg_constraints = {}` or initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=3)
        for param, constraint in arg_constraints.items():
            if constraints.is_dependent(constraint):
                continue        # a constraint that cannot be checked
            if param not in self.__dict__ and isinstance(getattr(type(self), param),
                                                         lazy_property):
                continue        # a parameter not given, computed lazily from another
            value = getattr(self, param)
            _require(constraint, value, f"parameter {param}", f"of distribution {self!r} to "
                     f"satisfy the constraint {constraint!r}")

    def expand(self, batch_shape, _instance=None):
        """A distribution of the same parameters expanded (not copied) to batch_shape, with no
        new argument checks."""
        raise NotImplementedError

    @property
    def batch_shape(self) -> Size:
        return self._batch_shape

    @property
    def event_shape(self) -> Size:
        return self._event_shape

    @property
    def arg_constraints(self) -> dict:
        raise NotImplementedError

    @property
    def support(self):
        raise NotImplementedError

    @property
    def mean(self) -> Tensor:
        raise NotImplementedError

    @property
    def mode(self) -> Tensor:
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self) -> Tensor:
        raise NotImplementedError

    @property
    def stddev(self) -> Tensor:
        return self.variance.sqrt()

    def sample(self, sample_shape=Size()) -> Tensor:
        """A sample of shape sample_shape + batch_shape + event_shape, without gradients."""
        with no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=Size()) -> Tensor:
        """A reparameterized sample: differentiable with respect to the parameters."""
        raise NotImplementedError

    def sample_n(self, n: int) -> Tensor:
        warnings.warn("`sample_n(n)` will be deprecated. Use `sample((n,))` instead.",
                      FutureWarning, stacklevel=2)
        return self.sample(Size((n,)))

    def log_prob(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def cdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def icdf(self, value: Tensor) -> Tensor:
        raise NotImplementedError

    def enumerate_support(self, expand: bool = True) -> Tensor:
        """Every value of a discrete distribution along dimension 0, of shape
        (cardinality,) + batch_shape + event_shape (batch dimensions of size 1 unless
        expand)."""
        raise NotImplementedError

    def entropy(self) -> Tensor:
        raise NotImplementedError

    def perplexity(self) -> Tensor:
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=Size()) -> Size:
        return Size(tuple(sample_shape) + tuple(self._batch_shape) + tuple(self._event_shape))

    def _validate_sample(self, value) -> None:
        """ValueError unless value's rightmost dimensions match event_shape, it broadcasts
        with batch_shape + event_shape, and it lies in the support."""
        if not isinstance(value, Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        event_dim_start = len(value.size()) - len(self._event_shape)
        if value.size()[event_dim_start:] != self._event_shape:
            raise ValueError(f"The right-most size of value must match event_shape: "
                             f"{value.size()} vs {self._event_shape}.")
        actual_shape = value.size()
        expected_shape = self._batch_shape + self._event_shape
        for i, j in zip(reversed(actual_shape), reversed(expected_shape)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(f"Value is not broadcastable with batch_shape+event_shape: "
                                 f"{actual_shape} vs {expected_shape}.")
        try:
            support = self.support
        except NotImplementedError:
            warnings.warn(f"{self.__class__} does not define `support` to enable sample "
                          "validation. Please initialize the distribution with "
                          "`validate_args=False` to turn off validation.", stacklevel=2)
            return
        _require(support, value, "value argument", f"to be within the support ({support!r}) of "
                 f"the distribution {self!r}")

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(f"Subclass {self.__class__.__name__} of {cls.__name__} "
                                      "that defines a custom __init__ method must also define "
                                      "a custom .expand() method.")
        return self.__new__(type(self)) if _instance is None else _instance

    def _expand_parameters(self, cls, batch_shape, _instance, names):
        """expand() of a family whose parameters (names) all have batch_shape + event_shape:
        a new instance holding each expanded."""
        new = self._get_checked_instance(cls, _instance)
        batch_shape = Size(batch_shape)
        for name in names:
            setattr(new, name, getattr(self, name).expand(batch_shape + self.event_shape))
        return self._expanded_init(new, batch_shape)

    def _expanded_init(self, new, batch_shape, event_shape=None):
        """The end of an expand(): new initialized as a Distribution of batch_shape (its
        parameters set, no argument checks) that validates as this one does."""
        shape = self.event_shape if event_shape is None else event_shape
        Distribution.__init__(new, batch_shape, shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def __repr__(self) -> str:
        parts = []
        for name in self.arg_constraints:
            if name in self.__dict__:
                value = self.__dict__[name]
                parts.append(f"{name}: {shown(value) if value.numel() == 1 else value.size()}")
        return f"{self.__class__.__name__}({', '.join(parts)})"


class LocationFamily:
    """A family whose mean and mode are its loc."""

    @property
    def mean(self) -> Tensor:
        return self.loc

    @property
    def mode(self) -> Tensor:
        return self.loc


class LocationScale(LocationFamily):
    """A family of a location loc and a scale, numbers or tensors broadcast together."""

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(batch_shape_of(self.loc, loc, scale), validate_args=validate_args)


def _require(constraint, value, subject: str, clause: str) -> None:
    """PyTorch's ValueError unless every element of value satisfies constraint."""
    if not is_all_true(constraint.check(value)):
        raise ValueError(f"Expected {subject} ({type(value).__name__} of shape "
                         f"{tuple(value.shape)}) {clause}, but found invalid values:\n"
                         f"{shown(value)}")


def full_of(shape, value, like: Tensor) -> Tensor:
    """A tensor of shape filled with value, of like's dtype and device."""
    return ops.full(tuple(shape), value, dtype=like.dtype, device=like.device)
