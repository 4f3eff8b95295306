"""The dropout layers: PyTorch's constructors, defaults and reprs around nn.functional.dropout
and nn/normalization.py's variants."""
from __future__ import annotations

from . import functional as F
from . import normalization as N
from .functional_module import FunctionalModule


class _DropoutNd(FunctionalModule):
    """Dropout of any shape: its functional takes the training flag before inplace."""

    def __init__(self, p: float = 0.5, inplace: bool = False):
        if not 0 <= p <= 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        super().__init__(p=p, inplace=inplace)

    def forward(self, input):
        return self._fn(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"


def _layer(name: str, fn, doc: str) -> type:
    """PyTorch's dropout layer `name`: a _DropoutNd calling fn."""
    return type(name, (_DropoutNd,), {"__doc__": doc, "__module__": __name__,
                                       "__qualname__": name}, fn=fn)


# (the layers differ only in their functional: one table, not six class statements)
Dropout = _layer("Dropout", F.dropout, "Zeroes each element with probability p while "
                 "training, scaling the rest by 1/(1-p).")
Dropout1d = _layer("Dropout1d", N.dropout1d,
                   "Zeroes whole channels of (N, C, L) or (C, L) input.")
Dropout2d = _layer("Dropout2d", N.dropout2d,
                   "Zeroes whole channels of (N, C, H, W) or (C, H, W) input.")
Dropout3d = _layer("Dropout3d", N.dropout3d,
                   "Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) input.")
AlphaDropout = _layer("AlphaDropout", N.alpha_dropout,
                      "Dropout that keeps SELU's self-normalising mean and variance.")
FeatureAlphaDropout = _layer("FeatureAlphaDropout", N.feature_alpha_dropout,
                             "Alpha dropout of whole channels.")


__all__ = ["Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout",
           "FeatureAlphaDropout"]
