"""Attention, transformer layers and RMSNorm against PyTorch: outputs, input and parameter
gradients, PyTorch's state_dicts loaded, errors. Shapes are small and shared between tests,
so that the kernels compiled for one are reused by the others."""
import math
import warnings

import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import F, check, library, make, torch

needs_torch = pytest.mark.skipif(torch is None, reason="copies PyTorch's parameters")


def check_module(kind, args, kwargs, *inputs, call=None, **tolerances):
    """Builds torch.nn.kind and cnn.kind (kwargs may be a function of the library), loads
    torch's state_dict into ours, runs both through check, then compares every parameter's
    gradient."""
    torch.manual_seed(0)
    options = kwargs if callable(kwargs) else (lambda lib: kwargs)
    ref = getattr(torch.nn, kind)(*args, **options(torch))
    ours = getattr(cnn, kind)(*args, **options(cg))
    assert repr(ours) == repr(ref)
    shapes = lambda m: [(k, tuple(v.shape)) for k, v in m.state_dict().items()]  # noqa: E731
    assert shapes(ours) == shapes(ref)
    ours.load_state_dict({k: cg.tensor(v.detach().numpy()) for k, v in ref.state_dict().items()})
    modules = {"clgrad": ours, "torch": ref}
    call = call or (lambda m, *xs: m(*xs))
    check(lambda *xs: call(modules[library(xs[0]).__name__], *xs), *inputs, **tolerances)
    for (name, p), (_, q) in zip(ours.named_parameters(), ref.named_parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-4, rtol=1e-3,
                                       err_msg=name)
    return ours, ref


def _causal(lib, n):
    return lib.nn.Transformer.generate_square_subsequent_mask(n)


# ---- scaled_dot_product_attention ---------------------------------------------------------

def test_sdpa_masks_scale_causal_and_gqa_match_torch():
    keep = make((3, 5), np.bool_)
    keep[1] = False                  # a row that may attend to nothing: zeros, as PyTorch's

    def attend(q, k, v, bias, k4, v4):
        sdpa = F(q).scaled_dot_product_attention
        return (sdpa(q, k, v, attn_mask=library(q).tensor(keep)),
                sdpa(q, k[:1], v, attn_mask=bias, scale=0.3),      # broadcast batch, mask
                sdpa(q, k, v, is_causal=True),
                sdpa(q, k4, v4, enable_gqa=True),
                sdpa(q[0, 0], k[0, 0], v[0, 0]))                    # 2-D: one head
    check(attend, (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), (2, 1, 3, 5), (2, 1, 5, 4),
          (2, 1, 5, 4))


def test_sdpa_edges_match_torch():
    minus_inf = np.full((3, 5), -np.inf, np.float32)
    minus_inf[0, 1] = 0.0            # a float mask hiding all but one key of row 0, all of 1
    check(lambda q, k, v, m: F(q).scaled_dot_product_attention(q, k, v, attn_mask=m),
          (2, 2, 3, 4), (2, 2, 5, 4), (2, 2, 5, 4), minus_inf)
    # a float32 mask added to float64 scores
    check(lambda q, m: F(q).scaled_dot_product_attention(q, q, q, attn_mask=m),
          make((2, 3, 4), np.float64), make((3, 3), np.float32))
    # no keys at all: zeros; dropout_p=1 drops every weight: zeros
    check(lambda q, k, v: (F(q).scaled_dot_product_attention(q, k, v),
                           F(q).scaled_dot_product_attention(q, q, q, dropout_p=1.0)),
          (2, 2, 3, 4), (2, 2, 0, 4), (2, 2, 0, 4))


def test_sdpa_errors():
    q, k = cg.zeros(2, 2, 3, 4), cg.zeros(2, 2, 5, 4)
    sdpa = cnn.functional.scaled_dot_product_attention
    cases = [
        (dict(attn_mask=cg.ones(3, 5, dtype=cg.bool), is_causal=True), "should not be set"),
        (dict(attn_mask=cg.zeros(3, 4)), r"shapes \(2, 2, 3, 5\) and \(3, 4\)"),
        (dict(attn_mask=cg.zeros(3, 5, dtype=cg.int64)), "attn_mask of dtype bool, float32"),
    ]
    for kwargs, message in cases:
        with pytest.raises(RuntimeError, match=f"scaled_dot_product_attention: .*{message}"):
            sdpa(q, k, k, **kwargs)
    with pytest.raises(RuntimeError, match="same dtype, got float32, float64 and float32"):
        sdpa(q, k.double(), k)
    with pytest.raises(RuntimeError, match=r"key \(2, 2, 5, 3\) .* do not fit"):
        sdpa(q, cg.zeros(2, 2, 5, 3), k)
    with pytest.raises(RuntimeError, match=r"heads .* of key \(2, 3, 5, 4\) must divide"):
        sdpa(q, cg.zeros(2, 3, 5, 4), cg.zeros(2, 3, 5, 4), enable_gqa=True)
    if torch is not None:       # the same error type
        tq = torch.zeros(2, 2, 3, 4)
        with pytest.raises(RuntimeError):
            torch.nn.functional.scaled_dot_product_attention(
                tq, tq, tq, attn_mask=torch.zeros(3, 3, dtype=torch.int64))


# ---- MultiheadAttention -------------------------------------------------------------------

PADDING = np.zeros((2, 5), bool)
PADDING[1, 3:] = True


@needs_torch
def test_multihead_attention_masks_and_weights_match_torch():
    hidden = make((3, 5), np.bool_)
    hidden[:, 0] = False
    check_module("MultiheadAttention", (4, 2), {}, (3, 2, 4), (5, 2, 4), (5, 2, 4), PADDING,
                 hidden, call=lambda m, q, k, v, p, a: m(q, k, v, key_padding_mask=p,
                                                         attn_mask=a))


@needs_torch
def test_multihead_attention_kdim_bias_kv_zero_attn_batch_first_match_torch():
    config = dict(kdim=3, vdim=5, add_bias_kv=True, add_zero_attn=True, batch_first=True)
    check_module("MultiheadAttention", (4, 2), config, (2, 3, 4), (2, 5, 3), (2, 5, 5), PADDING,
                 call=lambda m, q, k, v, p: m(q, k, v, key_padding_mask=p,
                                              need_weights=False)[0])


@needs_torch
def test_multihead_attention_unbatched_per_head_weights_and_causal_match_torch():
    per_head = make((2, 3, 3), np.float32)

    def attend(m, x):
        lib = library(x)
        return (*m(x, x, x, attn_mask=lib.tensor(per_head), average_attn_weights=False),
                m(x, x, x, attn_mask=_causal(lib, 3), is_causal=True, need_weights=False)[0])
    check_module("MultiheadAttention", (4, 2), dict(bias=False), (3, 4), call=attend)


@needs_torch
def test_multihead_attention_fully_masked_rows_as_torch():
    # all keys of sample 1 hidden: NaN with the weights (a softmax of -inf), zeros without
    hidden = np.zeros((2, 5), bool)
    hidden[1] = True
    check_module("MultiheadAttention", (4, 2), {}, (3, 2, 4), (5, 2, 4), hidden,
                 call=lambda m, q, k, p: (*m(q, k, k, key_padding_mask=p),
                                          m(q, k, k, key_padding_mask=p, need_weights=False)[0]),
                 grad=False)


def test_multihead_attention_parameters_and_initialisation():
    m = cnn.MultiheadAttention(8, 2)
    bound = math.sqrt(6 / (8 + 24))         # xavier_uniform_ of (24, 8)
    w = m.in_proj_weight.detach().numpy()
    assert w.shape == (24, 8) and np.abs(w).max() <= bound and w.std() > bound / 3
    assert not m.in_proj_bias.detach().numpy().any() and not m.out_proj.bias.detach().numpy().any()
    separate = cnn.MultiheadAttention(8, 2, kdim=3, vdim=5, add_bias_kv=True, dtype=cg.float64)
    assert separate.in_proj_weight is None and separate.q_proj_weight.dtype == cg.float64
    assert [n for n, _ in separate.named_parameters()] == [
        "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k", "bias_v",
        "out_proj.weight", "out_proj.bias"]


def test_multihead_attention_errors():
    with pytest.raises(AssertionError, match="embed_dim must be divisible by num_heads"):
        cnn.MultiheadAttention(5, 2)
    with pytest.raises(ValueError, match="embed_dim=0 and num_heads=2"):
        cnn.MultiheadAttention(0, 2)
    m = cnn.MultiheadAttention(4, 2)
    x = cg.zeros(3, 2, 4)
    with pytest.raises(AssertionError, match="expecting embedding dimension of 4, but got 5"):
        m(cg.zeros(3, 2, 5), cg.zeros(3, 2, 5), cg.zeros(3, 2, 5))
    with pytest.raises(RuntimeError, match=r"2D attn_mask is \(3, 4\), but should be \(3, 3\)"):
        m(x, x, x, attn_mask=cg.zeros(3, 4))
    with pytest.raises(RuntimeError, match=r"3D attn_mask is \(2, 3, 3\), but should be \(4, "):
        m(x, x, x, attn_mask=cg.zeros(2, 3, 3))
    with pytest.raises(AssertionError, match=r"key_padding_mask of shape \(2, 3\) .* got \(2, 4"):
        m(x, x, x, key_padding_mask=cg.zeros(2, 4, dtype=cg.bool))
    with pytest.raises(AssertionError, match="only bool and floating types of attn_mask"):
        m(x, x, x, attn_mask=cg.zeros(3, 3, dtype=cg.int64))
    with pytest.raises(RuntimeError, match="Need attn_mask if specifying the is_causal hint"):
        m(x, x, x, is_causal=True)
    with pytest.raises(AssertionError, match="expected `key` and `value` to be 3-D"):
        m(x, cg.zeros(3, 4), cg.zeros(3, 4))
    with pytest.warns(UserWarning, match="mismatched key_padding_mask and attn_mask"):
        cnn.functional.multi_head_attention_forward(
            x, x, x, 4, 2, m.in_proj_weight, m.in_proj_bias, None, None, False, 0.0,
            m.out_proj.weight, m.out_proj.bias, key_padding_mask=cg.zeros(2, 3),
            attn_mask=cg.zeros(3, 3, dtype=cg.bool))


# ---- transformer layers -------------------------------------------------------------------

@needs_torch
def test_transformer_encoder_layer_matches_torch():
    # a module as the activation is a submodule (printed, and in named_modules); a float
    # src_mask with a bool padding mask warns, as PyTorch's
    with pytest.warns(UserWarning, match="mismatched src_key_padding_mask and src_mask"):
        check_module("TransformerEncoderLayer", (4, 2, 8),
                     lambda lib: dict(dropout=0.0, activation=lib.nn.GELU()), (3, 2, 4),
                     PADDING[:, :3], call=lambda m, x, p: m(x, src_mask=_causal(library(x), 3),
                                                            src_key_padding_mask=p))


@needs_torch
def test_transformer_decoder_layer_norm_first_gelu_batch_first_matches_torch():
    config = dict(dropout=0.0, norm_first=True, activation="gelu", batch_first=True)
    check_module("TransformerDecoderLayer", (4, 2, 8), config, (2, 3, 4), (2, 5, 4), PADDING,
                 call=lambda m, x, memory, p: m(x, memory, tgt_mask=_causal(library(x), 3),
                                                tgt_is_causal=True, memory_key_padding_mask=p))


@needs_torch
def test_transformer_matches_torch_and_loads_its_state_dict():
    # a function as the activation: PyTorch's deep-copied decoder layers replace a module
    # activation with relu (TransformerDecoderLayer.__setstate__), which is not copied here
    with warnings.catch_warnings():     # PyTorch's: no nested-tensor fast path without batch_first
        warnings.simplefilter("ignore")
        check_module("Transformer", (4, 2, 2, 1, 8),
                     lambda lib: dict(dropout=0.0, activation=lib.nn.functional.silu),
                     (5, 2, 4), (3, 2, 4), PADDING,
                     call=lambda m, src, tgt, p: m(src, tgt, src_key_padding_mask=p,
                                                   memory_key_padding_mask=p,
                                                   tgt_mask=_causal(library(src), 3)))


def test_transformer_parts():
    mask = cnn.Transformer.generate_square_subsequent_mask(3, dtype=cg.float64)
    assert mask.dtype == cg.float64
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.full((3, 3), -np.inf), 1))
    layer = cnn.TransformerEncoderLayer(4, 2, 8)
    encoder = cnn.TransformerEncoder(layer, 2)
    first, second = encoder.layers
    assert first.linear1.weight is not layer.linear1.weight      # clones, equal at first
    np.testing.assert_array_equal(second.linear1.weight.detach().numpy(),
                                  layer.linear1.weight.detach().numpy())
    with pytest.raises(RuntimeError, match="activation should be relu/gelu, not tanh"):
        cnn.TransformerEncoderLayer(4, 2, activation="tanh")
    model = cnn.Transformer(4, 2, 1, 1, 8)
    with pytest.raises(RuntimeError, match="the batch number of src and tgt must be equal"):
        model(cg.zeros(3, 2, 4), cg.zeros(3, 1, 4))
    with pytest.raises(RuntimeError, match="must be equal to d_model"):
        model(cg.zeros(3, 2, 5), cg.zeros(3, 2, 5))


# ---- RMSNorm --------------------------------------------------------------------------------

@needs_torch
def test_rms_norm_module_matches_torch():
    check_module("RMSNorm", ((3, 4),), {}, (2, 3, 4))
    check_module("RMSNorm", (4,), dict(eps=1e-3, elementwise_affine=False), (2, 3, 4))


def test_rms_norm_function_matches_torch():
    check(lambda x, w: (F(x).rms_norm(x, [4], w), library(x).rms_norm(x, (3, 4), eps=0.5),
                        F(x).rms_norm(x[:0], (4,))),
          (2, 3, 4), (4,))
    check(lambda x: F(x).rms_norm(x, (2,)), np.zeros((3, 2), np.float32))   # all zeros
    # float16 is computed in float32, with float32's epsilon (float16's, 1e-3, would show)
    check(lambda x: F(x).rms_norm(x, (4,)), (2, 4), dtype=np.float16, low=1e-3, high=3e-3,
          atol=1e-2, rtol=1e-2)


def test_rms_norm_errors():
    x = cg.zeros(2, 3, 4)
    with pytest.raises(RuntimeError, match=r"rms_norm: Given normalized_shape=\[3\]"):
        cnn.functional.rms_norm(x, (3,))
    with pytest.raises(RuntimeError, match=r"weight of shape \[3\] and normalized_shape = \[4\]"):
        cnn.functional.rms_norm(x, (4,), cg.ones(3))
    with pytest.raises(TypeError, match="normalized_shape' must be a tuple of ints, not int"):
        cnn.functional.rms_norm(x, 4)
    with pytest.raises(NotImplementedError, match="rms_norm: not implemented for int64"):
        cnn.functional.rms_norm(x.long(), (4,))
    assert repr(cnn.RMSNorm(4)) == "RMSNorm((4,), eps=None, elementwise_affine=True)"
