"""Overfit and Overtraining: SageMaker Debugger's rules on the training and validation loss curves, with the
parameters and defaults of the AWS developer guide ("List of Debugger built-in rules").

Where the two curves come from depends on the framework, and both rules read them the same way:

* PyTorch (and any hook with modes): one loss tensor (collection ``losses``) saved in TRAIN mode steps and in
  EVAL mode steps. The steps of one mode in a row form a *phase* (an epoch's training batches, then its
  validation batches); a phase counts by its mean loss, once it has ended (the next phase began). Single-batch
  losses are too noisy to compare one by one, and the validation loss of an epoch is the mean over its batches.
* XGBoost: no modes. Each boosting round (step) has one value per evaluation data set and metric, named as
  xgboost names them in ``evals_log`` and smdebug's XGBoost hook saves them: ``train-logloss``,
  ``validation-logloss``. The ``train-`` tensor is the training curve, every other data set's tensor of the same
  metric a validation curve. Only loss metrics count (collection ``losses``: not auc, map, ...).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from contracts.objective import Objective
from debugger.core.collection import LOSSES
from debugger.core.modes import ModeKeys
from debugger.rules.rule import Requirement, Rule
from debugger.rules.rule_checks import overfit_ratio, steps_without_improvement
from debugger.rules.run_objective import objective_met
from debugger.rules.tensor_selection import Selection as _Selection
from debugger.rules.tensor_selection import first_value as _first_value

#: XGBoost's evaluation names: "<data set>-<metric>" (evals_log's keys, as smdebug names the tensors).
EVAL_METRIC_NAME = re.compile(r"^(?P<dataset>[A-Za-z0-9_]+)-(?P<metric>.+)$")
TRAINING_DATASET = "train"
#: Metrics that grow as the model improves: they are not losses (smdebug's INCREASING_METRICS_REGEX, plus the
#: other "higher is better" metrics xgboost has).
INCREASING_METRICS = re.compile(r"^(auc|aucpr|map|ndcg|pre)(@.*)?$")


def metric_pairs(names: Iterable[str]) -> list[tuple[str, str]]:
    """(training tensor, validation tensor) for every loss metric evaluated on the training set and another set:
    ``train-logloss`` with ``validation-logloss``, ``eval-logloss``, ..."""
    by_metric: dict[str, dict[str, str]] = {}
    for name in names:
        match = EVAL_METRIC_NAME.match(name)
        if match and not INCREASING_METRICS.match(match["metric"]):
            by_metric.setdefault(match["metric"], {})[match["dataset"]] = name
    pairs = []
    for _metric, datasets in sorted(by_metric.items()):
        training = datasets.get(TRAINING_DATASET)
        if training is None:
            continue
        pairs += [(training, name) for dataset, name in sorted(datasets.items()) if dataset != TRAINING_DATASET]
    return pairs


@dataclass
class _Phases:
    """One loss tensor's TRAIN and EVAL phases: the open phase's values and the finished phases' means."""

    mode: ModeKeys | None = None
    values: list[float] = field(default_factory=list)
    finished: list[tuple[ModeKeys, float]] = field(default_factory=list)

    def add(self, mode: ModeKeys, value: float) -> tuple[ModeKeys, float] | None:
        """Record a value; return the phase this value's mode ended (mode, mean), if it ended one."""
        ended = None
        if mode is not self.mode and self.values:
            ended = (self.mode, float(np.mean(self.values)))
            self.finished.append(ended)
            self.values = []
        self.mode = mode
        if math.isfinite(value):
            self.values.append(value)
        return ended

    def last_mean(self, mode: ModeKeys) -> float | None:
        return next((mean for phase_mode, mean in reversed(self.finished) if phase_mode is mode), None)

    def means(self, mode: ModeKeys) -> list[float]:
        return [mean for phase_mode, mean in self.finished if phase_mode is mode]


class _CurveRule(Rule):
    """Reads the losses at every step the hook checks; subclasses judge the curves."""

    def __init__(self, base_trial, tensor_regex=(), objective: Objective | None = None):
        super().__init__(base_trial)
        self.objective = objective
        self._selection = _Selection(base_trial, [] if tensor_regex else [LOSSES], tuple(tensor_regex))
        self._phases: dict[str, _Phases] = {}
        self._series: dict[str, list[float]] = {}

    def requirements(self) -> list[Requirement]:
        return [Requirement(LOSSES)]

    def _losses_at(self, step: int) -> dict[str, float]:
        return {name: _first_value(value) for name, value in self._selection.values_at(step)}

    def invoke_at_step(self, step: int) -> bool:
        losses = self._losses_at(step)
        pairs = metric_pairs(losses)
        if pairs:
            for name, value in losses.items():
                self._series.setdefault(name, []).append(value)
            return self._judge_pairs(step, pairs, losses)
        mode = self.base_trial._global_to_mode.get(step, (ModeKeys.GLOBAL, step))[0]
        if mode not in (ModeKeys.TRAIN, ModeKeys.EVAL):
            return False
        for name, value in losses.items():
            ended = self._phases.setdefault(name, _Phases()).add(mode, value)
            if ended is not None and self._judge_phase(step, name, ended[0]):
                return True
        return False

    def _judge_pairs(self, step: int, pairs: list[tuple[str, str]], losses: dict[str, float]) -> bool:
        raise NotImplementedError

    def _judge_phase(self, step: int, name: str, ended: ModeKeys) -> bool:
        raise NotImplementedError

    def _report(self, tensor: str, value: float, kind: str, message: str) -> bool:
        """Report the finding (True), unless the run already meets its objective (the workflow's ``objective``
        parameter): a model that is good enough is not stopped for how its curves look; the note says so."""
        met, reached = objective_met(self.base_trial, self.objective)
        if met:
            self.note(f"{message}; but the run meets its objective ({self.objective.describe()}: {reached:.4g})")
            return False
        self.report(tensor, value, message)
        self.finding.kind = kind
        return True


class Overfit(_CurveRule):
    """Fires when (mean validation loss - mean training loss) / mean training loss exceeds ``ratio_threshold``
    while the validation loss is above its best so far, at ``patience`` comparisons in a row, from ``start_step``
    on.

    The gap alone is not overfitting: any model that fits its training set well has a training loss heading to 0
    and a ratio that grows past any threshold, and early on batch norm's running statistics put the validation loss
    far above the training loss (docs/decisions/020). Overfitting costs the
    held-out loss: a comparison counts only when the validation loss is worse than it has been (SageMaker's rule
    counts the gap alone).

    A comparison is made for every validation phase (PyTorch: its mean against the mean of the training phase
    before it) or every boosting round (XGBoost: each validation data set's metric against the training set's).
    The value reported is the ratio."""

    def __init__(
        self, base_trial, tensor_regex=(), start_step: int = 0, patience: int = 1, ratio_threshold: float = 0.1,
        objective: Objective | None = None,
    ):
        super().__init__(base_trial, tensor_regex, objective)
        self.start_step = start_step
        self.patience = patience
        self.ratio_threshold = ratio_threshold
        self._exceeded: dict[str, int] = {}
        self._best_validation: dict[str, float] = {}

    def invoke_at_step(self, step: int) -> bool:
        return step >= self.start_step and super().invoke_at_step(step)

    def _count(self, step: int, tensor: str, train: float, validation: float, where: str) -> bool:
        if not (math.isfinite(train) and math.isfinite(validation)):
            return False
        ratio = overfit_ratio([train], [validation])
        best = self._best_validation.get(tensor)
        self._best_validation[tensor] = validation if best is None else min(best, validation)
        worse = best is not None and validation > best
        self._exceeded[tensor] = self._exceeded.get(tensor, 0) + 1 if ratio > self.ratio_threshold and worse else 0
        if self._exceeded[tensor] < self.patience:
            return False
        return self._report(
            tensor,
            ratio,
            "validation_above_training",
            f"(validation - training) / training loss is {ratio:.4g} > ratio_threshold {self.ratio_threshold:g} "
            f"for {self._exceeded[tensor]} comparison(s) in a row at {self.step_name(step)}, with the validation loss above its "
            f"best {best:.6g} ({where}: training {train:.6g}, validation {validation:.6g})",
        )

    def _judge_pairs(self, step, pairs, losses) -> bool:
        return any(self._count(step, validation, losses[train], losses[validation], train) for train, validation in pairs)

    def _judge_phase(self, step: int, name: str, ended: ModeKeys) -> bool:
        phases = self._phases[name]
        if ended is not ModeKeys.EVAL:
            return False
        train, validation = phases.last_mean(ModeKeys.TRAIN), phases.last_mean(ModeKeys.EVAL)
        if train is None:
            return False
        return self._count(step, name, train, validation, f"mean {name} of the last TRAIN and EVAL phases")


class Overtraining(_CurveRule):
    """Fires when the training loss has not improved for ``patience_train`` steps, or a validation loss for
    ``patience_validation`` steps; improving means falling below the best value so far by more than ``delta``
    of it (relative, so the test works at any loss scale).

    A step of the PyTorch curves is a phase (see the module docstring), of the XGBoost curves a boosting round.
    The value reported is the number of steps without improvement."""

    def __init__(
        self, base_trial, patience_train: int = 5, patience_validation: int = 10, delta: float = 0.01,
        objective: Objective | None = None,
    ):
        super().__init__(base_trial, objective=objective)
        self.patience_train = patience_train
        self.patience_validation = patience_validation
        self.delta = delta

    def _judge_series(self, step: int, tensor: str, series: list[float], validation: bool) -> bool:
        patience = self.patience_validation if validation else self.patience_train
        stalled = steps_without_improvement(series, self.delta)
        if stalled < patience:
            return False
        finite = [value for value in series if math.isfinite(value)]
        best = min(finite) if finite else math.nan
        if best == 0.0:
            return False  # a loss at zero (a training error of 0) has nothing left to improve: it is not stalled
        curve = "validation" if validation else "training"
        return self._report(
            tensor,
            stalled,
            f"{curve}_not_improving",
            f"the {curve} loss {tensor} has not improved by more than delta {self.delta:g} of its best {best:.6g} for "
            f"{stalled} steps (patience_{'validation' if validation else 'train'} {patience}) at {self.step_name(step)}; "
            f"latest {series[-1]:.6g}",
        )

    def _judge_pairs(self, step, pairs, losses) -> bool:
        validations = list(dict.fromkeys(validation for _, validation in pairs))
        trainings = list(dict.fromkeys(train for train, _ in pairs))
        for name in validations:
            if self._judge_series(step, name, self._series[name], validation=True):
                return True
        return any(self._judge_series(step, name, self._series[name], validation=False) for name in trainings)

    def _judge_phase(self, step: int, name: str, ended: ModeKeys) -> bool:
        validation = ended is ModeKeys.EVAL
        return self._judge_series(step, name, self._phases[name].means(ended), validation)


CURVE_RULES: dict[str, type[Rule]] = {rule.__name__: rule for rule in (Overfit, Overtraining)}
