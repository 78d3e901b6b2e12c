"""One attempt of an execution as the payload records it: the job, what it ran with, how it ended (rule statuses,
the issue, the debugger's evidence, metrics) and the planner's decision; and the bound on how many are kept."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, Field, model_validator

from contracts import objective as objective_contract
from contracts.divergence import typical_before_spike
from contracts.loss_history import MAX_LOSS_WINDOWS
from contracts.remedies import FAILURE_KINDS
from contracts.rule_status import ISSUE_KIND_PATTERN, MAX_REPORTED_LEARNING_RATES, Evidence, NotJudged
from contracts.step_names import step_name
from contracts.training_labels import MAX_COUNTED_CLASSES
from lambdas.remediation.state.payload_fields import (
    MAX_CHANGES,
    MAX_FAILURE_REASON_BYTES,
    MAX_ISSUE_MESSAGE_BYTES,
    MAX_METRICS,
    MAX_NAME_BYTES,
    MAX_REASON_BYTES,
    MAX_RULE_STATUSES,
    MAX_STATUS_BYTES,
    STRICT,
    Count,
    Hyperparameters,
    JobName,
    Text,
    Whole,
)
from lambdas.remediation.state.run_spec import summarize_hyperparameters

#: Attempts kept in the payload: the first one plus the latest ``MAX_KEPT_ATTEMPTS - 1``.
MAX_KEPT_ATTEMPTS = 10
#: A rule's reason for not judging, as an attempt keeps it (the payload stays small).
MAX_NOT_JUDGED_BYTES = 400
#: ... clipped to this many characters first.
MAX_NOT_JUDGED_CHARACTERS = 200

Outcome = Literal[
    "running",  # launched, not finished yet
    "issues_found",  # a debugger rule fired (the job was or is being stopped)
    "completed",  # the job completed, no rule found an issue, and the objective (if any) was met
    "objective_missed",  # the job completed with quiet rules but its metric missed the objective
    "objective_unmeasured",  # the job completed but never reported the objective's metric
    "missing_evidence",  # the job completed but no rule status was ever read: the rules did not run
    "algorithm_error",  # the training code failed (not because of a rule)
    "out_of_memory",  # the training process ran out of memory (killed by the kernel, or OutOfMemoryError)
    "batch_of_one",  # a training batch of one sample reached a batch-norm layer (the last batch of an epoch)
    "data_error",  # the data is wrong (NaN inputs or targets, labels outside the model's classes): not remediable
    "capacity_error",  # SageMaker had no capacity (after the monitor's own retries)
    "stopped",  # stopped by someone or something other than the workflow
    "failed",  # any other failure
    "monitor_limit",  # max_monitor_transitions reached while the job ran
    "max_runtime_exceeded",  # SageMaker stopped the job at its MaxRuntimeInSeconds
]
Phase = Literal["warmup", "main"]
EndCause = Literal[
    "budget_spent",
    "no_remedy_left",
    "completed",
    "objective_missed",
    "objective_unmeasured",
    "missing_evidence",
    "algorithm_error",
    "out_of_memory",
    "batch_of_one",
    "data_error",
    "capacity_error",
    "stopped",
    "failed",
    "monitor_limit",
    "max_runtime_exceeded",
    "instance_hours_spent",
]



class RuleStatusSummary(BaseModel):
    """One rule's status as the monitor last read it (SageMaker's RuleEvaluationStatus vocabulary)."""

    model_config = STRICT

    name: Text(MAX_NAME_BYTES, min_length=1)
    status: Literal["InProgress", "NoIssuesFound", "IssuesFound", "Error", "Stopping", "Stopped"]
    step: Count | None = None
    #: Why the rule could not judge the job (``contracts.rule_status.RuleStatus.not_judged``); None: it judged.
    not_judged: Text(MAX_NOT_JUDGED_BYTES, min_length=1) | None = None


class Issue(BaseModel):
    """Where the rule that stopped the job fired."""

    model_config = STRICT

    rule: Text(MAX_NAME_BYTES, min_length=1)
    step: Count | None = None
    tensor: Text(MAX_NAME_BYTES) = ""
    value: float | None = None  # may be NaN or infinite (serialised as "NaN" / "Infinity")
    phase: Phase | None = None
    message: Text(MAX_ISSUE_MESSAGE_BYTES) = ""
    #: How the rule's condition failed (contracts.rule_status.RuleIssue.kind).
    kind: Annotated[str, Field(pattern=ISSUE_KIND_PATTERN.pattern)] | None = None
    #: The step as the user counts it: optimizer updates before it, and whether it was an evaluation pass
    #: (contracts.rule_status.RuleIssue); ``step`` is the global step the saved data numbers.
    optimizer_step: Count | None = None
    evaluation_pass: bool = False

    def step_name(self, with_global: bool = True) -> str | None:
        """'step 7 (saved as global step 9)', 'the evaluation pass after step 6 (...)' (contracts.step_names);
        None without a step."""
        if self.step is None:
            return None
        return step_name(self.step, self.optimizer_step, self.evaluation_pass, with_global)


class Peak(BaseModel):
    """Where the loss or the total gradient norm peaked, and the rate and phase then (``contracts.rule_status.Peak``)."""

    model_config = STRICT

    value: float
    step: Whole
    learning_rate: float | None = None
    phase: Phase | None = None
    optimizer_step: Whole | None = None
    evaluation_pass: bool = False


class ObjectiveCourse(BaseModel):
    """The objective's metric over the job as the script saved it (``contracts.objective.ObjectiveCourse``)."""

    model_config = STRICT

    reports: Annotated[Whole, Field(ge=1)]
    best_report: Annotated[Whole, Field(ge=1)]
    best_value: float
    last_value: float
    first_value: float | None = None
    late_mean: float | None = None
    recent_slope: float | None = None
    recent_slope_error: float | None = None
    recent_noise: float | None = None


class LossWindow(BaseModel):
    """Consecutive training steps and their mean loss (``contracts.loss_history.LossWindow``)."""

    model_config = STRICT

    first_step: Whole
    last_step: Whole
    count: Annotated[Whole, Field(ge=1)]
    mean: float
    agreement: Annotated[float, Field(ge=0, le=1)] | None = None
    agreement_count: Whole = 0
    spread: Annotated[float, Field(ge=0)] | None = None
    peak: float | None = None
    peak_step: Whole | None = None
    first_optimizer_step: Whole | None = None
    last_optimizer_step: Whole | None = None
    peak_optimizer_step: Whole | None = None


class Divergence(BaseModel):
    """The loss or the gradient norm risen or spiked far above the run's first step (``contracts.divergence``)."""

    model_config = STRICT

    series: Literal["loss", "gradient norm"]
    kind: Literal["rising", "spiking"]
    early: float
    level: float
    from_step: Whole
    peak_step: Whole
    end: float
    from_optimizer_step: Whole | None = None
    peak_optimizer_step: Whole | None = None


class AttemptEvidence(BaseModel):
    """The debugger's evidence for the planner (the fields of ``contracts.rule_status.Evidence``): a few numbers
    per attempt, so the payload stays small however long the job trained."""

    model_config = STRICT

    initial_loss: float | None = None
    initial_gradient_norm: float | None = None
    first_issue_step: Count | None = None
    first_issue_optimizer_step: Count | None = None
    phase: Phase | None = None
    steps_per_epoch: Annotated[Whole, Field(ge=1)] | None = None
    steps_per_epoch_stated: Annotated[Whole, Field(ge=1)] | None = None
    steps_per_epoch_unit: Literal["optimizer steps", "batches"] | None = None
    steps_per_epoch_reading: Text(MAX_REASON_BYTES) | None = None
    batches_per_step: Annotated[Whole, Field(ge=1)] | None = None
    last_step: Whole | None = None
    last_finite_loss: float | None = None
    max_gradient_norm: float | None = None
    learning_rate_at_issue: float | None = None
    optimizer: Text(MAX_NAME_BYTES) | None = None
    learning_rates: Annotated[list[float], Field(max_length=MAX_REPORTED_LEARNING_RATES)] | None = None
    loss_peak: Peak | None = None
    gradient_norm_peak: Peak | None = None
    checkpoint_files: Count | None = None
    loss_windows: Annotated[list[LossWindow], Field(max_length=MAX_LOSS_WINDOWS)] | None = None
    label_counts: Annotated[list[Whole], Field(max_length=MAX_COUNTED_CLASSES)] | None = None
    training_dropout: Annotated[float, Field(ge=0, le=1)] | None = None
    training_inputs_repeated: Annotated[float, Field(ge=0, le=1)] | None = None
    loss_divergence: Divergence | None = None
    gradient_norm_divergence: Divergence | None = None
    target_rms: Annotated[float, Field(ge=0)] | None = None
    output_rms: Annotated[float, Field(ge=0)] | None = None
    target_loss: Text(MAX_NAME_BYTES) | None = None
    #: The total gradient norm's typical size before it spiked, from the job's windows of it (what clipping is scaled
    #: to: contracts.divergence.typical_before_spike); the windows themselves stay in the status document.
    gradient_norm_typical: Annotated[float, Field(ge=0)] | None = None
    #: The objective's metric over the job, when the script saved it with the debugger (the monitor reads it from
    #: the status document's metrics).
    objective_course: ObjectiveCourse | None = None

    @classmethod
    def from_contract(
        cls, evidence: Evidence, objective_course: objective_contract.ObjectiveCourse | None = None
    ) -> AttemptEvidence:
        fields = {
            key: value for key, value in dataclasses.asdict(evidence).items() if value is not None and key in cls.model_fields
        }
        if objective_course is not None:
            fields["objective_course"] = dataclasses.asdict(objective_course)
        typical = typical_before_spike(evidence.gradient_norm_windows, evidence.initial_gradient_norm)
        if typical is not None and math.isfinite(typical):
            fields["gradient_norm_typical"] = typical
        return cls.model_validate(fields)


class Change(BaseModel):
    """A hyperparameter's value before and after a decision (long text values clipped: the attempt's
    hyperparameters hold them whole)."""

    model_config = STRICT

    before: bool | int | float | Text(MAX_NAME_BYTES) | None
    after: bool | int | float | Text(MAX_NAME_BYTES) | None


_CHANGE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,255}$")


def _change_names(value: dict[str, Change]) -> dict[str, Change]:
    for name in value:
        if not _CHANGE_NAME.match(name):
            raise ValueError(f"changes: {name!r} is not a hyperparameter name")
    return value


Measured = bool | int | float | Text(MAX_NAME_BYTES) | None


class EvidenceFact(BaseModel):
    """One test of the chosen remedy's condition that held (``contracts.remedy_conditions.Fact``), without its
    sentence: what the job showed and the bound it was held against."""

    model_config = STRICT

    test: Text(MAX_NAME_BYTES, min_length=1)
    measured: Measured = None
    bound: Measured = None


SkipWhy = Literal["made_it_worse", "repeats_a_job", "not_allowed", "fixed_hyperparameter", "too_many_hyperparameters"]


class SkippedRemedy(BaseModel):
    """A remedy whose condition held and whose change applied, left out, and why: it made the objective worse before
    (``job``: the job after it), it would repeat ``job``'s settings, it changes the training loss without the user's
    consent, it changes a hyperparameter the run fixes, or its job would carry ``carried`` hyperparameters, more than
    SageMaker takes."""

    model_config = STRICT

    remedy: Annotated[str, Field(min_length=1, max_length=64)]
    why: SkipWhy
    job: Annotated[Whole, Field(ge=1)] | None = None
    carried: Annotated[Whole, Field(ge=1)] | None = None


class Decision(BaseModel):
    """What the planner decided after an attempt: the structured fields, and the reason rendered from them
    (``lambdas.remediation.text.decision_text``)."""

    model_config = STRICT

    #: The remedy chosen ("none" when the run ends).
    remedy: Annotated[str, Field(min_length=1, max_length=64)]
    reason: Text(MAX_REASON_BYTES, min_length=1)
    next_action: Literal["launch_new", "end"]
    #: What the remedies answered: the rule that fired or the failure kind ("ExplodingTensor", "objective_missed");
    #: None when the attempt ended in a way no remedy answers (completed, failed in the script, ...).
    cause: Text(MAX_NAME_BYTES) | None = None
    #: Why the workflow ends (None when relaunching): "budget_spent", "no_remedy_left", or the
    #: attempt's outcome when it was not remediable ("completed", "algorithm_error", ...).
    end_cause: EndCause | None = None
    #: Setting -> before/after: hyperparameters by name, the debugger's settings by run_spec field
    #: (``debugger_robust_loss``).
    changes: Annotated[dict[str, Change], Field(max_length=MAX_CHANGES), AfterValidator(_change_names)] = Field(
        default_factory=dict
    )
    #: A rule parameter the next job's debugger watches with ("CheckInputImages.threshold_mean" -> before/after).
    rule_changes: Annotated[dict[str, Change], Field(max_length=MAX_CHANGES)] = Field(default_factory=dict)
    #: The tests of the chosen remedy's condition that held.
    evidence: Annotated[list[EvidenceFact], Field(max_length=24)] = Field(default_factory=list)
    #: Remedies before the chosen one (or, when the run ends, any) whose condition held but that were left out.
    skipped: Annotated[list[SkippedRemedy], Field(max_length=24)] = Field(default_factory=list)
    #: The next job starts from this job's checkpoints (the remedy allows it) instead of from step 0.
    resume_from: JobName | None = None
    #: The earlier job whose settings the next one goes back to (the closest to the objective so far), when not this.
    planned_from: Annotated[Whole, Field(ge=1)] | None = None
    #: The remedy a limit kept from launching (the relaunch budget, the stack's instance-hours), when one did.
    next_remedy: Annotated[str, Field(min_length=1, max_length=64)] | None = None


class Attempt(BaseModel):
    """One training job of the execution: what it ran, how it ended, what the planner made of it."""

    def summary(self, limit: int = 70) -> str:
        return summarize_hyperparameters(self.hyperparameters, limit)

    @property
    def failure_key(self) -> str:
        """The key of the remedies that answer this attempt: the failure kind, or the rule that fired."""
        if self.outcome in FAILURE_KINDS:
            return self.outcome
        if self.issue is not None:
            return self.issue.rule
        for status in self.rule_statuses:
            if status.status == "IssuesFound":
                return status.name
        return "unknown rule"

    def not_judged(self) -> list[NotJudged]:
        """The rules that could not judge this job, and why."""
        return [NotJudged(status.name, status.not_judged) for status in self.rule_statuses if status.not_judged]

    def settings(self) -> dict[str, object]:
        """What it ran with, as remedies read and change it: hyperparameters and debugger settings."""
        return {**self.hyperparameters, **self.debugger_settings}

    model_config = STRICT

    number: Annotated[Whole, Field(ge=1)]
    job_name: JobName
    #: What this job ran with: its hyperparameters, and its debugger's settings that change the training loss
    #: (run_spec field -> value, ``contracts.debugger_settings``; none for a framework without them).
    hyperparameters: Hyperparameters
    debugger_settings: Annotated[dict[str, Text(MAX_NAME_BYTES)], Field(max_length=4)] = Field(default_factory=dict)
    outcome: Outcome = "running"
    #: The monitor's reason for the outcome, in its own words (which rule gave no verdict, what SageMaker said).
    outcome_reason: Text(MAX_REASON_BYTES) | None = None
    job_status: Text(MAX_STATUS_BYTES) = ""
    failure_reason: Text(MAX_FAILURE_REASON_BYTES) = ""
    rule_statuses: Annotated[list[RuleStatusSummary], Field(max_length=MAX_RULE_STATUSES)] = Field(default_factory=list)
    issue: Issue | None = None
    evidence: AttemptEvidence | None = None
    metrics: Annotated[dict[str, float], Field(max_length=MAX_METRICS)] = Field(default_factory=dict)
    #: The objective's metric as this job reported it (None: no objective, or never reported).
    objective_value: float | None = None
    #: The job whose checkpoints this one started from, and how many checkpoint files were carried over
    #: (0: that job left none, so this one started from step 0).
    resumed_from: JobName | None = None
    resumed_checkpoint_files: Count | None = None
    #: Why the last decision's checkpoints were not carried over (then this job started from step 0).
    resume_skipped: Text(MAX_REASON_BYTES) | None = None
    #: Instance-seconds this job may use at most (InstanceCount x MaxRuntimeInSeconds), reserved at its launch, and
    #: what it used once it ended (counted once in history.instance_seconds_used).
    reserved_instance_seconds: Count | None = None
    instance_seconds: Count | None = None
    decision: Decision | None = None

    @model_validator(mode="after")
    def _metric_names(self) -> Attempt:
        for name in self.metrics:
            if not 1 <= len(name) <= 64 or not name.isprintable() or not name.isascii():
                raise ValueError(f"metrics: names have 1-64 printable ASCII characters (got {name!r})")
        return self


def bound_attempts(attempts: list[Attempt], dropped: int) -> tuple[list[Attempt], int]:
    """Keep the first attempt and the latest ``MAX_KEPT_ATTEMPTS - 1``; count the rest as dropped."""
    if len(attempts) <= MAX_KEPT_ATTEMPTS:
        return attempts, dropped
    excess = len(attempts) - MAX_KEPT_ATTEMPTS
    return [attempts[0], *attempts[1 + excess :]], dropped + excess
