"""MultiheadAttention: PyTorch's parameters (names, shapes, initialisation), so a state_dict
saved by PyTorch loads, around nn/attention.py's multi_head_attention_forward."""
from __future__ import annotations

from ..frontend import creation
from . import attention as A
from . import init
from .layers import Linear
from .module import Module, place
from .parameter import Parameter


class NonDynamicallyQuantizableLinear(Linear):
    """A Linear under the name PyTorch gives MultiheadAttention's out_proj (which PyTorch's
    quantization tools leave alone); named so that the two modules print alike."""


class MultiheadAttention(Module):
    def __init__(self, embed_dim: int, num_heads: int, dropout: float = 0.0, bias: bool = True,
                 add_bias_kv: bool = False, add_zero_attn: bool = False, kdim=None, vdim=None,
                 batch_first: bool = False, device=None, dtype=None):
        if embed_dim <= 0 or num_heads <= 0:
            raise ValueError(f"embed_dim and num_heads must be greater than 0, got "
                             f"embed_dim={embed_dim} and num_heads={num_heads} instead")
        super().__init__()
        self.embed_dim, self.num_heads = embed_dim, num_heads
        self.kdim = kdim if kdim is not None else embed_dim
        self.vdim = vdim if vdim is not None else embed_dim
        self._qkv_same_embed_dim = self.kdim == embed_dim and self.vdim == embed_dim
        self.dropout, self.batch_first = dropout, batch_first
        self.head_dim = embed_dim // num_heads
        if self.head_dim * num_heads != embed_dim:
            raise AssertionError("embed_dim must be divisible by num_heads")
        separate = {"q_proj_weight": (embed_dim, embed_dim),
                    "k_proj_weight": (embed_dim, self.kdim),
                    "v_proj_weight": (embed_dim, self.vdim)}
        if self._qkv_same_embed_dim:
            self.in_proj_weight = Parameter(creation.empty(3 * embed_dim, embed_dim))
            for name in separate:
                self.register_parameter(name, None)
        else:
            for name, shape in separate.items():
                self.register_parameter(name, Parameter(creation.empty(*shape)))
            self.register_parameter("in_proj_weight", None)
        self.register_parameter("in_proj_bias",
                                Parameter(creation.empty(3 * embed_dim)) if bias else None)
        self.out_proj = NonDynamicallyQuantizableLinear(embed_dim, embed_dim, bias=bias)
        for name in ("bias_k", "bias_v"):
            self.register_parameter(
                name, Parameter(creation.empty(1, 1, embed_dim)) if add_bias_kv else None)
        self.add_zero_attn = add_zero_attn
        self._reset_parameters()
        place(self, device, dtype)

    def _reset_parameters(self) -> None:
        for name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight"):
            if getattr(self, name) is not None:
                init.xavier_uniform_(getattr(self, name))
        if self.in_proj_bias is not None:
            init.constant_(self.in_proj_bias, 0.0)
            init.constant_(self.out_proj.bias, 0.0)
        for name in ("bias_k", "bias_v"):
            if getattr(self, name) is not None:
                init.xavier_normal_(getattr(self, name))

    def forward(self, query, key, value, key_padding_mask=None, need_weights: bool = True,
                attn_mask=None, average_attn_weights: bool = True, is_causal: bool = False):
        """(output, weights): see multi_head_attention_forward. With batch_first, batched
        inputs are (N, L, E) and the output too."""
        key_padding_mask = A.canonical_mask(key_padding_mask, "key_padding_mask",
                                            None if attn_mask is None else attn_mask.dtype,
                                            "attn_mask", query.dtype)
        attn_mask = A.canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        batch_first = self.batch_first and query.ndim == 3
        if batch_first:
            # a tensor passed twice is transposed once: the packed projection then sees that
            # key is value (or query is key) and projects them in one matmul
            k_t = key.transpose(1, 0)
            q_t = k_t if query is key else query.transpose(1, 0)
            value = k_t if value is key else value.transpose(1, 0)
            query, key = q_t, k_t
        separate = {} if self._qkv_same_embed_dim else dict(
            use_separate_proj_weight=True, q_proj_weight=self.q_proj_weight,
            k_proj_weight=self.k_proj_weight, v_proj_weight=self.v_proj_weight)
        out, weights = A.multi_head_attention_forward(
            query, key, value, self.embed_dim, self.num_heads, self.in_proj_weight,
            self.in_proj_bias, self.bias_k, self.bias_v, self.add_zero_attn, self.dropout,
            self.out_proj.weight, self.out_proj.bias, training=self.training,
            key_padding_mask=key_padding_mask, need_weights=need_weights, attn_mask=attn_mask,
            average_attn_weights=average_attn_weights, is_causal=is_causal, **separate)
        return (out.transpose(1, 0) if batch_first else out), weights


__all__ = ["MultiheadAttention"]
