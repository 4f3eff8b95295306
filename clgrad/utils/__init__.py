"""cg.utils: data loading (cg.utils.data), as torch.utils."""
from . import data

__all__ = ["data"]
