"""Divergence read from a run's own course: the training loss or the total gradient norm rising or spiking far above
where the run started, with or without a NaN. Standard library only.

The job's debugger folds every training step's loss and gradient norm into windows (``contracts.loss_history``: each
window's mean, the spread of its values and its largest value) and reports what :func:`divergence` reads from them in
the rule-status evidence; the planner reads the same (``contracts.situation``). A run's early level is its value at
the first step, before any update (the loss and gradient norm the initialisation gives); the windows are judged
against it and against their own noise:

* ``rising``: a window's mean reached :data:`LOSS_RISE_FACTOR` times the early level, beyond
  :data:`NOISE_STANDARD_ERRORS` standard errors of that window's own spread, and the loss's last quarter stayed
  above the early level: the run diverged and did not come back to learn (a rate that overshoots). A loss that rose
  and then fell below where it started recovered: not a divergence. For the gradient norm, which grows in healthy
  training, the last quarter's mean at :data:`GRADIENT_NORM_FACTOR` times its early level.
* ``spiking``: single steps reached :data:`LOSS_SPIKE_FACTOR` (loss, not recovered) or :data:`GRADIENT_NORM_FACTOR`
  (gradient norm) times the early level while the window means did not stay there.

Why these factors: docs/decisions/165-divergence-from-the-runs-own-course.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from contracts.hyperparameter_values import show
from contracts.loss_history import LossWindow, last_quarter
from contracts.step_names import step_name, step_span

LOSS = "loss"
GRADIENT_NORM = "gradient norm"
SERIES = (LOSS, GRADIENT_NORM)
RISING = "rising"
SPIKING = "spiking"
DIVERGENCE_KINDS = (RISING, SPIKING)

#: A window mean of the training loss this many times its first step's value is a rise (healthy recorded runs:
#: at most 1.17 x; a frozen rate drifts up 1.3 x; a rate raised 10,000-fold 4.7 x).
LOSS_RISE_FACTOR = 2.5
#: A single step's loss this many times its first is a spike.
LOSS_SPIKE_FACTOR = 10.0
#: The gradient norm grows while a healthy network leaves its initialisation (recorded healthy runs: up to 19 x at
#: a step); a spike or a level this many times the first step's is a divergence (a GRU at SGD 2: 3,820 x).
GRADIENT_NORM_FACTOR = 100.0
#: A rise must clear this many standard errors of its window's own spread.
NOISE_STANDARD_ERRORS = 3.5


@dataclasses.dataclass(frozen=True)
class Divergence:
    """What rose or spiked, from where to where, over which steps."""

    series: str
    kind: str
    #: The run's early level (its first step's value) and the level it reached (a window's mean when rising, one
    #: step's value when spiking).
    early: float
    level: float
    #: The first step of the first window above the factor, and the step (or window end) where it peaked.
    from_step: int
    peak_step: int
    #: The mean of the run's last quarter of windows.
    end: float
    #: The optimizer steps of ``from_step`` and ``peak_step``, what the sentence names (contracts.step_names; None:
    #: unknown, in older reports and XGBoost jobs: the global steps are named).
    from_optimizer_step: int | None = None
    peak_optimizer_step: int | None = None

    @property
    def ratio(self) -> float:
        return self.level / self.early

    @property
    def times(self) -> str:
        """The ratio as a person writes it: '4.72x', '3820x', '1.17e+10x' (not thirty digits)."""
        if self.ratio < 1000:
            return f"{self.ratio:.3g}x"
        return f"{self.ratio:.0f}x" if self.ratio < 1e6 else f"{self.ratio:.3g}x"

    def describe(self) -> str:
        """'the loss rose to 10.78, 4.72x its first step's 2.284, over steps 1-2 (saved as global steps 4-7), and ended
        at 3.541, still above where it started' / 'the gradient norm spiked to 824.5, 3820x its first step's 0.2158,
        at step 8 (saved as global step 33)': optimizer steps, the saved global steps once beside them."""
        level = f"{show(round(self.level, 4))}, {self.times} its first step's {show(round(self.early, 4))}"
        if self.kind == SPIKING:
            return f"the {self.series} spiked to {level}, at {step_name(self.peak_step, self.peak_optimizer_step, with_global=True)}"
        where = step_span(self.from_step, self.peak_step, self.from_optimizer_step, self.peak_optimizer_step, with_global=True)
        if self.series == GRADIENT_NORM:
            return f"the {self.series} rose to {level}, by {where}, and stayed there"
        return f"the {self.series} rose to {level}, over {where}, and ended at {show(round(self.end, 4))}, still above where it started"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Divergence | None:
        if not data:
            return None
        return cls(
            series=str(data["series"]),
            kind=str(data["kind"]),
            early=float(data["early"]),
            level=float(data["level"]),
            from_step=int(data["from_step"]),
            peak_step=int(data["peak_step"]),
            end=float(data["end"]),
            **{key: int(data[key]) for key in ("from_optimizer_step", "peak_optimizer_step") if data.get(key) is not None},
        )


def divergence(windows: Sequence[LossWindow] | None, initial: float | None, series: str = LOSS) -> Divergence | None:
    """The divergence of a series folded into ``windows`` whose first step's value was ``initial`` (None: the first
    window's mean stands in), or None when it did not diverge or there is too little to tell."""
    windows = [window for window in windows or () if window.count > 0 and math.isfinite(window.mean)]
    if not windows:
        return None
    early = initial if initial is not None and math.isfinite(initial) and initial > 0 else windows[0].mean
    if not early > 0:
        return None
    quarter = last_quarter(windows)
    end = sum(window.mean * window.count for window in quarter) / sum(window.count for window in quarter)
    if series == LOSS:
        if end <= early:
            return None  # it came back below where it started: the run recovered and learned
        rising_factor, spike_factor = LOSS_RISE_FACTOR, LOSS_SPIKE_FACTOR
    else:
        rising_factor = spike_factor = GRADIENT_NORM_FACTOR
    risen = [window for window in windows if _above(window, rising_factor * early, early)]
    if series == GRADIENT_NORM and end < rising_factor * early:
        risen = []  # a gradient norm judged by where it stayed: healthy training raises it too
    if risen:
        top = max(risen, key=lambda window: window.mean)
        return Divergence(
            series, RISING, early, top.mean, risen[0].first_step, top.last_step, end,
            risen[0].first_optimizer_step, top.last_optimizer_step,
        )
    peaks = [window for window in windows if _peak(window) >= spike_factor * early]
    if peaks:
        top = max(peaks, key=_peak)
        at_end = top.first_step == top.last_step or top.peak_step is None
        step, named = (top.last_step, top.last_optimizer_step) if at_end else (top.peak_step, top.peak_optimizer_step)
        return Divergence(
            series, SPIKING, early, _peak(top), peaks[0].first_step, step, end, peaks[0].first_optimizer_step, named
        )
    return None


def typical_before_spike(windows: Sequence[LossWindow] | None, initial: float | None) -> float | None:
    """The size a series (the total gradient norm) kept before it first spiked: the median of its window means before
    the first window whose peak reached :data:`GRADIENT_NORM_FACTOR` times its first step's value (all of them when
    none did), or None without a window before it. What gradient clipping is scaled to (decision 186)."""
    # a status document read back writes a non-finite value as text ("NaN")
    windows = [window for window in windows or () if window.count > 0 and math.isfinite(_number(window.mean))]
    early = _number(initial)
    if math.isfinite(early) and early > 0:
        spike = next(
            (index for index, window in enumerate(windows) if _number(window.peak) >= GRADIENT_NORM_FACTOR * early), None
        )
        windows = windows if spike is None else windows[:spike]
    means = sorted(_number(window.mean) for window in windows)
    if not means:
        return None
    middle = len(means) // 2
    return means[middle] if len(means) % 2 else (means[middle - 1] + means[middle]) / 2


def _number(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def _above(window: LossWindow, bound: float, early: float) -> bool:
    """Whether the window's mean is at or above ``bound`` and above ``early`` by more than its own noise."""
    error = (window.spread or 0.0) / math.sqrt(window.count)
    return window.mean >= bound and window.mean - early > NOISE_STANDARD_ERRORS * error


def _peak(window: LossWindow) -> float:
    return window.peak if window.peak is not None and math.isfinite(window.peak) else window.mean
