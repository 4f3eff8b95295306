"""Learning-rate schedulers, as torch.optim.lr_scheduler's: each rewrites its optimizer's
param_groups' lr (host-side arithmetic; the optimizers read lr from a small buffer, so a
changing lr compiles nothing)."""
from .composite import ChainedScheduler, SequentialLR
from .cosine import CosineAnnealingLR, CosineAnnealingWarmRestarts
from .cyclic import CyclicLR, OneCycleLR
from .factor import (ConstantLR, ExponentialLR, LambdaLR, LinearLR, MultiplicativeLR,
                     MultiStepLR, PolynomialLR, StepLR)
from .plateau import ReduceLROnPlateau
from .scheduler import LRScheduler

__all__ = ["LambdaLR", "MultiplicativeLR", "StepLR", "MultiStepLR", "ConstantLR", "LinearLR",
           "ExponentialLR", "SequentialLR", "CosineAnnealingLR", "ChainedScheduler",
           "ReduceLROnPlateau", "CyclicLR", "CosineAnnealingWarmRestarts", "OneCycleLR",
           "PolynomialLR", "LRScheduler"]
