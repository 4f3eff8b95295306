"""Index arithmetic (compiler/symbolic.py): each simplified division or remainder, rendered as
the C a kernel runs, gives Python's floor division and remainder at every value of its
variables."""
import numpy as np
import pytest

import clgrad as cg
from clgrad.compiler import symbolic as sym
from clgrad.runtime.program import get_program

KB, T, RC = sym.var("kb", 0, 31), sym.var("t", 0, 8), sym.var("rc", 0, 63)


def _c_values(expr: sym.Lin) -> np.ndarray:
    """expr's C rendering evaluated by the default device at every (kb, t, rc)."""
    source = f"""__kernel void symbolic_values(__global int* out) {{
        int kb = get_global_id(0), t = get_global_id(1), rc = get_global_id(2);
        out[(kb * 9 + t) * 64 + rc] = {expr.render()};
    }}"""
    device = cg.device()
    out = np.empty((32, 9, 64), np.int32)
    buffer = device.pool.alloc(out.nbytes)
    get_program(device, "symbolic_values", source, device.build_options)["symbolic_values"](
        out.shape, None, [buffer])
    return buffer.read(out)


@pytest.mark.parametrize("formula", [
    lambda kb, t, rc: (kb * 9 + t) // 3 % 3,            # a 3x3 kernel's row in an im2col k
    lambda kb, t, rc: (kb * 9 + t) % 3,                 # ... and its column
    lambda kb, t, rc: (kb * 9 + t - 1) // 3,            # a negative constant
    lambda kb, t, rc: (kb * 9 + t - 1) // 3 % 3,
    lambda kb, t, rc: (kb * 6 + t * 2 + 1) // 4,        # coefficients only partly divisible
    lambda kb, t, rc: (kb * 64 + rc) // 16 % 32,        # a row of 16 positions in an image
    lambda kb, t, rc: (rc * 3 + t) // 9 + (kb * 18 + rc) // 6,
])
def test_divisions_render_as_floor_division(formula):
    kb, t, rc = np.meshgrid(np.arange(32), np.arange(9), np.arange(64), indexing="ij")
    expected = formula(kb, t, rc)
    expr = formula(_Symbol(KB), _Symbol(T), _Symbol(RC)).lin
    np.testing.assert_array_equal(_c_values(expr), expected)


def test_multiples_of_the_divisor_leave_the_division():
    # (kb*9 + t)/3 is kb*3 + t/3: in a k block unrolled over t, t/3 is a constant
    assert sym.floordiv(sym.add(sym.mul(KB, 9), T), 3).render() == "(t/3) + kb*3"
    assert sym.mod(sym.floordiv(sym.add(sym.mul(KB, 9), T), 3), 3).render() == "(t/3)"


class _Symbol:
    """A Lin that Python's operators build, as the formulas above are written."""
    def __init__(self, lin):
        self.lin = lin

    def __add__(self, other):
        return _Symbol(sym.add(self.lin, _lin(other)))

    def __sub__(self, other):
        return _Symbol(sym.add(self.lin, sym.mul(_lin(other), -1)))

    def __mul__(self, k: int):
        return _Symbol(sym.mul(self.lin, k))

    def __floordiv__(self, c: int):
        return _Symbol(sym.floordiv(self.lin, c))

    def __mod__(self, c: int):
        return _Symbol(sym.mod(self.lin, c))


def _lin(x):
    return x.lin if isinstance(x, _Symbol) else sym.num(x)

