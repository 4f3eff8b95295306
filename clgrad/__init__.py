"""clgrad: PyTorch-style deep learning compiled into fused OpenCL kernels.

    import clgrad as cg
    x = cg.randn(64, 1000)
    y = (x @ w).relu()      # nothing runs yet
    y.numpy()               # now: one fused kernel
"""
from . import autograd, cuda, linalg, special  # noqa: F401  (cg.autograd, cg.linalg, ...)
from .compiler.dtype import bool_ as bool  # noqa: A001  (cg.bool, as torch.bool)
from .compiler.dtype import bfloat16, float16, float32, float64, int8, int16, int32, int64, uint8
from .compiler.dtype import DType as dtype
from .frontend import *  # noqa: F401,F403
from .frontend import __all__ as _frontend_all
from .frontend import elementwise as _ew
from .frontend.size import Size
from .frontend.tensor import Tensor
from .runtime import devices, gpu_is_available, synchronize
from .runtime import get_device as device
from .runtime.profiler import profile
from .frontend.inspect import compile, viz  # noqa: A004
from .frontend import inspect as ir  # cg.ir.dump(t), cg.ir.parse(text)

half, double, long, short = float16, float64, int64, int16
float, int = float32, int32  # noqa: A001


def where(condition, input, other):
    return _ew.where(condition, input, other)


def maximum(input, other):
    return input.maximum(other)


def minimum(input, other):
    return input.minimum(other)


def matmul(input, other):
    return input.matmul(other)


def is_tensor(x) -> bool:
    return isinstance(x, Tensor)


__all__ = list(_frontend_all) + ["dtype", "bool", "float16", "float32", "float64", "int32",
                                 "int64", "uint8", "int8", "int16", "bfloat16", "short", "Size",
                                 "device", "devices", "gpu_is_available", "profile",
                                 "where", "maximum", "minimum", "matmul", "is_tensor", "compile",
                                 "viz", "ir", "synchronize", "cuda", "autograd", "linalg",
                                 "special"]

from . import distributed, distributions, func, nn, optim, utils  # noqa: E402  (cg.nn, ...)
from .frontend.generator import Generator  # noqa: E402
from .serialization import load, save  # noqa: E402
from . import random, testing  # noqa: E402  (cg.random, cg.testing)
from .random import default_generator  # noqa: E402

from .nn.torch_functions import FUNCTIONS as _nn_functions  # noqa: E402  (cg.conv2d, ...)
from .nn.torch_functions import TENSOR_METHODS as _nn_methods  # noqa: E402  (x.prelu(w))
from .frontend.legacy_types import LEGACY_TYPES as _legacy_types  # noqa: E402  (cg.FloatTensor)

globals().update(_nn_functions)
globals().update(_legacy_types)
for _name in _nn_methods:
    setattr(Tensor, _name, _nn_functions[_name])
__all__ += ["nn", "optim", "utils", "distributions", "Generator", "save", "load", "random",
            "testing", "default_generator"] + list(_nn_functions) + \
    list(_legacy_types)
