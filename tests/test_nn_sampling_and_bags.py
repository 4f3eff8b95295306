"""grid_sample and affine_grid, embedding_bag, the multi-label and distance-function triplet
losses: values and gradients against PyTorch."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import F, check, library, make, nn, torch

# points inside the image, a little outside it and on its edges, so each padding mode matters
GRID_2D = np.concatenate([make((2, 3, 2, 2), low=-1.3, high=1.3).reshape(-1),
                          [1.0, -1.0, 1.7, -2.6]]).astype(np.float32).reshape(2, 7, 1, 2)


PADDINGS = [("zeros", False), ("zeros", True), ("border", True), ("reflection", False),
            ("reflection", True)]


@pytest.mark.parametrize("mode, paddings", [("bilinear", PADDINGS), ("nearest", PADDINGS),
                                            ("bicubic", [("zeros", False), ("reflection", True)])])
def test_grid_sample_2d_modes_and_paddings(mode, paddings):
    check(lambda x, grid: [F(x).grid_sample(x, grid, mode=mode, padding_mode=padding,
                                            align_corners=align) for padding, align in paddings],
          (2, 3, 5, 4), GRID_2D, atol=1e-5, grad_atol=1e-4)


def test_grid_sample_3d_and_affine_grid():
    grid = make((2, 2, 3, 2, 3), low=-1.2, high=1.2)
    check(lambda x, g: [F(x).grid_sample(x, g, mode=m, padding_mode=p, align_corners=False)
                        for m, p in (("bilinear", "zeros"), ("nearest", "reflection"))],
          (2, 2, 3, 4, 5), grid)
    check(lambda t: [F(t).affine_grid(t, (2, 3, 4, 5), align_corners=a) for a in (False, True)],
          (2, 2, 3))
    check(lambda t: F(t).affine_grid(t, (2, 1, 2, 3, 4), align_corners=False), (2, 3, 4))


def test_spatial_transformer_end_to_end():
    """affine_grid's grid fed to grid_sample: the gradient reaches theta through both."""
    check(lambda x, t: F(x).grid_sample(x, F(t).affine_grid(t, (2, 3, 4, 4), align_corners=False),
                                        align_corners=False), (2, 3, 5, 5),
          make((2, 2, 3), low=-0.8, high=0.8))


def test_grid_sample_errors():
    x, grid = cg.zeros(1, 1, 3, 3), cg.zeros(1, 2, 2, 2)
    with pytest.raises(ValueError, match="expected mode"):
        cnn.functional.grid_sample(x, grid, mode="area", align_corners=False)
    with pytest.raises(ValueError, match="padding_mode"):
        cnn.functional.grid_sample(x, grid, padding_mode="wrap", align_corners=False)
    with pytest.raises(RuntimeError, match=r"grid_sampler\(\).*\[1, 2, 2, 3\]"):
        cnn.functional.grid_sample(x, cg.zeros(1, 2, 2, 3), align_corners=False)
    with pytest.raises(RuntimeError, match="bicubic interpolation only supports 4D"):
        cnn.functional.grid_sample(cg.zeros(1, 1, 2, 2, 2), cg.zeros(1, 1, 1, 1, 3),
                                   mode="bicubic", align_corners=False)
    with pytest.warns(UserWarning, match="align_corners=False since 1.3.0"):
        cnn.functional.grid_sample(x, grid)
    with pytest.raises(ValueError, match="Nx2x3"):
        cnn.functional.affine_grid(cg.zeros(1, 3, 3), (1, 1, 2, 2), align_corners=False)


INDICES = np.array([1, 2, 4, 5, 4, 3, 2, 9, 1, 1])


def _indices(x, array):
    return library(x).tensor(array)


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag_modes(mode):
    def bags(w):
        i = _indices(w, INDICES)
        return [F(w).embedding_bag(i, w, _indices(w, [0, 3, 3, 7]), mode=mode),  # an empty bag
                F(w).embedding_bag(i, w, _indices(w, [0, 3, 3, 7]), mode=mode, padding_idx=4),
                F(w).embedding_bag(i, w, _indices(w, [0, 2, 5, 10]), mode=mode,
                                   include_last_offset=True),
                F(w).embedding_bag(i.reshape(2, 5), w, mode=mode, padding_idx=1)]
    check(bags, (10, 4))


def test_embedding_bag_scale_grad_by_freq_divides_by_each_index_count():
    # PyTorch's documented meaning (embedding's): a row's gradient over how often the input
    # names it. (PyTorch 2.13's CPU embedding_bag divides row 2 below by index 0's count and
    # row 5 by index 2's: [1, 0, 1.5, 0, 0, 0.33] for ones; embedding gives [1, 0, 1, 0, 0, 1].)
    weight = cg.tensor(make((6, 3)), requires_grad=True)
    indices = cg.tensor([[0, 2, 2], [5, 2, 0]])
    for mode, scale in (("sum", 1.0), ("mean", 1 / 3)):
        weight.grad = None
        cnn.functional.embedding_bag(indices, weight, mode=mode,
                                     scale_grad_by_freq=True).sum().backward()
        np.testing.assert_allclose(weight.grad.numpy()[:, 0], np.array([1, 0, 1, 0, 0, 1]) * scale,
                                   rtol=1e-6)


def test_embedding_bag_per_sample_weights_and_module():
    check(lambda w, s: F(w).embedding_bag(_indices(w, INDICES), w, _indices(w, [0, 4, 6]),
                                          mode="sum", per_sample_weights=s), (10, 3), (10,))
    bag = cnn.EmbeddingBag(10, 3, mode="sum", padding_idx=2)
    assert repr(bag) == repr(nn(torch.zeros(1)).EmbeddingBag(10, 3, mode="sum", padding_idx=2))
    assert np.all(bag.weight.detach().numpy()[2] == 0)
    with pytest.raises(NotImplementedError, match="per_sample_weights is only supported for "
                                                  "mode='sum'"):
        cnn.functional.embedding_bag(cg.tensor([1, 2]), cg.zeros(3, 2), cg.tensor([0]),
                                     per_sample_weights=cg.ones(2))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        cnn.functional.embedding_bag(cg.tensor([[1, 2]]), cg.zeros(3, 2), cg.tensor([0]))


def test_multilabel_margin_loss():
    target = np.array([[3, 0, -1, 1, 2], [4, 4, 1, -1, -1], [0, 1, 2, 3, 4]])
    check(lambda x: [F(x).multilabel_margin_loss(x, _indices(x, target), reduction=r)
                     for r in ("none", "mean", "sum")] +
          [F(x).multilabel_margin_loss(x[0], _indices(x, target[0])),
           nn(x).MultiLabelMarginLoss()(x, _indices(x, target))], (3, 5))
    with pytest.raises(RuntimeError, match="inconsistent target size"):
        cnn.functional.multilabel_margin_loss(cg.zeros(3, 4), cg.zeros(3, 5, dtype=cg.int64))
    with pytest.raises(RuntimeError, match="out of range"):
        cnn.functional.multilabel_margin_loss(cg.zeros(2, 4), cg.full((2, 4), 7))


def test_triplet_margin_with_distance_loss():
    def cosine_distance(u, v):
        return 1 - F(u).cosine_similarity(u, v)
    check(lambda a, p, n: [
        F(a).triplet_margin_with_distance_loss(a, p, n),
        F(a).triplet_margin_with_distance_loss(a, p, n, swap=True, margin=0.5, reduction="none"),
        nn(a).TripletMarginWithDistanceLoss(distance_function=cosine_distance, margin=0.2)(a, p, n)
    ], (4, 3), (4, 3), (4, 3))
    with pytest.raises(ValueError, match="margin must be greater than 0"):
        cnn.functional.triplet_margin_with_distance_loss(cg.zeros(2), cg.zeros(2), cg.zeros(2),
                                                         margin=0)


def test_relu_inplace_and_channel_shuffle_alias():
    x = cg.tensor([-1.0, 2.0])
    assert cnn.functional.relu(x, inplace=True) is x and x.tolist() == [0.0, 2.0]
    y = cg.tensor([-3.0, 1.0])
    assert cnn.functional.relu_(y) is y and y.tolist() == [0.0, 1.0]
    check(lambda x: F(x).native_channel_shuffle(x, 2), (1, 4, 2), grad=False)


@pytest.mark.parametrize("norm_type", [2.0, 1.0])
def test_embedding_max_norm_renormalises_picked_rows_in_place(norm_type):
    table = make((6, 3), low=-3, high=3)
    indices = np.array([[0, 2], [2, 5]])
    results = []
    for lib in (cg, torch):
        weight = lib.tensor(table.copy(), requires_grad=True)
        out = library(weight).nn.functional.embedding(lib.tensor(indices), weight, max_norm=1.5,
                                                      norm_type=norm_type)
        (out * out).sum().backward()
        bag = library(weight).nn.functional.embedding_bag(lib.tensor(indices), lib.tensor(table),
                                                          max_norm=1.0, mode="sum")
        results.append([out.detach().numpy(), weight.detach().numpy(), weight.grad.numpy(),
                        bag.numpy()])
    for ours, ref in zip(*results):
        np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)
