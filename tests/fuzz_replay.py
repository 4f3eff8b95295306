"""Random training steps, replayed by cg.jit against the same steps run eagerly.

A fuzz program (tests/fuzzing.py) becomes a step: its forward, a backward of each float output
times a fixed cotangent, and an SGD update of every input that gets a gradient, in place under
no_grad, with the gradients then dropped. One copy of the inputs takes CALLS steps eagerly,
another copy the same steps through cg.jit, which replays from its fourth call. A replay runs
the kernels its capture recorded over that call's buffers (writing the inputs' new values over
their old ones where nothing else reads them), so every output and every input must come out
bit for bit as the eager step's, and every earlier output the caller still holds must keep its
value. The eager step runs as the jitted call runs the step's Python (inside
jit_protocol.running_step, where an index is not checked on the host, and from the second call
on as a capture records) and realizes what a capture realizes, in the same order, so that both
run the same kernels.
"""
from __future__ import annotations

import contextlib
import warnings

import numpy as np

from fuzz_harness import numpy_of, cotangent, make_inputs

CALLS = 6
FIRST_REPLAY = 3          # (the first call runs eagerly, the next two are captured)
LEARNING_RATE = 0.125     # a power of two: the update rounds the same everywhere


def _step(fw, program, leaves: list, cotangents: list) -> list:
    outputs = program(fw, *leaves)
    floats = (fw.float16, fw.bfloat16, fw.float32, fw.float64)
    differentiable = [k for k, o in enumerate(outputs) if o.requires_grad and o.dtype in floats]
    if differentiable:
        fw.autograd.backward([outputs[k] for k in differentiable],
                             [cotangents[k] for k in differentiable])
    with fw.no_grad():
        for x in leaves:
            if x.grad is not None:
                x.sub_(x.grad * LEARNING_RATE)
                x.grad = None
    return [o.detach() for o in outputs]


def check_replay(source: str) -> tuple[str, str]:
    """(status, detail) of one program as a jitted step: "ok"; "skipped" where cg.jit does
    not replay it (it says why) or the eager step raises; "wrong replay" where a call's
    outputs or inputs differ from the eager step's; "exception" where the jitted step raises
    and the eager one did not."""
    import clgrad as cg
    from clgrad.frontend import jit_protocol
    from clgrad.frontend.jit_protocol import running_step
    space: dict = {}
    exec(source, space)  # noqa: S102 (a program we generated)
    arrays = make_inputs(space["DATA_SEED"], space["INPUTS"], space["EDGES"])
    flags = [g for _, _, g in space["INPUTS"]]

    def inputs():
        return [cg.tensor(a, requires_grad=g) for a, g in zip(arrays, flags)]

    def eager(leaves, call):
        # as the jitted call runs the step's Python: every call inside running_step (indices
        # go unchecked), and the captured ones (all but the first) as a capture records,
        # which builds some graphs otherwise (a backward not templated, a hand-written
        # update not computed as its no_grad block ends)
        with running_step(), jit_protocol.recording(jit_protocol.holders()) if call else \
                contextlib.nullcontext():
            outputs = _step(cg, space["program"], leaves, cotangents)
        cg.realize(*outputs)            # as a capture does: its result, then what it changed
        cg.realize(*leaves)
        return outputs

    try:        # the cotangents, made outside the steps: a step that uploads is not replayed
        with cg.no_grad():
            cotangents = [cotangent(cg, o, k).realize()
                          for k, o in enumerate(space["program"](cg, *inputs()))]
    except Exception as error:  # noqa: BLE001 (the fuzz against torch judges those)
        return "skipped", f"the program raised {type(error).__name__}"
    eager_leaves, jit_leaves = inputs(), inputs()
    step = cg.jit(lambda *leaves: _step(cg, space["program"], list(leaves), cotangents))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        warnings.simplefilter("error", RuntimeWarning)      # jit(...) runs eagerly: ...
        results = []
        for call in range(CALLS):
            try:
                want = eager(eager_leaves, call)
            except Exception as error:  # noqa: BLE001 (shapes that follow the values changed)
                return "skipped", f"call {call}: the eager step raised {type(error).__name__}"
            try:
                got = step(*jit_leaves)
                cg.realize(*got)        # (the first call runs eagerly: as eager() does)
                cg.realize(*jit_leaves)
            except RuntimeWarning as warning:
                return "skipped", str(warning)
            except Exception as error:  # noqa: BLE001 (any exception of clgrad's is a finding)
                return "exception", f"call {call}: {type(error).__name__}: " \
                                    f"{str(error).splitlines()[0][:300]}"
            results.append((want, got))
            # every result so far: one the caller holds keeps its value (but a view of an
            # input, which eagerly follows the input's later changes; a jitted step's results
            # are values)
            difference = first_difference(call, [
                *((f"call {c}'s output {k}", w, g) for c, (ws, gs) in enumerate(results)
                  for k, (w, g) in enumerate(zip(ws, gs))
                  if c == call or not _views(w, eager_leaves)),
                *((f"input {k}", w, g) for k, (w, g) in enumerate(zip(eager_leaves,
                                                                      jit_leaves)))])
            if difference:
                return "wrong replay", difference
    if not step.replaying:
        return "skipped", "not replayed"
    return "ok", ""


def _views(t, tensors: list) -> bool:
    """Whether t is a view of one of tensors, through views of views."""
    ids = {id(x) for x in tensors}
    while t is not None:
        if id(t) in ids:
            return True
        t = t._view and t._view.base
    return False


def first_difference(call: int, pairs) -> str | None:
    """The first of the (what, eager tensor, jitted tensor) pairs whose tensors differ in
    shape, dtype or any bit but a NaN's, named, after the given call; None where none do."""
    import clgrad as cg
    for what, want, got in pairs:
        a, b = (numpy_of(cg, t) for t in (want, got))     # (a bfloat16 one in float32, exactly)
        if a.shape != b.shape or want.dtype != got.dtype or not np.array_equal(
                a, b, equal_nan=a.dtype.kind in "fc"):
            role = "replay" if call >= FIRST_REPLAY else "capture" if call else "eager"
            return f"after call {call} ({role}): {what} differs"
    return None
