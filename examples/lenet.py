"""The LeNet walk-through of PyTorch's "Neural Networks" tutorial, in clgrad.

    python examples/lenet.py
"""
import clgrad as cg
import clgrad.nn.functional as F
from clgrad import nn, optim


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        # 1 input image channel, 6 output channels, 3x3 square convolution kernel
        self.conv1 = nn.Conv2d(1, 6, 3)
        self.conv2 = nn.Conv2d(6, 16, 3)
        # an affine operation: y = Wx + b; 6*6 from the image dimension
        self.fc1 = nn.Linear(16 * 6 * 6, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        # max pooling over a (2, 2) window
        x = F.max_pool2d(F.relu(self.conv1(x)), (2, 2))
        # if the size is a square you can only specify a single number
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)            # all dimensions except the batch dimension
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return self.fc3(x)


def grad_fn_chain(t, depth: int = 4) -> list[str]:
    names, fn = [], t.grad_fn
    for _ in range(depth):
        if fn is None:
            break
        names.append(fn.name())
        fn = fn.next_functions[0][0] if fn.next_functions else None
    return names


def main() -> None:
    cg.manual_seed(0)
    net = Net()
    print(net)

    params = list(net.parameters())
    print(len(params))
    print(params[0].size())     # conv1's .weight
    for name, p in net.named_parameters():
        print(f"  {name:12s} {tuple(p.shape)}")

    input = cg.randn(1, 1, 32, 32)
    out = net(input)
    print(out)

    net.zero_grad()
    out.backward(cg.randn(1, 10))

    output = net(input)
    target = cg.randn(10)           # a dummy target, for example
    target = target.view(1, -1)     # make it the same shape as output
    criterion = nn.MSELoss()
    loss = criterion(output, target)
    print(loss)
    print(" -> ".join(grad_fn_chain(loss)))
    print(loss.grad_fn)                                       # MSELoss
    print(loss.grad_fn.next_functions[0][0])                  # Linear
    print(loss.grad_fn.next_functions[0][0].next_functions[0][0])  # ReLU

    net.zero_grad()     # zeroes the gradient buffers of all parameters
    print("conv1.bias.grad before backward")
    print(net.conv1.bias.grad)
    loss.backward()
    print("conv1.bias.grad after backward")
    print(net.conv1.bias.grad)

    optimizer = optim.SGD(net.parameters(), lr=0.01)
    for step in range(5):
        optimizer.zero_grad()
        output = net(input)
        loss = criterion(output, target)
        loss.backward()
        optimizer.step()    # does the update
        print(f"SGD step {step + 1}: loss {loss.item():.4f}")


if __name__ == "__main__":
    main()
