"""The primitive operations of the IR, grouped by kind, and what the elementwise ones mean in
NumPy (the interpreter computes with these; the kernels must agree)."""
import math
from enum import Enum, auto

import numpy as np


class Op(Enum):
    __hash__ = object.__hash__      # Enum hashes the name in Python; members are singletons
    # sources
    BUFFER = auto()      # a realized device buffer; arg = buffer id
    CONST = auto()       # a scalar broadcast to the node's shape; arg = value
    IOTA = auto()        # 0, 1, ..., n-1 along a 1-d shape
    # unary
    NEG = auto()
    RECIP = auto()
    SQRT = auto()
    EXP = auto()
    LOG = auto()
    SIN = auto()
    COS = auto()
    TANH = auto()
    ABS = auto()
    FLOOR = auto()
    CEIL = auto()
    ROUND = auto()
    ERF = auto()
    ERFC = auto()
    TAN = auto()
    ASIN = auto()
    ACOS = auto()
    ATAN = auto()
    SINH = auto()
    COSH = auto()
    ASINH = auto()
    ACOSH = auto()
    ATANH = auto()
    LGAMMA = auto()
    NOT = auto()
    CAST = auto()        # arg = None; the node's dtype is the target
    BITCAST = auto()     # the same bits read as the node's dtype, of the source's size
    DETACH = auto()      # the same value, opaque to autograd (detach(), no_grad results)
    SLOPED = auto()      # (x, slope): never computed; its derivative is g * slope (arg: g / slope)
    # binary
    ADD = auto()
    SUB = auto()
    MUL = auto()
    DIV = auto()
    POW = auto()
    MAX = auto()
    MIN = auto()
    MOD = auto()
    CMPLT = auto()
    CMPEQ = auto()
    AND = auto()
    OR = auto()
    XOR = auto()
    SHL = auto()         # integer shifts; the frontend keeps counts within the bit width
    SHR = auto()
    ATAN2 = auto()       # atan2(y, x): y is the first source
    HYPOT = auto()
    COPYSIGN = auto()
    NEXTAFTER = auto()
    # ternary
    WHERE = auto()
    # reductions keep reduced dims as size 1; arg = axes
    SUM = auto()
    RMAX = auto()
    PROD = auto()
    # movement: index arithmetic, no data moves
    RESHAPE = auto()     # arg = new shape
    PERMUTE = auto()     # arg = order
    EXPAND = auto()      # arg = new shape (size-1 dims grow)
    PAD = auto()         # arg = ((before, after), ...), fill value
    SHRINK = auto()      # arg = ((begin, end), ...)
    STRIDE = auto()      # arg = step per dim (negative flips)
    WINDOW = auto()      # arg = (axis, k, s, d): axis becomes (o, k), reading [o*s + k*d]
    # whole-kernel operations
    MATMUL = auto()      # (..., M, K) @ (..., K, N), batch dims already broadcast
    CONTIGUOUS = auto()  # forces its source into a buffer
    GATHER = auto()      # rows of a (N, R) source picked by an index: out[i..., r] = src[idx[i...], r]
    SCAN = auto()        # running combine along one axis (cumsum): arg = (axis, SCAN_COMBINES key)
    SORT = auto()        # each row (last axis) of a contiguous source sorted; arg = descending
    ARGSORT = auto()     # int64 positions in SORT's order, ties by position; arg = descending
    ARGTOPK = auto()     # ARGSORT's first k positions of each row; arg = (k, descending)
    SCATTER = auto()     # GATHER's inverse: out[idx[i...], r] combined with src[i..., r]; arg = mode
    # dense factorizations of the (..., n, n) matrices of a batch (compiler/factorizations.py)
    LU = auto()          # (..., n, n+2): packed L and U, then each row's pivot and permutation
    CHOLESKY = auto()    # the lower factor L of a symmetric positive-definite source's L L^T
    TRISOLVE = auto()    # X with op(A) X = B, A triangular; arg = (upper, unit, transposed)
    QR = auto()          # (..., m, m+n): Householder Q (m, m), then R (m, n)
    EIGH = auto()        # (..., n, 2n): eigenvectors V, then D = V^T A V (eigenvalues ascending)
    SVD = auto()         # (..., m+n, n+1) of an (m, n), m >= n: U over V, then S (descending)
    LDL = auto()         # (..., n, n+2): Bunch-Kaufman's compact LD, pivots, zero-column flags
    LDL_SOLVE = auto()   # X with A X = B from A's LDL factors (LD, int32 pivots, B)
    # a GRU's or an LSTM's loop over time, a work-item per batch row or two or four
    # (compiler/recurrences.py)
    GRU_STATES = auto()      # (L+1, N, 4H): each step's state and its projection; arg = reverse
    GRU_GRADIENTS = auto()   # (L+1, N, 4H): the loop's gradients, step by step; arg = reverse
    LSTM_STATES = auto()     # (L+1, N, 6H): each step's h, c and gates; arg = reverse
    LSTM_GRADIENTS = auto()  # (L+1, N, 4H): the gates' gradients, step by step; arg = reverse


UNARY = frozenset({Op.NEG, Op.RECIP, Op.SQRT, Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TANH, Op.ABS,
                   Op.FLOOR, Op.CEIL, Op.ROUND, Op.ERF, Op.NOT, Op.CAST, Op.BITCAST, Op.DETACH,
                   Op.ERFC, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.SINH, Op.COSH, Op.ASINH,
                   Op.ACOSH, Op.ATANH, Op.LGAMMA})
BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAX, Op.MIN, Op.MOD,
                    Op.CMPLT, Op.CMPEQ, Op.AND, Op.OR, Op.XOR, Op.SHL, Op.SHR, Op.ATAN2,
                    Op.HYPOT, Op.COPYSIGN, Op.NEXTAFTER})
COMPARISON = frozenset({Op.CMPLT, Op.CMPEQ})
ELEMENTWISE = UNARY | BINARY | {Op.WHERE}
REDUCE = frozenset({Op.SUM, Op.RMAX, Op.PROD})
MOVEMENT = frozenset({Op.RESHAPE, Op.PERMUTE, Op.EXPAND, Op.PAD, Op.SHRINK, Op.STRIDE,
                      Op.WINDOW})
SOURCE = frozenset({Op.BUFFER, Op.CONST, Op.IOTA})
FACTORIZATIONS = frozenset({Op.LU, Op.CHOLESKY, Op.TRISOLVE, Op.QR, Op.EIGH, Op.SVD, Op.LDL,
                            Op.LDL_SOLVE})
RECURRENCES = frozenset({Op.GRU_STATES, Op.GRU_GRADIENTS, Op.LSTM_STATES, Op.LSTM_GRADIENTS})

# How a SCATTER combines the values landing on one element, and what an element nothing lands
# on holds (the combine's identity; "replace" keeps one of the values written, as PyTorch's
# scatter and index_put do, and leaves 0 elsewhere).
SCATTER_MODES = ("add", "add_to", "replace", "amax", "amin", "prod")


def _lgamma(x: float) -> float:
    """log|Γ(x)|, inf at the poles (0 and the negative integers), where math.lgamma raises."""
    try:
        return math.lgamma(x)
    except ValueError:
        return math.inf


# What the math ops compute, in NumPy, for float and for integer operands. Integer division,
# remainder and the bitwise ops follow C, as the kernels do: compiler/interpret.py has those.
FLOAT_UNARY = {
    Op.NEG: np.negative, Op.RECIP: np.reciprocal, Op.SQRT: np.sqrt, Op.EXP: np.exp,
    Op.LOG: np.log, Op.SIN: np.sin, Op.COS: np.cos, Op.TANH: np.tanh, Op.ABS: np.abs,
    Op.FLOOR: np.floor, Op.CEIL: np.ceil, Op.ROUND: np.rint,
    Op.ERF: np.vectorize(math.erf, otypes=[np.float64]),
    Op.ERFC: np.vectorize(math.erfc, otypes=[np.float64]),
    Op.TAN: np.tan, Op.ASIN: np.arcsin, Op.ACOS: np.arccos, Op.ATAN: np.arctan,
    Op.SINH: np.sinh, Op.COSH: np.cosh, Op.ASINH: np.arcsinh, Op.ACOSH: np.arccosh,
    Op.ATANH: np.arctanh, Op.LGAMMA: np.vectorize(_lgamma, otypes=[np.float64]),
}
INT_UNARY = {Op.NEG: np.negative, Op.ABS: np.abs,
             Op.FLOOR: np.positive, Op.CEIL: np.positive, Op.ROUND: np.positive}
FLOAT_BINARY = {
    Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: np.divide,
    Op.POW: np.power, Op.MAX: np.maximum, Op.MIN: np.minimum, Op.MOD: np.fmod,
    Op.ATAN2: np.arctan2, Op.HYPOT: np.hypot, Op.COPYSIGN: np.copysign,
    Op.NEXTAFTER: np.nextafter,
}

# What a SCAN's combine computes, in NumPy: out[i] = combine(out[i - 1], x[i]) along its axis.
# maximum/minimum let a NaN win, as PyTorch's cummax; logaddexp of two -inf is -inf.
SCAN_COMBINES = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum,
                 "logaddexp": np.logaddexp}
