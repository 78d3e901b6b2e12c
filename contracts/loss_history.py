"""The training loss's course over a whole job, in a few windows, and what its shape says. Standard library only.

The job's debugger folds every training step's loss into :class:`LossHistory` (at most :data:`MAX_LOSS_WINDOWS`
windows of consecutive steps, each its mean: a window's mean averages the minibatch noise away however long the job
ran) and reports the windows in the rule-status evidence. The planner reads their shape (:func:`loss_shape`) when a
job ended quietly but missed its objective, where no rule names the cause:

* ``flat``: the loss at the end is within :data:`LEARNED_FRACTION` of where it started: the network never learned
  (a rate far too small, gradients that vanish through sigmoid layers or a tiny initialisation, unscaled inputs).
* ``still_falling``: it learned, and the last quarter of the run is still more than :data:`STILL_FALLING_DROP` below
  the quarter before, a drop of more than :data:`STILL_FALLING_SHARE` of the whole descent so far: training stopped
  too early. (The share keeps a converged loss near zero, 0.0025 -> 0.002, from reading as still falling.)
* ``memorised``: it fell to almost nothing (below :data:`MEMORISED_FRACTION` of its start) and stopped: the model fits
  its training set, and the held-out metric's shortfall is the gap between the two (regularise).
* ``settled``: it learned and stopped improving short of that: more of the same training will not reach the
  objective.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from contracts.hyperparameter_values import show
from contracts.step_names import step_span

#: Windows kept: between half this and this many once the job has run that many steps.
MAX_LOSS_WINDOWS = 16
#: A loss that fell by less than this fraction of its starting value never learned.
LEARNED_FRACTION = 0.1
#: A last quarter this fraction below the quarter before it is still falling. Window means of a quarter of a run
#: average dozens of minibatches; healthy runs that have converged move by a few percent between quarters.
STILL_FALLING_DROP = 0.05
#: ... and that drop is more than this share of the loss's whole descent from its start.
STILL_FALLING_SHARE = 0.05
#: A loss that ended below this fraction of its start fits the training set (cross-entropy 2.3 -> 0.046 or less).
MEMORISED_FRACTION = 0.02
#: A loss that rose far above where it started and stayed above it (contracts.divergence: the Situation says so).
DIVERGED = "diverged"
LOSS_SHAPES = ("flat", "still_falling", "memorised", "settled", DIVERGED)


@dataclasses.dataclass
class LossWindow:
    """Consecutive training steps ``first_step``..``last_step`` (``count`` of them with a finite loss), their mean.

    ``agreement``: the mean share of each step's training labels the model's top class matched, over the
    ``agreement_count`` steps of the window whose labels the job saw (contracts.training_labels); None when none.
    ``spread``: the standard deviation of the window's values; ``peak``, ``peak_step``: its largest value and where
    (contracts.divergence reads a rise against the spread and a spike from the peak; None in older reports).
    ``first_optimizer_step``, ``last_optimizer_step``, ``peak_optimizer_step``: the optimizer steps of those global
    steps, what sentences name (contracts.step_names; None: unknown, in older reports and XGBoost jobs)."""

    first_step: int
    last_step: int
    count: int
    mean: float
    agreement: float | None = None
    agreement_count: int = 0
    spread: float | None = None
    peak: float | None = None
    peak_step: int | None = None
    first_optimizer_step: int | None = None
    last_optimizer_step: int | None = None
    peak_optimizer_step: int | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LossWindow:
        agreement = data.get("agreement")
        optional = {key: data.get(key) for key in ("spread", "peak", "peak_step", *OPTIMIZER_STEP_FIELDS)}
        return cls(
            int(data["first_step"]),
            int(data["last_step"]),
            int(data["count"]),
            float(data["mean"]),
            float(agreement) if agreement is not None else None,
            int(data.get("agreement_count") or 0),
            float(optional["spread"]) if optional["spread"] is not None else None,
            float(optional["peak"]) if optional["peak"] is not None else None,
            int(optional["peak_step"]) if optional["peak_step"] is not None else None,
            *(int(optional[key]) if optional[key] is not None else None for key in OPTIMIZER_STEP_FIELDS),
        )

    def span(self, last: LossWindow | None = None, with_global: bool = False) -> str:
        """This window's steps (to ``last``'s end) as a sentence names them: 'steps 0-1 (saved as global steps
        0-7)' (contracts.step_names.step_span)."""
        last = last or self
        return step_span(self.first_step, last.last_step, self.first_optimizer_step, last.last_optimizer_step, with_global)


#: A window's optimizer steps, beside its global ``first_step``, ``last_step`` and ``peak_step``.
OPTIMIZER_STEP_FIELDS = ("first_optimizer_step", "last_optimizer_step", "peak_optimizer_step")


class LossHistory:
    """Every step's loss folded into at most :data:`MAX_LOSS_WINDOWS` windows of equal step counts: when the windows
    are full, neighbours merge pairwise and each new window holds twice as many steps."""

    def __init__(self) -> None:
        self._windows: list[LossWindow] = []
        self._width = 1

    @classmethod
    def resumed(cls, windows: Sequence[LossWindow] | None) -> LossHistory:
        """The history a restarted job's debugger continues from (the windows its last status document reported)."""
        history = cls()
        history._windows = [dataclasses.replace(window) for window in windows or ()][:MAX_LOSS_WINDOWS]
        while history._windows and history._width < max(window.count for window in history._windows):
            history._width *= 2
        return history

    def add(self, step: int, loss: float, agreement: float | None = None) -> None:
        """A training step's loss, and the share of its labels the model's top class matched (when seen)."""
        if not math.isfinite(loss):
            return
        last = self._windows[-1] if self._windows else None
        if last is not None and last.count < self._width:
            squares = (last.spread or 0.0) ** 2 * last.count  # Welford's running sum of squared deviations
            mean = last.mean + (loss - last.mean) / (last.count + 1)
            squares += (loss - last.mean) * (loss - mean)
            last.mean = mean
            last.count += 1
            last.spread = math.sqrt(max(squares, 0.0) / last.count)
            if last.peak is None or loss > last.peak:
                last.peak, last.peak_step, last.peak_optimizer_step = loss, step, None
            last.last_step, last.last_optimizer_step = step, None  # named at the next report (name_steps)
            if agreement is not None:
                last.agreement_count += 1
                last.agreement = (last.agreement or 0.0) + (agreement - (last.agreement or 0.0)) / last.agreement_count
            return
        if len(self._windows) == MAX_LOSS_WINDOWS:
            self._windows = [_merged(*self._windows[i : i + 2]) for i in range(0, MAX_LOSS_WINDOWS, 2)]
            self._width *= 2
            self.add(step, loss, agreement)
            return
        self._windows.append(LossWindow(step, step, 1, loss, agreement, 1 if agreement is not None else 0, 0.0, loss, step))

    def name_steps(self, optimizer_step: Callable[[int], int | None]) -> None:
        """Give each window the optimizer steps of its global steps, where ``optimizer_step`` knows them (a window a
        restarted job resumed keeps those its report carried). Asked again at every report: a step's optimizer step
        is only sure once the job has seen whether an optimizer steps (contracts.step_names)."""
        for window in self._windows:
            for name, step in zip(OPTIMIZER_STEP_FIELDS, (window.first_step, window.last_step, window.peak_step), strict=True):
                named = optimizer_step(step) if step is not None else None
                if named is not None:
                    setattr(window, name, named)

    def windows(self) -> list[LossWindow]:
        return [dataclasses.replace(window) for window in self._windows]


def _merged(first: LossWindow, second: LossWindow) -> LossWindow:
    count = first.count + second.count
    mean = (first.mean * first.count + second.mean * second.count) / count
    agreed = first.agreement_count + second.agreement_count
    agreement = (
        sum(window.agreement * window.agreement_count for window in (first, second) if window.agreement is not None)
        / agreed
        if agreed
        else None
    )
    spread = None
    if first.spread is not None and second.spread is not None:
        squares = (
            first.spread**2 * first.count + second.spread**2 * second.count
            + (second.mean - first.mean) ** 2 * first.count * second.count / count
        )
        spread = math.sqrt(squares / count)
    peaked = [window for window in (first, second) if window.peak is not None]
    top = max(peaked, key=lambda window: window.peak) if peaked else None
    return LossWindow(
        first.first_step, second.last_step, count, mean, agreement, agreed, spread,
        top.peak if top else None, top.peak_step if top else None,
        first.first_optimizer_step, second.last_optimizer_step, top.peak_optimizer_step if top else None,
    )


def last_quarter(windows: Sequence[LossWindow]) -> Sequence[LossWindow]:
    """The windows of the run's last quarter (at least the last one)."""
    return windows[-max(1, len(windows) // 4) :]


@dataclasses.dataclass(frozen=True)
class LossShape:
    """What the windows say: the shape, and the numbers behind it for the planner's reason."""

    shape: str
    start: float  # the first window's mean
    end: float  # the last quarter's mean
    before_end: float  # the quarter before it
    first_step: int
    last_step: int
    #: For a loss that diverged: the sentence that says how (contracts.divergence.Divergence.describe).
    divergence: str | None = None
    #: The optimizer steps of ``first_step`` and ``last_step`` (None: unknown; the sentence names the global ones).
    first_optimizer_step: int | None = None
    last_optimizer_step: int | None = None

    @property
    def steps(self) -> str:
        """'steps 0-49 (saved as global steps 0-199)' (contracts.step_names.step_span)."""
        return step_span(self.first_step, self.last_step, self.first_optimizer_step, self.last_optimizer_step, True)

    @property
    def fell_by(self) -> float:
        return 1 - self.end / self.start

    @property
    def last_quarter_drop(self) -> float:
        return 1 - self.end / self.before_end

    @property
    def last_quarter_share(self) -> float:
        """The last quarter's drop as a share of the whole descent from the start."""
        return (self.before_end - self.end) / (self.start - self.end) if self.start != self.end else 0.0

    def describe(self) -> str:
        """'the training loss fell 80% over steps 0-22 (2.796 to 0.5518) and was still falling: ...'."""
        if self.shape == DIVERGED and self.divergence:
            return f"{self.divergence}: it diverged"
        if self.shape == "flat":
            moved = f"fell {self.fell_by:.0%}" if self.fell_by >= 0 else f"rose {-self.fell_by:.0%}"
            return (
                f"the training loss {moved} over {self.steps} ({show(self.start)} to "
                f"{show(self.end)}): it never learned"
            )
        course = f"fell {self.fell_by:.0%} over {self.steps} ({show(self.start)} to {show(self.end)})"
        if self.shape == "still_falling":
            return (
                f"the training loss {course} and was still falling: its last quarter was "
                f"{self.last_quarter_drop:.0%} below the quarter before"
            )
        share = self.last_quarter_share
        settled = (
            f"its last quarter added {share:.0%} to that descent"
            if share >= 0
            else f"its last quarter gave back {-share:.1%} of that descent"  # not "added -0%"
        )
        if self.shape == "memorised":
            return f"the training loss {course} and stopped there ({settled}): the model fits its training set"
        return f"the training loss {course} and settled: {settled}"


def loss_shape(windows: Sequence[LossWindow], initial_loss: float | None = None) -> LossShape | None:
    """The shape of a run's loss (None: fewer than four windows, or a start that is not a positive loss).

    ``initial_loss``: the job's first step's loss, where the loss starts (the first window's mean, which the shape
    falls back to, already averages a fast first descent away)."""
    if len(windows) < 4:
        return None
    quarter = len(last_quarter(windows))
    start = (
        initial_loss
        if initial_loss is not None and math.isfinite(initial_loss) and initial_loss > 0
        else windows[0].mean
    )
    end = _mean(windows[-quarter:])
    before_end = _mean(windows[-2 * quarter : -quarter])
    if not (start > 0 and math.isfinite(start) and math.isfinite(end) and before_end > 0):
        return None
    if end > (1 - LEARNED_FRACTION) * start:
        shape = "flat"
    elif end < (1 - STILL_FALLING_DROP) * before_end and before_end - end > STILL_FALLING_SHARE * (start - end):
        shape = "still_falling"
    elif end < MEMORISED_FRACTION * start:
        shape = "memorised"
    else:
        shape = "settled"
    return LossShape(
        shape, start, end, before_end, windows[0].first_step, windows[-1].last_step, None,
        windows[0].first_optimizer_step, windows[-1].last_optimizer_step,
    )


def _mean(windows: Sequence[LossWindow]) -> float:
    count = sum(window.count for window in windows)
    return sum(window.mean * window.count for window in windows) / count
