"""AdaptiveLogSoftmaxWithLoss against PyTorch's with the same parameters: outputs, loss,
gradients of the input and of every parameter, log_prob, predict, and bad targets."""
import numpy as np
import pytest

import clgrad as cg
import clgrad.nn as cnn
from helpers import make

torch = pytest.importorskip("torch")


def _pair():
    theirs = torch.nn.AdaptiveLogSoftmaxWithLoss(16, 15, [4, 8], div_value=2.0, head_bias=True)
    ours = cnn.AdaptiveLogSoftmaxWithLoss(16, 15, [4, 8], div_value=2.0, head_bias=True)
    ours.load_state_dict({k: cg.tensor(v.detach().numpy())
                          for k, v in theirs.state_dict().items()})
    return ours, theirs


def test_adaptive_log_softmax_matches_pytorch():
    ours, theirs = _pair()
    x = make((6, 16))
    target = np.array([0, 3, 5, 9, 14, 2])      # the shortlist and both clusters
    ox, tx = cg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = ours(ox, cg.tensor(target)), theirs(tx, torch.tensor(target))
    np.testing.assert_allclose(got.output.detach().numpy(), want.output.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got.loss.item(), want.loss.item(), rtol=1e-5)
    got.loss.backward()
    want.loss.backward()
    np.testing.assert_allclose(ox.grad.numpy(), tx.grad.numpy(), atol=1e-6)
    for (name, p), q in zip(ours.named_parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), atol=1e-6, err_msg=name)
    with torch.no_grad(), cg.no_grad():
        np.testing.assert_allclose(ours.log_prob(cg.tensor(x)).numpy(),
                                   theirs.log_prob(torch.tensor(x)).numpy(), atol=1e-5)
        np.testing.assert_array_equal(ours.predict(cg.tensor(x)).numpy(),
                                      theirs.predict(torch.tensor(x)).numpy())
    single = ours(cg.tensor(x[1]), cg.tensor(target[1]))
    assert single.output.shape == () and np.isclose(single.output.item(), got.output[1].item())


@pytest.mark.parametrize("target, message", [([0, 15], "Target values should be in"),
                                             ([[0, 1]], "multi-target not supported")])
def test_adaptive_log_softmax_bad_targets(target, message):
    ours, _ = _pair()
    with pytest.raises(RuntimeError, match=message):
        ours(cg.tensor(make((2, 16))), cg.tensor(target))
    with pytest.raises(ValueError, match="cutoffs"):
        cnn.AdaptiveLogSoftmaxWithLoss(16, 15, [8, 4])
