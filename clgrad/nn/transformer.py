"""Transformer, TransformerEncoder/Decoder and their layers, as PyTorch's: the same submodules
under the same names (a PyTorch state_dict loads), the same residual and normalisation order
(norm_first or after), masks passed on to MultiheadAttention.

PyTorch's fast paths (nested tensors, a fused encoder layer at inference) compute the same
values, so they have no counterpart here; the causal-mask detection that picks them is left
out for the same reason: an is_causal hint of None is taken as False, and the mask is used."""
from __future__ import annotations

import copy
import math

from ..frontend import creation
from . import attention as A
from . import functional as F
from . import init
from .attention_layers import MultiheadAttention
from .containers import ModuleList
from .dropout_layers import Dropout
from .layers import Linear
from .module import Module
from .normalization_layers import LayerNorm

_ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu}


def _activation(activation):
    if not isinstance(activation, str):
        return activation
    if activation not in _ACTIVATIONS:
        raise RuntimeError(f"activation should be relu/gelu, not {activation}")
    return _ACTIVATIONS[activation]


def _clones(module: Module, n: int) -> ModuleList:
    return ModuleList([copy.deepcopy(module) for _ in range(n)])


def _float_masks(mask, key_padding_mask, like, mask_name: str, padding_name: str):
    """Both masks as additive float masks of like's dtype (bool ones: -inf where True)."""
    key_padding_mask = A.canonical_mask(key_padding_mask, padding_name,
                                        None if mask is None else mask.dtype, mask_name,
                                        like.dtype)
    return A.canonical_mask(mask, mask_name, None, "", like.dtype, False), key_padding_mask


class _FeedForwardLayer(Module):
    """What both layers share: self-attention, the two-linear feed-forward block, the norms
    and dropouts, registered in PyTorch's order (the decoder's attention to the memory
    after its self-attention, and one more norm and dropout)."""
    _cross_attention = False

    def __init__(self, d_model: int, nhead: int, dim_feedforward: int = 2048,
                 dropout: float = 0.1, activation=F.relu, layer_norm_eps: float = 1e-5,
                 batch_first: bool = False, norm_first: bool = False, bias: bool = True,
                 device=None, dtype=None):
        super().__init__()
        factory = dict(device=device, dtype=dtype)
        attention = dict(dropout=dropout, bias=bias, batch_first=batch_first, **factory)
        self.self_attn = MultiheadAttention(d_model, nhead, **attention)
        if self._cross_attention:
            self.multihead_attn = MultiheadAttention(d_model, nhead, **attention)
        self.linear1 = Linear(d_model, dim_feedforward, bias=bias, **factory)
        self.dropout = Dropout(dropout)
        self.linear2 = Linear(dim_feedforward, d_model, bias=bias, **factory)
        self.norm_first = norm_first
        blocks = range(1, 4 if self._cross_attention else 3)
        for k in blocks:
            setattr(self, f"norm{k}", LayerNorm(d_model, eps=layer_norm_eps, bias=bias, **factory))
        for k in blocks:
            setattr(self, f"dropout{k}", Dropout(dropout))
        self.activation = _activation(activation)

    def _sa_block(self, x, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.self_attn(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                           need_weights=False, is_causal=is_causal)[0]
        return self.dropout1(x)

    def _ff_block(self, x, dropout):
        return dropout(self.linear2(self.dropout(self.activation(self.linear1(x)))))

    def _residual(self, x, norm, block):
        """x plus block's output, normalised before the block (norm_first) or after the sum."""
        return x + block(norm(x)) if self.norm_first else norm(x + block(x))


class TransformerEncoderLayer(_FeedForwardLayer):
    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal: bool = False):
        src_mask, src_key_padding_mask = _float_masks(src_mask, src_key_padding_mask, src,
                                                      "src_mask", "src_key_padding_mask")
        x = self._residual(src, self.norm1, lambda y: self._sa_block(
            y, src_mask, src_key_padding_mask, is_causal))
        return self._residual(x, self.norm2, lambda y: self._ff_block(y, self.dropout2))


class TransformerDecoderLayer(_FeedForwardLayer):
    _cross_attention = True

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool = False,
                memory_is_causal: bool = False):
        x = self._residual(tgt, self.norm1, lambda y: self._sa_block(
            y, tgt_mask, tgt_key_padding_mask, tgt_is_causal))
        x = self._residual(x, self.norm2, lambda y: self._mha_block(
            y, memory, memory_mask, memory_key_padding_mask, memory_is_causal))
        return self._residual(x, self.norm3, lambda y: self._ff_block(y, self.dropout3))

    def _mha_block(self, x, memory, attn_mask, key_padding_mask, is_causal: bool = False):
        x = self.multihead_attn(x, memory, memory, attn_mask=attn_mask,
                                key_padding_mask=key_padding_mask, is_causal=is_causal,
                                need_weights=False)[0]
        return self.dropout2(x)


class TransformerEncoder(Module):
    def __init__(self, encoder_layer, num_layers: int, norm=None,
                 enable_nested_tensor: bool = True, mask_check: bool = True):
        super().__init__()
        self.layers = _clones(encoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm
        self.enable_nested_tensor, self.mask_check = enable_nested_tensor, mask_check

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal: bool | None = None):
        mask, src_key_padding_mask = _float_masks(mask, src_key_padding_mask, src, "mask",
                                                  "src_key_padding_mask")
        output = src
        for layer in self.layers:
            output = layer(output, src_mask=mask, is_causal=bool(is_causal),
                           src_key_padding_mask=src_key_padding_mask)
        return output if self.norm is None else self.norm(output)


class TransformerDecoder(Module):
    def __init__(self, decoder_layer, num_layers: int, norm=None):
        super().__init__()
        self.layers = _clones(decoder_layer, num_layers)
        self.num_layers, self.norm = num_layers, norm

    def forward(self, tgt, memory, tgt_mask=None, memory_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, tgt_is_causal: bool | None = None,
                memory_is_causal: bool = False):
        output = tgt
        for layer in self.layers:
            output = layer(output, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                           tgt_key_padding_mask=tgt_key_padding_mask,
                           memory_key_padding_mask=memory_key_padding_mask,
                           tgt_is_causal=bool(tgt_is_causal), memory_is_causal=memory_is_causal)
        return output if self.norm is None else self.norm(output)


class Transformer(Module):
    def __init__(self, d_model: int = 512, nhead: int = 8, num_encoder_layers: int = 6,
                 num_decoder_layers: int = 6, dim_feedforward: int = 2048, dropout: float = 0.1,
                 activation=F.relu, custom_encoder=None, custom_decoder=None,
                 layer_norm_eps: float = 1e-5, batch_first: bool = False,
                 norm_first: bool = False, bias: bool = True, device=None, dtype=None):
        super().__init__()
        layer = (d_model, nhead, dim_feedforward, dropout, activation, layer_norm_eps,
                 batch_first, norm_first, bias, device, dtype)
        norm = dict(eps=layer_norm_eps, bias=bias, device=device, dtype=dtype)
        self.encoder = custom_encoder if custom_encoder is not None else TransformerEncoder(
            TransformerEncoderLayer(*layer), num_encoder_layers, LayerNorm(d_model, **norm))
        self.decoder = custom_decoder if custom_decoder is not None else TransformerDecoder(
            TransformerDecoderLayer(*layer), num_decoder_layers, LayerNorm(d_model, **norm))
        self._reset_parameters()
        self.d_model, self.nhead, self.batch_first = d_model, nhead, batch_first

    def forward(self, src, tgt, src_mask=None, tgt_mask=None, memory_mask=None,
                src_key_padding_mask=None, tgt_key_padding_mask=None,
                memory_key_padding_mask=None, src_is_causal: bool | None = None,
                tgt_is_causal: bool | None = None, memory_is_causal: bool = False):
        batch_dim = 0 if self.batch_first else 1
        if src.ndim == 3 and src.shape[batch_dim] != tgt.shape[batch_dim]:
            raise RuntimeError(f"Transformer: the batch number of src and tgt must be equal, got "
                               f"src of shape {tuple(src.shape)} and tgt of shape "
                               f"{tuple(tgt.shape)} (batch_first={self.batch_first})")
        if src.shape[-1] != self.d_model or tgt.shape[-1] != self.d_model:
            raise RuntimeError(f"Transformer: the feature number of src and tgt must be equal to "
                               f"d_model ({self.d_model}), got src of shape {tuple(src.shape)} "
                               f"and tgt of shape {tuple(tgt.shape)}")
        memory = self.encoder(src, mask=src_mask, src_key_padding_mask=src_key_padding_mask,
                              is_causal=src_is_causal)
        return self.decoder(tgt, memory, tgt_mask=tgt_mask, memory_mask=memory_mask,
                            tgt_key_padding_mask=tgt_key_padding_mask,
                            memory_key_padding_mask=memory_key_padding_mask,
                            tgt_is_causal=tgt_is_causal, memory_is_causal=memory_is_causal)

    @staticmethod
    def generate_square_subsequent_mask(sz: int, device=None, dtype=None):
        """(sz, sz) of -inf above the diagonal and 0 elsewhere: position i sees 0..i."""
        return creation.full((sz, sz), -math.inf, dtype=dtype, device=device).triu(1)

    def _reset_parameters(self) -> None:
        for p in self.parameters():
            if p.ndim > 1:
                init.xavier_uniform_(p)


__all__ = ["Transformer", "TransformerEncoder", "TransformerDecoder", "TransformerEncoderLayer",
           "TransformerDecoderLayer"]
