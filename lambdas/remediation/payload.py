"""The workflow's JSON state payload, as pydantic v2 models.

The payload keeps the AWS sample's shape (``{"state": {"history": ...,
"next_action": ..., "job_status": ..., "rule_status": ..., "run_spec": ...}}``)
and adds what the sample lacked: the policy and the declared remedies and
objective, the budgets, the Wait interval the ASL reads with ``SecondsPath``,
and a bounded list of attempts (the first one and the latest ones, with a count
of those dropped) so the payload stays far below Step Functions' 256 KiB.

A run_spec is what one training job runs: the user's script (``entry_point``
in ``source_dir``), its own ``hyperparameters``, the channels and metric
regexes, and the job settings. The bounds and patterns come from
``contracts.run_spec``; the execution input that becomes the first state is in
``lambdas.remediation.execution_input``.

Every model forbids unknown keys. Bad input raises ``InvalidState`` naming each
bad field. The models also work through Powertools' parser
(``aws_lambda_powertools.utilities.parser.parse(event=..., model=StatePayload)``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from contracts import distributed, rule_selection
from contracts import objective as objective_contract
from contracts import remedies as remedies_contract
from contracts import run_spec as bounds
from contracts.rule_status import ISSUE_KIND_PATTERN, Evidence
from lambdas.remediation import remedy_sets, training_images
from lambdas.remediation.validation_messages import InvalidState, clip, describe_validation_error

# --------------------------------------------------------------------------- limits

#: Step Functions' cap on a state's input/output, in bytes.
STEP_FUNCTIONS_PAYLOAD_LIMIT = 256 * 1024
#: Attempts kept in the payload: the first one plus the latest ``MAX_KEPT_ATTEMPTS - 1``.
MAX_KEPT_ATTEMPTS = 10
#: Free-text fields are clipped so that their JSON text (ASCII-escaped, as Python's json
#: writes it) takes at most this many bytes; the worst case payload stays far below the cap.
MAX_REASON_BYTES = 1200
MAX_FAILURE_REASON_BYTES = 1000
MAX_ISSUE_MESSAGE_BYTES = 500
MAX_NAME_BYTES = 128
MAX_STATUS_BYTES = 64
MAX_RULE_STATUSES = 10
MAX_METRICS = 12
#: A decision changes at most this many hyperparameters at once.
MAX_CHANGES = 8
DEFAULT_FRAMEWORK_VERSION = training_images.DEFAULT_FRAMEWORK_VERSION

NextAction = Literal["launch_new", "monitor", "end"]
PolicyName = Literal["evidence", "anchor", "declared"]
Outcome = Literal[
    "running",  # launched, not finished yet
    "issues_found",  # a debugger rule fired (the job was or is being stopped)
    "completed",  # the job completed, no rule found an issue, and the objective (if any) was met
    "objective_missed",  # the job completed with quiet rules but its metric missed the objective
    "objective_unmeasured",  # the job completed but never reported the objective's metric
    "missing_evidence",  # the job completed but no rule status was ever read: the rules did not run
    "algorithm_error",  # the training code failed (not because of a rule)
    "out_of_memory",  # the training process ran out of memory (killed by the kernel, or OutOfMemoryError)
    "data_error",  # the data is wrong (NaN inputs, labels outside the model's classes): not remediable
    "capacity_error",  # SageMaker had no capacity (after the monitor's own retries)
    "stopped",  # stopped by someone or something other than the workflow
    "failed",  # any other failure
    "monitor_limit",  # max_monitor_transitions reached while the job ran
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
    "data_error",
    "capacity_error",
    "stopped",
    "failed",
    "monitor_limit",
]


# --------------------------------------------------------------------------- field types


def _no_bool(value: Any) -> Any:
    """pydantic's lax mode reads True as 1 and "0.1" as 0.1; a boolean or a string in a numeric field is a
    mistake to name, not a value to convert."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not a boolean (got {value!r})")
    if isinstance(value, str):
        raise ValueError(f"must be a number, not a string (got {value!r}); write it without quotes")
    return value


def _zero_or_one_or_bool(value: Any) -> Any:
    """The AWS sample wrote add_batch_norm as 0/1; booleans are accepted too."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    raise ValueError(f"must be true/false or 1/0 (got {value!r})")


def clip_json(text: str, limit: int) -> str:
    """``text`` cut (with "...") so that its JSON string body, ASCII-escaped, is at most ``limit`` bytes."""
    if len(json.dumps(text)) - 2 <= limit:
        return text
    low, high = 0, min(len(text), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if len(json.dumps(text[:middle] + "...")) - 2 <= limit:
            low = middle
        else:
            high = middle - 1
    return text[:low] + "..."


def Text(limit: int, min_length: int = 0) -> Any:  # noqa: N802 - a type factory, used like a type
    """A free-text string clipped to ``limit`` JSON bytes (messages from AWS or the job are cut, not refused)."""
    return Annotated[
        str,
        BeforeValidator(lambda value: clip_json(value, limit) if isinstance(value, str) else value),
        Field(min_length=min_length),
    ]


def _within(limits: bounds.Bounds) -> Any:
    return Field(ge=limits.low, le=limits.high)


Number = Annotated[float, BeforeValidator(_no_bool)]
Whole = Annotated[int, BeforeValidator(_no_bool)]
Flag = Annotated[bool, BeforeValidator(_zero_or_one_or_bool)]
BucketName = Annotated[str, AfterValidator(bounds.check_bucket_name)]
RoleArn = Annotated[str, AfterValidator(bounds.check_role_arn)]
Region = Annotated[str, AfterValidator(bounds.check_region)]
InstanceType = Annotated[str, AfterValidator(bounds.check_instance_type)]
JobName = Annotated[str, AfterValidator(bounds.check_job_name)]
BaseJobName = Annotated[str, AfterValidator(lambda name: bounds.check_job_name(name, bounds.MAX_BASE_JOB_NAME_LENGTH))]
EntryPoint = Annotated[str, AfterValidator(bounds.check_entry_point)]
S3Uri = Annotated[str, AfterValidator(bounds.check_s3_uri)]
Framework = Annotated[str, AfterValidator(bounds.check_framework)]
#: A framework's version ("2.13", "3.2-0"): which ones exist depends on the framework, so the models check it with
#: canonical_framework_version once both are known.
FrameworkVersion = Annotated[str, Field(min_length=1, max_length=16)]


def canonical_framework_version(data: Any) -> Any:
    """A model's input with its framework_version checked against its framework (the framework's default when
    left out or null) and written the image tables' way ("2.13.0" -> "2.13"). Raises ValueError naming the field."""
    if not isinstance(data, Mapping):
        return data
    framework = data.get("framework", bounds.DEFAULT_FRAMEWORK)
    if framework not in bounds.FRAMEWORKS:
        return data  # the framework field's own check says what is wrong
    version = data.get("framework_version")
    if version is not None and not isinstance(version, str):
        return data  # a string is required: the field's own check says so
    try:
        canonical = training_images.check_framework_version(framework, version)
    except training_images.TrainingImageError as error:
        raise ValueError(str(error).removeprefix("run_spec.")) from None
    return {**data, "framework_version": canonical}


HyperparameterValue = bool | int | float | str
#: The shared contract checks these first (one clear message per bad entry), then pydantic types them.
Hyperparameters = Annotated[dict[str, HyperparameterValue], BeforeValidator(bounds.check_hyperparameters)]
Channels = Annotated[dict[str, str], BeforeValidator(bounds.check_channels)]
MetricDefinitions = Annotated[list[dict[str, str]], BeforeValidator(bounds.check_metric_definitions)]
#: The built-in rules that watch the job (contracts.rule_selection); None: its DEFAULT_RULES.
RuleSelection = Annotated[list[dict[str, Any]], BeforeValidator(rule_selection.parse_rules)]
Count = Annotated[Whole, Field(ge=0)]
SaveInterval = Annotated[Whole, _within(bounds.SAVE_INTERVAL)]
MaxRunSeconds = Annotated[Whole, _within(bounds.MAX_RUN_SECONDS)]
RetrainingBudget = Annotated[Whole, _within(bounds.RETRAINING_BUDGET)]
MonitorTransitions = Annotated[Whole, _within(bounds.MONITOR_TRANSITIONS)]
MonitorInterval = Annotated[Whole, _within(bounds.MONITOR_INTERVAL_SECONDS)]
InstanceCount = Annotated[int, BeforeValidator(distributed.check_instance_count)]
#: The SDK's PyTorch ``distribution``: {} or {"torch_distributed" | "pytorchddp": {"enabled": bool}}.
Distribution = Annotated[dict[str, dict[str, bool]], BeforeValidator(distributed.check_distribution)]


def _objective_json(value: Any) -> dict[str, Any] | None:
    return None if value is None else objective_contract.Objective.from_json(value).to_json()


ObjectiveJson = Annotated[dict[str, Any] | None, BeforeValidator(_objective_json)]

_STRICT = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="strings")


# --------------------------------------------------------------------------- run spec


class RunSpec(BaseModel):
    """What one training job runs. One snapshot per attempt, every field given."""

    model_config = _STRICT

    entry_point: EntryPoint
    source_dir: S3Uri
    hyperparameters: Hyperparameters
    #: The framework the script trains with (its container image, debugger hook and default rules); states
    #: written before XGBoost was supported have none: PyTorch.
    framework: Framework = bounds.DEFAULT_FRAMEWORK
    framework_version: FrameworkVersion
    channels: Channels
    metric_definitions: MetricDefinitions
    bucket: BucketName
    base_job_name: BaseJobName
    instance_type: InstanceType
    region: Region
    sm_role: RoleArn
    debugger_save_interval: SaveInterval
    rules: RuleSelection | None = None
    use_spot_instances: Flag
    legacy_sagemaker_debugger: Flag
    max_run_seconds: MaxRunSeconds
    #: TensorBoardOutputConfig.S3OutputPath: each job's event files land at {it}{job}/tensorboard-output/.
    #: None (a payload from before the field): the default beside the debug output.
    tensorboard_output_path: S3Uri | None = None
    #: Instances per job (ResourceConfig.InstanceCount) and how the container launches the script on them.
    instance_count: InstanceCount = 1
    distribution: Distribution = Field(default_factory=dict)

    _framework_version = model_validator(mode="before")(canonical_framework_version)

    @model_validator(mode="after")
    def _local_instances_cannot_use_spot(self) -> RunSpec:
        if self.use_spot_instances and self.instance_type in bounds.LOCAL_INSTANCE_TYPES:
            raise ValueError("use_spot_instances: must be false when instance_type is local (spot is a cloud option)")
        return self

    def summary(self, limit: int = 70) -> str:
        """'lr=0.1, grad_clip=0, epochs=3' for notifications and reasons (cut at ``limit`` characters)."""
        return summarize_hyperparameters(self.hyperparameters, limit)

    def with_hyperparameters(self, hyperparameters: Mapping[str, HyperparameterValue]) -> RunSpec:
        return RunSpec.model_validate({**self.model_dump(), "hyperparameters": dict(hyperparameters)})

    def watching_rules(self) -> list[dict[str, Any]]:
        """The rules that watch this run's jobs: its selection, else its framework's defaults."""
        return rule_selection.watching_rules(self.rules, self.framework)

    def with_rules(self, rules: list[dict[str, Any]]) -> RunSpec:
        return RunSpec.model_validate({**self.model_dump(), "rules": rules})


def summarize_hyperparameters(hyperparameters: Mapping[str, HyperparameterValue], limit: int = 70) -> str:
    text = ", ".join(f"{name}={remedies_contract.show(value)}" for name, value in hyperparameters.items())
    return clip(text or "no hyperparameters", limit)


# --------------------------------------------------------------------------- history and attempts


class History(BaseModel):
    """The sample's counters (names kept), plus capacity retries and a count per changed hyperparameter."""

    model_config = _STRICT

    num_warmup_adjustments: Count = 0
    num_batch_layer_adjustments: Count = 0
    num_retraining: Count = 0
    latest_job_name: str = ""
    num_learning_rate_adjustments: Count = 0
    num_monitor_transitions: Count = 0
    capacity_retries: Count = 0
    #: Monitor polls in a row whose AWS reads kept failing transiently (throttling): waited out, not acted on.
    consecutive_read_failures: Count = 0
    num_hyperparameter_adjustments: Annotated[dict[str, Count], Field(max_length=bounds.MAX_CHANNELS * 5)] = Field(
        default_factory=dict
    )

    @model_validator(mode="after")
    def _job_name(self) -> History:
        if self.latest_job_name:
            bounds.check_job_name(self.latest_job_name)
        return self


class RuleStatusSummary(BaseModel):
    """One rule's status as the monitor last read it (SageMaker's RuleEvaluationStatus vocabulary)."""

    model_config = _STRICT

    name: Text(MAX_NAME_BYTES, min_length=1)
    status: Literal["InProgress", "NoIssuesFound", "IssuesFound", "Error", "Stopping", "Stopped"]
    step: Count | None = None


class Issue(BaseModel):
    """Where the rule that stopped the job fired."""

    model_config = _STRICT

    rule: Text(MAX_NAME_BYTES, min_length=1)
    step: Count | None = None
    tensor: Text(MAX_NAME_BYTES) = ""
    value: float | None = None  # may be NaN or infinite (serialised as "NaN" / "Infinity")
    phase: Phase | None = None
    message: Text(MAX_ISSUE_MESSAGE_BYTES) = ""
    #: How the rule's condition failed (contracts.rule_status.RuleIssue.kind).
    kind: Annotated[str, Field(pattern=ISSUE_KIND_PATTERN.pattern)] | None = None


class AttemptEvidence(BaseModel):
    """The debugger's evidence for the planner (the fields of ``contracts.rule_status.Evidence``)."""

    model_config = _STRICT

    initial_loss: float | None = None
    initial_gradient_norm: float | None = None
    first_issue_step: Count | None = None
    phase: Phase | None = None
    steps_per_epoch: Annotated[Whole, Field(ge=1)] | None = None
    last_step: Whole | None = None
    last_finite_loss: float | None = None
    max_gradient_norm: float | None = None
    learning_rate_at_issue: float | None = None

    @classmethod
    def from_contract(cls, evidence: Evidence) -> AttemptEvidence:
        return cls.model_validate(
            {key: value for key, value in vars(evidence).items() if value is not None and key in cls.model_fields}
        )


class Change(BaseModel):
    """A hyperparameter's value before and after a decision (long text values clipped: the attempt's
    hyperparameters hold them whole)."""

    model_config = _STRICT

    before: bool | int | float | Text(MAX_NAME_BYTES) | None
    after: bool | int | float | Text(MAX_NAME_BYTES) | None


_CHANGE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,255}$")


def _change_names(value: dict[str, Change]) -> dict[str, Change]:
    for name in value:
        if not _CHANGE_NAME.match(name):
            raise ValueError(f"changes: {name!r} is not a hyperparameter name")
    return value


class Decision(BaseModel):
    """What the planner decided after an attempt, and why (a readable sentence with the evidence)."""

    model_config = _STRICT

    remedy: Annotated[str, Field(min_length=1, max_length=64)]
    reason: Text(MAX_REASON_BYTES, min_length=1)
    next_action: Literal["launch_new", "end"]
    #: Why the workflow ends (None when relaunching): "budget_spent", "no_remedy_left", or the
    #: attempt's outcome when it was not remediable ("completed", "algorithm_error", ...).
    end_cause: EndCause | None = None
    #: Hyperparameter name -> before/after.
    changes: Annotated[dict[str, Change], Field(max_length=MAX_CHANGES), AfterValidator(_change_names)] = Field(
        default_factory=dict
    )
    #: The next job starts from this job's checkpoints (the remedy allows it) instead of from step 0.
    resume_from: JobName | None = None


class Attempt(BaseModel):
    """One training job of the execution: what it ran, how it ended, what the planner made of it."""

    def summary(self, limit: int = 70) -> str:
        return summarize_hyperparameters(self.hyperparameters, limit)

    model_config = _STRICT

    number: Annotated[Whole, Field(ge=1)]
    job_name: JobName
    #: What this job ran with (the rest of the run_spec is the same for every attempt: the planner changes
    #: hyperparameters only).
    hyperparameters: Hyperparameters
    outcome: Outcome = "running"
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
    decision: Decision | None = None

    @model_validator(mode="after")
    def _metric_names(self) -> Attempt:
        for name in self.metrics:
            if not 1 <= len(name) <= 64 or not name.isprintable() or not name.isascii():
                raise ValueError(f"metrics: names have 1-64 printable ASCII characters (got {name!r})")
        return self


# --------------------------------------------------------------------------- workflow state


def _remedies_json(value: Any) -> Any:
    if not isinstance(value, Mapping):
        raise ValueError("remedies: must be a JSON object of rule name or failure kind: [remedies]")
    return value


class WorkflowState(BaseModel):
    """``$.state`` of the state machine: the sample's keys plus the declarations, budgets and attempts.
    Built from the execution input by ``lambdas.remediation.execution_input.initial_state``."""

    model_config = _STRICT

    history: History = Field(default_factory=History)
    next_action: NextAction = "launch_new"
    job_status: Text(MAX_STATUS_BYTES) = "NotStarted"
    rule_status: Text(MAX_STATUS_BYTES) = "NotStarted"
    run_spec: RunSpec
    policy: PolicyName
    #: The remedies the planner may apply (``contracts.remedies`` JSON), checked against the starting
    #: hyperparameters when the execution starts.
    remedies: Annotated[dict[str, list[dict[str, Any]]], BeforeValidator(_remedies_json)] = Field(default_factory=dict)
    #: For a built-in remedy set (policy evidence or anchor): conventional hyperparameter name -> the script's.
    hyperparameter_names: Annotated[dict[str, Text(MAX_NAME_BYTES)], Field(max_length=32)] = Field(default_factory=dict)
    objective: ObjectiveJson = None
    max_num_retraining: RetrainingBudget
    max_monitor_transitions: MonitorTransitions
    monitor_interval_seconds: MonitorInterval
    attempts: Annotated[list[Attempt], Field(max_length=MAX_KEPT_ATTEMPTS)] = Field(default_factory=list)
    attempts_dropped: Count = 0
    end_reason: Text(MAX_REASON_BYTES) | None = None

    @model_validator(mode="after")
    def _attempts_numbered_in_order(self) -> WorkflowState:
        numbers = [attempt.number for attempt in self.attempts]
        if numbers != sorted(set(numbers)):
            raise ValueError(f"attempts: numbers must increase strictly (got {numbers})")
        if numbers and numbers[-1] != len(numbers) + self.attempts_dropped:
            raise ValueError(
                f"attempts: the last attempt is number {numbers[-1]} but {len(numbers)} are kept and "
                f"{self.attempts_dropped} dropped; attempts_dropped must be {numbers[-1] - len(numbers)}"
            )
        return self

    # ----- reading

    @property
    def last_attempt(self) -> Attempt | None:
        return self.attempts[-1] if self.attempts else None

    @property
    def attempt_count(self) -> int:
        """Attempts launched so far, dropped ones included."""
        return len(self.attempts) + self.attempts_dropped

    @property
    def max_attempts(self) -> int:
        """The launches the budget allows: max_num_retraining, as the AWS sample counts them (the first launch
        always happens, so 0 and 1 both mean one)."""
        return max(1, self.max_num_retraining)

    @property
    def retraining_budget_left(self) -> int:
        """Launches still allowed (num_retraining counts every launch, the first included, as in the sample)."""
        return max(0, self.max_num_retraining - self.history.num_retraining)

    def declared_objective(self) -> objective_contract.Objective | None:
        return objective_contract.Objective.from_json(self.objective) if self.objective is not None else None

    def declared_remedies(self) -> remedies_contract.Remedies:
        """The remedies the planner applies, parsed: the run's own (policy declared, kept in the state), or the
        built-in set the policy names on the run's hyperparameters (lambdas.remediation.remedy_sets: code, not
        state, so the state stays small). Both were checked against the starting hyperparameters at the start."""
        if self.policy == "declared":
            declaration = self.remedies
        else:
            declaration = remedies_contract.adapt_to_script(
                remedy_sets.POLICY_REMEDIES[self.policy], self.hyperparameter_names, self.run_spec.hyperparameters
            )
        return remedies_contract.parse_remedies(
            declaration, self.run_spec.hyperparameters, check_reachable=False, check_size=self.policy == "declared"
        )

    # ----- writing (each returns a new, validated state)

    def with_new_attempt(
        self, job_name: str, resumed_from: str | None = None, resumed_checkpoint_files: int | None = None
    ) -> WorkflowState:
        """Record that ``job_name`` was launched with the current run_spec (from ``resumed_from``'s checkpoints,
        when the last decision said so); the job is now monitored."""
        attempt = Attempt(
            number=self.attempt_count + 1,
            job_name=job_name,
            hyperparameters=dict(self.run_spec.hyperparameters),
            resumed_from=resumed_from,
            resumed_checkpoint_files=resumed_checkpoint_files,
        )
        attempts, dropped = bound_attempts([*self.attempts, attempt], self.attempts_dropped)
        # The AWS sample's train step counts every launch in num_retraining (its reference run ends at 7 after 7).
        history = self.history.model_copy(
            update={"latest_job_name": job_name, "num_retraining": self.history.num_retraining + 1}
        )
        return self.updated(
            attempts=attempts,
            attempts_dropped=dropped,
            history=history,
            next_action="monitor",
            job_status="InProgress",
            rule_status="InProgress",
        )

    def with_last_attempt(self, **changes: Any) -> WorkflowState:
        """Update fields of the latest attempt (outcome, rule_statuses, issue, evidence, decision, ...)."""
        if not self.attempts:
            raise InvalidState({"attempts": "is empty; launch a job (with_new_attempt) before updating it"})
        last = self.attempts[-1].model_dump()
        last.update({key: _plain(value) for key, value in changes.items()})
        return self.updated(attempts=[*self.attempts[:-1], Attempt.model_validate(last)])

    def updated(self, **changes: Any) -> WorkflowState:
        """A validated copy with ``changes`` applied (model_copy alone would skip validation)."""
        data = self.model_dump()
        data.update({key: _plain(value) for key, value in changes.items()})
        return WorkflowState.model_validate(data)

    def to_payload(self) -> dict[str, Any]:
        """``{"state": ...}`` as strict JSON values (NaN and infinities as the strings pydantic reads back)."""
        return {"state": json.loads(self.model_dump_json())}


class StatePayload(BaseModel):
    """The event each handler receives: ``{"state": WorkflowState}``. Other top-level keys are ignored
    (the ASL may carry e.g. a Catch's error next to the state)."""

    model_config = ConfigDict(extra="ignore")

    state: WorkflowState


def bound_attempts(attempts: list[Attempt], dropped: int) -> tuple[list[Attempt], int]:
    """Keep the first attempt and the latest ``MAX_KEPT_ATTEMPTS - 1``; count the rest as dropped."""
    if len(attempts) <= MAX_KEPT_ATTEMPTS:
        return attempts, dropped
    excess = len(attempts) - MAX_KEPT_ATTEMPTS
    return [attempts[0], *attempts[1 + excess :]], dropped + excess


def payload_size(state: WorkflowState) -> int:
    """Bytes of the ``{"state": ...}`` JSON, ASCII-escaped as Python's json (and Lambda's runtime) writes it."""
    return len(json.dumps(state.to_payload()).encode("utf-8"))


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def parse_state(event: Mapping[str, Any]) -> WorkflowState:
    """``event["state"]`` as a WorkflowState, for the handlers. Raises InvalidState naming each bad field."""
    if not isinstance(event, Mapping):
        raise InvalidState({"(event)": f"must be a JSON object with a 'state' key (got {type(event).__name__})"})
    try:
        return StatePayload.model_validate(dict(event)).state
    except ValidationError as error:
        raise InvalidState(describe_validation_error(error)) from None
