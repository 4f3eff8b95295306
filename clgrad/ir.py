"""cg.ir: the compiler's text IR for tensors. dump(t) prints it; parse(text) reads it back."""
from .frontend.inspect import dump, parse

__all__ = ["dump", "parse"]
