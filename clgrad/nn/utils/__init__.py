"""clgrad.nn.utils, as torch.nn.utils: gradient clipping, parameters as one vector, skip_init,
variable-length sequences (clgrad.nn.utils.rnn), parametrizations (parametrize,
parametrizations: weight_norm, spectral_norm) and their legacy hook-based forms, batch-norm
fusion and stateless calls."""
from . import (clip_grad, convert_parameters, fusion, init, parametrizations, parametrize, rnn,
               stateless)
from .clip_grad import (clip_grad_norm, clip_grad_norm_, clip_grad_value_, clip_grads_with_norm_,
                        get_total_norm)
from .convert_parameters import parameters_to_vector, vector_to_parameters
from .fusion import (fuse_conv_bn_eval, fuse_conv_bn_weights, fuse_linear_bn_eval,
                     fuse_linear_bn_weights)
from .init import skip_init
from .spectral_norm import remove_spectral_norm, spectral_norm
from .weight_norm import remove_weight_norm, weight_norm

__all__ = ["clip_grad", "convert_parameters", "fusion", "init", "parametrizations",
           "parametrize", "rnn", "stateless", "clip_grad_norm", "clip_grad_norm_",
           "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm", "parameters_to_vector",
           "vector_to_parameters", "skip_init", "fuse_conv_bn_eval", "fuse_conv_bn_weights",
           "fuse_linear_bn_eval", "fuse_linear_bn_weights", "spectral_norm",
           "remove_spectral_norm", "weight_norm", "remove_weight_norm"]
