"""The workflow's JSON state payload and the execution input, as pydantic v2 models.

The payload keeps the AWS sample's shape (``{"state": {"history": ...,
"next_action": ..., "job_status": ..., "rule_status": ..., "run_spec": ...}}``)
and adds what the sample lacked: the policy, the budgets, the Wait interval the
ASL reads with ``SecondsPath``, and a bounded list of attempts (the first one and
the latest ones, with a count of those dropped) so the payload stays far below
Step Functions' 256 KiB.

Every model forbids unknown keys. Bad input raises :class:`InvalidExecutionInput`
or :class:`InvalidState` (both ``ValueError``) whose message names each bad field
and what is allowed, e.g. ``init_warmup_learning_rate: must be > 0 (got -1)``.
The models also work through Powertools' parser
(``aws_lambda_powertools.utilities.parser.parse(event=..., model=StatePayload)``),
which raises pydantic's ``ValidationError`` instead.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from model.hyperparameters import SUPPORTED_ACTIVATIONS, HyperparameterError, TrainingHyperparameters

# --------------------------------------------------------------------------- limits

#: Step Functions' cap on a state's input/output, in bytes.
STEP_FUNCTIONS_PAYLOAD_LIMIT = 256 * 1024
#: Attempts kept in the payload: the first one plus the latest ``MAX_KEPT_ATTEMPTS - 1``.
MAX_KEPT_ATTEMPTS = 10
#: The relaunch budget may not exceed this (each relaunch is a paid training job).
MAX_RETRAINING_LIMIT = 50
#: SageMaker training job names are at most 63 characters; the train Lambda adds
#: JOB_NAME_PREFIX and a unique suffix to base_job_name, so the base is kept short.
MAX_BASE_JOB_NAME_LENGTH = 32
MAX_JOB_NAME_LENGTH = 63
#: Free-text fields are clipped so that their JSON text (ASCII-escaped, as Python's json
#: writes it) takes at most this many bytes; the worst case payload stays far below the cap.
MAX_REASON_BYTES = 1200
MAX_FAILURE_REASON_BYTES = 1000
MAX_ISSUE_MESSAGE_BYTES = 500
MAX_NAME_BYTES = 128
MAX_STATUS_BYTES = 64
MAX_RULE_STATUSES = 10
MAX_METRICS = 12
#: IAM: role path <= 512 characters, role name <= 64.
MAX_ROLE_ARN_LENGTH = 640
#: SageMaker's MaxRuntimeInSeconds upper bound (28 days).
MAX_RUN_SECONDS_LIMIT = 28 * 24 * 3600

NextAction = Literal["launch_new", "monitor", "end"]
PolicyName = Literal["evidence", "anchor"]
Outcome = Literal[
    "running",  # launched, not finished yet
    "issues_found",  # a debugger rule fired (the job was or is being stopped)
    "completed",  # the job completed and no rule found an issue
    "algorithm_error",  # the training code failed (not because of a rule)
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
    "algorithm_error",
    "capacity_error",
    "stopped",
    "failed",
    "monitor_limit",
]

if TYPE_CHECKING:  # the debugger package imports torch at runtime; the Lambdas only need the shape
    from contracts.rule_status import Evidence

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_ADDRESS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[a-zA-Z0-9+=,.@_/-]+$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d{1,2}$")
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9-]+$")
LOCAL_INSTANCE_TYPES = ("local", "local_gpu")


class InvalidExecutionInput(ValueError):
    """The execution input breaks the rules; ``problems`` maps each bad field to what is wrong."""

    def __init__(self, problems: Mapping[str, str], what: str = "execution input"):
        self.problems = dict(problems)
        lines = "; ".join(f"{field}: {problem}" for field, problem in self.problems.items())
        super().__init__(f"invalid {what}: {lines}")


class InvalidState(InvalidExecutionInput):
    """The state payload a handler received breaks the rules; the message names each bad field."""

    def __init__(self, problems: Mapping[str, str]):
        super().__init__(problems, what="state payload")


# --------------------------------------------------------------------------- field validators


def _no_bool(value: Any) -> Any:
    """pydantic's lax mode reads True as 1; a boolean in a numeric field is a mistake."""
    if isinstance(value, bool):
        raise ValueError(f"must be a number, not a boolean (got {value!r})")
    return value


def _finite_number(value: Any) -> Any:
    _no_bool(value)
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"must be a finite number (got {value})")
    return value


def _zero_or_one_or_bool(value: Any) -> Any:
    """The AWS sample wrote add_batch_norm as 0/1; booleans are accepted too."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (int, float)) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "0", "1"):
        return value.strip().lower() in ("true", "1")
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


Number = Annotated[float, BeforeValidator(_no_bool)]
Whole = Annotated[int, BeforeValidator(_no_bool)]
Flag = Annotated[bool, BeforeValidator(_zero_or_one_or_bool)]
LearningRate = Annotated[float, BeforeValidator(_finite_number), Field(gt=0, le=10)]


def check_bucket_name(name: str) -> str:
    """S3 general purpose bucket naming rules."""
    if not 3 <= len(name) <= 63:
        raise ValueError(f"an S3 bucket name has 3-63 characters (got {len(name)}: {name!r})")
    if not _BUCKET_NAME.match(name):
        raise ValueError(
            "an S3 bucket name uses lowercase letters, digits, dots and hyphens, and starts and ends "
            f"with a letter or digit (got {name!r})"
        )
    if ".." in name or ".-" in name or "-." in name:
        raise ValueError(f"an S3 bucket name has no '..', '.-' or '-.' (got {name!r})")
    if _IP_ADDRESS.match(name):
        raise ValueError(f"an S3 bucket name may not look like an IP address (got {name!r})")
    for prefix in ("xn--", "sthree-", "amzn-s3-demo-"):
        if name.startswith(prefix):
            raise ValueError(f"an S3 bucket name may not start with {prefix!r} (got {name!r})")
    for suffix in ("-s3alias", "--ol-s3", "--x-s3", "--table-s3", ".mrap"):
        if name.endswith(suffix):
            raise ValueError(f"an S3 bucket name may not end with {suffix!r} (got {name!r})")
    return name


def check_role_arn(arn: str) -> str:
    if not 20 <= len(arn) <= MAX_ROLE_ARN_LENGTH or not _ROLE_ARN.match(arn):
        raise ValueError(
            f"must be an IAM role ARN such as arn:aws:iam::123456789012:role/SageMakerExecutionRole (got {arn!r})"
        )
    return arn


def check_region(region: str) -> str:
    if not _REGION.match(region):
        raise ValueError(f"must be an AWS region code such as us-east-1 or eu-west-3 (got {region!r})")
    return region


def check_instance_type(instance_type: str) -> str:
    if instance_type in LOCAL_INSTANCE_TYPES or _INSTANCE_TYPE.match(instance_type):
        return instance_type
    raise ValueError(
        f"must be a SageMaker instance type such as ml.m5.xlarge, or one of {', '.join(LOCAL_INSTANCE_TYPES)} "
        f"(got {instance_type!r})"
    )


def check_job_name(name: str, limit: int = MAX_JOB_NAME_LENGTH) -> str:
    if len(name) > limit or not JOB_NAME_PATTERN.match(name):
        raise ValueError(
            f"must be 1-{limit} letters, digits and hyphens, starting with a letter or digit and not "
            f"ending with a hyphen (got {name!r})"
        )
    return name


def _check_depth(depth: int) -> int:
    if depth < 8 or (depth - 2) % 6 != 0:
        raise ValueError(f"must be 6n+2 with n >= 1 (8, 14, 20, 32, 44, 56, 110) (got {depth})")
    return depth


def _check_activation(activation: str) -> str:
    if activation not in SUPPORTED_ACTIVATIONS:
        raise ValueError(f"must be one of {', '.join(SUPPORTED_ACTIVATIONS)} (got {activation!r})")
    return activation


BucketName = Annotated[str, AfterValidator(check_bucket_name)]
RoleArn = Annotated[str, AfterValidator(check_role_arn)]
Region = Annotated[str, AfterValidator(check_region)]
InstanceType = Annotated[str, AfterValidator(check_instance_type)]
JobName = Annotated[str, AfterValidator(check_job_name)]
BaseJobName = Annotated[str, AfterValidator(lambda name: check_job_name(name, MAX_BASE_JOB_NAME_LENGTH))]
Depth = Annotated[Whole, AfterValidator(_check_depth)]
Activation = Annotated[str, AfterValidator(_check_activation)]
Count = Annotated[Whole, Field(ge=0)]
#: Bounds shared by the execution input and the state it becomes (one statement of each rule).
NumEpochs = Annotated[Whole, Field(ge=1, le=10_000)]
WarmupEpochs = Annotated[Whole, Field(ge=0, le=10_000)]
SaveInterval = Annotated[Whole, Field(ge=1, le=1_000_000)]
BatchSize = Annotated[Whole, Field(ge=1, le=65_536)]
Seed = Annotated[Whole, Field(ge=0, le=2**32 - 1)]
MaxRunSeconds = Annotated[Whole, Field(ge=60, le=MAX_RUN_SECONDS_LIMIT)]
RetrainingBudget = Annotated[Whole, Field(ge=0, le=MAX_RETRAINING_LIMIT)]
MonitorTransitions = Annotated[Whole, Field(ge=1, le=100_000)]
MonitorInterval = Annotated[Whole, Field(ge=0, le=86_400)]

_STRICT = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="strings")


# --------------------------------------------------------------------------- run spec


class RunSpec(BaseModel):
    """What one training job runs: the sample's run_spec plus ours. One snapshot per attempt, every field
    given (the defaults are the execution input's)."""

    model_config = _STRICT

    warmup_learning_rate: LearningRate
    learning_rate: LearningRate
    add_batch_norm: Flag
    bucket: BucketName
    base_job_name: BaseJobName
    instance_type: InstanceType
    region: Region
    sm_role: RoleArn
    num_epochs: NumEpochs
    warmup_epochs: WarmupEpochs
    debugger_save_interval: SaveInterval
    depth: Depth
    batch_size: BatchSize
    seed: Seed
    activation: Activation
    use_spot_instances: Flag
    legacy_sagemaker_debugger: Flag
    max_run_seconds: MaxRunSeconds

    @model_validator(mode="after")
    def _local_instances_cannot_use_spot(self) -> RunSpec:
        if self.use_spot_instances and self.instance_type in LOCAL_INSTANCE_TYPES:
            raise ValueError("use_spot_instances: must be false when instance_type is local (spot is a cloud option)")
        return self

    def training_hyperparameters(self, **extra: Any) -> TrainingHyperparameters:
        """The job's hyperparameters for this run_spec; ``extra`` adds e.g. the debugger configs."""
        try:
            return TrainingHyperparameters(
                warmup_learning_rate=self.warmup_learning_rate,
                learning_rate=self.learning_rate,
                add_batch_norm=self.add_batch_norm,
                num_epochs=self.num_epochs,
                warmup_epochs=self.warmup_epochs,
                batch_size=self.batch_size,
                depth=self.depth,
                activation=self.activation,
                seed=self.seed,
                **extra,
            )
        except HyperparameterError as error:
            raise InvalidExecutionInput({f"run_spec.{error.field}": error.problem}, what="run_spec") from None

    def summary(self) -> str:
        """'batch norm on, warmup LR 0.1, LR 0.1, elu' for notifications and reasons."""
        return (
            f"batch norm {'on' if self.add_batch_norm else 'off'}, warmup LR {self.warmup_learning_rate:.6g}, "
            f"LR {self.learning_rate:.6g}, {self.activation}"
        )


# --------------------------------------------------------------------------- history and attempts


class History(BaseModel):
    """The sample's counters (names kept), plus capacity retries and activation switches."""

    model_config = _STRICT

    num_warmup_adjustments: Count = 0
    num_batch_layer_adjustments: Count = 0
    num_retraining: Count = 0
    latest_job_name: str = ""
    num_learning_rate_adjustments: Count = 0
    num_monitor_transitions: Count = 0
    num_activation_adjustments: Count = 0
    capacity_retries: Count = 0

    @field_validator("latest_job_name")
    @classmethod
    def _job_name(cls, value: str) -> str:
        return check_job_name(value) if value else value


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
    model_config = _STRICT

    before: bool | float | Text(MAX_STATUS_BYTES) | None
    after: bool | float | Text(MAX_STATUS_BYTES) | None


class Decision(BaseModel):
    """What the planner decided after an attempt, and why (a readable sentence with the evidence)."""

    model_config = _STRICT

    remedy: Annotated[str, Field(min_length=1, max_length=64)]
    reason: Text(MAX_REASON_BYTES, min_length=1)
    next_action: Literal["launch_new", "end"]
    #: Why the workflow ends (None when relaunching): "budget_spent", "no_remedy_left", or the
    #: attempt's outcome when it was not a rule issue ("completed", "algorithm_error", ...).
    end_cause: EndCause | None = None
    changes: Annotated[dict[str, Change], Field(max_length=8)] = Field(default_factory=dict)

    @field_validator("changes")
    @classmethod
    def _run_spec_fields(cls, value: dict[str, Change]) -> dict[str, Change]:
        for name in value:
            if name not in RunSpec.model_fields:
                raise ValueError(f"changes: {name!r} is not a run_spec field")
        return value


class Attempt(BaseModel):
    """One training job of the execution: what it ran, how it ended, what the planner made of it."""

    model_config = _STRICT

    number: Annotated[Whole, Field(ge=1)]
    job_name: JobName
    run_spec: RunSpec
    outcome: Outcome = "running"
    job_status: Text(MAX_STATUS_BYTES) = ""
    failure_reason: Text(MAX_FAILURE_REASON_BYTES) = ""
    rule_statuses: Annotated[list[RuleStatusSummary], Field(max_length=MAX_RULE_STATUSES)] = Field(default_factory=list)
    issue: Issue | None = None
    evidence: AttemptEvidence | None = None
    metrics: Annotated[dict[str, float], Field(max_length=MAX_METRICS)] = Field(default_factory=dict)
    decision: Decision | None = None

    @field_validator("metrics")
    @classmethod
    def _metric_names(cls, value: dict[str, float]) -> dict[str, float]:
        for name in value:
            if not 1 <= len(name) <= 64 or not name.isprintable() or not name.isascii():
                raise ValueError(f"metrics: names have 1-64 printable ASCII characters (got {name!r})")
        return value


# --------------------------------------------------------------------------- workflow state


class WorkflowState(BaseModel):
    """``$.state`` of the state machine: the sample's keys plus policy, budgets and attempts.
    The run_spec, policy and budgets come from the execution input (:func:`initial_state`)."""

    model_config = _STRICT

    history: History = Field(default_factory=History)
    next_action: NextAction = "launch_new"
    job_status: Text(MAX_STATUS_BYTES) = "NotStarted"
    rule_status: Text(MAX_STATUS_BYTES) = "NotStarted"
    run_spec: RunSpec
    policy: PolicyName
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
        """The first launch plus the relaunch budget."""
        return 1 + self.max_num_retraining

    @property
    def retraining_budget_left(self) -> int:
        return max(0, self.max_num_retraining - self.history.num_retraining)

    # ----- writing (each returns a new, validated state)

    def with_new_attempt(self, job_name: str) -> WorkflowState:
        """Record that ``job_name`` was launched with the current run_spec; the job is now monitored."""
        attempt = Attempt(number=self.attempt_count + 1, job_name=job_name, run_spec=self.run_spec.model_copy())
        attempts, dropped = bound_attempts([*self.attempts, attempt], self.attempts_dropped)
        history = self.history.model_copy(update={"latest_job_name": job_name})
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


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


# --------------------------------------------------------------------------- execution input


class ExecutionInput(BaseModel):
    """What ``StartExecution`` gets: the AWS sample's keys plus ours. Defaults = the reference scenario."""

    model_config = ConfigDict(extra="forbid")

    init_warmup_learning_rate: LearningRate = 0.1
    learning_rate: LearningRate = 0.1
    add_batch_norm: Flag = False
    bucket: BucketName
    base_job_name: BaseJobName = "remediation-resnet"
    instance_type: InstanceType = "ml.m5.xlarge"
    region: Region
    num_epochs: NumEpochs = 2
    debugger_save_interval: SaveInterval = 10
    max_num_retraining: RetrainingBudget = 6
    max_monitor_transitions: MonitorTransitions = 720
    sm_role: RoleArn
    policy: PolicyName = "evidence"
    depth: Depth = 20
    batch_size: BatchSize = 128
    seed: Seed = 0
    activation: Activation = "elu"
    warmup_epochs: WarmupEpochs = 1
    use_spot_instances: Flag = False
    legacy_sagemaker_debugger: Flag = False
    monitor_interval_seconds: MonitorInterval = 60
    max_run_seconds: MaxRunSeconds = 3600

    #: The keys that set the workflow (WorkflowState), not one job (RunSpec).
    WORKFLOW_KEYS: ClassVar[frozenset[str]] = frozenset(
        {"policy", "max_num_retraining", "max_monitor_transitions", "monitor_interval_seconds"}
    )

    def run_spec(self) -> RunSpec:
        fields = self.model_dump(exclude={"init_warmup_learning_rate", *self.WORKFLOW_KEYS})
        return RunSpec(warmup_learning_rate=self.init_warmup_learning_rate, **fields)


#: Execution input keys with no default (they depend on the account), with what to give.
REQUIRED_KEY_HINTS = {
    "bucket": "the artifacts bucket's name, e.g. my-remediation-artifacts",
    "region": "the AWS region of the bucket and the jobs, e.g. us-east-1",
    "sm_role": "the SageMaker execution role ARN, e.g. arn:aws:iam::123456789012:role/SageMakerExecutionRole",
}


def default_execution_input() -> dict[str, Any]:
    """Every execution input key that has a default, with it (the reference scenario)."""
    return {
        name: field.get_default(call_default_factory=True)
        for name, field in ExecutionInput.model_fields.items()
        if not field.is_required()
    }


def initial_state(execution_input: Mapping[str, Any]) -> WorkflowState:
    """The state before the first launch. Raises InvalidExecutionInput naming each bad field and the fix."""
    if not isinstance(execution_input, Mapping):
        raise InvalidExecutionInput({"(input)": f"must be a JSON object (got {type(execution_input).__name__})"})
    try:
        parsed = ExecutionInput.model_validate(dict(execution_input))
        return WorkflowState(run_spec=parsed.run_spec(), **parsed.model_dump(include=ExecutionInput.WORKFLOW_KEYS))
    except ValidationError as error:
        raise InvalidExecutionInput(describe_validation_error(error, known=ExecutionInput.model_fields)) from None


def parse_state(event: Mapping[str, Any]) -> WorkflowState:
    """``event["state"]`` as a WorkflowState, for the handlers. Raises InvalidState naming each bad field."""
    if not isinstance(event, Mapping):
        raise InvalidState({"(event)": f"must be a JSON object with a 'state' key (got {type(event).__name__})"})
    try:
        return StatePayload.model_validate(dict(event)).state
    except ValidationError as error:
        raise InvalidState(describe_validation_error(error)) from None


# --------------------------------------------------------------------------- error messages


def describe_validation_error(error: ValidationError, known: Mapping[str, Any] | None = None) -> dict[str, str]:
    """pydantic's errors as {field path: 'must be ... (got ...)'}, one entry per bad field."""
    problems: dict[str, str] = {}
    for item in error.errors():
        path = ".".join(str(part) for part in item["loc"])
        problem = _describe(item, known)
        named = _NAMED_PROBLEM.match(problem) if item["type"] == "value_error" else None
        if named:
            path = f"{path}.{named['field']}" if path else named["field"]
            problem = named["problem"]
        path = path or "(input)"
        problems[path] = f"{problems[path]}; {problem}" if path in problems else problem
    return problems


_NAMED_PROBLEM = re.compile(r"^(?P<field>[a-z_][a-z0-9_.]*): (?P<problem>.*)$", re.DOTALL)


def _describe(item: Mapping[str, Any], known: Mapping[str, Any] | None) -> str:
    kind = item["type"]
    context = item.get("ctx") or {}
    got = _shown(item.get("input"))
    if kind == "missing":
        hint = REQUIRED_KEY_HINTS.get(str(item["loc"][-1])) if item["loc"] else None
        return f"is required ({hint})" if hint else "is required"
    if kind == "extra_forbidden":
        allowed = f"; allowed keys: {', '.join(known)}" if known else ""
        return f"is not a known key{allowed}"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        sign = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<", "less_than_equal": "<="}[kind]
        bound = next(iter(context.values()))
        return f"must be {sign} {bound} (got {got})"
    if kind in ("int_parsing", "int_from_float", "int_type"):
        return f"must be a whole number (got {got})"
    if kind == "finite_number":
        return f"must be a finite number (got {got})"
    if kind in ("float_parsing", "float_type"):
        return f"must be a number (got {got})"
    if kind in ("bool_parsing", "bool_type"):
        return f"must be true or false (got {got})"
    if kind in ("string_type", "string_too_short", "string_too_long"):
        if kind == "string_type":
            return f"must be a string (got {got})"
        limit = context.get("min_length", context.get("max_length"))
        return f"must have {'at least' if kind == 'string_too_short' else 'at most'} {limit} characters"
    if kind in ("too_long", "too_short"):
        limit = context.get("max_length", context.get("min_length"))
        return f"must have {'at most' if kind == 'too_long' else 'at least'} {limit} items"
    if kind == "literal_error":
        return f"must be one of {context.get('expected', '')} (got {got})"
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a JSON object (got {got})"
    if kind == "list_type":
        return f"must be a JSON list (got {got})"
    if kind == "value_error":
        message = str(context.get("error", item["msg"]))
        return message.removeprefix("Value error, ")
    return f"{item['msg']} (got {got})"


def _shown(value: Any) -> str:
    if isinstance(value, (Mapping, list)):
        text = json.dumps(value, default=str)
        return clip(text, 80)
    return clip(repr(value) if isinstance(value, str) else str(value), 80)
