"""clgrad.nn.utils, as torch.nn.utils: gradient clipping, parameters as one vector, skip_init,
and variable-length sequences (clgrad.nn.utils.rnn)."""
from . import clip_grad, convert_parameters, init, rnn
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .init import skip_init

__all__ = ["clip_grad", "convert_parameters", "init", "rnn", "clip_grad_norm", "clip_grad_norm_",
           "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "skip_init"]
