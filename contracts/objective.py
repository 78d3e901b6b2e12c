"""The run's objective: what "good" means, declared in the run_spec. Standard library only.

    "objective": {"metric_name": "test:accuracy", "type": "Maximize", "target_value": 0.9}

The names follow SageMaker's tuning objective (``HyperParameterTuningJobObjective``:
``MetricName``, ``Type``) and its ``TargetObjectiveMetricValue``. An optional ``bound`` is the value the metric
cannot pass in its better direction (0 for an error, 1 for an accuracy); left out, it is inferred from the metric's
name (:meth:`Objective.bound_for`). The metric is
read from the job: a SageMaker MetricDefinitions regex over the job's log
(DescribeTrainingJob's FinalMetricDataList holds its last value), else the
latest scalar of that name the script saved with the debugger
(``save_scalar`` / ``record_metric``, carried by the rule-status document).
A job that completes with quiet rules but misses the objective is not a success.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from contracts import ContractError
from contracts.suggestions import did_you_mean

OBJECTIVE_TYPES = ("Maximize", "Minimize")
#: Words of a metric's name (split at anything but letters and digits, and at camelCase) that make it an error, a loss
#: or a distance, which cannot fall below 0 ...
ERROR_WORDS = frozenset(
    {"loss", "error", "err", "rmse", "mse", "mae", "mape", "smape", "rmsle", "msle", "nll", "logloss", "crossentropy",
     "entropy", "ce", "wer", "cer", "distance", "perplexity", "ppl", "huber", "l1", "l2", "deviance"}
)  # fmt: skip
#: ... and words that make it a share of right answers, which cannot rise above 1 (or 100, written in percent).
SHARE_WORDS = frozenset(
    {"accuracy", "acc", "f1", "fscore", "auc", "roc", "precision", "recall", "iou", "miou", "dice", "jaccard", "map",
     "ap", "sensitivity", "specificity", "top1", "top5", "bleu"}
)  # fmt: skip
_NAME_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
MAX_METRIC_NAME_LENGTH = 255
#: A course's late part: its last third of reports (rounded up). A course with fewer reports has no peak to read.
LATE_SHARE = 1 / 3
MIN_REPORTS_FOR_PEAK = 4
#: A course is past its peak when its late part gave back at least this share of what it gained by its best: healthy
#: courses give back a few percent on their plateau, one learning wrong labels most of it (decision record 014).
PEAK_LOSS_SHARE = 0.25
#: A course's recent part, for its rate: its last half of reports (rounded up), at least this many.
MIN_RECENT_REPORTS = 4


@dataclasses.dataclass(frozen=True)
class Objective:
    metric_name: str
    type: str
    target_value: float
    #: The value the metric cannot pass in its better direction, as the run_spec states it (None: inferred from the
    #: name, :meth:`bound_for`).
    bound: float | None = None

    @classmethod
    def from_json(cls, value: Any, where: str = "objective") -> Objective:
        if not isinstance(value, Mapping):
            raise ContractError(
                where, 'must be a JSON object such as {"metric_name": "test:accuracy", "type": "Maximize", '
                '"target_value": 0.9}'
            )
        allowed = {"metric_name", "type", "target_value", "bound"}
        for key in value:
            if key not in allowed:
                raise ContractError(f"{where}.{key}", f"is not a key of an objective{did_you_mean(key, allowed)}; allowed: {', '.join(sorted(allowed))}")
        for key in sorted(allowed - set(value) - {"bound"}):
            raise ContractError(f"{where}.{key}", "is required")
        name = value["metric_name"]
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_METRIC_NAME_LENGTH:
            raise ContractError(f"{where}.metric_name", f"must be a metric name of 1-{MAX_METRIC_NAME_LENGTH} characters")
        kind = value["type"]
        if kind not in OBJECTIVE_TYPES:
            raise ContractError(f"{where}.type", f"must be one of {', '.join(OBJECTIVE_TYPES)} (got {kind!r})")
        target = value["target_value"]
        if isinstance(target, bool) or not isinstance(target, (int, float)) or not math.isfinite(target):
            raise ContractError(f"{where}.target_value", f"must be a finite number (got {target!r})")
        bound = value.get("bound")
        if bound is not None:
            if isinstance(bound, bool) or not isinstance(bound, (int, float)) or not math.isfinite(bound):
                raise ContractError(f"{where}.bound", f"must be a finite number or null (got {bound!r})")
            if (bound < target) if kind == "Maximize" else (bound > target):
                better = "above" if kind == "Maximize" else "below"
                raise ContractError(
                    f"{where}.bound", f"is the value {name} cannot go {better}; the target {target:g} is beyond it "
                    f"(got bound {bound:g})"
                )
            bound = float(bound)
        return cls(metric_name=name, type=kind, target_value=float(target), bound=bound)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"metric_name": self.metric_name, "type": self.type, "target_value": self.target_value}
        if self.bound is not None:
            data["bound"] = self.bound
        return data

    def bound_for(self, values: Sequence[float] = ()) -> float | None:
        """The value the metric cannot pass in its better direction: the run_spec's ``bound``, else from its name,
        conservatively (None when unsure): an error, loss or distance minimised, 0 (when the target and every value
        seen are at least 0); a share of right answers maximised, 1 (the target and every value seen at most 1), or
        100 when they are written in percent."""
        if self.bound is not None:
            return self.bound
        words = {word.lower() for word in _NAME_WORDS.findall(self.metric_name)}
        seen = [self.target_value, *(value for value in values if math.isfinite(value))]
        if self.type == "Minimize" and words & ERROR_WORDS and min(seen) >= 0:
            return 0.0
        if self.type == "Maximize" and words & SHARE_WORDS and min(seen) >= 0:
            for ceiling in (1.0, 100.0):
                if max(seen) <= ceiling:
                    return ceiling
        return None

    @property
    def comparison(self) -> str:
        return ">=" if self.type == "Maximize" else "<="

    @property
    def sign(self) -> int:
        """1 when higher is better (Maximize), -1 when lower is: ``sign * value`` ranks values best-highest."""
        return 1 if self.type == "Maximize" else -1

    def describe(self) -> str:
        """'test:accuracy >= 0.9'."""
        return f"{self.metric_name} {self.comparison} {self.target_value:g}"

    def met(self, value: float | None) -> bool:
        if value is None or not math.isfinite(value):
            return False
        return value >= self.target_value if self.type == "Maximize" else value <= self.target_value

    def shortfall(self, value: float) -> float:
        """How far the value is from the target on the wrong side (0 when met)."""
        if self.met(value):
            return 0.0
        if not math.isfinite(value):
            return math.inf
        return self.sign * (self.target_value - value)


@dataclasses.dataclass(frozen=True)
class ObjectiveCourse:
    """The objective's metric over a job, as the script saved it with the debugger (one value per report, in order):
    how many reports, where it was best (1-based report) and at what value, and its last value. A script that
    reports its held-out metric once per epoch and trained ``reports`` epochs scored ``best_value`` after epoch
    ``best_report``."""

    reports: int
    best_report: int
    best_value: float
    last_value: float
    #: The first value, and the mean of the late part's (:data:`LATE_SHARE`); None in a course recorded before them.
    first_value: float | None = None
    late_mean: float | None = None
    #: The recent part's least-squares line (:func:`recent_reports`, :func:`trend_line`): its slope per report, that
    #: slope's standard error, and the reports' standard deviation around it; None in a course recorded before them.
    recent_slope: float | None = None
    recent_slope_error: float | None = None
    recent_noise: float | None = None

    @classmethod
    def of(cls, objective: Objective, values: Sequence[float] | None) -> ObjectiveCourse | None:
        """The course of ``values`` as ``objective`` ranks them (the earliest of equal bests); None: no finite value."""
        if not values or not all(isinstance(value, (int, float)) and math.isfinite(value) for value in values):
            return None
        best = max(range(len(values)), key=lambda index: (objective.sign * values[index], -index))
        late = values[-late_reports(len(values)) :]
        trend = trend_line(recent_reports(values)) if len(values) >= MIN_RECENT_REPORTS else None
        return cls(
            reports=len(values),
            best_report=best + 1,
            best_value=float(values[best]),
            last_value=float(values[-1]),
            first_value=float(values[0]),
            late_mean=float(sum(late) / len(late)),
            recent_slope=trend[0] if trend else None,
            recent_slope_error=trend[2] if trend else None,
            recent_noise=trend[1] if trend else None,
        )

    def met_before_end(self, objective: Objective) -> bool:
        """The metric met the objective at a report before the last one, and the last one missed it."""
        return self.best_report < self.reports and objective.met(self.best_value) and not objective.met(self.last_value)

    def past_peak(self, objective: Objective) -> bool:
        """The metric was best before the course's late part and that part gave back at least PEAK_LOSS_SHARE of what
        it had gained from its first value: more of the same training would take it further from its best."""
        if self.first_value is None or self.late_mean is None or self.reports < MIN_REPORTS_FOR_PEAK:
            return False
        if self.best_report > self.reports - late_reports(self.reports):
            return False
        gained = objective.sign * (self.best_value - self.first_value)
        given_back = objective.sign * (self.best_value - self.late_mean)
        return gained > 0 and given_back >= PEAK_LOSS_SHARE * gained


    def still_rising(self, objective: Objective) -> bool:
        """The metric still improved when the job ended, more than its noise: its recent part rose (its slope above
        one standard error), its last report is within one standard deviation of the reports around that line from
        its best, and its best is above its first, of at least MIN_REPORTS_FOR_PEAK. More epochs of the same training
        have not yet been shown to hurt. A course recorded before its line asks its last report to be its best.

        Not the last report alone: held-out accuracy on a few hundred samples moves by a point or two from one epoch
        to the next, so a job stopped one epoch after its best may still be rising (decision record 014)."""
        if self.first_value is None or self.reports < MIN_REPORTS_FOR_PEAK:
            return False
        sign = objective.sign
        if sign * (self.best_value - self.first_value) <= 0:
            return False
        if self.recent_slope is None or self.recent_slope_error is None or self.recent_noise is None:
            return self.best_report == self.reports
        rising = sign * self.recent_slope > self.recent_slope_error
        return rising and sign * (self.best_value - self.last_value) <= self.recent_noise


def recent_reports(values: Sequence[float]) -> Sequence[float]:
    """A course's recent part: its last half (rounded up), at least MIN_RECENT_REPORTS."""
    return values[-max(MIN_RECENT_REPORTS, math.ceil(len(values) / 2)) :]


def trend_line(values: Sequence[float]) -> tuple[float, float, float]:
    """(least-squares slope per report, standard deviation around the line, standard error of the slope) of at
    least three values."""
    count = len(values)
    mean_x, mean_y = (count - 1) / 2, sum(values) / count
    spread = sum((x - mean_x) ** 2 for x in range(count))
    slope = sum((x - mean_x) * (y - mean_y) for x, y in enumerate(values)) / spread
    residuals = [y - (mean_y + slope * (x - mean_x)) for x, y in enumerate(values)]
    noise = math.sqrt(sum(r * r for r in residuals) / max(1, count - 2))
    return slope, noise, noise / math.sqrt(spread)


def late_reports(reports: int) -> int:
    """How many of a course's last reports are its late part."""
    return max(1, math.ceil(reports * LATE_SHARE))
