"""The rule-status document: what the job's debugger writes to ``<debug output>/rule-status.json``
and the monitor Lambda reads. SageMaker's ``RuleEvaluationStatus`` vocabulary plus the evidence
the planner needs. Standard library only.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

from contracts import ContractError
from contracts.divergence import Divergence
from contracts.loss_history import LossWindow
from contracts.step_names import step_name

RULE_STATUS_FILE = "rule-status.json"
SCHEMA_VERSION = 2
#: The status document keeps the latest value of at most this many named scalars.
MAX_REPORTED_METRICS = 50
#: ... and each one's values in order while it has saved at most this many: a held-out metric saved once per epoch
#: (the objective's course, ``contracts.objective.ObjectiveCourse``); a scalar saved more often loses its course.
MAX_METRIC_VALUES = 200

# SageMaker's RuleEvaluationStatus values.
IN_PROGRESS = "InProgress"
NO_ISSUES_FOUND = "NoIssuesFound"
ISSUES_FOUND = "IssuesFound"
ERROR = "Error"
STOPPING = "Stopping"
STOPPED = "Stopped"
RULE_EVALUATION_STATUSES = (IN_PROGRESS, NO_ISSUES_FOUND, ISSUES_FOUND, ERROR, STOPPING, STOPPED)

PHASES = ("warmup", "main")
#: A rule's issue kind (RuleIssue.kind): a short lower-case token the rule documents.
ISSUE_KIND_PATTERN = re.compile(r"^[a-z][a-z_]{0,31}$")
#: Issue kinds that mean the data is wrong, not the training: a non-finite model input (ExplodingTensor,
#: CheckInputImages) or loss target (ExplodingTensor), a label outside the model's classes (ClassImbalance). The run ends without a relaunch.
NAN_INPUT = "nan_input"
#: ... and a non-finite target the training loss read (a regression's targets, soft labels): ExplodingTensor.
NAN_TARGET = "nan_target"
LABEL_OUT_OF_RANGE = "label_out_of_range"
DATA_ERROR_ISSUE_KINDS = (NAN_INPUT, NAN_TARGET, LABEL_OUT_OF_RANGE)
#: LossNotDecreasing's kind for a held-out (evaluation) loss that rose while the training loss fell over the same span:
#: the model fits what does not carry over to held-out data (overfitting), not a rate that overshoots, which takes the
#: training loss up too (that stays "rising"). The planner answers it as it answers Overfit.
HELD_OUT_RISING = "held_out_rising"


# --------------------------------------------------------------------------- rule-status document


@dataclasses.dataclass
class RuleIssue:
    """Where and why a rule found an issue."""

    step: int
    tensor: str
    value: float | None
    message: str
    #: "warmup" or "main" when the script said so (Hook.set_context); None when it did not.
    phase: str | None = None
    #: How the rule's condition failed, in the rule's own words, for remedies that differ by it:
    #: TensorVariance "above_max" / "below_min", LossNotDecreasing "rising" / "flat" / "stagnant" /
    #: HELD_OUT_RISING, WeightUpdateRatio "too_large" / "too_small". None for rules with one way to fail.
    kind: str | None = None
    #: The step as the user counts it (contracts.step_names): the optimizer updates before it, and whether it was an
    #: evaluation pass; ``step`` stays the global step the saved data numbers. None: not known (an older document,
    #: an XGBoost job, whose boosting round is its step).
    optimizer_step: int | None = None
    evaluation_pass: bool = False

    def name(self, with_global: bool = False) -> str:
        """'step 7', 'the evaluation pass after step 6 (saved as global step 9)' (contracts.step_names)."""
        return step_name(self.step, self.optimizer_step, self.evaluation_pass, with_global)

    def __post_init__(self) -> None:
        if self.phase is not None and self.phase not in PHASES:
            raise ContractError("issue.phase", f"must be one of {', '.join(PHASES)}; got {self.phase!r}")
        if self.kind is not None and not ISSUE_KIND_PATTERN.match(self.kind):
            raise ContractError("issue.kind", f"must be a short lower-case token like 'above_max'; got {self.kind!r}")


@dataclasses.dataclass
class RuleStatus:
    """One rule's evaluation status, in SageMaker's vocabulary."""

    RuleConfigurationName: str
    RuleEvaluationStatus: str
    StatusDetails: str = ""
    LastModifiedTime: str = ""
    issue: RuleIssue | None = None
    #: Why the rule could not judge the job (None: it judged, or may yet): a quiet rule that judged nothing is not a
    #: clean bill of health, and the run's summary says so (:class:`NotJudged`).
    not_judged: str | None = None

    def __post_init__(self) -> None:
        if self.RuleEvaluationStatus not in RULE_EVALUATION_STATUSES:
            raise ContractError(
                f"rules[{self.RuleConfigurationName}].RuleEvaluationStatus",
                f"must be one of {', '.join(RULE_EVALUATION_STATUSES)}; got {self.RuleEvaluationStatus!r}",
            )


@dataclasses.dataclass(frozen=True)
class NotJudged:
    """A rule that could not judge a job, and why ("no planned_epochs: ..."): its NoIssuesFound says nothing."""

    rule: str
    why: str

    def describe(self) -> str:
        return f"{self.rule} could not judge: {self.why}"

    def to_json(self) -> dict[str, str]:
        return {"rule": self.rule, "why": self.why}


def not_judged_sentence(job_name: str, not_judged: Sequence[NotJudged]) -> str:
    """What a run's summary says of the rules that could not judge its job ("" when every rule judged)."""
    if not not_judged:
        return ""
    return f"In job {job_name}, " + "; ".join(item.describe() for item in not_judged) + "."


#: The evidence keeps the current rates of at most this many of the optimizer's parameter groups.
MAX_REPORTED_LEARNING_RATES = 8


@dataclasses.dataclass
class Peak:
    """Where a series (the loss, the total gradient norm) reached its largest finite value so far, with the
    learning rate and phase of that step: a spike before a rule fired tells a collapse from a slow death."""

    value: float
    step: int
    learning_rate: float | None = None
    phase: str | None = None
    #: The step's optimizer step and whether it was an evaluation pass, as sentences name it (contracts.step_names;
    #: None: unknown, in older reports and XGBoost jobs: the global step is named).
    optimizer_step: int | None = None
    evaluation_pass: bool = False

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Peak | None:
        if not data:
            return None
        return cls(
            value=float(data["value"]),
            step=int(data["step"]),
            learning_rate=parse_number(data.get("learning_rate")),
            phase=data.get("phase"),
            optimizer_step=int(data["optimizer_step"]) if data.get("optimizer_step") is not None else None,
            evaluation_pass=bool(data.get("evaluation_pass", False)),
        )

    def step_name(self) -> str:
        """'step 7 (saved as global step 9)' (contracts.step_names)."""
        return step_name(self.step, self.optimizer_step, self.evaluation_pass, with_global=True)


@dataclasses.dataclass
class Evidence:
    """What the planner reads to choose a remedy. Absent numbers are None."""

    initial_loss: float | None = None
    initial_gradient_norm: float | None = None
    first_issue_step: int | None = None
    #: The first issue's optimizer step (contracts.step_names; None: unknown): where it came in the epoch, in the
    #: unit ``steps_per_epoch`` counts (the script's optimizer steps), whatever the global steps count besides.
    first_issue_optimizer_step: int | None = None
    phase: str | None = None
    #: Optimizer steps per epoch: the number the script said (Hook.set_context), read in the unit the job's counts
    #: show it was given in (contracts.epoch_length).
    steps_per_epoch: int | None = None
    #: The number the script gave, the unit it was read in ("optimizer steps" or "batches"; None: an older report,
    #: taken as optimizer steps), what showed it (a phrase), and the batches an optimizer step took when that decided.
    steps_per_epoch_stated: int | None = None
    steps_per_epoch_unit: str | None = None
    steps_per_epoch_reading: str | None = None
    batches_per_step: int | None = None
    last_step: int | None = None
    last_finite_loss: float | None = None
    max_gradient_norm: float | None = None
    learning_rate_at_issue: float | None = None
    #: The optimizer the script steps, by class name ("SGD", "Adam", ...), and its parameter groups' current
    #: learning rates (distinct, in group order): the planner judges rates in that optimizer's range.
    optimizer: str | None = None
    learning_rates: list[float] | None = None
    #: The run's history in a few numbers: where the loss and the total gradient norm peaked.
    loss_peak: Peak | None = None
    gradient_norm_peak: Peak | None = None
    #: Files in the job's checkpoint directory when the status was last written (None: the job has no
    #: checkpoint directory): 0 means a next job has nothing to continue from.
    checkpoint_files: int | None = None
    #: The training loss's course, in at most contracts.loss_history.MAX_LOSS_WINDOWS windows of steps.
    loss_windows: list[LossWindow] | None = None
    #: How many training labels of each class the job trained on (contracts.training_labels), from its loss
    #: module's inputs; None when it saw none, or more classes than it counts.
    label_counts: list[int] | None = None
    #: The largest dropout probability active while the model trained on those labels (a ``torch.nn`` dropout
    #: module in training mode); None when none was. Dropout lowers how often the model's top class matches its
    #: training labels, as wrong labels do (contracts.training_labels).
    training_dropout: float | None = None
    #: The share of the training input rows the debugger checked that it had seen before, bit for bit
    #: (contracts.training_inputs): about (E - 1) / E for E epochs over unchanged data, about 0 for inputs augmented
    #: in the loader, which lowers the match with the training labels as wrong labels do. None: too few checked.
    training_inputs_repeated: float | None = None
    #: The total gradient norm's course, in windows as the loss's (training steps).
    gradient_norm_windows: list[LossWindow] | None = None
    #: Whether the training loss and the gradient norm rose or spiked far above the run's first step
    #: (contracts.divergence), with or without a NaN; None: they did not.
    loss_divergence: Divergence | None = None
    gradient_norm_divergence: Divergence | None = None
    #: A regression's scale at its first training step: the root mean square of the targets the loss read and of the
    #: model's outputs it compared them with (None: the loss read no real-valued targets shaped as the outputs).
    target_rms: float | None = None
    output_rms: float | None = None
    #: The loss module that compared them, by class name ("MSELoss", "HuberLoss"; None: unknown).
    target_loss: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evidence:
        fields = dict(data)
        for name in ("loss_windows", "gradient_norm_windows"):
            if fields.get(name) is not None:
                fields[name] = [LossWindow.from_dict(window) for window in fields[name]]
        for name in ("loss_peak", "gradient_norm_peak"):
            fields[name] = Peak.from_dict(fields.get(name))
        for name in ("loss_divergence", "gradient_norm_divergence"):
            fields[name] = Divergence.from_dict(fields.get(name))
        if fields.get("learning_rates") is not None:
            fields["learning_rates"] = [float(rate) for rate in fields["learning_rates"]]
        return cls(**fields)


@dataclasses.dataclass
class ActionRecord:
    """An action a rule triggered: StopTraining is carried out in the job; Email/SMS are for the workflow to send."""

    action: str
    rule: str
    step: int
    at: str
    detail: str = ""


@dataclasses.dataclass
class MetricValue:
    """The latest value of a scalar the training script saved (``save_scalar``, ``record_metric``): how the
    workflow reads an objective metric from the job itself, without log regexes."""

    value: float | None
    step: int
    mode: str = "TRAIN"
    #: Every value saved under the name, in order (None once more than MAX_METRIC_VALUES were saved).
    values: list[float | None] | None = None

    def with_value(self, value: float | None, step: int, mode: str) -> MetricValue:
        """This metric after one more saved value."""
        values = None if self.values is None or len(self.values) >= MAX_METRIC_VALUES else [*self.values, value]
        return MetricValue(value=value, step=step, mode=mode, values=values)


@dataclasses.dataclass
class RuleStatusDocument:
    job_name: str
    updated_at: str
    training_ended: bool = False
    last_step: int = -1
    rules: list[RuleStatus] = dataclasses.field(default_factory=list)
    evidence: Evidence = dataclasses.field(default_factory=Evidence)
    actions: list[ActionRecord] = dataclasses.field(default_factory=list)
    metrics: dict[str, MetricValue] = dataclasses.field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def issues_found(self) -> list[RuleStatus]:
        return [rule for rule in self.rules if rule.RuleEvaluationStatus == ISSUES_FOUND]

    def not_judged(self) -> list[NotJudged]:
        return [NotJudged(rule.RuleConfigurationName, rule.not_judged) for rule in self.rules if rule.not_judged]

    def to_dict(self) -> dict[str, Any]:
        return _finite_or_none(dataclasses.asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleStatusDocument:
        if not isinstance(data, Mapping):
            raise ContractError("rule-status", "must be a JSON object")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ContractError("rule-status.schema_version", f"must be {SCHEMA_VERSION}; got {version!r}")
        try:
            rules = []
            for rule in data.get("rules", []):
                rule = dict(rule)
                issue = rule.pop("issue", None)
                if issue:
                    issue = dict(issue)
                    issue["value"] = parse_number(issue.get("value"))
                rules.append(RuleStatus(**rule, issue=RuleIssue(**issue) if issue else None))
            return cls(
                job_name=data["job_name"],
                updated_at=data["updated_at"],
                training_ended=bool(data.get("training_ended", False)),
                last_step=int(data.get("last_step", -1)),
                rules=rules,
                evidence=Evidence.from_dict(data.get("evidence", {})),
                actions=[ActionRecord(**action) for action in data.get("actions", [])],
                metrics={
                    str(name): MetricValue(
                        value=parse_number(metric.get("value")),
                        step=int(metric["step"]),
                        mode=str(metric.get("mode", "TRAIN")),
                        values=[parse_number(value) for value in metric["values"]] if metric.get("values") is not None else None,
                    )
                    for name, metric in dict(data.get("metrics", {})).items()
                },
            )
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise ContractError("rule-status", f"does not have the agreed shape: {error}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> RuleStatusDocument:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ContractError("rule-status", f"is not JSON: {error}") from None
        return cls.from_dict(data)


def _finite_or_none(value: Any) -> Any:
    """JSON has no NaN or Infinity: non-finite numbers become their string names so nothing is lost."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf"
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    return value


def parse_number(value: Any) -> float | None:
    """Read back a number written by ``to_dict`` ("nan"/"inf" strings included)."""
    if value is None:
        return None
    return float(value)


def rule_statuses_from_sagemaker(statuses: Sequence[Mapping[str, Any]]) -> list[RuleStatus]:
    """Normalise DescribeTrainingJob's DebugRuleEvaluationStatuses (legacy mode) into RuleStatus."""
    normalised = []
    for status in statuses:
        modified = status.get("LastModifiedTime", "")
        normalised.append(
            RuleStatus(
                RuleConfigurationName=status["RuleConfigurationName"],
                RuleEvaluationStatus=status.get("RuleEvaluationStatus", IN_PROGRESS),
                StatusDetails=status.get("StatusDetails", ""),
                LastModifiedTime=modified.isoformat() if hasattr(modified, "isoformat") else str(modified),
            )
        )
    return normalised
