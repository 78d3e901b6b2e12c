"""The SageMaker CreateTrainingJob request for one attempt, and its deterministic job name.

Script-mode PyTorch on the AWS Deep Learning Container: the job downloads the
run_spec's ``source_dir`` archive (the user's script with our debugger packed
beside it) and runs the job launcher (``contracts.job.LAUNCHER_PROGRAM``), which
sets the debugger up and runs the user's ``entry_point`` with the user's own
hyperparameters as ``--name value`` arguments. The launcher gets the entry
point and the debugger's hook and rule configuration as reserved
``remediation_*`` hyperparameters and takes them out of the script's arguments.
The channels and metric regexes are the run_spec's. In legacy mode (accounts
that still have SageMaker Debugger) the request also asks SageMaker for its
built-in rules (DebugHookConfig + DebugRuleConfigurations). The debugger's
configurations are in ``job_debugger_config``.

Standard library + the shared contracts only: imported by the train Lambda.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from typing import Any

from contracts import aws_tags, bucket_layout, distributed
from contracts import run_spec as bounds
from contracts.job import (
    CLASS_WEIGHTING_HYPERPARAMETER,
    DEBUG_OUTPUT_S3_REGION_ENV,
    DEBUG_OUTPUT_S3_SYNC_ENV,
    DEFAULT_TENSORBOARD_LOCAL_PATH,
    ENTRY_POINT_HYPERPARAMETER,
    HOOK_CONFIG_HYPERPARAMETER,
    LAUNCHER_PROGRAM,
    MAX_HYPERPARAMETERS,
    METRIC_DEFINITIONS_HYPERPARAMETER,
    ROBUST_LOSS_HYPERPARAMETER,
    RULE_CONFIGS_HYPERPARAMETER,
    HyperparameterError,
    encode_hyperparameters,
    split_long_value,
)
from contracts.run_spec import (
    GENERALIZED_CROSS_ENTROPY,
    IN_JOB_CLASS_WEIGHTINGS,
    JOB_NAME_PATTERN,
    MAX_JOB_NAME_LENGTH,
)
from contracts.spot_interruptions import LOCAL_SPOT_INTERRUPTIONS_TAG, to_tag_value
from contracts.stack_guardrails import CostGuardrails
from lambdas.remediation.job.job_debugger_config import (  # noqa: F401 - the collections: what readers of a job name
    FRAMEWORK_HOOK_COLLECTIONS,
    HOOK_COLLECTIONS,
    LEGACY_COLLECTIONS,
    XGBOOST_HOOK_COLLECTIONS,
    hook_config,
    legacy_debug_hook_config,
    legacy_debug_rule_configurations,
    rule_configs,
)
from lambdas.remediation.job.job_identity import JobRequestError, evidence_prefixes, ownership_tags
from lambdas.remediation.job.training_images import training_image_uri
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.run_spec import RunSpec

# --------------------------------------------------------------------------- job settings

CONTAINER_LOG_LEVEL = 20  # logging.INFO
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
VOLUME_SIZE_GB = 30
#: Spot capacity may take a while; the job may wait this many times its run time in total.
SPOT_WAIT_FACTOR = 2
class NotEnoughTimeLeft(JobRequestError):
    """The execution times out before a job launched now could run its shortest time (the Fail state's Error)."""


class InstanceHoursBudgetSpent(JobRequestError):
    """The stack's instance-hours guardrail leaves less than a job's shortest run (the Fail state's Error)."""


class OutsideCostGuardrails(JobRequestError):
    """The run_spec asks for an instance type or count the stack's cost guardrails do not allow (the Fail state's
    Error): Initialize refuses it first; a launch checks again whatever the plan changed."""


def tensorboard_output_config(run_spec: RunSpec) -> dict[str, str]:
    """CreateTrainingJob's TensorBoardOutputConfig: the job's hook writes event files under LocalPath (it reads the
    file SageMaker writes from this) and SageMaker uploads them to {S3OutputPath}{job}/tensorboard-output/."""
    return {
        "LocalPath": DEFAULT_TENSORBOARD_LOCAL_PATH,
        "S3OutputPath": run_spec.tensorboard_output_path or bucket_layout.default_tensorboard_output_uri(run_spec.bucket),
    }


# --------------------------------------------------------------------------- the request


def script_mode_values(
    run_spec: RunSpec,
    job_name: str,
    objective: Mapping[str, Any] | None = None,
    planned_epochs: int | None = None,
    evidence_key: str = "",
) -> dict[str, Any]:
    """Every hyperparameter the job's request carries, before encoding: the user's, the launcher's reserved ones (the
    entry point, the debugger's hook and rules, the metric definitions, the in-job settings) and SageMaker's
    script-mode and distribution ones."""
    return {
        **run_spec.hyperparameters,
        ENTRY_POINT_HYPERPARAMETER: run_spec.entry_point,
        HOOK_CONFIG_HYPERPARAMETER: json.dumps(hook_config(run_spec, job_name, evidence_key), separators=(",", ":")),
        # Twenty rules' configurations exceed SageMaker's 2,500 characters per value: sent in parts.
        **split_long_value(
            RULE_CONFIGS_HYPERPARAMETER,
            json.dumps(
                rule_configs(job_name, run_spec.rules, run_spec.framework, objective, planned_epochs),
                separators=(",", ":"),
            ),
        ),
        # The metrics the script prints, read in the job too: its rules and the planner see them while it runs.
        **(
            split_long_value(
                METRIC_DEFINITIONS_HYPERPARAMETER,
                json.dumps([dict(definition) for definition in run_spec.metric_definitions], separators=(",", ":")),
            )
            if run_spec.metric_definitions
            else {}
        ),
        # The debugger corrects the training loss for class frequencies (the planner's answer to a rare class without
        # a knob).
        **(
            {CLASS_WEIGHTING_HYPERPARAMETER: run_spec.debugger_class_weighting}
            if run_spec.debugger_class_weighting in IN_JOB_CLASS_WEIGHTINGS
            else {}
        ),
        # ... and trains on a loss robust to wrong labels (the planner's answer to labels that look noisy).
        **(
            {ROBUST_LOSS_HYPERPARAMETER: run_spec.debugger_robust_loss}
            if run_spec.debugger_robust_loss == GENERALIZED_CROSS_ENTROPY
            else {}
        ),
        "sagemaker_program": LAUNCHER_PROGRAM,
        "sagemaker_submit_directory": run_spec.source_dir,
        "sagemaker_region": run_spec.region,
        "sagemaker_container_log_level": CONTAINER_LOG_LEVEL,
        **distributed.distribution_hyperparameters(run_spec.distribution, run_spec.instance_type),
    }


class TooManyHyperparameters(JobRequestError):
    """The request would carry more hyperparameters than SageMaker takes (the Fail state's Error); the message names
    the count, what the workflow adds and how many entries the run_spec may keep."""


@dataclasses.dataclass(frozen=True)
class HyperparameterCount:
    """What one job's request carries: ``carried`` hyperparameters in all, ``own`` of them the run_spec's."""

    carried: int
    own: int
    rules: int
    limit: int = MAX_HYPERPARAMETERS

    @property
    def reserved(self) -> int:
        """The workflow's own: launcher, debugger hook and rules (in parts), metric definitions, in-job settings,
        SageMaker's script-mode and distribution entries."""
        return self.carried - self.own

    @property
    def left(self) -> int:
        """How many more the run_spec could carry (negative: that many too many)."""
        return self.limit - self.carried

    @property
    def fits(self) -> bool:
        return self.left >= 0

    def problem(self) -> str:
        """The refusal, naming run_spec.hyperparameters, the count and the fix."""
        return (
            f"run_spec.hyperparameters: has {self.own} entries but SageMaker takes at most {self.limit} "
            f"hyperparameters in all, and this run's launcher, its {self.rules} rules' configuration, its in-job "
            f"settings and its distribution take {self.reserved} (the request would carry {self.carried}): keep at "
            f"most {self.limit - self.reserved} (or select fewer rules)"
        )


def count_hyperparameters(
    state: WorkflowState, run_spec: RunSpec | None = None, job_name: str | None = None
) -> HyperparameterCount:
    """Exactly what the request for ``run_spec`` (default: the state's) would carry, with the run's objective and the
    run_spec's planned epochs. The rules' configuration is split into parts of 2,500 characters and grows with the
    job's name (their StopTraining action names it): without ``job_name`` the longest name there is is counted, so
    a run_spec that fits here fits whatever its job is called. JobRequestError names a value SageMaker refuses."""
    run_spec = run_spec or state.run_spec
    name = job_name or "a" * MAX_JOB_NAME_LENGTH
    values = script_mode_values(
        run_spec, name, state.objective, state.epochs_in(run_spec.hyperparameters), state.evidence_key
    )
    try:
        carried = len(encode_hyperparameters(values))
    except HyperparameterError as error:
        raise JobRequestError(f"run_spec.hyperparameters.{error.field}: {error.problem}") from None
    return HyperparameterCount(carried=carried, own=len(run_spec.hyperparameters), rules=len(run_spec.watching_rules()))


def script_mode_hyperparameters(
    run_spec: RunSpec,
    job_name: str,
    objective: Mapping[str, Any] | None = None,
    planned_epochs: int | None = None,
    evidence_key: str = "",
) -> dict[str, str]:
    """The request's HyperParameters (:func:`script_mode_values`), every value JSON-encoded as the SageMaker Python SDK
    sends framework hyperparameters; TooManyHyperparameters over SageMaker's limit."""
    try:
        encoded = encode_hyperparameters(
            script_mode_values(run_spec, job_name, objective, planned_epochs, evidence_key)
        )
    except HyperparameterError as error:
        raise JobRequestError(f"run_spec.hyperparameters.{error.field}: {error.problem}") from None
    count = HyperparameterCount(len(encoded), len(run_spec.hyperparameters), len(run_spec.watching_rules()))
    if not count.fits:
        raise TooManyHyperparameters(count.problem())
    return encoded


def check_hyperparameter_count(state: WorkflowState) -> None:
    """TooManyHyperparameters (naming run_spec.hyperparameters) when the state's run_spec would carry more
    hyperparameters than SageMaker takes, whatever its job is called (:func:`count_hyperparameters`)."""
    count = count_hyperparameters(state)
    if not count.fits:
        raise TooManyHyperparameters(count.problem())


def build_create_training_job_request(
    state: WorkflowState,
    job_name: str,
    *,
    execution_id: str = "",
    execution_start_time: str = "",
    tags: dict[str, str] | None = None,
    now: float | None = None,
    guardrails: CostGuardrails | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``sagemaker.create_training_job`` for the state's current run_spec.

    With the execution's start time, the job's MaxRuntimeInSeconds (and a spot job's MaxWaitTimeInSeconds) end
    before the execution times out (``now``: epoch seconds, default the clock). With the stack's ``guardrails`` the
    instance type and count are checked again (OutsideCostGuardrails) and the runtime is cut to what IAM allows a
    job (CostGuardrails.max_job_runtime_seconds)."""
    run_spec = state.run_spec
    if not JOB_NAME_PATTERN.match(job_name) or len(job_name) > MAX_JOB_NAME_LENGTH:
        raise JobRequestError(f"job_name: {job_name!r} is not a valid SageMaker training job name")
    if guardrails is not None:
        problems = guardrails.check_launch(run_spec.instance_type, run_spec.instance_count)
        if problems:
            raise OutsideCostGuardrails(
                "; ".join(f"run_spec.{field}: {problem}" for field, problem in problems.items())
            )
    bucket = run_spec.bucket
    stopping_condition = stopping_condition_within(
        run_spec,
        execution_start_time,
        wall_clock() if now is None else now,
        state.attempt_count + 1,
        instance_seconds_left=state.instance_seconds_left,
        job_seconds=guardrails.max_job_runtime_seconds if guardrails is not None else None,
    )
    all_tags = {
        "remediation:base-job-name": run_spec.base_job_name,
        "remediation:policy": state.policy,
        **ownership_tags(execution_id, execution_start_time, state.attempt_count + 1),
    }
    if run_spec.spot_interruptions:  # read by the local training platform only (the run_spec refuses other instances)
        all_tags[LOCAL_SPOT_INTERRUPTIONS_TAG] = to_tag_value(run_spec.spot_interruptions)
    all_tags.update(tags or {})
    request: dict[str, Any] = {
        "TrainingJobName": job_name,
        "RoleArn": run_spec.sm_role,
        "AlgorithmSpecification": {
            "TrainingImage": training_image_uri(
                run_spec.region, run_spec.instance_type, run_spec.framework_version, run_spec.framework
            ),
            "TrainingInputMode": "File",
            "MetricDefinitions": [dict(definition) for definition in run_spec.metric_definitions],
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "HyperParameters": script_mode_hyperparameters(
            run_spec, job_name, state.objective, state.epochs_in(run_spec.hyperparameters), state.evidence_key
        ),
        "OutputDataConfig": {"S3OutputPath": bucket_layout.job_output_uri(bucket)},
        "ResourceConfig": {
            "InstanceType": run_spec.instance_type,
            "InstanceCount": run_spec.instance_count,
            "VolumeSizeInGB": VOLUME_SIZE_GB,
        },
        "StoppingCondition": stopping_condition,
        "CheckpointConfig": {
            "S3Uri": bucket_layout.s3_uri(bucket, evidence_prefixes(job_name, state.evidence_key).checkpoints),
            "LocalPath": CHECKPOINT_LOCAL_PATH,
        },
        "EnableManagedSpotTraining": run_spec.use_spot_instances,
        "Environment": {DEBUG_OUTPUT_S3_SYNC_ENV: "on", DEBUG_OUTPUT_S3_REGION_ENV: run_spec.region},
        "Tags": [{"Key": key, "Value": aws_tags.tag_value(value)} for key, value in all_tags.items()],
    }
    request["TensorBoardOutputConfig"] = tensorboard_output_config(run_spec)
    if run_spec.channels:  # a script that makes its own data has none (SageMaker wants at least one if given)
        request["InputDataConfig"] = [_channel(name, uri) for name, uri in run_spec.channels.items()]
    if run_spec.legacy_sagemaker_debugger:
        request["DebugHookConfig"] = legacy_debug_hook_config(run_spec)
        request["DebugRuleConfigurations"] = legacy_debug_rule_configurations(run_spec, job_name)
    return request


def wall_clock() -> float:
    return time.time()


def stopping_condition_within(
    run_spec: RunSpec,
    execution_start_time: str,
    now: float,
    attempt_number: int,
    instance_seconds_left: int | None = None,
    job_seconds: int | None = None,
) -> dict[str, int]:
    """SageMaker's StoppingCondition for the run_spec, cut to the time the execution has left (when its start time
    is known) minus JOB_END_RESERVE_SECONDS, to the instance-hours the stack's guardrail leaves it
    (``instance_seconds_left``: InstanceCount x MaxRuntimeInSeconds fits in it) and to the longest job IAM allows
    (``job_seconds``). Raises NotEnoughTimeLeft or InstanceHoursBudgetSpent when less than a job's shortest run is
    left."""
    runtime = run_spec.max_run_seconds if job_seconds is None else min(run_spec.max_run_seconds, job_seconds)
    if instance_seconds_left is not None:
        per_instance = instance_seconds_left // run_spec.instance_count
        if per_instance < bounds.MAX_RUN_SECONDS.low:
            raise InstanceHoursBudgetSpent(
                f"attempt {attempt_number} would have {instance_seconds_left} instance-seconds left under the stack's "
                f"max_instance_hours ({per_instance} s on each of {run_spec.instance_count} instance(s)); not "
                f"launching a job shorter than {int(bounds.MAX_RUN_SECONDS.low)} s: raise -c max_instance_hours or "
                "start a new execution"
            )
        runtime = min(runtime, per_instance)
    wait = runtime * SPOT_WAIT_FACTOR if run_spec.use_spot_instances else None
    if execution_start_time:
        try:
            left = int(bounds.seconds_left(execution_start_time, now)) - bounds.JOB_END_RESERVE_SECONDS
        except ValueError as error:
            raise JobRequestError(str(error)) from None
        if left < bounds.MAX_RUN_SECONDS.low:
            raise NotEnoughTimeLeft(
                f"attempt {attempt_number} would have {max(left, 0)} s before the execution times out (it started at "
                f"execution_start_time {execution_start_time} and ends after {bounds.EXECUTION_TIMEOUT_SECONDS // 3600} "
                f"h; {bounds.JOB_END_RESERVE_SECONDS} s are kept for stopping the job, the monitor and the plan); not "
                f"launching a job shorter than {int(bounds.MAX_RUN_SECONDS.low)} s: start a new execution to go on"
            )
        runtime = min(runtime, left)
        if wait is not None:
            wait = min(wait, left)  # SageMaker wants MaxWaitTimeInSeconds >= MaxRuntimeInSeconds: runtime <= left
    condition = {"MaxRuntimeInSeconds": runtime}
    if wait is not None:
        condition["MaxWaitTimeInSeconds"] = wait
    return condition


def _channel(name: str, uri: str) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
        },
        "InputMode": "File",
    }
