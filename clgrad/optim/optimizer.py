"""Optimizer: parameter groups, per-parameter state, zero_grad, state_dict.

Subclasses implement `_update(group, params)`, which assigns the new values of the group's
parameters and state as lazy expressions on their IR nodes (`p.node - lr * g`): a step builds
a few hundred nodes, and the frontend's checks, promotion and autograd bookkeeping would cost
more than that. `step()` then realizes every parameter and state tensor in one schedule, so
the whole update compiles once and runs without syncing.
Values that change between steps (lr, bias corrections) reach the kernels through a small
buffer rewritten at each step, not as literals, so a schedule or step count change compiles
nothing, and a jitted step's replays compute them again. The other hyperparameters (momentum,
betas, weight decay) are read from buffers kept per value (_filled): changed by a scheduler or
by hand, they compile nothing either.
"""
from __future__ import annotations

from collections import defaultdict
from copy import deepcopy

import numpy as np

from ..compiler.ir import Node
from ..compiler.ops import Op
from ..frontend import creation
from ..frontend.jit_protocol import each_call, guard
from ..frontend.grad_mode import enable_grad
from ..frontend.inplace import assign
from ..frontend.scalar_inputs import number_node
from ..frontend.tensor import Tensor, realize


class _Required:
    def __repr__(self) -> str:
        return "<required parameter>"


required = _Required()


class Optimizer:
    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        self.state: dict = defaultdict(dict)
        self._loads = 0                 # load_state_dict calls: each brings new state tensors
        self._scalar_holders: dict = {}         # (_scalars)
        self._kept: dict = {}                   # (_keep)
        self._device = None                     # the device step() updates (_filled)
        self.param_groups: list[dict] = []
        if isinstance(params, Tensor):
            raise TypeError("params argument given to the optimizer should be an iterable of "
                            f"Tensors or dicts, but got {type(params).__name__}")
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, group in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            lines.extend(f"    {k}: {group[k]}" for k in sorted(group) if k != "params")
        return "\n".join(lines) + "\n)"

    def add_param_group(self, param_group: dict) -> None:
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, got {type(param_group).__name__}")
        params = param_group["params"]
        if isinstance(params, Tensor):
            params = [params]
        elif isinstance(params, set):
            raise TypeError("optimizer parameters need to be organized in ordered collections, "
                            "but the ordering of tensors in sets will change between runs. "
                            "Please use a list instead.")
        params = list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, but one of the params is "
                                f"{type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        group = dict(param_group, params=params)
        for name, default in self.defaults.items():
            if default is required and name not in group:
                raise ValueError(f"parameter group didn't specify a value of required "
                                 f"optimization parameter {name}")
            group.setdefault(name, default)
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if any(id(p) in seen for p in params) or len({id(p) for p in params}) != len(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                p.grad = None if set_to_none else creation.zeros_like(p.grad)

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        guard(self._built_from)         # a jitted step replays only while it stays the same
        touched: list[Tensor] = []
        for group in self.param_groups:
            on_devices: dict = {}
            for p in group["params"]:
                if p.grad is not None:
                    on_devices.setdefault(p.device, []).append(p)
            for device, params in on_devices.items():
                self._device = device
                touched += self._update(group, params)
                # the gradients too, while the kernels computing them run anyway: read later
                # (a norm logged, a jit capture's start), a lazy one would recompute its graph
                touched += [p.grad for p in params if p.grad.node.op is not Op.CONST]
        realize(*touched)
        return loss

    def _built_from(self) -> tuple:
        """What a jitted step's kernels and state tensors come from: the hyperparameters but
        lr (it reaches them through the scalars each step, replays included, writes anew),
        and the state's tensors (by the loads that replaced them)."""
        return self._loads, [sorted((k, v) for k, v in group.items() if k not in ("params", "lr"))
                             for group in self.param_groups]

    def _update(self, group: dict, params: list) -> list[Tensor]:
        """Assigns the new values of params and their state; returns every tensor written."""
        raise NotImplementedError

    # ---- helpers for subclasses ----
    def _scalars(self, like: Tensor, key, compute) -> list[Node]:
        """0-d values that compute() gives at each step, with the tensors it changes (step
        counts), read from a small buffer kept per key. The buffer is rewritten in place
        when they change: on the device's queue, after the kernels of earlier steps, which
        step() has all launched (it realizes what it assigns)."""
        holders = self._scalar_holders
        key = (key, like.dtype, like.device)

        def write() -> list[Tensor]:
            given, changed = compute()
            holder = holders.get(key)
            # the same Python numbers as at the last step (a constant lr): nothing to convert
            # or compare in NumPy
            plain = all(type(v) is float or type(v) is int for v in given)
            if holder is not None and plain and holder.given == tuple(given):
                return changed
            values = np.array(given, like.dtype.np)
            if holder is None:
                holder = holders[key] = _Scalars(
                    creation.tensor(values, dtype=like.dtype, device=like.device), values)
            elif not np.array_equal(holder.values, values):
                creation.overwrite(holder.tensor, values)
                holder.values = values
            holder.given = tuple(given) if plain else None
            return changed

        each_call(("scalars", id(self), key), write)
        return holders[key].nodes()

    def _spread(self, scalar: Node, p: Tensor) -> Node:
        """A 0-d value (one of _scalars') broadcast to p's shape."""
        shape = p.node.shape
        key = ("spread", scalar, shape)
        node = self._kept.get(key)
        if node is None:
            node = self._keep(key, scalar.reshape((1,) * len(shape)).expand(shape))
        return node

    def _filled(self, value, like: Node) -> Node:
        """A hyperparameter as a node of like's dtype and shape, read from a buffer on the
        device step() updates (scalar_inputs), as `like * value` would read it: a momentum or
        beta1 a scheduler cycles, or a weight decay a user changes, keeps the step's
        kernels. 0 and NaN are constants."""
        if type(value) not in (float, int) or not value or value != value:
            return like.const_like(value)   # (0.0 and -0.0 are equal keys; NaN finds none)
        key = ("filled", type(value), value, like.dtype, like.shape, self._device)
        node = self._kept.get(key)
        if node is None:
            node = self._keep(key, number_node(value, like.dtype, like.shape, self._device))
        return node

    def _keep(self, key, node: Node) -> Node:
        """Keeps node between steps: _spread's and _filled's nodes are the same nodes at every
        step (interned), and finding one again would cost about what making it does."""
        if len(self._kept) >= _MAX_KEPT:
            self._kept.clear()
        self._kept[key] = node
        return node

    @staticmethod
    def _grad(p: Tensor, maximize: bool) -> Node:
        """p's gradient in p's dtype."""
        g, node = p.grad, p.node
        if g.node.shape != node.shape:      # (nodes' shapes: no Size made at every step)
            raise RuntimeError(f"optimizer: gradient of shape {g.shape} does not match its "
                               f"parameter of shape {p.shape}")
        g = g.node.cast(node.dtype)
        return -g if maximize else g

    def _step_sets(self, group: dict, params: list, numbers) -> list[tuple[list, list[Node]]]:
        """The group's params in sets at one step count, each with its step's scalars:
        numbers(t, states) gives them for step t (counted first, in place, as PyTorch's
        `state['step'] += 1`) and may advance other host scalars of the states (the names
        in _host_scalars). They run at every step, a jitted step's replays too, and reach
        the kernels through _scalars. Returns [(params, scalar nodes)]."""
        sets: dict[int, list] = {}
        for p in params:
            sets.setdefault(self._steps(self.state[p]), []).append(p)
        found = []
        for ps in sets.values():
            states = [self.state[p] for p in ps]

            def compute(states=states):
                changed = self._count(states)
                given = numbers(self._steps(states[0]), states)
                changed += [s[name] for s in states for name in self._host_scalars
                            if name in s]
                return given, changed

            found.append((ps, self._scalars(ps[0], (id(group), *map(id, ps)), compute)))
        return found

    def _state_of(self, p: Tensor, *zeros: str) -> dict:
        """p's state; a first step's starts with zeros like p under the names given."""
        state = self.state[p]
        if not state:
            for name in zeros:
                state[name] = creation.zeros_like(p).realize()
        return state

    # 0-d state tensors besides step that the host computes at each step (_step_sets)
    _host_scalars: tuple[str, ...] = ()

    @staticmethod
    def _host_value(state: dict, name: str) -> float:
        """A 0-d state tensor's value (state['step'], NAdam's mu_product), read without a
        sync where it is a constant the host wrote."""
        node = state[name].node
        return float(node.arg if node.op is Op.CONST else state[name].item())

    @staticmethod
    def _set_host_value(state: dict, name: str, value: float) -> float:
        """Writes value into the 0-d state tensor name (in place, as PyTorch's copy_), rounded
        to its dtype as PyTorch stores it (float32, or the parameter's after a load); returns
        the value stored."""
        t = state.get(name)
        dtype = creation.dt.float32 if t is None else t.dtype
        value = float(np.array(value, dtype.np))
        new = creation.full((), value, dtype=dtype)
        if t is None:
            state[name] = new
        else:
            assign(t, new)
        return value

    @classmethod
    def _steps(cls, state: dict) -> int:
        """The steps state has taken (state['step'], a 0-d float tensor as in PyTorch)."""
        return int(cls._host_value(state, "step")) if "step" in state else 0

    @classmethod
    def _count(cls, states: list[dict]) -> list[Tensor]:
        """Advances each state's step, in place as PyTorch does; returns the step tensors."""
        for state in states:
            cls._set_host_value(state, "step", cls._steps(state) + 1)
        return [state["step"] for state in states]

    # ---- state ----
    def state_dict(self) -> dict:
        index, groups, next_id = {}, [], 0
        for group in self.param_groups:
            ids = []
            for p in group["params"]:
                if id(p) not in index:
                    index[id(p)] = next_id
                    next_id += 1
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in group.items() if k != "params"}, "params": ids})
        state = {index[id(p)]: dict(s) for p, s in self.state.items() if id(p) in index}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups "
                             f"({len(groups)} vs {len(self.param_groups)})")
        for saved, own in zip(groups, self.param_groups):
            if len(saved["params"]) != len(own["params"]):
                raise ValueError("loaded state dict contains a parameter group that doesn't "
                                 f"match the size of optimizer's group ({len(saved['params'])} "
                                 f"vs {len(own['params'])} parameters)")
        by_id = {}
        for saved, own in zip(groups, self.param_groups):
            by_id.update(zip(saved["params"], own["params"]))
        self.state = defaultdict(dict)
        self._loads += 1
        for key, values in state_dict["state"].items():
            p = by_id.get(int(key))
            if p is None:
                continue
            self.state[p] = {name: _state_value(name, v, p) for name, v in values.items()}
        for saved, own in zip(groups, self.param_groups):
            for k, v in saved.items():
                if k != "params":
                    own[k] = deepcopy(v)


class _Scalars:
    """One key's scalars: the tensor holding them, the values written, the Python numbers
    they came from (None where not plain numbers), and the 0-d node reading each, which stay
    the same nodes while the tensor keeps its buffer (overwrite writes in place)."""
    __slots__ = ("tensor", "values", "given", "_read", "_nodes")

    def __init__(self, tensor: Tensor, values: np.ndarray):
        self.tensor, self.values, self.given = tensor, values, None
        self._read, self._nodes = None, []

    def nodes(self) -> list[Node]:
        packed = self.tensor.node
        if packed is not self._read:
            self._read = packed
            self._nodes = [packed.shrink(((i, i + 1),)).reshape(())
                           for i in range(packed.shape[0])]
        return self._nodes


# the nodes an optimizer keeps (_keep): a few per parameter shape and step group
_MAX_KEPT = 4096


def _state_value(name: str, value, p: Tensor):
    """A loaded state entry placed like its parameter: float tensors take its dtype and
    device (0-d ones too, as in PyTorch: ASGD's eta); step stays a float32 scalar. Tensors
    are copies (not views) of the saved ones, so this optimizer's steps change nothing in
    another's. A list's entries (LBFGS's history) are placed each, as PyTorch places them."""
    if isinstance(value, list):
        return [_state_value(name, v, p) for v in value]
    if name == "step":
        return _step_tensor(value.item() if isinstance(value, Tensor) else value)
    if isinstance(value, Tensor):
        return value.detach().to(p.device).to(p.dtype).clone().realize()
    if isinstance(value, np.ndarray):
        return creation.tensor(value, dtype=p.dtype, device=p.device)
    return value


def _step_tensor(steps) -> Tensor:
    """A step count as PyTorch keeps it: a 0-d float32 tensor."""
    return creation.full((), float(steps), dtype=creation.dt.float32)


def check_nonnegative(name: str, value: float) -> None:
    if value is not required and not 0.0 <= value:
        raise ValueError(f"Invalid {name}: {value}")


def check_betas(betas) -> None:
    for i, beta in enumerate(betas):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"Invalid beta parameter at index {i}: {beta}")
