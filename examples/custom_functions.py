"""Custom autograd Functions: a linear layer with an optional bias, and a multiplication by
a plain Python number (a non-tensor argument, which gets no gradient)."""
import clgrad as cg


class LinearFunction(cg.autograd.Function):
    @staticmethod
    def forward(ctx, input, weight, bias=None):
        ctx.save_for_backward(input, weight, bias)
        output = input.mm(weight.t())
        if bias is not None:
            output = output + bias.unsqueeze(0).expand_as(output)
        return output

    @staticmethod
    def backward(ctx, grad_output):
        input, weight, bias = ctx.saved_tensors
        grad_input = grad_weight = grad_bias = None
        # compute only what is asked for: needs_input_grad has one flag per forward argument
        if ctx.needs_input_grad[0]:
            grad_input = grad_output.mm(weight)
        if ctx.needs_input_grad.weight:
            grad_weight = grad_output.t().mm(input)
        if bias is not None and ctx.needs_input_grad["bias"]:
            grad_bias = grad_output.sum(0)
        return grad_input, grad_weight, grad_bias


class MulConstant(cg.autograd.Function):
    @staticmethod
    def forward(ctx, tensor, constant):
        ctx.constant = constant          # a plain number: kept on ctx, not saved
        return tensor * constant

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output * ctx.constant, None


linear = LinearFunction.apply
mul_constant = MulConstant.apply


def main():
    cg.manual_seed(0)
    x = cg.randn(4, 3, requires_grad=True)
    w = cg.randn(2, 3, requires_grad=True)
    b = cg.randn(2, requires_grad=True)
    out = linear(x, w, b)
    print("linear:", out.grad_fn.name(), tuple(out.shape))
    out.sum().backward()
    print("x.grad =", x.grad)
    print("w.grad =", w.grad)
    print("b.grad =", b.grad)

    no_bias = linear(x.detach(), w)
    print("linear without bias:", no_bias.grad_fn.name(), tuple(no_bias.shape))

    x = cg.ones(2, 2, requires_grad=True)
    y = mul_constant(x, 2.0)
    y.sum().backward()
    print("mul_constant:", y.grad_fn.name())
    print("x.grad =", x.grad)


if __name__ == "__main__":
    main()
