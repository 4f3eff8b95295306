"""clgrad.nn: Module, Parameter, layers, losses; clgrad.nn.functional, clgrad.nn.init and
clgrad.nn.utils."""
from . import functional, init, utils
from .containers import ModuleList, Sequential
from .dropout_layers import Dropout
from .conv_layers import Conv2d
from .layers import (GELU, BatchNorm1d, BatchNorm2d, Embedding, Flatten,
                     Identity, Linear, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh)
from .normalization_layers import LayerNorm
from .loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from .module import Module
from .parameter import Parameter

__all__ = ["functional", "init", "utils", "Module", "Parameter", "Sequential", "ModuleList",
           "Identity",
           "Linear", "Conv2d", "BatchNorm1d", "BatchNorm2d",
           "LayerNorm", "Dropout", "Embedding", "ReLU", "GELU", "Sigmoid", "Tanh", "Softmax",
           "LogSoftmax", "Flatten", "MSELoss", "CrossEntropyLoss", "NLLLoss",
           "BCEWithLogitsLoss"]

# ---- more of torch.nn, in modules of their own ----------------------------------------------
from . import (activation_layers as _activation_layers,  # noqa: E402
               attention_layers as _attention_layers, conv_layers as _conv_layers,
               loss as _loss,
               normalization_layers as _normalization_layers, pooling_layers as _pooling_layers,
               recurrent as _recurrent, transformer as _transformer)
from .activation_layers import *  # noqa: E402,F401,F403
from .attention_layers import *  # noqa: E402,F401,F403
from .conv_layers import *  # noqa: E402,F401,F403
from .containers import Container, ModuleDict, ParameterDict, ParameterList  # noqa: E402,F401
from .dropout_layers import (AlphaDropout, Dropout1d, Dropout2d,  # noqa: E402,F401
                             Dropout3d, FeatureAlphaDropout)
from .adaptive_softmax import AdaptiveLogSoftmaxWithLoss  # noqa: E402,F401
from .cross_map_lrn import CrossMapLRN2d  # noqa: E402,F401
from .layers import BatchNorm3d, EmbeddingBag, SyncBatchNorm  # noqa: E402,F401
from .parallel import DataParallel  # noqa: E402,F401
from . import parallel  # noqa: E402,F401
from .loss import (BCELoss, CTCLoss, CosineEmbeddingLoss, CosineSimilarity,  # noqa: E402,F401
                   GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss, KLDivLoss, L1Loss,
                   LinearCrossEntropyLoss,
                   MarginRankingLoss, MultiLabelMarginLoss, MultiLabelSoftMarginLoss,
                   MultiMarginLoss, NLLLoss2d, PairwiseDistance, PoissonNLLLoss, SmoothL1Loss,
                   SoftMarginLoss, TripletMarginLoss, TripletMarginWithDistanceLoss)
from .normalization_layers import *  # noqa: E402,F401,F403
from .pooling_layers import *  # noqa: E402,F401,F403
from .recurrent import *  # noqa: E402,F401,F403
from .transformer import *  # noqa: E402,F401,F403

__all__ += _activation_layers.__all__ + _attention_layers.__all__ + _conv_layers.__all__ + \
    _loss.LOSSES_MORE + _normalization_layers.__all__ + _pooling_layers.__all__ + \
    _recurrent.__all__ + _transformer.__all__ + [
        "AdaptiveLogSoftmaxWithLoss", "BatchNorm3d", "Container", "CrossMapLRN2d", "DataParallel", "EmbeddingBag",
        "SyncBatchNorm", "ModuleDict", "ParameterList", "ParameterDict",
        "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout"]
