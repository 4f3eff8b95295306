"""clgrad.nn.utils against torch.nn.utils: gradient clipping, parameters as a vector, packing."""
import math
import warnings

import numpy as np
import pytest

import clgrad as cg
from clgrad.nn.utils import clip_grad_norm_
from clgrad.nn.utils.rnn import PackedSequence, pack_sequence
from helpers import check, library, make, torch

needs_torch = pytest.mark.skipif(torch is None, reason="compares with torch.nn.utils directly")


def utils(t):
    return library(t).nn.utils


def clipped(clip):
    """fn for check: parameters holding the given gradients (and one without a gradient),
    clipped by clip(nn.utils, params); returns clip's result, when any, and the gradients."""
    def fn(*grads):
        lib = library(grads[0])
        params = [lib.zeros(*g.shape, requires_grad=True) for g in grads + (grads[0],)]
        for p, g in zip(params, grads):
            p.grad = g.detach().clone()
        out = clip(lib.nn.utils, params)
        return (*([] if out is None else [out]), *(p.grad for p in params[:len(grads)]))
    return fn


CLIPPING = [
    (lambda u, ps: u.clip_grad_norm_(ps, 1.0), ((3, 4), (5,))),
    (lambda u, ps: u.clip_grad_norm_(ps, 100.0), ((3, 4), (5,))),          # scale clamped to 1
    (lambda u, ps: u.clip_grad_norm_(ps, 0.5, norm_type="inf"), ((3, 4), (5,))),
    (lambda u, ps: u.clip_grad_norm_(ps, 2.0, norm_type=1), ((3, 4),)),
    (lambda u, ps: u.clip_grad_norm_(ps, 2.0, norm_type=3.0, foreach=False), ((6,), (2, 2))),
    (lambda u, ps: u.clip_grad_norm_(ps[0], 1.0), ((4,),)),                # one tensor
    (lambda u, ps: u.clip_grad_value_(ps, 0.5), ((3, 4), (5,))),
    (lambda u, ps: u.clip_grads_with_norm_(ps, 1.0, u.get_total_norm([p.grad for p in ps[:2]])),
     ((3, 4), (5,))),
    (lambda u, ps: u.get_total_norm([p.grad for p in ps[:2]], math.inf), ((3, 4), (5,))),
]


@pytest.mark.parametrize("clip,shapes", CLIPPING)
def test_clipping(clip, shapes):
    check(clipped(clip), *shapes, grad=False)


def test_clipping_nonfinite_and_empty():
    inf_grad = np.array([1.0, np.inf, 0.0], np.float32)
    check(clipped(lambda u, ps: u.clip_grad_norm_(ps, 1.0)), inf_grad, grad=False)  # nan, as torch
    check(lambda g: utils(g).clip_grad_norm_([], 1.0), (1,), grad=False)
    check(lambda g: utils(g).get_total_norm([]), (1,), grad=False)
    if torch is None:
        return
    for lib in (cg, torch):
        p = lib.zeros(3, requires_grad=True)
        p.grad = lib.tensor(inf_grad)
        with pytest.raises(RuntimeError, match="order 2.0 .* is non-finite"):
            lib.nn.utils.clip_grad_norm_([p], 1.0, error_if_nonfinite=True)
        with pytest.warns(UserWarning, match="empty generator"):
            lib.nn.utils.clip_grad_norm_((q for q in []), 1.0)
        with pytest.warns(FutureWarning, match="deprecated"):
            lib.nn.utils.clip_grad_norm([p], 1.0)


def test_clipping_launches_nothing():
    """The norm and the scale stay lazy: clipping fuses into whatever reads the gradients."""
    w = cg.tensor(make((4, 3)), requires_grad=True)
    (w * w).sum().backward()
    with cg.profile() as prof:
        total = clip_grad_norm_([w], 1.0)
    assert prof.rows == []
    np.testing.assert_allclose(total.item(), 2 * np.linalg.norm(make((4, 3))), rtol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(w.grad.numpy()), 1.0, rtol=1e-5)


def test_parameters_to_vector():
    check(lambda a, b: utils(a).parameters_to_vector([a, b]), (2, 3), (4,))


def test_vector_to_parameters():
    def fn(vec):
        lib = library(vec)
        params = [lib.zeros(2, 3, requires_grad=True), lib.zeros(4, requires_grad=True)]
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert lib.nn.utils.vector_to_parameters(vec, params) is None
        assert all(p.is_leaf and p.requires_grad and p.grad_fn is None for p in params)
        return [p.detach() for p in params]
    check(fn, (11,), grad=False)        # longer than needed: the rest is ignored, as in torch


@needs_torch
def test_vector_to_parameters_errors():
    for lib in (cg, torch):
        with pytest.raises(TypeError, match="expected torch.Tensor, but got: list"):
            lib.nn.utils.vector_to_parameters([1.0], [lib.zeros(1)])
        with pytest.raises(RuntimeError):
            lib.nn.utils.vector_to_parameters(lib.zeros(1), [lib.zeros(2)])


def rnn(t):
    return library(t).nn.utils.rnn


def packed(p):
    """A PackedSequence's tensors, for check (the indices when present)."""
    return tuple(t for t in p if t is not None)


PADDING = [
    dict(), dict(batch_first=True, padding_value=-1.5), dict(padding_side="left"),
]


@pytest.mark.parametrize("kwargs", PADDING, ids=str)
def test_pad_sequence(kwargs):
    check(lambda a, b, c: rnn(a).pad_sequence([a, b, c], **kwargs), (2, 3), (4, 3), (1, 3))


def test_pad_sequence_casts_to_the_first_dtype_and_takes_a_tensor():
    check(lambda a, b: rnn(a).pad_sequence([a, b.double()], padding_value=7), (2,), (3,))
    check(lambda a: rnn(a).pad_sequence(a, batch_first=True), (3, 2))


PACKING = [
    ([4, 3, 1], dict()),
    ([2, 4, 3], dict(enforce_sorted=False)),
    ([3, 3, 2], dict(batch_first=True, enforce_sorted=False)),
]


@pytest.mark.parametrize("lengths,kwargs", PACKING, ids=str)
def test_pack_padded_sequence(lengths, kwargs):
    shape = (3, 4, 2) if kwargs.get("batch_first") else (4, 3, 2)
    check(lambda x: packed(rnn(x).pack_padded_sequence(x, lengths, **kwargs)), shape)


@pytest.mark.parametrize("batch_first", [False, True])
def test_pad_packed_sequence(batch_first):
    def fn(x):
        p = rnn(x).pack_padded_sequence(x, library(x).tensor([2, 4, 3]), enforce_sorted=False)
        return rnn(x).pad_packed_sequence(p, batch_first, padding_value=-2.0, total_length=5)
    check(fn, (4, 3, 2))


def test_pack_and_unpack_sequences():
    check(lambda a, b, c: rnn(a).unpack_sequence(rnn(a).pack_sequence([a, b, c], False)),
          (2, 3), (4, 3), (1, 3))
    # x * 1: torch transposes a time-first input in place, which a leaf refuses
    check(lambda x: rnn(x).unpad_sequence(x * 1, library(x).tensor([3, 1, 2])), (3, 3, 2))
    check(lambda x: rnn(x).unpad_sequence(x, library(x).tensor([1, 2]), batch_first=True),
          (2, 2))


def test_packed_sequence_is_torchs_namedtuple():
    p = pack_sequence([cg.ones(2, 1), cg.ones(3, 1)], enforce_sorted=False)
    assert p._fields == ("data", "batch_sizes", "sorted_indices", "unsorted_indices")
    data, batch_sizes, sorted_indices, unsorted_indices = p
    assert batch_sizes.tolist() == [2, 2, 1] and batch_sizes.dtype == cg.int64
    assert sorted_indices.tolist() == [1, 0] and unsorted_indices.tolist() == [1, 0]
    assert p.double().data.dtype == cg.float64 and p.to(cg.float32) is p
    rebuilt = PackedSequence(data, batch_sizes, cg.tensor([2, 0, 1]))
    assert rebuilt.unsorted_indices.tolist() == [1, 2, 0]
    assert PackedSequence((data, batch_sizes)).sorted_indices is None


ERRORS = [
    (lambda r, lib: r.pack_padded_sequence(lib.zeros(4, 3), [4, 2, 3]), RuntimeError,
     "sorted in decreasing order"),
    (lambda r, lib: r.pack_padded_sequence(lib.zeros(4, 3), [4, 3, 0]), RuntimeError,
     "greater than 0"),
    (lambda r, lib: r.pack_padded_sequence(lib.zeros(4, 3), [4, 3]), RuntimeError,
     r"equal to batch_size, but got 2 \(batch_size=3\)"),
    (lambda r, lib: r.pack_padded_sequence(lib.zeros(3, 0), []), RuntimeError,
     "Cannot pack empty tensors"),
    (lambda r, lib: r.pack_padded_sequence(lib.zeros(3, 2), lib.tensor([[3, 2]])), RuntimeError,
     "should be a 1D CPU int64 tensor"),
    (lambda r, lib: r.pack_padded_sequence(lib.zeros(4), [4]), IndexError, None),
    (lambda r, lib: r.pad_packed_sequence(r.pack_sequence([lib.ones(3)]), total_length=2),
     ValueError, "total_length=2 and max sequence length being 3"),
    (lambda r, lib: r.pad_sequence([]), RuntimeError, "empty list of sequences"),
    (lambda r, lib: r.pad_sequence(3), RuntimeError, "Expected iterable"),
    (lambda r, lib: r.pad_sequence([lib.ones(2)], padding_side="middle"), RuntimeError,
     "one of left or right, but got middle"),
    (lambda r, lib: r.pad_sequence([lib.ones(2, 3), lib.ones(2, 2)]), RuntimeError, None),
    (lambda r, lib: r.unpad_sequence(lib.ones(3, 2), lib.tensor([3])), ValueError, None),
]


@needs_torch
@pytest.mark.parametrize("call,error,match", ERRORS)
def test_errors(call, error, match):
    for lib in (cg, torch):
        with pytest.raises(error, match=match):
            call(lib.nn.utils.rnn, lib)


def test_package_layout():
    import clgrad.nn
    from clgrad.nn.utils import rnn as rnn_module
    assert clgrad.nn.utils.rnn is rnn_module
    assert clgrad.nn.utils.parameters_to_vector is clgrad.nn.utils.convert_parameters.\
        parameters_to_vector


@needs_torch
def test_skip_init():
    layer = cg.nn.utils.skip_init(cg.nn.Linear, 3, 2, bias=False)
    assert isinstance(layer, cg.nn.Linear) and layer.weight.shape == (2, 3) and layer.bias is None
    for lib in (cg, torch):
        with pytest.raises(RuntimeError, match="Expected a Module"):
            lib.nn.utils.skip_init(int)
        with pytest.raises(RuntimeError, match="support a 'device' arg"):
            lib.nn.utils.skip_init(lib.nn.ReLU)
