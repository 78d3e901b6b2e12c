"""How far a model's weight matrices moved from where the run started, read from the saved weights.

A loss that has not fallen for a while says nothing of why. The weights do:

* a learning rate far too small (frozen updates) leaves every matrix where it started;
* a deep stack whose gradients vanish on their way back moves its output side and leaves its input side behind;
* a slow start (a small rate, a plateau, labels too noisy for the loss to show progress yet) moves every matrix.

The bounds below sit between the frozen runs' movement and the slowest run that learned; stacks whose matrices move
alike while learning nothing are not told from a slow start, and train on. The measurements:
docs/decisions/018-stagnant-loss-reads-the-weights.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np

from debugger.core.collection import WEIGHTS
from debugger.rules.tensor_selection import Selection
from debugger.trial.trial import BaseTrial

#: Below this share of its size, the matrix that moved most has not moved: the updates are too small to train.
#: Why 2e-3: well above frozen updates, well below the slowest run that learned (decision 018).
FROZEN_DISPLACEMENT = 2e-3
#: Below this share of the largest matrix's movement, the matrix that moved least is left behind: the gradient does
#: not reach it. Why 0.1: between stuck stacks and runs that learned (decision 018).
LEFT_BEHIND_SHARE = 0.1
#: Entries compared per matrix: an evenly spaced sample, so the memory a rule keeps does not grow with the model.
SAMPLE_SIZE = 4096


@dataclasses.dataclass(frozen=True)
class Movement:
    """How far each weight matrix moved between two saved training steps, as a share of its size at the first."""

    first_step: int
    last_step: int
    shares: dict[str, float]
    #: the global steps of first_step and last_step (training mode steps), for the message's step names
    first_global: int | None = None
    last_global: int | None = None

    @property
    def most(self) -> tuple[str, float]:
        return max(self.shares.items(), key=lambda item: item[1])

    @property
    def least(self) -> tuple[str, float]:
        return min(self.shares.items(), key=lambda item: item[1])

    def stuck(self) -> str | None:
        """Why the weights cannot be learning, or None when they all move: "frozen" when even the matrix that
        moved most stayed under FROZEN_DISPLACEMENT of its size; "left_behind" when one moved less than
        LEFT_BEHIND_SHARE of what the one that moved most did."""
        most, least = self.most[1], self.least[1]
        if most < FROZEN_DISPLACEMENT:
            return "frozen"
        if least < LEFT_BEHIND_SHARE * most:
            return "left_behind"
        return None

    def describe(self, step_name: Callable[[int], str] | None = None) -> str:
        """``step_name``: how the message names a global step (Rule.step_name); without it, the mode steps."""
        if step_name is None or self.first_global is None or self.last_global is None:
            span = f"from step {self.first_step} to {self.last_step}"
        else:
            span = f"from {step_name(self.first_global)} to {step_name(self.last_global)}"
        (most_name, most), (least_name, least) = self.most, self.least
        if len(self.shares) == 1:
            return f"the weights of {most_name} moved {most:.2g} of their size {span}"
        return (
            f"the weights of {most_name} moved {most:.2g} of their size {span}, those of {least_name} {least:.2g} "
            f"({len(self.shares)} weight matrices)"
        )


class WeightMovement:
    """Follows the weight matrices (tensors of the weights collection with two or more dimensions; not the ones
    that cannot carry a signal, such as frozen parameters) at the saved training steps. It keeps a sample of each
    at the first step it sees and at the latest."""

    def __init__(self, trial: BaseTrial):
        self._selection = Selection(trial, [WEIGHTS], (), skip_silent=True)
        self._first: dict[str, tuple[int, np.ndarray]] = {}
        self._latest: dict[str, tuple[int, np.ndarray]] = {}
        self._global: dict[int, int] = {}  # mode step -> global step, of the steps kept

    def observe(self, step: int, mode_step: int) -> None:
        """Read the weight matrices saved at global ``step`` (training mode step ``mode_step``)."""
        for name, value in self._selection.values_at(step):
            array = np.asarray(value, dtype=np.float64)
            if array.ndim < 2:
                continue
            flat = array.ravel()
            sample = flat[:: max(1, flat.size // SAMPLE_SIZE)].copy()
            if name not in self._first:
                self._first[name] = (mode_step, sample)
            elif sample.shape == self._first[name][1].shape:
                self._latest[name] = (mode_step, sample)
            self._global[mode_step] = step
        kept = {start for start, _ in self._first.values()} | {latest for latest, _ in self._latest.values()}
        self._global = {mode_step: step for mode_step, step in self._global.items() if mode_step in kept}

    def since_start(self, min_steps: int) -> Movement | None:
        """How far each matrix moved from the first step seen to the latest, or None when no matrix has two saved
        steps at least ``min_steps`` apart."""
        shares: dict[str, float] = {}
        first_step, last_step = None, None
        for name, (latest_step, latest) in self._latest.items():
            start_step, start = self._first[name]
            if latest_step - start_step < min_steps:
                continue
            size = float(np.linalg.norm(start))
            if size == 0.0:
                continue
            shares[name] = float(np.linalg.norm(latest - start)) / size
            first_step = start_step if first_step is None else min(first_step, start_step)
            last_step = latest_step if last_step is None else max(last_step, latest_step)
        if not shares:
            return None
        return Movement(first_step, last_step, shares, self._global.get(first_step), self._global.get(last_step))
