"""A small regression net with biases, trained with plain autograd and hand-written SGD.

The target is linear: y = 0.2*x1 - 1.3*x2 - 0.5*x3 + noise; a 3 -> 32 -> 1 ReLU net fits it.
"""
import clgrad as cg


def main(steps=200, learning_rate=1e-4):
    cg.manual_seed(0)
    n, d_in, hidden, d_out = 100, 3, 32, 1
    x = cg.randn(n, d_in)
    true_w = cg.tensor([[0.2], [-1.3], [-0.5]])
    y = x.mm(true_w) + 0.1 * cg.randn(n, d_out)

    w1 = cg.randn(d_in, hidden, requires_grad=True)
    b1 = cg.zeros(hidden, requires_grad=True)
    w2 = cg.randn(hidden, d_out, requires_grad=True)
    b2 = cg.zeros(d_out, requires_grad=True)
    params = [w1, b1, w2, b2]

    losses = []
    for t in range(steps):
        y_pred = (x.mm(w1) + b1).relu().mm(w2) + b2
        loss = (y_pred - y).pow(2).sum()
        if t % 10 == 9:
            losses.append(loss.item())
            print(t + 1, losses[-1])
        loss.backward()
        with cg.no_grad():
            for p in params:
                p -= learning_rate * p.grad
                p.grad.zero_()
    return losses


if __name__ == "__main__":
    main()
