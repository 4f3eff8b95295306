"""torch.linalg's vector norm (cg.linalg.vector_norm)."""
from .frontend.statistics import vector_norm

__all__ = ["vector_norm"]
