"""The strong Wolfe line search LBFGS uses (minFunc's, as torch.optim.lbfgs has it).

It runs on the host: the numbers it compares are Python floats (losses) and NumPy scalars of
the gradient's dtype (directional derivatives, step sizes), which round as PyTorch's 0-d
tensors do. Gradients are carried along untouched, whatever the caller's evaluate gives.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np


class Trial(NamedTuple):
    """A point of the line: step size t, its loss f, gradient g and directional derivative."""
    t: Any
    f: float
    g: Any
    gtd: Any


def cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """Where the cubic through (x1, f1) and (x2, f2) with slopes g1 and g2 has its minimum,
    clamped to bounds (by default the interval between x1 and x2); the bounds' midpoint where
    the cubic has none."""
    low, high = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - _over(3 * (f1 - f2), x1 - x2)
    d2_square = d1 ** 2 - g1 * g2
    if not d2_square >= 0:      # (NaN too)
        return (low + high) / 2.0
    d2 = np.sqrt(d2_square)
    (left, g_left), (right, g_right) = ((x1, g1), (x2, g2)) if x1 <= x2 else ((x2, g2), (x1, g1))
    minimum = right - (right - left) * ((g_right + d2 - d1) / (g_right - g_left + 2 * d2))
    return min(max(minimum, low), high)


def _over(number: float, divisor):
    """number / divisor as PyTorch computes a Python number over a 0-d tensor (a NumPy
    scalar here): the divisor's reciprocal times the number, each rounded to its dtype."""
    return (1 / divisor) * number if isinstance(divisor, np.generic) else number / divisor


def strong_wolfe(evaluate: Callable[[Any], Trial], start: Trial, t, d_norm,
                 c1: float = 1e-4, c2: float = 0.9, tolerance_change: float = 1e-9,
                 max_ls: int = 25) -> tuple[Trial, int]:
    """A step size along a descent direction satisfying the strong Wolfe conditions
    (sufficient decrease by c1, curvature by c2), first tried at t. start is the point at
    step 0; evaluate(t) gives the trial at t; d_norm is the direction's largest magnitude.
    At most max_ls trials after the first. Returns the trial chosen and the number of
    evaluations."""
    search = _Search(evaluate, start, c1, c2)
    with np.errstate(all="ignore"):     # as PyTorch's 0-d tensors: inf and NaN quietly
        bracket = search.bracketing(t, max_ls)
        if len(bracket) == 1:
            return bracket[0], search.evaluations
        return search.zoom(bracket, d_norm, tolerance_change, max_ls), search.evaluations


class _Search:
    """One line search's evaluations and tests."""

    def __init__(self, evaluate, start: Trial, c1: float, c2: float):
        self.evaluate, self.start, self.c1, self.c2 = evaluate, start, c1, c2
        self.evaluations = 0
        self.iterations = 0         # trials after the first

    def trial(self, t) -> Trial:
        self.evaluations += 1
        return self.evaluate(t)

    def decreases_enough(self, trial: Trial) -> bool:
        """The Armijo condition: f fell by at least c1 times what the slope promised."""
        start = self.start
        return not trial.f > start.f + self.c1 * trial.t * start.gtd

    def flat_enough(self, trial: Trial) -> bool:
        """The strong curvature condition: |slope| shrank to at most c2 times the start's."""
        return abs(trial.gtd) <= -self.c2 * self.start.gtd

    def bracketing(self, t, max_ls: int) -> list[Trial]:
        """Steps out from t, extrapolating, until two trials bracket an acceptable point, or
        one trial is acceptable itself (a bracket of one)."""
        prev, new = self.start._replace(t=0), self.trial(t)
        while self.iterations < max_ls:
            if not self.decreases_enough(new) or (self.iterations > 1 and new.f >= prev.f):
                return [prev, new]
            if self.flat_enough(new):
                return [new]
            if new.gtd >= 0:
                return [prev, new]
            bounds = (new.t + 0.01 * (new.t - prev.t), new.t * 10)
            t = cubic_minimum(prev.t, prev.f, prev.gtd, new.t, new.f, new.gtd, bounds)
            prev, new = new, self.trial(t)
            self.iterations += 1
        return [self.start._replace(t=0), new]     # out of trials

    def zoom(self, bracket: list[Trial], d_norm, tolerance_change: float,
             max_ls: int) -> Trial:
        """Shrinks the bracket around an acceptable point: interpolated trials, kept a tenth
        of the interval from its ends when the last one made too little progress. Returns
        the bracket's low point."""
        insufficient = False
        low = _lowest(bracket)      # (kept as the trials move in: a NaN loss compares false)
        while self.iterations < max_ls:
            a, b = bracket
            if abs(b.t - a.t) * d_norm < tolerance_change:
                break
            t = cubic_minimum(a.t, a.f, a.gtd, b.t, b.f, b.gtd)
            t, insufficient = _away_from_ends(t, max(a.t, b.t), min(a.t, b.t), insufficient)
            new = self.trial(t)
            self.iterations += 1
            high = 1 - low
            if not self.decreases_enough(new) or new.f >= bracket[low].f:
                bracket[high] = new
                low = _lowest(bracket)
                continue
            if self.flat_enough(new):
                return new
            if new.gtd * (bracket[high].t - bracket[low].t) >= 0:
                bracket[high] = bracket[low]    # the old low point becomes the high one
            bracket[low] = new
        return bracket[low]


def _lowest(bracket: list[Trial]) -> int:
    """The index of the bracket's lower point (the first where the losses tie)."""
    return 0 if bracket[0].f <= bracket[-1].f else 1


def _away_from_ends(t, high, low, insufficient: bool) -> tuple[Any, bool]:
    """t, or t moved a tenth of [low, high] inside when it lies that close to an end and the
    last trial was close too (or t is at or past an end); and whether this trial counts as
    insufficient progress."""
    margin = 0.1 * (high - low)
    if not min(high - t, t - low) < margin:
        return t, False
    if not (insufficient or t >= high or t <= low):
        return t, True
    if abs(t - high) < abs(t - low):
        return high - margin, False
    return low + margin, False
