"""The run_spec's bounds, patterns and names, stated once. Standard library only.

The workflow's payload models (``lambdas.remediation.state.payload``, pydantic) build
their field types from the checks and bounds here; the CLI checks local inputs
with them before anything starts. Each check raises ``ValueError`` (or
:class:`contracts.ContractError` naming a nested field) with what is allowed.

The declarations a run_spec carries (the objective, the remedies) have their
own modules: :mod:`contracts.objective` and :mod:`contracts.remedies`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from contracts import ContractError, bucket_layout, debugger_settings
from contracts.job import (
    HYPERPARAMETER_NAME,
    MAX_HYPERPARAMETER_VALUE_LENGTH,
    MAX_HYPERPARAMETERS,
    REMEDIATION_RESERVED_PREFIX,
    SAGEMAKER_RESERVED_PREFIX,
    render_hyperparameter,
)
from contracts.suggestions import did_you_mean


@dataclasses.dataclass(frozen=True)
class Bounds:
    """Inclusive numeric bounds of a run_spec field."""

    low: float
    high: float


# --------------------------------------------------------------------------- the execution's real limits
#
# A Standard workflow's execution holds at most 25,000 history events, and ours ends after TimeoutSeconds (the
# ASL's top level). The loop's guardrails must hold inside both: a guardrail that would fire after the execution
# is gone guards nothing. The history events are counted from the ASL (contracts.history_budget reads
# statemachine/remediation.asl.json; a test checks these figures against it and against moto's real history):
#
#   outside the loop     ExecutionStarted, Initialize, the longest way out (a guardrail Pass, HandleFailure, Fail),
#                        the execution's end event                                                     15 events
#   per attempt          Train, Plan, AfterPlan                                                        12 events
#   per monitor pass     WaitForJob (callback task: + TaskSubmitted), Monitor, AfterMonitor           13 events
#
# worst case = 15 + 12 x max(1, max_num_retraining) + 13 x (max_monitor_transitions + 1): max_num_retraining
# counts every launch, the first and any capacity relaunch included, and max_monitor_transitions passes are
# allowed, the next one ending the run (both the AWS sample's meanings). That must stay under 25,000 minus
# HISTORY_EVENTS_RESERVE (each Retry of a task adds 3 events: scheduled, started, failed). In time, every monitor
# pass may wait the whole fallback interval: (max_monitor_transitions + 1) x monitor_interval_seconds must fit in
# TimeoutSeconds minus EXECUTION_TIME_RESERVE_SECONDS.

#: Step Functions Standard workflows: the most events one execution's history holds.
HISTORY_EVENT_LIMIT = 25_000
#: statemachine/remediation.asl.json's TimeoutSeconds (a test checks they agree).
EXECUTION_TIMEOUT_SECONDS = 48 * 3600
HISTORY_EVENTS_OUTSIDE_THE_LOOP = 15
HISTORY_EVENTS_PER_ATTEMPT = 12
HISTORY_EVENTS_PER_MONITOR_PASS = 13
#: Kept free for Retry attempts of the tasks (3 events each): a tenth of the limit.
HISTORY_EVENTS_RESERVE = 2_500
#: Kept free of monitor waits for everything else an execution does in time: launches, plans, the cleanup, and a
#: job's own stopping and upload after its MaxRuntimeInSeconds.
EXECUTION_TIME_RESERVE_SECONDS = 3600
#: Each job's MaxRuntimeInSeconds ends this long before the execution times out: time for SageMaker to stop it and
#: upload, for its state change to wake the workflow, and for the monitor, the plan and the cleanup.
JOB_END_RESERVE_SECONDS = 1800
#: Relaunches with the same run_spec after a capacity error (each counted in max_num_retraining, as any launch).
CAPACITY_RELAUNCHES = 1
#: The wait before such a relaunch (the state's capacity_wait_seconds, a Wait state's SecondsPath): capacity comes
#: back in minutes, not at once.
CAPACITY_WAIT_SECONDS = Bounds(0, 3600)
DEFAULT_CAPACITY_WAIT_SECONDS = 300
#: A completed job whose rules are still evaluating (SageMaker's legacy rule evaluators finish after the job) is
#: looked at again after rule_wait_seconds, at most RULE_WAITS times; then its missing verdicts end the attempt as
#: missing evidence. Each wait is a monitor pass (it counts in num_monitor_transitions and writes fewer history
#: events than one), and rule_wait_seconds may not exceed monitor_interval_seconds: the bounds above hold.
RULE_WAITS = 15
RULE_WAIT_SECONDS = Bounds(0, 600)
DEFAULT_RULE_WAIT_SECONDS = 60
#: The pass that finds num_monitor_transitions > max_monitor_transitions and ends the run (the sample's meaning).
MONITOR_PASSES_PAST_THE_GUARDRAIL = 1

#: max_num_retraining: how many training jobs a run may launch, the first included (each is a paid job). The
#: AWS sample's meaning: its train step counts every launch in num_retraining and the monitor launches no more
#: once num_retraining >= max_num_retraining (so 0 and 1 both allow the first launch only).
RETRAINING_BUDGET = Bounds(0, 50)
#: The debugger's save interval, in steps.
SAVE_INTERVAL = Bounds(1, 1_000_000)
#: A job's MaxRuntimeInSeconds: at least a minute, at most what the execution can wait for (the train Lambda also
#: cuts each job's to the time the execution has left).
MAX_RUN_SECONDS = Bounds(60, EXECUTION_TIMEOUT_SECONDS - EXECUTION_TIME_RESERVE_SECONDS)
#: The wait's fallback poll (its TimeoutSecondsPath: a positive whole number of seconds).
MONITOR_INTERVAL_SECONDS = Bounds(1, EXECUTION_TIMEOUT_SECONDS - EXECUTION_TIME_RESERVE_SECONDS)


def max_monitor_transitions_allowed(max_num_retraining: int, monitor_interval_seconds: int) -> int:
    """The most monitor passes whose worst case fits both the history limit and the execution timeout."""
    attempts = max(1, max_num_retraining)
    events_left = (
        HISTORY_EVENT_LIMIT
        - HISTORY_EVENTS_RESERVE
        - HISTORY_EVENTS_OUTSIDE_THE_LOOP
        - attempts * HISTORY_EVENTS_PER_ATTEMPT
    )
    seconds_left = EXECUTION_TIMEOUT_SECONDS - EXECUTION_TIME_RESERVE_SECONDS
    passes = min(events_left // HISTORY_EVENTS_PER_MONITOR_PASS, seconds_left // monitor_interval_seconds)
    return max(0, passes - MONITOR_PASSES_PAST_THE_GUARDRAIL)


#: Monitor passes per execution (the guardrail); the largest any input allows is checked per input with
#: check_execution_budget.
MONITOR_TRANSITIONS = Bounds(1, max_monitor_transitions_allowed(int(RETRAINING_BUDGET.low), 1))


def check_execution_budget(max_num_retraining: int, max_monitor_transitions: int, monitor_interval_seconds: int) -> None:
    """Raise ContractError naming max_monitor_transitions when its worst case outgrows the history or the timeout."""
    allowed = max_monitor_transitions_allowed(max_num_retraining, monitor_interval_seconds)
    if max_monitor_transitions <= allowed:
        return
    attempts = max(1, max_num_retraining)
    events = (
        HISTORY_EVENTS_OUTSIDE_THE_LOOP
        + attempts * HISTORY_EVENTS_PER_ATTEMPT
        + (max_monitor_transitions + MONITOR_PASSES_PAST_THE_GUARDRAIL) * HISTORY_EVENTS_PER_MONITOR_PASS
    )
    hours = (max_monitor_transitions + MONITOR_PASSES_PAST_THE_GUARDRAIL) * monitor_interval_seconds / 3600
    raise ContractError(
        "max_monitor_transitions",
        f"must be at most {allowed} with monitor_interval_seconds={monitor_interval_seconds} and "
        f"max_num_retraining={max_num_retraining} (got {max_monitor_transitions}): its worst case would need "
        f"{events:,} history events (an execution holds {HISTORY_EVENT_LIMIT:,}, {HISTORY_EVENTS_RESERVE:,} of them "
        f"kept for retries) and {hours:.1f} h of waiting (the execution times out after "
        f"{EXECUTION_TIMEOUT_SECONDS // 3600} h, {EXECUTION_TIME_RESERVE_SECONDS // 3600} h of it kept for launches "
        "and plans); lower it, or leave it out for the largest that fits",
    )


def seconds_left(execution_start_time: str, now: float) -> float:
    """Seconds until the execution times out: its $$.Execution.StartTime (ISO 8601) plus TimeoutSeconds, minus now
    (epoch seconds). Raises ValueError naming the start time when it is not ISO 8601."""
    try:
        started = dt.datetime.fromisoformat(execution_start_time.replace("Z", "+00:00"))
    except ValueError:
        raise ValueError(f"execution_start_time: not an ISO 8601 time (got {execution_start_time!r})") from None
    if started.tzinfo is None:
        started = started.replace(tzinfo=dt.timezone.utc)  # noqa: UP017 - the XGBoost image's Python 3.10 has no dt.UTC
    return started.timestamp() + EXECUTION_TIMEOUT_SECONDS - now

#: The training frameworks a run_spec's script may use: SageMaker's framework container it runs on (PyTorch's deep
#: learning container, or SageMaker's XGBoost framework image), the debugger hook it gets and the default rules.
FRAMEWORKS = ("pytorch", "xgboost")
DEFAULT_FRAMEWORK = "pytorch"


def check_framework(framework: str) -> str:
    return one_of(framework, FRAMEWORKS)


def one_of(value: str, choices: tuple[str, ...]) -> str:
    """``value`` when it is one of ``choices``; else a ValueError naming them and the closest."""
    if value not in choices:
        raise ValueError(f"must be one of {', '.join(choices)} (got {value!r}){did_you_mean(value, choices)}")
    return value


# The debugger's loss settings (run_spec.debugger_class_weighting, debugger_robust_loss): contracts.debugger_settings.
OFF = debugger_settings.OFF
BALANCED_CLASS_WEIGHTING = debugger_settings.BALANCED
LOGIT_ADJUSTED_CLASS_WEIGHTING = debugger_settings.LOGIT_ADJUSTED
IN_JOB_CLASS_WEIGHTINGS = (BALANCED_CLASS_WEIGHTING, LOGIT_ADJUSTED_CLASS_WEIGHTING)
CLASS_WEIGHTINGS = debugger_settings.CLASS_WEIGHTING.values
DEFAULT_CLASS_WEIGHTING = debugger_settings.CLASS_WEIGHTING.default
GENERALIZED_CROSS_ENTROPY = debugger_settings.GENERALIZED_CROSS_ENTROPY
ROBUST_LOSSES = debugger_settings.ROBUST_LOSS.values
DEFAULT_ROBUST_LOSS = debugger_settings.ROBUST_LOSS.default


def check_class_weighting(class_weighting: str) -> str:
    return debugger_settings.check_value(debugger_settings.CLASS_WEIGHTING, class_weighting)


def check_robust_loss(robust_loss: str) -> str:
    return debugger_settings.check_value(debugger_settings.ROBUST_LOSS, robust_loss)


#: SageMaker training job names: ``[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}``.
MAX_JOB_NAME_LENGTH = 63
JOB_NAME_PATTERN = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
#: The train Lambda adds a prefix and a unique suffix to base_job_name, so the base is kept short.
MAX_BASE_JOB_NAME_LENGTH = 32
#: IAM: role path <= 512 characters, role name <= 64.
MAX_ROLE_ARN_LENGTH = 640
LOCAL_INSTANCE_TYPES = ("local", "local_gpu")
#: SageMaker's limits on InputDataConfig and MetricDefinitions.
MAX_CHANNELS = 20
CHANNEL_NAME_PATTERN = re.compile(r"^[A-Za-z0-9.\-_]{1,64}$")
MAX_METRIC_DEFINITIONS = 40
MAX_METRIC_NAME_LENGTH = 255
MAX_METRIC_REGEX_LENGTH = 500
#: The workflow state carries the run_spec (and each attempt its hyperparameters) through every step, and Step
#: Functions caps a state at 256 KiB: these caps on their JSON keep the worst case far below it.
MAX_HYPERPARAMETERS_JSON_BYTES = 2048
#: The run_spec's own entries: SageMaker's limit less the 10 the platform always keeps.
MAX_RUN_SPEC_HYPERPARAMETERS = MAX_HYPERPARAMETERS - 10
MAX_CHANNELS_JSON_BYTES = 4096
MAX_METRIC_DEFINITIONS_JSON_BYTES = 8192
#: An entry point is a Python file inside the source directory: relative, no "..".
ENTRY_POINT_PATTERN = re.compile(r"^(?!/)(?!.*(^|/)\.\.(/|$))[A-Za-z0-9_.\-/]{1,200}\.py$")

_BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
_IP_ADDRESS = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[a-zA-Z0-9+=,.@_/-]+$")
_REGION = re.compile(r"^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-\d{1,2}$")
_INSTANCE_TYPE = re.compile(r"^ml\.[a-z0-9-]+\.[a-z0-9-]+$")
_S3_URI = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$")


# --------------------------------------------------------------------------- AWS names


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


def check_s3_uri(uri: str) -> str:
    if not isinstance(uri, str) or not _S3_URI.match(uri):
        raise ValueError(f"must be an s3://bucket/key URI (got {uri!r})")
    return uri


#: The artifacts bucket's prefixes a training job may write to (infra/sagemaker_role.py) that suit TensorBoard files.
TENSORBOARD_WRITABLE_PREFIXES = (bucket_layout.DEBUG_OUTPUT_PREFIX, bucket_layout.JOBS_PREFIX)


def check_tensorboard_output_path(uri: str, bucket: str) -> str:
    """The run_spec's TensorBoard S3OutputPath (with a trailing slash): an s3:// prefix the stack's SageMaker role may
    write to. Raises ContractError naming tensorboard_output_path."""
    try:
        check_s3_uri(uri)
    except ValueError as error:
        raise ContractError("tensorboard_output_path", str(error)) from None
    uri = uri if uri.endswith("/") else uri + "/"
    given_bucket, _, key = uri.removeprefix("s3://").partition("/")
    if given_bucket != bucket or not key.startswith(TENSORBOARD_WRITABLE_PREFIXES):
        raise ContractError(
            "tensorboard_output_path",
            f"must be under s3://{bucket}/{TENSORBOARD_WRITABLE_PREFIXES[0]} or s3://{bucket}/"
            f"{TENSORBOARD_WRITABLE_PREFIXES[1]}, where the stack's SageMaker role lets a job write (got {uri!r}); "
            f"leave it out for s3://{bucket}/{TENSORBOARD_WRITABLE_PREFIXES[0]}",
        )
    return uri


# --------------------------------------------------------------------------- the training script


def check_entry_point(entry_point: str) -> str:
    if not ENTRY_POINT_PATTERN.match(entry_point):
        raise ValueError(
            "must be the path of a Python file inside the source directory, relative, without '..', "
            f"such as train.py or src/train.py (got {entry_point!r})"
        )
    return entry_point


def check_hyperparameters(values: Any) -> dict[str, str | int | float | bool]:
    """The script's own hyperparameters: names it takes as ``--name``, scalar values (the types a remedy
    keeps), none of the platform's reserved names. Raises ContractError naming the entry."""
    if not isinstance(values, Mapping):
        raise ContractError("hyperparameters", f"must be a JSON object of name: value (got {type(values).__name__})")
    if len(values) > MAX_RUN_SPEC_HYPERPARAMETERS:
        raise ContractError(
            "hyperparameters", f"has {len(values)} entries; SageMaker allows {MAX_HYPERPARAMETERS} in all, "
            f"{MAX_HYPERPARAMETERS - MAX_RUN_SPEC_HYPERPARAMETERS} of them kept for the platform"
        )
    checked: dict[str, str | int | float | bool] = {}
    for name, value in values.items():
        where = f"hyperparameters.{name}"
        if not isinstance(name, str) or not HYPERPARAMETER_NAME.match(name):
            raise ContractError(where, "names start with a letter or _ and hold letters, digits, _ . and - (as --name)")
        if name.startswith((SAGEMAKER_RESERVED_PREFIX, REMEDIATION_RESERVED_PREFIX)):
            raise ContractError(
                where, f"names starting with {SAGEMAKER_RESERVED_PREFIX!r} or {REMEDIATION_RESERVED_PREFIX!r} are the "
                "platform's; rename it"
            )
        if not isinstance(value, (str, int, float, bool)):
            raise ContractError(
                where, f"must be a string, number or true/false (got {type(value).__name__}); pass lists as a string"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ContractError(where, f"must be a finite number (got {value})")
        if len(render_hyperparameter(value)) + 2 > MAX_HYPERPARAMETER_VALUE_LENGTH:
            raise ContractError(where, f"SageMaker allows {MAX_HYPERPARAMETER_VALUE_LENGTH} characters per value")
        checked[name] = value
    _check_json_size("hyperparameters", checked, MAX_HYPERPARAMETERS_JSON_BYTES)
    return checked


def _check_json_size(field: str, value: Any, limit: int) -> None:
    size = len(json.dumps(value))
    if size > limit:
        raise ContractError(
            field, f"takes {size} bytes of JSON; at most {limit} (the workflow state carries it through every step)"
        )


def check_channels(channels: Any) -> dict[str, str]:
    """Channel name -> s3:// prefix (SageMaker's InputDataConfig); none for a script that makes its own data."""
    if not isinstance(channels, Mapping):
        raise ContractError("channels", "must be a JSON object of channel name: s3:// prefix")
    if len(channels) > MAX_CHANNELS:
        raise ContractError("channels", f"has {len(channels)} channels; SageMaker allows {MAX_CHANNELS}")
    for name, uri in channels.items():
        if not isinstance(name, str) or not CHANNEL_NAME_PATTERN.match(name):
            raise ContractError(f"channels.{name}", "channel names have 1-64 letters, digits, '.', '-' or '_'")
        try:
            check_s3_uri(uri)
        except ValueError as error:
            raise ContractError(f"channels.{name}", str(error)) from None
    _check_json_size("channels", channels, MAX_CHANNELS_JSON_BYTES)
    return dict(channels)


def check_metric_definitions(definitions: Any) -> list[dict[str, str]]:
    """SageMaker's MetricDefinitions: ``[{"Name": ..., "Regex": ...}]``, the regex with one capture group."""
    if not isinstance(definitions, list):
        raise ContractError("metric_definitions", 'must be a JSON list of {"Name": ..., "Regex": ...}')
    if len(definitions) > MAX_METRIC_DEFINITIONS:
        raise ContractError("metric_definitions", f"has {len(definitions)}; SageMaker allows {MAX_METRIC_DEFINITIONS}")
    names = set()
    for index, definition in enumerate(definitions):
        where = f"metric_definitions[{index}]"
        if not isinstance(definition, Mapping) or set(definition) != {"Name", "Regex"}:
            raise ContractError(where, 'must be {"Name": ..., "Regex": ...} and nothing else')
        name, regex = definition["Name"], definition["Regex"]
        if not isinstance(name, str) or not 1 <= len(name) <= MAX_METRIC_NAME_LENGTH:
            raise ContractError(f"{where}.Name", f"must be 1-{MAX_METRIC_NAME_LENGTH} characters")
        if name in names:
            raise ContractError(f"{where}.Name", f"{name!r} is defined twice")
        names.add(name)
        if not isinstance(regex, str) or not 1 <= len(regex) <= MAX_METRIC_REGEX_LENGTH:
            raise ContractError(f"{where}.Regex", f"must be 1-{MAX_METRIC_REGEX_LENGTH} characters")
        try:
            groups = re.compile(regex).groups
        except re.error as error:
            raise ContractError(f"{where}.Regex", f"is not a regular expression: {error}") from None
        if groups < 1:
            raise ContractError(f"{where}.Regex", "needs a capture group around the number, e.g. 'accuracy=([0-9.]+)'")
    _check_json_size("metric_definitions", definitions, MAX_METRIC_DEFINITIONS_JSON_BYTES)
    return [dict(definition) for definition in definitions]
