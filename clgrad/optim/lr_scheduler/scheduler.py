"""LRScheduler: the base of the schedules that rewrite each param group's lr, as PyTorch's.

A scheduler is host-side arithmetic on `param_groups[i]["lr"]`: the optimizers read lr through
their per-step scalars, so a changing lr compiles nothing. `step()` advances `last_epoch` and
writes `get_lr()` (the chainable form, from the current lrs) into the groups; `step(epoch)`
jumps there and uses the closed form where the schedule has one.
"""
from __future__ import annotations

import functools
import warnings
import weakref

from ..optimizer import Optimizer

EPOCH_DEPRECATION_WARNING = (
    "The epoch parameter in `scheduler.step()` was not necessary and is being "
    "deprecated where possible. Please use `scheduler.step()` to step the "
    "scheduler. During the deprecation, if epoch is different from None, the "
    "closed form is used instead of the new chainable form, where available. "
    "Please open an issue if you are unable to replicate your use case: "
    "https://github.com/pytorch/pytorch/issues/new/choose.")


class LRScheduler:
    """Subclasses implement get_lr() (and _get_closed_form_lr() where a closed form exists).
    state_dict() holds every attribute but the optimizer, under PyTorch's names."""
    _get_lr_called_within_step = False
    _is_initial = False         # True during the constructor's step: lrs stay as they are

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1):
        check_optimizer(optimizer)
        self.optimizer = optimizer
        for i, group in enumerate(optimizer.param_groups):
            if last_epoch == -1:
                group.setdefault("initial_lr", group["lr"])
            elif "initial_lr" not in group:
                raise KeyError(f"param 'initial_lr' is not specified in param_groups[{i}] when "
                               "resuming scheduler with last_epoch >= 0")
        self.base_lrs = group_values(optimizer, "initial_lr")
        self.last_epoch = last_epoch
        _record_optimizer_steps(optimizer)
        self._initial_step()

    def _initial_step(self) -> None:
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def get_lr(self) -> list[float]:
        raise NotImplementedError

    def get_last_lr(self) -> list[float]:
        """The lrs the last step() wrote."""
        return self._last_lr

    def step(self, epoch=None) -> None:
        if self._step_count == 1:
            _warn_if_optimizer_has_not_stepped(self.optimizer)
        self._step_count += 1
        if epoch is not None:
            warnings.warn(EPOCH_DEPRECATION_WARNING, UserWarning, stacklevel=2)
        self._update_lr(epoch)

    def _update_lr(self, epoch=None) -> None:
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", self.get_lr)
                values = closed_form()
        finally:
            self._get_lr_called_within_step = False
        self._write_lrs(values)

    def _write_lrs(self, values: list[float]) -> None:
        for group, lr in zip(self.optimizer.param_groups, values, strict=True):
            group["lr"] = lr
        self._last_lr = group_values(self.optimizer, "lr")

    def _warn_if_called_outside_step(self) -> None:
        """get_lr() computes the next lrs; a caller wanting the current ones wants
        get_last_lr() (PyTorch warns alike)."""
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, please use "
                          "`get_last_lr()`.", UserWarning, stacklevel=3)

    def _current_lrs(self) -> list[float]:
        return group_values(self.optimizer, "lr")

    def _scaled_lrs(self, factor: float) -> list[float]:
        return [group["lr"] * factor for group in self.optimizer.param_groups]

    def state_dict(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)


def check_optimizer(optimizer) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{type(optimizer).__name__} is not an Optimizer")


def group_values(optimizer: Optimizer, key: str) -> list:
    return [group[key] for group in optimizer.param_groups]


def per_group(name: str, optimizer: Optimizer, value) -> list:
    """One value per param group: a list or tuple as given (of the right length), a single
    value repeated."""
    groups = len(optimizer.param_groups)
    if not isinstance(value, (list, tuple)):
        return [value] * groups
    if len(value) != groups:
        raise ValueError(f"{name} must have the same length as optimizer.param_groups. "
                         f"{name} has {len(value)} values, param_groups has {groups}.")
    return list(value)


def _record_optimizer_steps(optimizer: Optimizer) -> None:
    """Wraps optimizer.step to note that it ran, for the warning of a scheduler stepped
    first. The wrapper holds the optimizer weakly: no cycle through its own attribute."""
    if hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        return
    owner = weakref.ref(optimizer)
    step = optimizer.step.__func__

    @functools.wraps(step)
    def wrapper(*args, **kwargs):
        opt = owner()
        opt._opt_called = True
        return step(opt, *args, **kwargs)

    wrapper._wrapped_by_lr_sched = True
    optimizer.step = wrapper


def _warn_if_optimizer_has_not_stepped(optimizer: Optimizer) -> None:
    if not hasattr(optimizer.step, "_wrapped_by_lr_sched"):
        warnings.warn("Seems like `optimizer.step()` has been overridden after learning rate "
                      "scheduler initialization. Please, make sure to call `optimizer.step()` "
                      "before `lr_scheduler.step()`.", UserWarning, stacklevel=3)
    elif not getattr(optimizer, "_opt_called", False):
        warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()`. "
                      "In PyTorch 1.1.0 and later, you should call them in the opposite order: "
                      "`optimizer.step()` before `lr_scheduler.step()`.  Failure to do this "
                      "will result in PyTorch skipping the first value of the learning rate "
                      "schedule.", UserWarning, stacklevel=3)
