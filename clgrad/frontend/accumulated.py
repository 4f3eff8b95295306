"""Values added onto the rows of a tensor that an index names, as PyTorch's CPU kernels of
index_put_ and put_ with accumulate, and of index_add_ slice by slice, add them: onto the
tensor's own elements one value at a time, in index order. For a 16-bit float each sum is
rounded to the type, so the values' sum added once is not the same (1 + eps/2 + eps/2 is 1
there, and 1 + eps summed first: fuzz seed 99501580, 96 of 1,664 float16 elements an ulp
apart); other types add the values' sum, which a float32 test cannot tell from PyTorch's."""
from __future__ import annotations

from ..compiler import dtype as dt
from ..compiler import ir
from ..compiler.ir import Node


def accumulated(rows: Node, row: Node, values: Node) -> Node:
    """rows, of shape (n, r), with values (row's shape + (r,)) added onto row row[i]."""
    if rows.dtype.is_16_bit_float and rows.numel and row.numel:
        return _added_in_turn(rows, row, values)
    return rows + ir.scatter(row, values, rows.shape[0], "add_to")


def _added_in_turn(rows: Node, row: Node, values: Node) -> Node:
    """One ordered scatter in the type whose walk takes each row's own elements first, then
    the values in index order; from add_to's -0.0, which keeps any float as it is (a -0.0
    that nothing lands on stays -0.0, as PyTorch's)."""
    n, r = rows.shape
    index = row.reshape((row.numel,)).cast(dt.int64)
    k = index.shape[0]
    walk = ir.iota(n, dt.int64).pad(((0, k),)) + index.pad(((n, 0),))
    terms = (rows.pad(((0, k), (0, 0)), -0.0)
             + values.reshape((k, r)).pad(((n, 0), (0, 0)), -0.0))
    return ir.scatter(walk, terms, n, "add_to", partials_in_type=True)
