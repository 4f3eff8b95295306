"""The *_copy forms of the view ops and the unsafe_ splits against PyTorch."""
import pytest

from helpers import check, library


def _lib(x):
    return library(x)


@pytest.mark.parametrize("name,args", [
    ("permute_copy", ((2, 0, 1),)), ("transpose_copy", (0, -1)), ("t_copy", ()),
    ("diagonal_copy", (0, 0, 1)), ("expand_copy", ((2, 2, 3, 4),)), ("narrow_copy", (1, 1, 2)),
    ("select_copy", (2, -1)), ("squeeze_copy", ()), ("unsqueeze_copy", (1,)),
    ("view_copy", ((6, 4),)), ("detach_copy", ()), ("alias_copy", ()),
    ("unfold_copy", (2, 2, 1)), ("split_copy", (2, 2)), ("unbind_copy", (1,)),
    ("split_with_sizes_copy", ([1, 2], 1)), ("unsafe_split", (1, 0)), ("unsafe_chunk", (2, 1)),
    ("unsafe_split_with_sizes", ([3, 1], -1)),
])
def test_copies(name, args):
    shape = (4, 3) if name == "t_copy" else (2, 3, 4)
    grad = name != "detach_copy"
    check(lambda x: getattr(_lib(x), name)(x, *args), shape, grad=grad)


def test_copies_are_not_views():
    import clgrad as cg
    x = cg.zeros(2, 3)
    y = cg.permute_copy(x, (1, 0))
    x.add_(1)
    assert y.numpy().sum() == 0


@pytest.mark.parametrize("name,args", [("unsafe_split", (2,)), ("unsafe_chunk", (3,)),
                                       ("unsafe_split_with_sizes", ([1, 3],)),
                                       ("narrow_copy", (0, 1, 2))])
def test_methods(name, args):
    check(lambda x: getattr(x, name)(*args), (4, 2))
