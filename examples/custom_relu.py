"""A two-layer net with a custom ReLU Function, trained by hand-written SGD.

The ReLU's forward and backward are ordinary (lazy) clgrad code, so they fuse with the
matmuls and the loss around them; the weight updates run under cg.no_grad().
"""
import clgrad as cg


class MyReLU(cg.autograd.Function):
    @staticmethod
    def forward(ctx, input):
        ctx.save_for_backward(input)
        return input.clamp(min=0)

    @staticmethod
    def backward(ctx, grad_output):
        (input,) = ctx.saved_tensors
        grad_input = grad_output.clone()
        grad_input[input < 0] = 0
        return grad_input


def train_step(x, y, w1, w2, learning_rate=1e-6):
    """One step: forward through the custom ReLU, the squared-error loss, backward, then
    SGD by hand."""
    relu = MyReLU.apply
    y_pred = relu(x.mm(w1)).mm(w2)
    loss = (y_pred - y).pow(2).sum()
    loss.backward()
    with cg.no_grad():      # the update itself is not part of the graph
        w1 -= learning_rate * w1.grad
        w2 -= learning_rate * w2.grad
        w1.grad.zero_()
        w2.grad.zero_()
    return loss


def main(steps=500):
    cg.manual_seed(0)
    N, D_in, H, D_out = 64, 1000, 100, 10
    x = cg.randn(N, D_in)
    y = cg.randn(N, D_out)
    w1 = cg.randn(D_in, H, requires_grad=True)
    w2 = cg.randn(H, D_out, requires_grad=True)

    for t in range(steps):
        loss = train_step(x, y, w1, w2)
        if t == 0 or t % 100 == 99:
            print(t + 1, loss.item())
    return loss


if __name__ == "__main__":
    main()
