"""One named tensor of a trial across steps: smdebug's documented Tensor API."""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from debugger.core.exceptions import ShapeUnavailableForStep, TensorUnavailableForStep
from debugger.core.modes import ModeKeys, parse_mode
from debugger.core.reductions import ALLOWED_NORMS, ALLOWED_REDUCTIONS, read_reduction, reduction_key

if TYPE_CHECKING:
    from debugger.trial.trial import BaseTrial

#: Our own extra reduction (not smdebug's): how many values are NaN or infinite.
NONFINITE_COUNT = "nonfinite_count"
WORKER = "worker_0"


class StepState(Enum):
    """What ``trial.has_passed_step`` answers (smdebug's values)."""

    UNAVAILABLE = 0
    AVAILABLE = 1
    NOT_YET_AVAILABLE = 2


def _nonfinite_count(array: np.ndarray) -> float:
    values = np.asarray(array)
    return float(values.size - np.count_nonzero(np.isfinite(values)))


class Tensor:
    def __init__(self, trial: BaseTrial, name: str):
        self.trial = trial
        self.name = name

    def _of(self, worker: str | None) -> Tensor | None:
        """This tensor in another worker's output (torch.distributed), or None for this trial's own values."""
        if worker is None:
            return None
        trial = self.trial.worker_trial(worker)
        return None if trial is self.trial else Tensor(trial, self.name)

    def _global(self, step_num: int, mode: Any) -> int:
        mode = parse_mode(mode)
        step = self.trial._to_global(int(step_num), mode)
        if step is None or not self.trial._has(self.name, step):
            raise TensorUnavailableForStep(self.name, step_num, mode)
        return step

    def steps(self, mode=ModeKeys.GLOBAL, show_incomplete_steps: bool = False) -> list[int]:
        """Steps at which this tensor was saved: global steps, or mode steps when a mode is given."""
        mode = parse_mode(mode)
        self.trial.maybe_refresh()
        steps = self.trial._steps_of(self.name)
        if mode is ModeKeys.GLOBAL:
            return steps
        return sorted(mode_step for step in steps for m, mode_step in [self.trial._global_to_mode[step]] if m is mode)

    def has_step(self, step: int, mode=ModeKeys.GLOBAL) -> bool:
        mode = parse_mode(mode)
        step = self.trial._to_global(int(step), mode)
        return step is not None and self.trial._has(self.name, step)

    def value(self, step_num: int, mode=ModeKeys.GLOBAL, worker: str | None = None) -> np.ndarray:
        if (other := self._of(worker)) is not None:
            return other.value(step_num, mode)
        step = self._global(step_num, mode)
        array = self.trial._value(self.name, step)
        if array is None:
            raise TensorUnavailableForStep(self.name, step_num, parse_mode(mode), has_reductions=bool(self.trial._reductions(self.name, step)))
        return array

    def reduction_value(self, step_num: int, reduction_name: str, mode=ModeKeys.GLOBAL, worker: str | None = None, abs: bool = False):  # noqa: A002
        """The saved reduction, else computed from the saved tensor; TensorUnavailableForStep when neither was saved."""
        if (other := self._of(worker)) is not None:
            return other.reduction_value(step_num, reduction_name, mode, abs=abs)
        if reduction_name not in (*ALLOWED_REDUCTIONS, *ALLOWED_NORMS, NONFINITE_COUNT):
            raise ValueError(
                f"reduction_name must be one of {', '.join(ALLOWED_REDUCTIONS + ALLOWED_NORMS)}; got {reduction_name!r}"
            )
        step = self._global(step_num, mode)
        saved = self.trial._reductions(self.name, step)
        key = reduction_key(reduction_name, abs)
        if key in saved:
            return np.float64(saved[key])
        array = self.trial._value(self.name, step)
        if array is None:
            # as smdebug: has_reductions tells of a value() that failed, not of the reduction asked for
            raise TensorUnavailableForStep(self.name, step_num, parse_mode(mode))
        if reduction_name == NONFINITE_COUNT:
            return np.float64(_nonfinite_count(array))
        return read_reduction(array, reduction_name, abs=abs)

    def reduction_values(self, step_num: int, mode=ModeKeys.GLOBAL, worker: str | None = None) -> dict[tuple[str, bool], Any]:
        """The reductions saved at that step: {(reduction_name, abs): value} (none are computed here)."""
        if (other := self._of(worker)) is not None:
            return other.reduction_values(step_num, mode)
        step = self._global(step_num, mode)
        values = {}
        for key, value in self.trial._reductions(self.name, step).items():
            absolute = key.startswith("abs_")
            values[(key[4:] if absolute else key, absolute)] = np.float64(value)
        return values

    def shape(self, step_num: int, mode=ModeKeys.GLOBAL, worker: str | None = None) -> tuple[int, ...]:
        if (other := self._of(worker)) is not None:
            return other.shape(step_num, mode)
        mode = parse_mode(mode)
        step = self.trial._to_global(int(step_num), mode)
        shape = None if step is None else self.trial._shape(self.name, step)
        if shape is None:
            raise ShapeUnavailableForStep(self.name, step_num, mode)
        return tuple(shape)

    def values(self, mode=ModeKeys.GLOBAL, worker: str | None = None) -> dict[int, np.ndarray]:
        if (other := self._of(worker)) is not None:
            return other.values(mode)
        # as smdebug's: a step where only reductions were saved raises TensorUnavailableForStep (has_reductions)
        return {step: self.value(step, mode) for step in self.steps(mode)}

    def shapes(self, mode=ModeKeys.GLOBAL, worker: str | None = None) -> dict[int, tuple[int, ...]]:
        if (other := self._of(worker)) is not None:
            return other.shapes(mode)
        shapes = {}
        for step in self.steps(mode):
            try:
                shapes[step] = self.shape(step, mode)
            except ShapeUnavailableForStep:
                continue
        return shapes

    def workers(self, step_num: int, mode=ModeKeys.GLOBAL) -> list[str]:
        """The workers that saved this tensor at that step (worker_0 alone unless others recorded their own)."""
        found = []
        for worker in self.trial.workers():
            trial = self.trial.worker_trial(worker)
            if trial is not self.trial:
                trial.maybe_refresh()
            if Tensor(trial, self.name).has_step(step_num, mode):
                found.append(worker)
        return found

    def prev_steps(self, step: int, n: int | None = None, mode=ModeKeys.GLOBAL) -> list[int]:
        """The last ``n`` steps (of ``mode``) this tensor was saved at up to ``step``, ``step`` itself included when
        saved; every one when ``n`` is None or 0 (smdebug 1.0.34's code: its docs say "previous steps")."""
        upto = [saved for saved in self.steps(mode) if saved <= step]
        return upto[-n:] if n else upto

    def collections(self) -> list[str]:
        return sorted(self.trial._names().get(self.name, ()))

    def __repr__(self) -> str:
        return f"Tensor({self.name!r})"
