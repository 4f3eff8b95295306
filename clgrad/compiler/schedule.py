"""Decides kernel boundaries: which nodes get a buffer of their own, and which fuse.

Every requested output, reduction, matmul, scatter and `contiguous` starts as a kernel root;
all elementwise and movement nodes between roots are computed inside the root that reads them.
Then two rewrites remove roots:
- a reduction whose every use ends, through elementwise ops and its own broadcast, in one
  kernel iterating the same rows is computed inside that kernel (softmax: one kernel);
- a matmul whose only use is an elementwise epilogue of its shape is finished by that
  epilogue inside the matmul kernel (bias, relu).
A long matmul into few outputs, a long reduction into few rows, and a reduction over outer
axes and a contiguous inner run (BatchNorm's) run as two kernels: partial results over
slices, then their combination (splits.py).
"""
from __future__ import annotations

import math
from collections import defaultdict

from . import dtype as dtypes
from . import ir
from .ir import BufferRef, Node, base_of, toposort
from .kernel import KernelSpec
from .ops import ELEMENTWISE, FACTORIZATIONS, MOVEMENT, RECURRENCES, REDUCE, SOURCE, Op
from .splits import row_slices, split_k, split_rows

_MIN_ROWS = 16
_MAX_ROW_LENGTH = 8192
# A kernel computes at most this many ops one after another: the writer evaluates a kernel's
# graph recursively, and a loop that changes a tensor in place thousands of times without
# reading it builds a chain that deep. Longer chains are cut into kernels this deep.
_MAX_FUSED_DEPTH = 128
# An elementwise value with several uses is computed again by each use: cheap for a few ops,
# but when such values chain (an RNN's gradient carried back from step to step), every later
# kernel grows by the whole chain before it, O(T^2) in source and work. A value used more
# than once whose fused expression has this many ops gets a buffer of its own.
_MAX_SHARED_OPS = 64
# ops that always end a kernel: each has a kernel kind (or a copy) of its own
_ALWAYS_ROOTS = (Op.MATMUL, Op.CONTIGUOUS, Op.SCAN, Op.SCATTER)
# ops computed whole by a kernel of their own, which reads each operand element many times
_WHOLE = FACTORIZATIONS | RECURRENCES
_SORTS = (Op.SORT, Op.ARGSORT, Op.ARGTOPK)     # a kernel of rows, each a work-item's


def buffer_of(node: Node) -> BufferRef | None:
    """Where node's value is, if a buffer holds it: a buffer node's own, or the result of an
    earlier schedule (later graphs that still name the node load it)."""
    return node.buffer


def _widens_exactly(node: Node) -> bool:
    """Whether node casts a 16-bit float to float32, which kernels hold it in anyway."""
    return (node.op is Op.CAST and node.dtype == dtypes.float32
            and node.src[0].dtype.is_16_bit_float)


def _viewed(node: Node) -> Node:
    """What a gather of node's rows reads from a buffer: the node beneath a chain of views
    that only move elements (no padding, whose bounds a run-time row would cross)."""
    base = node
    while base.op in MOVEMENT and base.op is not Op.PAD and buffer_of(base) is None:
        base = base.src[0]
    return base


class Scheduler:
    def __init__(self, targets: list[Node], device):
        self.targets = list(dict.fromkeys(t for t in targets if buffer_of(t) is None))
        self.device = device
        self.order = toposort(self.targets, stop=lambda n: buffer_of(n) is not None)
        self.consumers: dict[Node, list[Node]] = defaultdict(list)
        for node in self.order:
            for s in node.src:
                self.consumers[s].append(node)
        self.roots = self._initial_roots()
        self.epilogue_roots: set[Node] = set()
        # root -> the split reduction its kernel finishes (splits.py)
        self.row_splits: dict[Node, Node] = {}
        self._fuse_matmul_epilogues()
        self._fuse_reductions()

    def _initial_roots(self) -> set[Node]:
        roots = set(self.targets)
        depth: dict[Node, int] = {}         # ops computed one after another in node's kernel
        ops: dict[Node, int] = {}           # arithmetic in node's fused expression, as a tree
        for node in self.order:
            if buffer_of(node) is not None:
                depth[node] = ops[node] = 0
                continue
            depth[node] = 1 + max((0 if s in roots else depth[s] for s in node.src), default=0)
            ops[node] = (node.op in ELEMENTWISE) + sum(0 if s in roots else ops[s]
                                                       for s in node.src)
            if depth[node] >= _MAX_FUSED_DEPTH:
                roots.add(node)
            if node.op in ELEMENTWISE and ops[node] >= _MAX_SHARED_OPS and self._uses(node) > 1:
                roots.add(node)
            if node.op in REDUCE or node.op in _ALWAYS_ROOTS:
                roots.add(node)
            if node.op in (Op.GATHER, *_SORTS):
                # rows are read at run-time offsets: they need a buffer, which a gather reads
                # through a view at run-time rows (no copy of a reshaped or permuted buffer)
                rows = _viewed(node.src[0]) if node.op is Op.GATHER else node.src[0]
                if buffer_of(rows) is None:
                    roots.add(rows)
            if node.op in _SORTS or node.op in _WHOLE:
                roots.add(node)
            if node.op is Op.MATMUL or node.op in _WHOLE:
                # these read each operand element many times: give computed operands a buffer
                for s in node.src:
                    base = base_of(s)
                    if _widens_exactly(base):
                        # a 16-bit float read as float32 (a product in float32, a bias added
                        # before one rounding) is loaded into a float register as it is:
                        # read from its own buffer, not copied into a float32 one
                        base = base_of(base.src[0])
                    if base.op not in SOURCE and buffer_of(base) is None:
                        roots.add(base)
        return roots

    def _uses(self, node: Node) -> int:
        """How many ops read node's value, seen through movement ops (views of it)."""
        return sum(self._uses(c) if c.op in MOVEMENT else 1 for c in self.consumers[node])

    def _fuse_matmul_epilogues(self) -> None:
        for mm in self.order:
            if mm.op is not Op.MATMUL or mm in self.targets:
                continue
            reached, frontier = set(), [mm]
            while frontier:
                node = frontier.pop()
                for c in self.consumers[node]:
                    if c.op not in ELEMENTWISE or c.shape != mm.shape:
                        reached.add(None)
                    elif c in self.roots:
                        reached.add(c)
                    else:
                        frontier.append(c)
            # one matmul per kernel: a root that already finishes another matmul (a sum of
            # two products, as gradients are) keeps this one as a buffer
            if len(reached) == 1 and None not in reached and not reached & self.epilogue_roots:
                self.roots.discard(mm)
                self.epilogue_roots |= reached

    def _fuse_reductions(self) -> None:
        # root -> the (shape, axes) rows it iterates, or the split reduction it finishes
        rows_of: dict[Node, tuple | Node] = {}
        for red in reversed(self.order):
            if red.op in REDUCE and red in self.roots and red not in self.targets:
                split = row_slices(red) is not None
                reached = self._row_kernel_reached(red, rows_only=split)
                if reached is None or len(reached) != 1 or reached & self.epilogue_roots:
                    continue
                (root,) = reached
                if split:
                    # its partials get a kernel of their own; root's finishes them, in their
                    # buffer (a row's value where its slice 0 was: the same width)
                    if root.dtype == red.dtype and rows_of.setdefault(root, red) is red:
                        self.row_splits[root] = red
                        self.roots.discard(red)
                    continue
                rows = (red.src[0].shape, red.arg)
                own = (root.src[0].shape, root.arg) if root.op in REDUCE else rows
                # a kernel iterates one set of rows: a root that already takes reductions over
                # other axes (softmax(dim=1) and log_softmax(dim=0) of one x) keeps this one apart
                if rows_of.setdefault(root, own) == rows:
                    self.roots.discard(red)

    def _row_kernel_reached(self, red: Node, rows_only: bool = False) -> set[Node] | None:
        """The roots that red's value flows into while staying in red's rows, or None when
        some use leaves them (a movement op, another iteration space; with rows_only, any
        use of red's rows element by element)."""
        shape, axes = red.src[0].shape, red.arg
        # one work-item per row: a few long rows written back element by element would idle cores
        wide_enough = red.numel >= _MIN_ROWS or red.src[0].numel // max(red.numel, 1) \
            <= _MAX_ROW_LENGTH     # (no rows at all: an empty batch's pooling)
        reached, seen = set(), set()
        frontier = [(red, "row")]
        while frontier:
            node, level = frontier.pop()
            for c in self.consumers[node]:
                if (c, level) in seen:
                    continue
                seen.add((c, level))
                if level == "row" and (c.op in ELEMENTWISE or c.op is Op.RESHAPE) \
                        and c.numel == red.numel:
                    nxt = "row"     # one value per row: a reshape keeps its flat index
                elif level == "elem" and c.op in ELEMENTWISE and c.shape == shape:
                    nxt = "elem"
                elif c.op is Op.EXPAND and level == "row" and c.shape == shape \
                        and node.shape == red.shape and wide_enough and not rows_only:
                    # back over red's own axes only: a reshape on the way may have moved the
                    # rows' values to other axes ((1,16,3) -> (16,1,3): fuzz seed 81033)
                    nxt = "elem"
                elif c.op in REDUCE and level == "elem" and c.src[0].shape == shape and c.arg == axes:
                    nxt = "row"
                else:
                    return None
                if c in self.roots:
                    reached.add(c)
                else:
                    frontier.append((c, nxt))
        return reached

    def kernels(self) -> tuple[list[KernelSpec], dict[Node, BufferRef]]:
        outputs: dict[Node, BufferRef] = {}
        specs = []
        for root in self.order:
            if root not in self.roots:
                continue
            split = split_k(root) if root.op is Op.MATMUL else self._rows_in_two(root)
            if split:
                # the partial results fill the result's own buffer, made big enough; each
                # work-item of the total reads its element's partials, then overwrites the first
                partial, total = split
                ref = BufferRef(self.device, partial.numel * partial.dtype.itemsize)
                specs.append(self._kernel(partial, ref, outputs))
                outputs[partial] = ref
                specs.append(self._kernel(total, ref, outputs))
                del outputs[partial]        # plans name outputs by graph node; partial is none
                outputs[root] = ref
                continue
            if self._detached_scatter(root):
                # the buffer is the scatter's, written in place: no copy (a gradient that
                # autograd detaches, an embedding's). Plans name it by this node only.
                outputs[root] = outputs.pop(root.src[0])
                continue
            ref = BufferRef(self.device, max(root.numel, 1) * root.dtype.itemsize)
            if root.numel and root.op is Op.SCATTER:
                specs += _scatter_kernels(root, ref, self._kernel(root, ref, outputs))
            elif root.numel:            # an empty tensor needs a buffer but no kernel
                specs.append(self._kernel(root, ref, outputs))
            outputs[root] = ref
        specs = _merge_elementwise(specs)
        self._drop_unread_products(specs, outputs)
        return specs, outputs

    def _rows_in_two(self, root: Node) -> tuple[Node, Node] | None:
        """(partial, total) for a root that is, or finishes, a reduction that splits
        (splits.row_slices): total is root with the reduction's value read from the partials."""
        red = self.row_splits.get(root, root if root.op in REDUCE else None)
        split = None if red is None else split_rows(red)
        if split is None or red is root:
            return split
        partial, total = split
        rebuilt: dict[Node, Node] = {red: total}

        def rebuild(node: Node) -> Node:
            """node with red read from the partials: the row ops between root and red are
            made again over total (red is computed in root's kernel alone)."""
            if node not in rebuilt:
                if node is not root and (node in self.roots or buffer_of(node) is not None):
                    return node
                src = tuple(rebuild(s) for s in node.src)
                rebuilt[node] = node if src == node.src else \
                    Node(node.op, node.dtype, node.shape, src, node.arg)
            return rebuilt[node]
        return partial, rebuild(root)

    def _drop_unread_products(self, specs: list[KernelSpec], outputs: dict) -> None:
        """A matmul kernel that took in the elementwise kernel reading its product through a
        reshape (a Linear's bias on (B, T, C)) stores the product only if another kernel or
        the caller reads it."""
        read = {ref.id for spec in specs for ref in spec.inputs.values()}
        targets = set(self.targets)
        for spec in specs:
            if spec.kind != "matmul" or len(spec.outputs) < 2:
                continue
            (mm,) = spec.reductions
            if mm not in targets and all(node is not mm or ref.id not in read
                                         for node, ref in spec.outputs):
                spec.outputs = [(node, ref) for node, ref in spec.outputs if node is not mm]
                outputs.pop(mm, None)

    def _detached_scatter(self, root: Node) -> bool:
        """Whether root detaches a scatter that nothing else reads."""
        if root.op is not Op.DETACH or root.src[0].op is not Op.SCATTER:
            return False
        scatter = root.src[0]
        return (buffer_of(scatter) is None and scatter not in self.targets
                and self.consumers[scatter] == [root])

    def _kernel(self, root: Node, ref: BufferRef, outputs: dict[Node, BufferRef]) -> KernelSpec:
        inputs, fused, seen = {}, [], set()
        stack = [(root, False)]
        while stack:
            node, done = stack.pop()
            if done:
                if node.op in REDUCE or node.op in (Op.MATMUL, Op.SCAN):
                    fused.append(node)
                continue
            if node in seen:
                continue
            seen.add(node)
            loaded = buffer_of(node) or (outputs.get(node) if node is not root else None)
            if loaded is not None:
                inputs[node] = loaded
                continue
            stack.append((node, True))
            stack.extend((s, False) for s in reversed(node.src) if s not in seen)
        if root.op is Op.SCAN:      # a root always: its source is computed in its loop
            return KernelSpec("scan", root.shape, (root.arg[0],), [(root, ref)], inputs, [root])
        if root.op in _SORTS:
            axes = (len(root.shape) - 1,)
            return KernelSpec("sort", root.shape, axes, [(root, ref)], inputs, [root])
        if root.op in FACTORIZATIONS:
            return KernelSpec("linalg", root.shape, (), [(root, ref)], inputs, [root])
        if root.op in RECURRENCES:
            return KernelSpec("recurrence", root.shape, (), [(root, ref)], inputs, [root])
        if root.op is Op.SCATTER:
            return KernelSpec("scatter", root.src[1].shape, (), [(root, ref)], inputs, fused)
        if any(n.op is Op.MATMUL for n in fused):
            return KernelSpec("matmul", root.shape, (), [(root, ref)], inputs, fused)
        if fused:
            return KernelSpec("reduce", fused[-1].src[0].shape, fused[-1].arg, [(root, ref)],
                              inputs, fused)
        return KernelSpec("elementwise", root.shape, (), [(root, ref)], inputs)


def _scatter_kernels(root: Node, ref: BufferRef, scatter: KernelSpec) -> list[KernelSpec]:
    """A scatter runs as two kernels on one buffer: the mode's identity fills it, then the
    source's values are combined into it (none when the source is empty)."""
    identity = ir.const(ir.scatter_identity(root.dtype, root.arg), root.dtype, root.shape)
    fill = KernelSpec("elementwise", root.shape, (), [(identity, ref)], {})
    return [fill, scatter] if root.src[1].numel else [fill]


def _merge_elementwise(specs: list[KernelSpec]) -> list[KernelSpec]:
    """An elementwise kernel that reads other elementwise kernels' results of its own shape at
    its own index (an optimizer's parameter reading its new state), or one matmul's, joins
    them: one kernel with several outputs, in which those results are computed, stored, and
    reused, not reloaded."""
    merged: list[KernelSpec] = []
    # buffer id -> index in merged of the kernel that writes it last. By buffer, not node: a
    # scatter of nothing is written by its fill kernel, whose output node is the fill value
    writer: dict[int, int] = {}
    for spec in specs:
        groups = _same_index_producers(spec, merged, writer)
        moving = [spec] + [merged[g] for g in groups]
        if groups and all(_movable(m, writer, min(groups), groups) for m in moving):
            first = min(groups)
            target = merged[first]
            for g in sorted(groups - {first}):
                _absorb(target, merged[g])
                merged[g] = None
            _absorb(target, spec)
            for _, ref in target.outputs:
                writer[ref.id] = first
            continue
        merged.append(spec)
        for _, ref in spec.outputs:
            writer[ref.id] = len(merged) - 1
    return [m for m in merged if m is not None]


def _same_index_producers(spec: KernelSpec, merged, writer) -> set[int]:
    """Elementwise or matmul kernels of spec's shape whose outputs spec reads only at its own
    index."""
    if spec.kind != "elementwise":
        return set()
    same, reshaped, elsewhere = set(), set(), set()
    for node, _ in spec.outputs:
        at_index, other = spec.input_reads(node, reshapes=True)
        same.update(at_index)
        reshaped.update(set(at_index) - set(spec.input_reads(node)[0]))
        elsewhere |= other
    groups, apart = set(), set()
    for n in same:
        g = writer.get(spec.inputs[n].id)
        if g is not None:
            # only a kernel that computes the very node read joins: a scatter's fill kernel
            # computes the fill value, and merged would read the buffer it writes; read
            # through a reshape, only a matmul's product (its epilogue stores by flat index)
            joins = any(n is o for o, _ in merged[g].outputs) and (
                n not in reshaped or merged[g].kind == "matmul")
            (groups if joins else apart).add(g)
    apart |= {writer.get(spec.inputs[n].id) for n in elsewhere}
    groups = {g for g in groups - apart
              if merged[g] is not None and _ends_at(merged[g], spec.shape)}
    # a matmul or reduction kernel takes one elementwise consumer's work alone (a ReLU whose
    # input is also saved for the backward; an update of the parameter whose gradient a sum
    # is): its results are in registers, and the other kernels are not its kind
    kernels_of_their_own = {g for g in groups if merged[g].kind != "elementwise"}
    return groups - kernels_of_their_own if kernels_of_their_own and len(groups) > 1 else groups


def _ends_at(producer: KernelSpec, shape: tuple[int, ...]) -> bool:
    """Whether producer's kernel can go on to compute elementwise results of shape, each at
    its own index: an elementwise kernel of that shape, a matmul's of as many elements (a
    Linear on (B, T, C) computes (B*T, C): its bias is added to a reshape of the product,
    read at the product's flat index), or a reduction's with one row per element (after
    its loops, a row's work-item computes the row's results)."""
    if producer.kind == "matmul":
        return math.prod(producer.shape) == math.prod(shape)
    if producer.kind == "elementwise":
        return producer.shape == shape
    if producer.kind != "reduce" or shape == producer.shape:
        return False
    rows = math.prod(n for i, n in enumerate(producer.shape) if i not in producer.axes)
    return math.prod(shape) == rows


def _movable(spec: KernelSpec, writer, first: int, merging: set[int]) -> bool:
    """Whether spec can run at position `first`: everything it reads is written before that,
    or by the kernels merging with it."""
    return all(writer.get(ref.id, -1) <= first or writer.get(ref.id) in merging
               for ref in spec.inputs.values())


def _absorb(target: KernelSpec, spec: KernelSpec) -> None:
    """Moves spec's outputs into target; what target now computes is no longer read."""
    target.outputs += spec.outputs
    target.inputs.update(spec.inputs)
    for node, _ in target.outputs:
        target.inputs.pop(node, None)


def schedule(targets: list[Node], device) -> tuple[list[KernelSpec], dict[Node, BufferRef]]:
    return Scheduler(targets, device).kernels()
