"""Elementwise kernels: one work-item per vector of `width` outputs (or per element)."""
from __future__ import annotations

import math

from . import symbolic as sym
from .addressing import Index
from .kernel import KernelSpec
from .kernel_writer import KernelWriter
from .target import Target


class ElementwiseWriter(KernelWriter):
    def __init__(self, spec: KernelSpec, target: Target, width: int,
                 lane_axis: int | None = None):
        super().__init__(spec, target, width)
        self.lane_axis = lane_axis      # lanes down this axis, not the last (see lower())

    def write(self) -> tuple[int, ...]:
        shape = self.spec.shape
        n = math.prod(shape)
        width = self.width
        self.emit(f"{self.index_type} gid = get_global_id(0);")
        if width == 1 or n < width:
            self._elementwise_body(sym.linearize(list(self.dim_vars("gid", shape)), shape))
            return (n,)
        n_vec, tail = divmod(n, width)
        if self.lane_axis is not None:  # lanes down another named axis, stored lane by lane
            axis = self.lane_axis
            grid = shape[:axis] + (shape[axis] // width,) + shape[axis + 1:]
            dims = list(self.dim_vars("gid", grid))
            with self.lanes_on() as lane:
                dims[axis] = dims[axis] * width + lane
                self._elementwise_body(sym.linearize(dims, shape), tuple(dims))
            return (n_vec,)
        if shape[-1] % width == 0:      # whole vectors per row: name every dimension
            *outer, last = self.dim_vars("gid", shape[:-1] + (shape[-1] // width,))
            with self.lanes_on() as lane:
                self._elementwise_body(sym.linearize(outer + [last * width + lane], shape))
            return (n_vec,)
        gid = sym.var("gid", 0, n_vec - 1)
        if tail:
            with self.block(f"if (gid < {n_vec})"):
                self._elementwise_vector(gid)
            with self.block(f"else for ({self.index_type} t = 0; t < {tail}; t++)"):
                self._elementwise_body(sym.num(n_vec * width) + sym.var("t", 0, tail - 1))
        else:
            self._elementwise_vector(gid)
        return (n_vec + (1 if tail else 0),)

    def _elementwise_vector(self, gid: sym.Lin) -> None:
        with self.lanes_on() as lane:
            self._elementwise_body(gid * self.width + lane)

    def _elementwise_body(self, flat: sym.Lin, dims: tuple[sym.Lin, ...] | None = None) -> None:
        for node, _ in self.spec.outputs:
            index = Index(node.shape, flat=flat) if dims is None else Index(node.shape, dims=dims)
            self.store(node, flat, self.value(node, index))
