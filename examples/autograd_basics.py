"""The autograd walk-through: build a small graph, look at its grad_fn chain, backpropagate.

    x1 = ones(2, 2), x2 = 1.1, y = x1 * (x2 + 2), z = 3 * y^2, out = mean(z)
    d out / d z = 1/4, d out / d y = 6y/4 = 4.65, d out / d x1 = 4.65 * 3.1 = 14.415,
    d out / d x2 = sum(4.65 * x1) = 18.6
"""
import clgrad as cg


def print_chain(fn, depth=0):
    """Walks next_functions from fn down to the leaves' AccumulateGrad nodes."""
    print("  " * depth + fn.name())
    for nxt, _ in fn.next_functions:
        if nxt is not None:
            print_chain(nxt, depth + 1)


def main():
    cg.manual_seed(0)
    x1 = cg.ones(2, 2, requires_grad=True)
    x2 = cg.tensor(1.1, requires_grad=True)
    y = x1 * (x2 + 2)
    z = y.pow(2) * 3
    out = z.mean()
    y.retain_grad()
    z.retain_grad()
    print("y =", y)
    print("z =", z)
    print("out =", out)
    print("grad_fn chain of out:")
    print_chain(out.grad_fn)

    out.backward()
    print("z.grad =", z.grad)
    print("y.grad =", y.grad)
    print("x1.grad =", x1.grad)
    print("x2.grad =", x2.grad)


if __name__ == "__main__":
    main()
