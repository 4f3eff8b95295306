"""What the torch.distributions tests share: a distribution's quantity (or the exception it
raises) and its comparison with PyTorch's, shape, dtype and values."""
import numpy as np

# methods that take the value; the other quantities are properties, but these two
VALUE_METHODS = ("log_prob", "cdf", "icdf", "log_survival_function")
NO_ARGUMENT_METHODS = ("entropy", "perplexity")


def numpy_of(t):
    return t.detach().numpy()


def assert_close(ours, theirs, rtol=1e-4, atol=1e-5, what=""):
    assert tuple(ours.shape) == tuple(theirs.shape), (what, ours.shape, theirs.shape)
    assert ours.dtype.name == str(theirs.dtype).replace("torch.", ""), (what, ours.dtype)
    np.testing.assert_allclose(numpy_of(ours), numpy_of(theirs), rtol=rtol, atol=atol,
                               equal_nan=True, err_msg=what)


def call(dist, what, value):
    """dist's property or method what (value its argument where it takes one), or the class
    of the exception it raises."""
    try:
        attribute = getattr(dist, what)
        if what in VALUE_METHODS:
            return attribute(value)
        return attribute() if what in NO_ARGUMENT_METHODS else attribute
    except (NotImplementedError, ValueError, AttributeError) as error:
        return type(error)
