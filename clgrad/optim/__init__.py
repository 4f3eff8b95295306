"""clgrad.optim: PyTorch's optimizers (SGD, Adam, AdamW, Adamax, NAdam, RAdam, Adagrad,
Adadelta, RMSprop, Rprop, ASGD, LBFGS) and learning-rate schedulers (lr_scheduler)."""
from . import lr_scheduler
from .adadelta import Adadelta
from .adagrad import Adagrad
from .adam import Adam, AdamW
from .adamax import Adamax
from .asgd import ASGD
from .lbfgs import LBFGS
from .nadam import NAdam
from .optimizer import Optimizer
from .radam import RAdam
from .rmsprop import RMSprop
from .rprop import Rprop
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "Adamax", "NAdam", "RAdam", "Adagrad",
           "Adadelta", "RMSprop", "Rprop", "ASGD", "LBFGS", "lr_scheduler"]
