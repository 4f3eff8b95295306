"""The nn.functional ops at top level (cg.conv2d, cg.dropout, ...) with torch.*'s signatures."""
import numpy as np
import pytest

from helpers import F, check, library

import clgrad as cg


def _lib(x):
    return library(x)


@pytest.mark.parametrize("name,args,shapes", [
    ("conv1d", (), ((2, 3, 7), (4, 3, 3))), ("conv2d", (None, 1, 1), ((1, 2, 5, 5), (3, 2, 3, 3))),
    ("conv_transpose1d", (), ((2, 3, 5), (3, 2, 3))),
    ("conv_transpose2d", (), ((1, 2, 4, 4), (2, 3, 2, 2))),
    ("pixel_shuffle", (2,), ((1, 8, 2, 3),)), ("pixel_unshuffle", (2,), ((1, 2, 4, 2),)),
    ("cosine_similarity", (1,), ((3, 4), (3, 4))), ("pairwise_distance", (), ((3, 4), (3, 4))),
    ("celu", (), ((3, 4),)), ("selu", (), ((3, 4),)), ("threshold", (0.5, -1.0), ((3, 4),)),
    ("prelu", (), ((2, 3, 4), (3,))), ("hardshrink", (0.5,), ((0, 4),)),
    ("max_pool1d", (2,), ((2, 3, 6),)), ("max_pool2d", (2,), ((1, 2, 4, 4),)),
    ("avg_pool1d", (3,), ((2, 3, 7),)), ("adaptive_avg_pool1d", (3,), ((2, 3, 7),)),
    ("adaptive_max_pool1d", (3,), ((2, 3, 7),)), ("channel_shuffle", (2,), ((1, 4, 2, 2),)),
    ("bilinear", (), ((3, 2), (3, 4), (5, 2, 4))),
])
def test_same_as_functional(name, args, shapes):
    check(lambda *ts: getattr(_lib(ts[0]), name)(*ts, *args), *shapes)


def test_in_place_activations():
    check(lambda x: getattr(_lib(x), "celu_")(x * 1), (3, 4))
    check(lambda x: getattr(_lib(x), "threshold_")(x * 1, 0.1, 2.0), (3, 4))


def test_dropout_train_is_positional():
    check(lambda x: _lib(x).dropout(x, 0.5, False), (3, 4))
    check(lambda x: _lib(x).alpha_dropout(x, 0.3, False), (3, 4))
    check(lambda x: _lib(x).feature_alpha_dropout(x, 0.3, False), (2, 3, 4))
    kept = cg.dropout(cg.ones(1000), 0.5, True).numpy()
    assert set(np.unique(kept)) <= {0.0, 2.0} and 300 < (kept > 0).sum() < 700


def test_embedding_takes_weight_first():
    indices = np.array([[0, 2], [1, 1]])
    check(lambda w: _lib(w).embedding(w, _lib(w).tensor(indices)), (3, 4))
    check(lambda w: _lib(w).embedding(w, _lib(w).tensor(indices), 1), (3, 4))


def test_norms():
    check(lambda x, w, b: _lib(x).layer_norm(x, [4], w, b, 1e-5, False), (2, 3, 4), (4,), (4,))
    check(lambda x, w, b: _lib(x).group_norm(x, 2, w, b), (2, 4, 3), (4,), (4,))
    check(lambda x, w, b: _lib(x).batch_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
          (4, 3, 2), (3,), (3,))
    check(lambda x, w, b: _lib(x).instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False),
          (2, 3, 5), (3,), (3,))


def test_batch_norm_running_statistics():
    mean, var = np.zeros(3, np.float32), np.ones(3, np.float32)
    check(lambda x: _lib(x).batch_norm(x, None, None, _lib(x).tensor(mean),
                                       _lib(x).tensor(var), False, 0.1, 1e-5, False), (4, 3))


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_take_reduction_numbers(reduction):
    signs = np.array([1.0, -1.0, 1.0], np.float32)
    probs = np.array([[0.2, 0.7], [0.9, 0.1], [0.5, 0.5]], np.float32)
    check(lambda a, b: _lib(a).kl_div(a, b, reduction), (3, 2), probs)
    check(lambda a, b: _lib(a).kl_div(a, b, reduction, log_target=True), (3, 2), (3, 2))
    check(lambda a, b: _lib(a).binary_cross_entropy_with_logits(a, b, None, None, reduction),
          (3, 2), probs)
    check(lambda a, b, t: _lib(a).margin_ranking_loss(a, b, t, 0.2, reduction), (3,), (3,),
          signs)
    check(lambda a, t: _lib(a).hinge_embedding_loss(a, t, 0.5, reduction), (3,), signs)
    check(lambda a, b, t: _lib(a).cosine_embedding_loss(a, b, t, 0.1, reduction), (3, 4),
          (3, 4), signs)
    check(lambda a, t: _lib(a).poisson_nll_loss(a, t, True, False, 1e-8, reduction), (3, 2),
          probs)
    check(lambda a, p, n: _lib(a).triplet_margin_loss(a, p, n, 1.0, 2, 1e-6, False, reduction),
          (3, 4), (3, 4), (3, 4))


def test_loss_reduction_must_be_a_number():
    with pytest.raises(TypeError, match="reduction"):
        cg.kl_div(cg.zeros(2), cg.zeros(2), "sum")


@pytest.mark.parametrize("shapes", [((3, 4), (5, 4)), ((2, 3, 4), (2, 1, 4)), ((0, 2), (3, 2)),
                                    ((1, 1), (1, 1)), ((2, 3, 2), (1, 4, 2))])
@pytest.mark.parametrize("p", [2.0, 1.0, 3.0, float("inf")])
def test_cdist(shapes, p):
    check(lambda a, b: _lib(a).cdist(a, b, p), *shapes, atol=1e-4)


def test_cdist_at_zero_distance():
    same = np.array([[1.0, 2.0], [1.0, 2.0]], np.float32)
    check(lambda a, b: _lib(a).cdist(a, b), same, same)


@pytest.mark.parametrize("shape", [(4, 3), (1, 3), (2, 0), (5, 1)])
@pytest.mark.parametrize("p", [2.0, 1.0, 0.5])
def test_pdist(shape, p):
    check(lambda x: _lib(x).pdist(x, p), shape, atol=1e-4)
    check(lambda x: F(x).pdist(x, p=p), shape, atol=1e-4)


def test_distance_errors():
    with pytest.raises(RuntimeError, match="same number of columns"):
        cg.cdist(cg.zeros(2, 3), cg.zeros(2, 4))
    with pytest.raises(RuntimeError, match="2D"):
        cg.pdist(cg.zeros(3))
