"""scaled_dot_product_attention and multi_head_attention_forward, as torch.nn.functional's.

Both are compositions of frontend ops (matmul, the masking where, a softmax, matmul), so the
scale and mask fuse into the score matmul's epilogue and the gradient comes from the
primitives' rules; no attention kernel of its own.
"""
from __future__ import annotations

import math
import warnings

from ..compiler import dtype as dt
from ..frontend import creation
from ..frontend.backward import record
from ..frontend.joining import cat
from ..frontend.operands import broadcast_shape, common_device
from . import functional as F

_SDPA = "scaled_dot_product_attention"
_MHA = "multi_head_attention_forward"


def _safe_softmax(scores):
    """softmax over the last dim, where a row whose every score is -inf (nothing may be
    attended) gives zeros and a zero gradient, as PyTorch's _safe_softmax, not NaN."""
    x = scores.node
    axis = len(x.shape) - 1
    if not x.numel:
        return scores
    row_max = x.max((axis,)).detach()
    row_max = row_max.eq(-math.inf).where(0, row_max)
    e = (x - row_max.expand(x.shape)).exp()
    total = e.sum((axis,))
    out = e * total.eq(0).where(1, total).recip().expand(x.shape)
    return record("_safe_softmax", out, scores.device, [scores])


def _check_sdpa(query, key, value, attn_mask, is_causal: bool, enable_gqa: bool) -> None:
    tensors = [query, key, value] + ([attn_mask] if attn_mask is not None else [])
    common_device(_SDPA, tensors)
    if min(query.ndim, key.ndim, value.ndim) < 2:
        raise RuntimeError(f"{_SDPA}: expected query, key and value to be at least 2-D, got "
                           f"shapes {tuple(query.shape)}, {tuple(key.shape)} and "
                           f"{tuple(value.shape)}")
    if not query.dtype == key.dtype == value.dtype:
        raise RuntimeError(f"{_SDPA}: expected query, key and value to have the same dtype, got "
                           f"{query.dtype.name}, {key.dtype.name} and {value.dtype.name}")
    if not query.dtype.is_float:
        raise RuntimeError(f"{_SDPA}: expected floating point query, key and value, got "
                           f"{query.dtype.name}")
    if query.shape[-1] != key.shape[-1] or key.shape[-2] != value.shape[-2]:
        raise RuntimeError(f"{_SDPA}: query {tuple(query.shape)}, key {tuple(key.shape)} and "
                           f"value {tuple(value.shape)} do not fit: expected query (..., L, E), "
                           "key (..., S, E) and value (..., S, Ev)")
    if enable_gqa:
        heads = query.shape[-3] if query.ndim >= 3 else 1
        for name, t in (("key", key), ("value", value)):
            if t.ndim < 3 or heads % t.shape[-3]:
                raise RuntimeError(f"{_SDPA}: with enable_gqa, the number of heads (dim -3) of "
                                   f"{name} {tuple(t.shape)} must divide query's "
                                   f"{tuple(query.shape)}")
    if attn_mask is not None:
        if is_causal:
            raise RuntimeError(f"{_SDPA}: Explicit attn_mask should not be set when "
                               "is_causal=True")
        if attn_mask.dtype not in (dt.bool_, dt.float32, query.dtype):
            raise RuntimeError(f"{_SDPA}: expected attn_mask of dtype bool, float32 or "
                               f"{query.dtype.name} (the query's), got {attn_mask.dtype.name}")


def _repeat_heads(t, heads: int):
    """t's heads (dim -3) each repeated to make `heads`, as repeat_interleave: a view."""
    repeats = heads // t.shape[-3]
    if repeats == 1:
        return t
    lead, (h, s, e) = t.shape[:-3], t.shape[-3:]
    return t.unsqueeze(-3).expand(*lead, h, repeats, s, e).reshape(*lead, h * repeats, s, e)


def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p: float = 0.0,
                                 is_causal: bool = False, scale: float | None = None,
                                 enable_gqa: bool = False):
    """softmax(query @ key^T * scale + mask) @ value. A bool attn_mask keeps where True, a
    float one is added; both broadcast over the batch and head dims. is_causal keeps the
    lower triangle (aligned to the top left when L != S). Dropout, when dropout_p > 0,
    always applies (as PyTorch's, which has no training flag)."""
    _check_sdpa(query, key, value, attn_mask, is_causal, enable_gqa)
    if enable_gqa:
        heads = query.shape[-3] if query.ndim >= 3 else 1
        key, value = _repeat_heads(key, heads), _repeat_heads(value, heads)
    lead = broadcast_shape(_SDPA, query.shape[:-2], key.shape[:-2], value.shape[:-2])
    L, S = query.shape[-2], key.shape[-2]
    scale = 1 / math.sqrt(query.shape[-1]) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    scores = scores.expand(*lead, L, S) if scores.shape[:-2] != lead else scores
    if is_causal:
        attn_mask = creation.ones(L, S, dtype=dt.bool_, device=query.device).tril()
    if attn_mask is not None:
        if broadcast_shape(_SDPA, scores.shape, attn_mask.shape) != scores.shape:
            raise RuntimeError(f"{_SDPA}: attn_mask of shape {tuple(attn_mask.shape)} does not "
                               f"broadcast to the attention weights' shape "
                               f"{tuple(scores.shape)}")
        scores = scores.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == dt.bool_ \
            else scores + attn_mask.to(scores.dtype)
    weights = _safe_softmax(scores)
    if dropout_p > 0:
        weights = F.dropout(weights, dropout_p)
    return weights @ value


# ---- multi-head attention ------------------------------------------------------------------

def canonical_mask(mask, mask_name: str, other_type, other_name: str, target_type,
                   check_other: bool = True):
    """A bool mask (True = masked) as an additive float mask of target_type (-inf where
    masked); a float mask as is. Warns, as PyTorch does, when two masks' dtypes differ."""
    if mask is None:
        return None
    if mask.dtype != dt.bool_ and not mask.dtype.is_float:
        raise AssertionError(f"only bool and floating types of {mask_name} are supported, got "
                             f"{mask.dtype.name}")
    if check_other and other_type is not None and mask.dtype != other_type:
        warnings.warn(f"Support for mismatched {mask_name} and {other_name} is deprecated. Use "
                      "same type for both instead.", stacklevel=3)
    if mask.dtype == dt.bool_:
        zeros = creation.zeros(*mask.shape, dtype=target_type, device=mask.device)
        return zeros.masked_fill(mask, -math.inf)
    return mask


def _check_mha_shapes(query, key, value, key_padding_mask, attn_mask, num_heads) -> bool:
    """Whether the inputs are batched (3-D); raises, as PyTorch, unless every one fits."""
    if query.ndim not in (2, 3):
        raise AssertionError(f"{_MHA}: query should be unbatched 2D or batched 3D tensor but "
                             f"received {query.ndim}-D query tensor")
    batched = query.ndim == 3
    kind = "batched (3-D)" if batched else "unbatched (2-D)"
    if key.ndim != query.ndim or value.ndim != query.ndim:
        raise AssertionError(f"{_MHA}: For {kind} `query`, expected `key` and `value` to be "
                             f"{query.ndim}-D but found {key.ndim}-D and {value.ndim}-D tensors "
                             "respectively")
    if key_padding_mask is not None and key_padding_mask.ndim != query.ndim - 1:
        raise AssertionError(f"{_MHA}: For {kind} `query`, expected `key_padding_mask` to be "
                             f"`None` or {query.ndim - 1}-D but found {key_padding_mask.ndim}-D "
                             "tensor instead")
    if attn_mask is not None:
        if attn_mask.ndim not in (2, 3):
            raise AssertionError(f"{_MHA}: For {kind} `query`, expected `attn_mask` to be "
                                 f"`None`, 2-D or 3-D but found {attn_mask.ndim}-D tensor instead")
        expected = (num_heads, query.shape[0], key.shape[0])
        if not batched and attn_mask.ndim == 3 and tuple(attn_mask.shape) != expected:
            raise AssertionError(f"{_MHA}: Expected `attn_mask` shape to be {expected} but got "
                                 f"{tuple(attn_mask.shape)}")
    return batched


def _in_projection_packed(q, k, v, w, b):
    """q, k and v through the thirds of the packed in-projection; self-attention (q is k is
    v) as one matmul, and key-value attention (k is v) as two."""
    E = q.shape[-1]
    if k is v:
        if q is k:
            return F.linear(q, w, b).unflatten(-1, (3, E)).unbind(-2)
        w_q, w_kv = w.split([E, 2 * E])
        b_q, b_kv = (None, None) if b is None else b.split([E, 2 * E])
        return (F.linear(q, w_q, b_q), *F.linear(k, w_kv, b_kv).unflatten(-1, (2, E)).unbind(-2))
    b_q, b_k, b_v = (None,) * 3 if b is None else b.chunk(3)
    return tuple(F.linear(x, w_x, b_x) for x, w_x, b_x in zip((q, k, v), w.chunk(3),
                                                            (b_q, b_k, b_v)))


def _in_projection(q, k, v, w_q, w_k, w_v, b):
    """q, k and v through their own projection weights (kdim or vdim differs from E)."""
    E = q.shape[-1]
    for name, w, x in (("query", w_q, q), ("key", w_k, k), ("value", w_v, v)):
        if tuple(w.shape) != (E, x.shape[-1]):
            raise AssertionError(f"{_MHA}: expecting {name} weights shape of "
                                 f"{(E, x.shape[-1])}, but got {tuple(w.shape)}")
    biases = (None,) * 3 if b is None else b.chunk(3)
    return tuple(F.linear(x, w, b_x) for x, w, b_x in zip((q, k, v), (w_q, w_k, w_v), biases))


def _check_attn_mask(attn_mask, tgt_len: int, src_len: int, heads: int):
    """attn_mask as (1 or bsz * heads, L, S); raises unless it has that shape (or (L, S))."""
    expected = (tgt_len, src_len) if attn_mask.ndim == 2 else (heads, tgt_len, src_len)
    if tuple(attn_mask.shape) != expected:
        raise RuntimeError(f"{_MHA}: The shape of the {attn_mask.ndim}D attn_mask is "
                           f"{tuple(attn_mask.shape)}, but should be {expected}.")
    return attn_mask.unsqueeze(0) if attn_mask.ndim == 2 else attn_mask


def _heads(x, static, bsz: int, num_heads: int, head_dim: int, name: str):
    """(S, bsz, E) as (bsz * heads, S, head_dim), or the given static one after checking it."""
    if static is None:
        return x.reshape(x.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
    if static.shape[0] != bsz * num_heads or static.shape[2] != head_dim:
        raise AssertionError(f"{_MHA}: expecting static_{name} of shape ({bsz * num_heads}, S, "
                             f"{head_dim}), but got {tuple(static.shape)}")
    return static


def _pad_key(mask):
    """A mask with one more key (a zero: attended) at the end."""
    return None if mask is None else F.pad(mask, (0, 1))


def multi_head_attention_forward(query, key, value, embed_dim_to_check: int, num_heads: int,
                                 in_proj_weight, in_proj_bias, bias_k, bias_v,
                                 add_zero_attn: bool, dropout_p: float, out_proj_weight,
                                 out_proj_bias, training: bool = True, key_padding_mask=None,
                                 need_weights: bool = True, attn_mask=None,
                                 use_separate_proj_weight: bool = False, q_proj_weight=None,
                                 k_proj_weight=None, v_proj_weight=None, static_k=None,
                                 static_v=None, average_attn_weights: bool = True,
                                 is_causal: bool = False):
    """Multi-head attention over (L, N, E) query and (S, N, E) key and value (or unbatched
    (L, E), (S, E)). Returns the output and, with need_weights, the attention weights
    (averaged over heads unless average_attn_weights is False), else None. Masks: True (or
    -inf) in key_padding_mask (N, S) or attn_mask (L, S) or (N * heads, L, S) hides a key."""
    batched = _check_mha_shapes(query, key, value, key_padding_mask, attn_mask, num_heads)
    if not batched:
        query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    tgt_len, bsz, embed_dim = query.shape
    key_padding_mask = canonical_mask(key_padding_mask, "key_padding_mask",
                                      None if attn_mask is None else attn_mask.dtype,
                                      "attn_mask", query.dtype)
    if is_causal and attn_mask is None:
        raise RuntimeError(f"{_MHA}: Need attn_mask if specifying the is_causal hint. You may "
                           "use the Transformer module method `generate_square_subsequent_mask` "
                           "to create this mask.")
    if is_causal and key_padding_mask is None and not need_weights:
        attn_mask = None        # the hint replaces the mask: scaled_dot_product_attention's
    else:
        attn_mask = canonical_mask(attn_mask, "attn_mask", None, "", query.dtype, False)
        is_causal = is_causal and key_padding_mask is None
    if embed_dim != embed_dim_to_check:
        raise AssertionError(f"{_MHA}: was expecting embedding dimension of "
                             f"{embed_dim_to_check}, but got {embed_dim}")
    head_dim = embed_dim // num_heads
    if head_dim * num_heads != embed_dim:
        raise AssertionError(f"{_MHA}: embed_dim {embed_dim} not divisible by num_heads "
                             f"{num_heads}")
    if use_separate_proj_weight:
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"{_MHA}: key's sequence and batch dims {tuple(key.shape[:2])} "
                                 f"do not match value's {tuple(value.shape[:2])}")
        q, k, v = _in_projection(query, key, value, q_proj_weight, k_proj_weight,
                                 v_proj_weight, in_proj_bias)
    else:
        if key.shape != value.shape:
            raise AssertionError(f"{_MHA}: key shape {tuple(key.shape)} does not match value "
                                 f"shape {tuple(value.shape)}")
        q, k, v = _in_projection_packed(query, key, value, in_proj_weight, in_proj_bias)
    if attn_mask is not None:
        attn_mask = _check_attn_mask(attn_mask, tgt_len, key.shape[0], bsz * num_heads)
    if (bias_k is None) != (bias_v is None):
        raise AssertionError(f"{_MHA}: bias_k and bias_v must be given together")
    if bias_k is not None:
        if static_k is not None or static_v is not None:
            raise AssertionError(f"{_MHA}: bias cannot be added to static key or value.")
        k = cat([k, bias_k.expand(1, bsz, embed_dim)])
        v = cat([v, bias_v.expand(1, bsz, embed_dim)])
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    q = q.reshape(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
    k = _heads(k, static_k, bsz, num_heads, head_dim, "k")
    v = _heads(v, static_v, bsz, num_heads, head_dim, "v")
    if add_zero_attn:
        zeros = creation.zeros(bsz * num_heads, 1, head_dim, dtype=k.dtype, device=k.device)
        k, v = cat([k, zeros], dim=1), cat([v, zeros], dim=1)
        attn_mask, key_padding_mask = _pad_key(attn_mask), _pad_key(key_padding_mask)
    src_len = k.shape[1]
    if key_padding_mask is not None:
        if tuple(key_padding_mask.shape) != (bsz, src_len):
            raise AssertionError(f"{_MHA}: Expected key_padding_mask of shape {(bsz, src_len)} "
                                 f"(batch, keys), but got {tuple(key_padding_mask.shape)}")
        padding = key_padding_mask.reshape(bsz, 1, 1, src_len).expand(
            bsz, num_heads, 1, src_len).reshape(bsz * num_heads, 1, src_len)
        attn_mask = padding if attn_mask is None else attn_mask + padding
    dropout_p = dropout_p if training else 0.0
    if need_weights:
        scores = (q * math.sqrt(1.0 / head_dim)) @ k.transpose(-2, -1)
        weights = (scores if attn_mask is None else scores + attn_mask).softmax(-1)
        if dropout_p > 0:
            weights = F.dropout(weights, dropout_p)
        out = weights @ v
        out = out.transpose(0, 1).reshape(tgt_len * bsz, embed_dim)
        weights = weights.reshape(bsz, num_heads, tgt_len, src_len)
        if average_attn_weights:
            weights = weights.mean(1)
    else:
        if attn_mask is not None:
            attn_mask = attn_mask.unsqueeze(0) if attn_mask.shape[0] == 1 else \
                attn_mask.reshape(bsz, num_heads, -1, src_len)
        out = scaled_dot_product_attention(
            q.reshape(bsz, num_heads, tgt_len, head_dim),
            k.reshape(bsz, num_heads, src_len, head_dim),
            v.reshape(bsz, num_heads, src_len, head_dim), attn_mask, dropout_p, is_causal)
        out = out.permute(2, 0, 1, 3).reshape(bsz * tgt_len, embed_dim)
        weights = None
    out = F.linear(out, out_proj_weight, out_proj_bias).reshape(tgt_len, bsz, embed_dim)
    if not batched:
        out = out.squeeze(1)
        weights = None if weights is None else weights.squeeze(0)
    return out, weights


__all__ = ["scaled_dot_product_attention", "multi_head_attention_forward"]
