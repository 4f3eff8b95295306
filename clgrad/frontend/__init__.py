"""The lazy Tensor API: creation, ops, autograd."""
from .creation import (arange, as_tensor, empty, empty_like, eye, from_numpy, full, full_like,
                       linspace, logspace, manual_seed, normal, ones, ones_like, rand,
                       rand_like, randint, randn, randn_like, randperm, tensor, zeros,
                       zeros_like)
from .einsum import einsum
from .functions import *  # noqa: F401,F403  (cg.exp, cg.add, ...: Tensor methods as functions)
from .functions import __all__ as _functions_all
from .grad_mode import enable_grad, inference_mode, is_grad_enabled, no_grad, set_grad_enabled
from .jit import jit
from .joining import cat, stack
from .tensor import Tensor, realize

__all__ = ["Tensor", "realize", "tensor", "from_numpy", "zeros", "ones", "empty", "full",
           "full_like", "zeros_like", "ones_like", "randn", "rand", "randint", "randperm",
           "randn_like", "rand_like", "arange", "linspace", "logspace", "eye", "empty_like",
           "as_tensor", "normal", "manual_seed", "cat", "stack",
           "no_grad", "enable_grad", "inference_mode", "is_grad_enabled", "set_grad_enabled", "jit",
           "einsum"] + _functions_all
