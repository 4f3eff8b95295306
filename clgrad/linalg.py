"""torch.linalg's vector norm and cross product (cg.linalg.vector_norm, cg.linalg.cross)."""
from .frontend.products import linalg_cross as cross
from .frontend.statistics import vector_norm

__all__ = ["vector_norm", "cross"]
