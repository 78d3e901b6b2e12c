"""The field types of the workflow's payload models: numbers that refuse booleans and strings, clipped free text,
the run_spec's checked names and bounds (``contracts.run_spec``), and the byte limits that keep the payload far below
Step Functions' 256 KiB. ``payload_models`` of the run_spec, the attempts and the state build on them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, ConfigDict, Field

from contracts import distributed, rule_selection, spot_interruptions
from contracts import objective as objective_contract
from contracts import run_spec as bounds
from lambdas.remediation.job import training_images

# --------------------------------------------------------------------------- limits

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


# --------------------------------------------------------------------------- field types


def no_bool(value: Any) -> Any:
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


Number = Annotated[float, BeforeValidator(no_bool)]
Whole = Annotated[int, BeforeValidator(no_bool)]
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
#: run_spec.debugger_class_weighting (contracts.run_spec.CLASS_WEIGHTINGS).
ClassWeighting = Annotated[str, AfterValidator(bounds.check_class_weighting)]
#: run_spec.debugger_robust_loss (contracts.run_spec.ROBUST_LOSSES).
RobustLoss = Annotated[str, AfterValidator(bounds.check_robust_loss)]
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
CapacityWait = Annotated[Whole, _within(bounds.CAPACITY_WAIT_SECONDS)]
RuleWait = Annotated[Whole, _within(bounds.RULE_WAIT_SECONDS)]
InstanceCount = Annotated[int, BeforeValidator(distributed.check_instance_count)]
#: The SDK's PyTorch ``distribution``: {} or {"torch_distributed" | "pytorchddp": {"enabled": bool}}.
Distribution = Annotated[dict[str, dict[str, bool]], BeforeValidator(distributed.check_distribution)]
#: Local runs only: when the local platform reclaims each job's instance (contracts.spot_interruptions).
SpotInterruptions = Annotated[
    list[dict[str, int | float]], BeforeValidator(spot_interruptions.check_spot_interruptions)
]


def _objective_json(value: Any) -> dict[str, Any] | None:
    return None if value is None else objective_contract.Objective.from_json(value).to_json()


ObjectiveJson = Annotated[dict[str, Any] | None, BeforeValidator(_objective_json)]

STRICT = ConfigDict(extra="forbid", validate_assignment=True, ser_json_inf_nan="strings")


