"""The SageMaker CreateTrainingJob request for one attempt, and its deterministic job name.

Script-mode PyTorch on the AWS Deep Learning Container: the job downloads
``code/sourcedir.tar.gz`` and runs ``train.py`` with the run_spec's
hyperparameters, our in-job debugger's configuration (two JSON hyperparameters,
see ``model.hyperparameters``) and the train/test channels of the artifacts
bucket. In legacy mode (accounts that still have SageMaker Debugger) the request
also asks SageMaker for its built-in rules (DebugHookConfig +
DebugRuleConfigurations).

Standard library + the shared contracts only: imported by the train Lambda.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from contracts import bucket_layout, debugger_config
from contracts.progress_log import METRIC_DEFINITIONS
from lambdas.remediation.payload import JOB_NAME_PATTERN, MAX_JOB_NAME_LENGTH, RunSpec, WorkflowState
from lambdas.remediation.training_images import rule_evaluator_image_uri, training_image_uri
from model.hyperparameters import DEBUGGER_HOOK_CONFIG, DEBUGGER_RULE_CONFIGS, MAX_HYPERPARAMETER_VALUE_LENGTH

# --------------------------------------------------------------------------- job settings

ENTRY_POINT = "train.py"
CONTAINER_LOG_LEVEL = 20  # logging.INFO
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
VOLUME_SIZE_GB = 30
#: Spot capacity may take a while; the job may wait this many times its run time in total.
SPOT_WAIT_FACTOR = 2
STOP_TRAINING_ACTION = "StopTraining"
DEFAULT_JOB_NAME_PREFIX = "remediation"
_NOT_NAME_CHARACTER = re.compile(r"[^a-zA-Z0-9-]+")
#: The collections our debugger saves (names as SageMaker Debugger spells them).
HOOK_COLLECTIONS = ("losses", "gradients", "weights", "learning_rate", "metrics")


class JobRequestError(ValueError):
    """The request cannot be built for this run_spec; the message names the field and the fix."""


def job_name_prefix() -> str:
    """env JOB_NAME_PREFIX (the IAM policy allows jobs whose names start with it), default "remediation"."""
    prefix = os.environ.get("JOB_NAME_PREFIX", DEFAULT_JOB_NAME_PREFIX)
    if not prefix or len(prefix) > 24 or not JOB_NAME_PATTERN.match(prefix):
        raise JobRequestError(
            f"JOB_NAME_PREFIX: must be 1-24 letters, digits and hyphens starting with a letter or digit (got {prefix!r})"
        )
    return prefix


def training_job_name(execution_name: str, base_job_name: str, attempt_number: int, prefix: str | None = None) -> str:
    """``{prefix}-{base}-{execution digest}-{attempt}``: the same inputs always give the same name.

    So a retried Train task finds its own job (ResourceInUse) instead of launching
    a second one, and two executions never share a name. At most 63 characters.
    """
    if attempt_number < 1:
        raise JobRequestError(f"attempt_number: must be >= 1 (got {attempt_number})")
    prefix = job_name_prefix() if prefix is None else prefix
    digest = hashlib.sha256(execution_name.encode()).hexdigest()[:10]
    suffix = f"{digest}-{attempt_number:03d}"
    base = _NOT_NAME_CHARACTER.sub("-", base_job_name).strip("-")
    if base == prefix or base.startswith(prefix + "-"):  # "remediation" + "remediation-resnet": say it once
        base = base[len(prefix) :].strip("-")
    room = MAX_JOB_NAME_LENGTH - len(prefix) - len(suffix) - 2
    base = base[: max(room, 0)].strip("-")
    name = "-".join(part for part in (prefix, base, suffix) if part)
    name = re.sub("-{2,}", "-", name)
    if len(name) > MAX_JOB_NAME_LENGTH or not JOB_NAME_PATTERN.match(name):  # pragma: no cover - by construction
        raise JobRequestError(f"job name {name!r} is not a valid SageMaker training job name")
    return name


# --------------------------------------------------------------------------- debugger configuration


def stop_training_action_json(job_name: str) -> str:
    """smdebug_rulesconfig's serialised StopTraining action (training_job_prefix = this job)."""
    return json.dumps([{"name": STOP_TRAINING_ACTION, "training_job_prefix": job_name}], separators=(",", ":"))


def hook_config(run_spec: RunSpec, job_name: str) -> dict[str, Any]:
    """Our debugger's hook configuration (DebugHookConfig shape); the job mirrors its output to S3OutputPath."""
    interval = str(run_spec.debugger_save_interval)
    config = {
        "S3OutputPath": bucket_layout.debug_output_uri(run_spec.bucket, job_name),
        "HookParameters": {"save_interval": interval},
        "CollectionConfigurations": [{"CollectionName": name} for name in HOOK_COLLECTIONS],
    }
    return debugger_config.validate_hook_config(config)


#: LossNotDecreasing compares single-batch losses; ten steps apart (its default) that is mostly
#: noise once a job converges, so the product compares losses this many saved steps apart.
LOSS_NOT_DECREASING_SAVED_STEPS_APART = 5


def rule_configs(job_name: str, save_interval: int = 10) -> list[dict[str, Any]]:
    """Our debugger's rules (DebugRuleConfigurations shape): an explosion stops the job at once."""
    loss_window = max(10, LOSS_NOT_DECREASING_SAVED_STEPS_APART * save_interval)
    configs = [
        {
            "RuleConfigurationName": "ExplodingTensor",
            "RuleParameters": {
                "rule_to_invoke": "ExplodingTensor",
                "only_nan": "False",
                "action_json": stop_training_action_json(job_name),
            },
        },
        {"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"rule_to_invoke": "VanishingGradient"}},
        {
            "RuleConfigurationName": "LossNotDecreasing",
            "RuleParameters": {"rule_to_invoke": "LossNotDecreasing", "num_steps": str(loss_window)},
        },
    ]
    return debugger_config.validate_rule_configs(configs)


def legacy_debug_hook_config(run_spec: RunSpec) -> dict[str, Any]:
    """SageMaker Debugger's DebugHookConfig. SageMaker appends {job}/debug-output, so its tensors land
    under our debug-output/{job}/ prefix, next to rule-status.json (one prefix to grant and expire)."""
    return {
        "S3OutputPath": bucket_layout.s3_uri(run_spec.bucket, bucket_layout.DEBUG_OUTPUT_PREFIX),
        "HookParameters": {"save_interval": str(run_spec.debugger_save_interval)},
        "CollectionConfigurations": [{"CollectionName": name} for name in ("losses", "gradients")],
    }


def legacy_debug_rule_configurations(run_spec: RunSpec, job_name: str) -> list[dict[str, Any]]:
    """SageMaker's built-in rules on its own evaluator image; named Sagemaker* so they never clash with ours."""
    image = rule_evaluator_image_uri(run_spec.region)
    rules = [
        ("ExplodingTensor", {"only_nan": "False", "action_json": stop_training_action_json(job_name)}),
        ("VanishingGradient", {}),
        ("LossNotDecreasing", {}),
    ]
    configurations = []
    for rule, parameters in rules:
        configurations.append(
            {
                "RuleConfigurationName": f"Sagemaker{rule}",
                "RuleEvaluatorImage": image,
                "RuleParameters": {"rule_to_invoke": rule, **parameters},
            }
        )
    debugger_config.validate_rule_configs(configurations)
    return configurations


# --------------------------------------------------------------------------- the request


def script_mode_hyperparameters(run_spec: RunSpec, job_name: str) -> dict[str, str]:
    """Every value JSON-encoded, as the SageMaker Python SDK sends framework hyperparameters."""
    hyperparameters = run_spec.training_hyperparameters(
        **{
            DEBUGGER_HOOK_CONFIG: json.dumps(hook_config(run_spec, job_name), separators=(",", ":")),
            DEBUGGER_RULE_CONFIGS: json.dumps(
                rule_configs(job_name, run_spec.debugger_save_interval), separators=(",", ":")
            ),
        }
    )
    values: dict[str, Any] = dict(hyperparameters.to_sagemaker())
    values.update(
        {
            "sagemaker_program": ENTRY_POINT,
            "sagemaker_submit_directory": bucket_layout.source_archive_uri(run_spec.bucket),
            "sagemaker_region": run_spec.region,
            "sagemaker_container_log_level": CONTAINER_LOG_LEVEL,
        }
    )
    encoded = {name: json.dumps(value) for name, value in values.items()}
    for name, text in encoded.items():
        if len(text) > MAX_HYPERPARAMETER_VALUE_LENGTH:
            raise JobRequestError(
                f"hyperparameter {name!r} is {len(text)} characters once encoded; SageMaker allows "
                f"{MAX_HYPERPARAMETER_VALUE_LENGTH}"
            )
    return encoded


def build_create_training_job_request(
    state: WorkflowState,
    job_name: str,
    *,
    execution_name: str = "",
    tags: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``sagemaker.create_training_job`` for the state's current run_spec."""
    run_spec = state.run_spec
    if not JOB_NAME_PATTERN.match(job_name) or len(job_name) > MAX_JOB_NAME_LENGTH:
        raise JobRequestError(f"job_name: {job_name!r} is not a valid SageMaker training job name")
    bucket = run_spec.bucket
    stopping_condition: dict[str, int] = {"MaxRuntimeInSeconds": run_spec.max_run_seconds}
    if run_spec.use_spot_instances:
        stopping_condition["MaxWaitTimeInSeconds"] = run_spec.max_run_seconds * SPOT_WAIT_FACTOR
    all_tags = {
        "remediation:base-job-name": run_spec.base_job_name,
        "remediation:attempt": str(state.attempt_count + 1),
        "remediation:policy": state.policy,
    }
    if execution_name:
        all_tags["remediation:execution"] = execution_name[:256]
    all_tags.update(tags or {})
    request: dict[str, Any] = {
        "TrainingJobName": job_name,
        "RoleArn": run_spec.sm_role,
        "AlgorithmSpecification": {
            "TrainingImage": training_image_uri(run_spec.region, run_spec.instance_type),
            "TrainingInputMode": "File",
            "MetricDefinitions": [dict(definition) for definition in METRIC_DEFINITIONS],
            "EnableSageMakerMetricsTimeSeries": True,
        },
        "HyperParameters": script_mode_hyperparameters(run_spec, job_name),
        "InputDataConfig": [
            _channel("train", bucket_layout.train_channel_uri(bucket)),
            _channel("test", bucket_layout.test_channel_uri(bucket)),
        ],
        "OutputDataConfig": {"S3OutputPath": bucket_layout.job_output_uri(bucket)},
        "ResourceConfig": {
            "InstanceType": run_spec.instance_type,
            "InstanceCount": 1,
            "VolumeSizeInGB": VOLUME_SIZE_GB,
        },
        "StoppingCondition": stopping_condition,
        "CheckpointConfig": {
            "S3Uri": bucket_layout.checkpoint_uri(bucket, job_name),
            "LocalPath": CHECKPOINT_LOCAL_PATH,
        },
        "EnableManagedSpotTraining": run_spec.use_spot_instances,
        "Environment": {"DEBUG_OUTPUT_S3_SYNC": "on"},
        "Tags": [{"Key": key, "Value": value} for key, value in all_tags.items()],
    }
    if run_spec.legacy_sagemaker_debugger:
        request["DebugHookConfig"] = legacy_debug_hook_config(run_spec)
        request["DebugRuleConfigurations"] = legacy_debug_rule_configurations(run_spec, job_name)
    return request


def _channel(name: str, uri: str) -> dict[str, Any]:
    return {
        "ChannelName": name,
        "DataSource": {
            "S3DataSource": {"S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": "FullyReplicated"}
        },
        "InputMode": "File",
    }
