"""SageMaker Debugger's training-curve built-in rules: ClassImbalance and StalledTrainingRule, with the parameters
and defaults of the AWS developer guide ("List of Debugger built-in rules"; defaults in
``contracts.debugger_config.BUILTIN_RULE_DEFAULTS``).

ClassImbalance reads the labels and predictions the training script hands the hook
(``hook.save_tensor("labels", y)``, ``hook.save_tensor("predictions", logits)`` before ``loss.backward()``):
the hook shows them to the rules at every step, whatever the save interval, and saves them at the steps the
collection's save configuration names.

StalledTrainingRule fires when no step has come for ``threshold`` seconds. The rules run on the training
thread, which is exactly what hangs, so the hook watches this rule's clock from a thread of its own
(:mod:`debugger.hook.stall_watchdog`); the rule itself only keeps the clock and says when it has run out.
"""

from __future__ import annotations

import collections
import re
import time

import numpy as np

from contracts.rule_status import LABEL_OUT_OF_RANGE
from debugger.rules.rule import Rule
from debugger.rules.rule_checks import class_counts, imbalance_ratio, misprediction_fractions
from debugger.rules.tensor_selection import Selection as _Selection

#: ClassImbalance's issue kinds (RuleIssue.kind): the planner's remedies key on them.
IMBALANCE = "imbalance"
MISPREDICTION = "misprediction"
#: ClassImbalance judges the mispredictions of a class with at most this fraction of its fair share of the labels
#: (the share it would have if every class that occurs had as many).
UNDERREPRESENTED_SHARE = 0.5
#: StalledTrainingRule's issue kind.
STALLED = "stalled"


def _pattern(regex: str | re.Pattern[str]) -> re.Pattern[str]:
    return regex if isinstance(regex, re.Pattern) else re.compile(regex)


def _array(value) -> np.ndarray:
    """A numpy array of the script's own tensor, on whatever device (torch is not imported: an XGBoost job has
    none)."""
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy()
    return np.asarray(value)


def _binary_probabilities(array: np.ndarray) -> bool:
    """One probability of class 1 per sample: floats in [0, 1], not all whole numbers."""
    return (
        array.dtype.kind == "f"
        and array.size > 0
        and bool(np.isfinite(array).all())
        and bool(((array >= 0) & (array <= 1)).all())
        and not bool(np.equal(array, np.round(array)).all())
    )


def _class_indices(values: np.ndarray, name: str) -> np.ndarray:
    """Labels as integer class indices: one-hot or probability rows become their argmax."""
    array = _array(values)
    if array.ndim > 1:
        array = array.argmax(axis=-1)
    array = array.reshape(-1)
    if array.dtype.kind == "f":
        if not np.isfinite(array).all() or not np.equal(array, np.round(array)).all():
            raise ValueError(f"{name} must hold class indices (whole numbers) or one-hot rows; got values like {array[:3]}")
    return array.astype(np.int64)


class ClassImbalance(Rule):
    """Counts the labels per class and, once ``samples`` labels have been seen, fires when the largest class
    has more than ``threshold_imbalance`` times the samples of the smallest class that occurs (kind
    "imbalance"), or when more than ``threshold_misprediction`` of a class's samples were predicted as another
    class while the model gets the other classes right (kind "misprediction"). A label outside the classes the
    predictions cover (< 0, or >= the number of prediction columns) fires at once with kind "label_out_of_range":
    the data is wrong.

    Mispredictions are judged as the AWS guide motivates them ("too many mispredictions for underrepresented classes
    occur as a result of the imbalance"): for a class with at most half its fair share of the labels seen
    (:data:`UNDERREPRESENTED_SHARE`), over the latest ``samples`` labels (whole steps), while the other classes
    together are mispredicted less than ``1 - threshold_misprediction`` of the time. SageMaker's rule judges every
    class from the first step: an untrained model mispredicts every class, and a healthy one learns some classes
    later than others (docs/decisions/020); neither is a class the model ignores because it is rare.

    Labels and predictions are the tensors matching ``labels_regex`` and ``predictions_regex`` (paired in name
    order); ``argmax`` turns a row of scores per sample into the predicted class."""

    def __init__(
        self,
        base_trial,
        threshold_imbalance: float = 10.0,
        threshold_misprediction: float = 0.7,
        samples: int = 500,
        argmax: bool = False,
        labels_regex: str | re.Pattern[str] = ".*labels",
        predictions_regex: str | re.Pattern[str] = ".*predictions",
    ):
        super().__init__(base_trial)
        self.threshold_imbalance = float(threshold_imbalance)
        self.threshold_misprediction = float(threshold_misprediction)
        self.samples = int(samples)
        self.argmax = argmax
        self._labels = _Selection(base_trial, [], (_pattern(labels_regex),))
        self._predictions = _Selection(base_trial, [], (_pattern(predictions_regex),))
        self.counts = np.zeros(0, dtype=np.int64)  # labels seen per class, over every step so far
        self.seen = 0
        # the latest steps' (labels per class, of those predicted as another class): at least ``samples`` labels
        self._recent: collections.deque[tuple[np.ndarray, np.ndarray]] = collections.deque()
        self._predicted = False

    def invoke_at_step(self, step: int) -> bool:
        labels = dict(self._labels.values_at(step))
        if not labels:
            return False
        predictions = dict(self._predictions.values_at(step))
        prediction_names = sorted(name for name in predictions if name not in labels)
        for index, label_name in enumerate(sorted(labels)):
            prediction_name = prediction_names[index] if index < len(prediction_names) else None
            truth = _class_indices(labels[label_name], label_name)
            guess, columns = self._predicted_classes(predictions.get(prediction_name), prediction_name, truth.size)
            if self._out_of_range(step, label_name, truth, columns):
                return True
            self._count(truth, guess)
        return self.seen >= self.samples and (self._imbalanced(sorted(labels)[0]) or self._mispredicting(prediction_names))

    def _predicted_classes(self, value, name: str | None, size: int) -> tuple[np.ndarray | None, int | None]:
        """(predicted class per sample or None, the number of classes the predictions cover or None)."""
        if value is None:
            return None, None
        array = _array(value)
        columns = int(array.shape[-1]) if array.ndim > 1 else None
        if array.ndim > 1:
            if not self.argmax:
                raise ValueError(
                    f"{name} holds {array.shape[-1]} scores per sample (shape {array.shape}): set the rule's argmax "
                    'parameter to "True" so the highest-scoring class is the prediction'
                )
            array = array.argmax(axis=-1)
        array = array.reshape(-1)
        if array.size != size:
            raise ValueError(f"{name} has {array.size} predictions for {size} labels")
        if _binary_probabilities(array):
            # XGBoost's binary:logistic predicts P(class 1) per sample (what its hook saves as "predictions"):
            # truncating 0.93 to an integer would call every positive sample mispredicted.
            return (array > 0.5).astype(np.int64), 2
        return array.astype(np.int64), columns

    def _out_of_range(self, step: int, name: str, truth: np.ndarray, columns: int | None) -> bool:
        bad = (truth < 0) | (truth >= columns) if columns is not None else truth < 0
        if not bad.any():
            return False
        label = int(truth[bad][0])
        covered = f"the {columns} classes the predictions cover (0-{columns - 1})" if columns else "the class indices (>= 0)"
        self._report(
            name,
            label,
            f"{int(bad.sum())} label(s) of {name} at {self.step_name(step)} outside {covered}, e.g. {label}: the labels do not "
            "match the model's classes",
            LABEL_OUT_OF_RANGE,
        )
        return True

    def _count(self, truth: np.ndarray, guess: np.ndarray | None) -> None:
        batch = class_counts(truth)
        size = max(self.counts.size, batch.size)
        self.counts = np.pad(self.counts, (0, size - self.counts.size))
        self.counts[: batch.size] += batch
        self.seen += int(truth.size)
        if guess is None:
            return
        self._predicted = True
        wrong = np.zeros(batch.size, dtype=np.int64)
        for label, fraction in misprediction_fractions(truth, guess).items():
            wrong[label] = round(fraction * batch[label])
        self._recent.append((batch, wrong))
        while len(self._recent) > 1 and sum(int(c.sum()) for c, _ in list(self._recent)[1:]) >= self.samples:
            self._recent.popleft()

    def _recent_counts(self) -> tuple[np.ndarray, np.ndarray]:
        """(labels per class, of those mispredicted) over the latest ``samples`` labels."""
        size = max((counts.size for counts, _ in self._recent), default=0)
        labels, wrong = np.zeros(size, dtype=np.int64), np.zeros(size, dtype=np.int64)
        for counts, mispredicted in self._recent:
            labels[: counts.size] += counts
            wrong[: mispredicted.size] += mispredicted
        return labels, wrong

    def _imbalanced(self, name: str) -> bool:
        ratio = imbalance_ratio(self.counts)
        if ratio <= self.threshold_imbalance:
            return False
        present = np.flatnonzero(self.counts)
        largest = int(present[self.counts[present].argmax()])
        smallest = int(present[self.counts[present].argmin()])
        self._report(
            name,
            ratio,
            f"class {largest} has {int(self.counts[largest])} of {self.seen} labels, class {smallest} "
            f"{int(self.counts[smallest])}: imbalance {ratio:.3g} > threshold_imbalance {self.threshold_imbalance:g}",
            IMBALANCE,
        )
        return True

    def _mispredicting(self, prediction_names: list[str]) -> bool:
        if not self._predicted:
            return False
        labels, wrong = self._recent_counts()
        present = np.flatnonzero(labels)
        if present.size < 2:
            return False
        # the classes the imbalance can hurt: at most half their fair share of the labels seen so far
        seen = self.counts[present] if self.counts.size >= labels.size else labels[present]
        rare = present[seen <= UNDERREPRESENTED_SHARE * seen.sum() / present.size]
        if rare.size == 0:
            return False
        fractions = wrong[rare] / labels[rare]
        worst = int(fractions.argmax())
        if fractions[worst] <= self.threshold_misprediction:
            return False
        label = int(rare[worst])
        others = float((wrong.sum() - wrong[label]) / max(labels.sum() - labels[label], 1))
        if others >= 1.0 - self.threshold_misprediction:
            self.note(
                f"class {label} was mispredicted {fractions[worst]:.1%} of the time over the latest {int(labels.sum())} "
                f"labels, but so were the other classes ({others:.1%}): not a class the model ignores"
            )
            return False
        self._report(
            prediction_names[0],
            float(fractions[worst]),
            f"{fractions[worst]:.1%} of class {label}'s {int(labels[label])} samples among the latest "
            f"{int(labels.sum())} were predicted as another class > threshold_misprediction "
            f"{self.threshold_misprediction:g}, while the other classes were mispredicted {others:.1%} of the time "
            f"(class {label} has {int(self.counts[label])} of the {self.seen} labels seen)",
            MISPREDICTION,
        )
        return True

    def _report(self, tensor: str, value: float, message: str, kind: str) -> None:
        self.report(tensor, value, message)
        self.finding.kind = kind


class StalledTrainingRule(Rule):
    """Fires when no step has come for ``threshold`` seconds (since the hook started or the last step).

    ``stop_training_on_fire`` stops the job when it fires (as does a StopTraining action); with
    ``training_job_name_prefix`` only a job whose name starts with it is stopped, as SageMaker's rule stops
    only the job it finds by that prefix. The clock is kept here and read by the hook's watchdog thread."""

    def __init__(
        self, base_trial, threshold: float = 1800.0, stop_training_on_fire: bool = False, training_job_name_prefix: str = ""
    ):
        super().__init__(base_trial)
        if threshold <= 0:
            raise ValueError(f"threshold must be a number of seconds > 0; got {threshold}")
        self.threshold = float(threshold)
        self.stop_training_on_fire = stop_training_on_fire
        self.training_job_name_prefix = training_job_name_prefix
        self.last_step: int | None = None
        self._last_progress = time.monotonic()

    def note_progress(self, step: int | None = None) -> None:
        """The job moved: a step, or a forward pass of the model (an evaluation loop makes no steps)."""
        self._last_progress = time.monotonic()
        if step is not None:
            self.last_step = step

    def invoke_at_step(self, step: int) -> bool:
        # a step is progress once: the hook noted this one as its check began, and noting it again here, moments
        # later, would erase a stall that began in between (the watchdog reads the clock from another thread)
        if step != self.last_step:
            self.note_progress(step)
        return False

    def stalled_seconds(self, now: float | None = None) -> float:
        return (time.monotonic() if now is None else now) - self._last_progress

    def check_stalled(self, now: float | None = None) -> bool:
        """True (with the finding reported) when the clock has run past ``threshold``."""
        seconds = self.stalled_seconds(now)
        if seconds <= self.threshold:
            return False
        after = f"after {self.step_name(self.last_step)}" if self.last_step is not None else "before the first step"
        self.report("", seconds, f"no training step for {seconds:.0f} s {after} (threshold {self.threshold:g} s): training has stalled")
        self.finding.kind = STALLED
        return True

    def stops(self, job_name: str) -> bool:
        """Whether ``stop_training_on_fire`` stops this job."""
        return self.stop_training_on_fire and job_name.startswith(self.training_job_name_prefix)


TRAINING_RULES: dict[str, type[Rule]] = {
    "ClassImbalance": ClassImbalance,
    "StalledTrainingRule": StalledTrainingRule,
}
