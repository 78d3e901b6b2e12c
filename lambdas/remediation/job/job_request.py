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
built-in rules (DebugHookConfig + DebugRuleConfigurations).

Standard library + the shared contracts only: imported by the train Lambda.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from typing import Any

from contracts import aws_tags, bucket_layout, debugger_config, distributed, rule_selection
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
from lambdas.remediation.job.job_identity import JobRequestError, ownership_tags
from lambdas.remediation.job.training_images import rule_evaluator_image_uri, training_image_uri
from lambdas.remediation.state.payload import WorkflowState
from lambdas.remediation.state.run_spec import RunSpec

# --------------------------------------------------------------------------- job settings

CONTAINER_LOG_LEVEL = 20  # logging.INFO
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
VOLUME_SIZE_GB = 30
#: Spot capacity may take a while; the job may wait this many times its run time in total.
SPOT_WAIT_FACTOR = 2
STOP_TRAINING_ACTION = "StopTraining"
#: smdebug's built-in PyTorch collections the default rules read (a script's smdebug hook refuses a collection it does
#: not know, as smdebug does); scalars a script saves reach the status document whatever is configured.
HOOK_COLLECTIONS = ("losses", "gradients", "weights")
#: smdebug's XGBoost collections an XGBoost job saves at the save interval (contracts.debugger_config.
#: XGBOOST_COLLECTION_NAMES; the evaluation metrics reach the rules every round whatever is saved): what a live trial
#: plots (the confusion matrix from predictions and labels, feature importance, mean SHAP values). full_shap and trees
#: are left out (a row per sample or per node every save); TreeDepth adds trees itself when selected.
XGBOOST_HOOK_COLLECTIONS = (
    "metrics", "losses", "hyperparameters", "predictions", "labels", "feature_importance", "average_shap",
)  # fmt: skip
FRAMEWORK_HOOK_COLLECTIONS = {"pytorch": HOOK_COLLECTIONS, "xgboost": XGBOOST_HOOK_COLLECTIONS}
#: What SageMaker Debugger's own hook saves for its built-in rules in legacy mode.
LEGACY_COLLECTIONS = {"pytorch": ("losses", "gradients"), "xgboost": ("metrics", "losses")}


class NotEnoughTimeLeft(JobRequestError):
    """The execution times out before a job launched now could run its shortest time (the Fail state's Error)."""


class InstanceHoursBudgetSpent(JobRequestError):
    """The stack's instance-hours guardrail leaves less than a job's shortest run (the Fail state's Error)."""


# --------------------------------------------------------------------------- debugger configuration


def stop_training_action_json(job_name: str) -> str:
    """smdebug_rulesconfig's serialised StopTraining action (training_job_prefix = this job)."""
    return json.dumps([{"name": STOP_TRAINING_ACTION, "training_job_prefix": job_name}], separators=(",", ":"))


def hook_config(run_spec: RunSpec, job_name: str) -> dict[str, Any]:
    """Our debugger's hook configuration (DebugHookConfig shape); the job mirrors its output to S3OutputPath."""
    interval = str(run_spec.debugger_save_interval)
    parameters = {"save_interval": interval}
    if run_spec.instance_count > 1:  # every rank records its own tensors (smdebug's include_workers), for the post-mortem
        parameters["include_workers"] = "all"
    config = {
        "S3OutputPath": bucket_layout.debug_output_uri(run_spec.bucket, job_name),
        "HookParameters": parameters,
        # Our in-job rules ask the hook for what they read (debugger.rules.Requirement): the built-in collections
        # here are what a user's smdebug hook records besides.
        "CollectionConfigurations": [
            {"CollectionName": name} for name in FRAMEWORK_HOOK_COLLECTIONS[run_spec.framework]
        ],
    }
    return debugger_config.validate_hook_config(config)


#: Rules that read module activations, and the parameter naming them: SageMaker's own evaluator (legacy mode) finds
#: them only in a collection the hook config defines by that regex (smdebug's PyTorch hook has no built-in one).
ACTIVATION_REGEX_PARAMETER = {
    "DeadRelu": "tensor_regex",
    "SaturatedActivation": "tensor_regex",
    "PoorWeightInitialization": "activation_inputs_regex",
}


def hook_collections(run_spec: RunSpec, base: Mapping[str, tuple[str, ...]]) -> list[dict[str, Any]]:
    """CollectionConfigurations: the framework's collections plus the built-in ones each selected rule reads
    (contracts.debugger_config.RULE_COLLECTIONS); activations as a collection of their own, defined by the rules'
    regexes. Our in-job rules also ask the hook for what they read themselves; SageMaker's evaluator cannot."""
    names = list(base[run_spec.framework])
    activation_regexes: list[str] = []
    for rule in run_spec.watching_rules():
        parameter = ACTIVATION_REGEX_PARAMETER.get(rule["name"])
        if parameter is not None:
            regex = rule["parameters"].get(parameter, debugger_config.BUILTIN_RULE_DEFAULTS[rule["name"]][parameter])
            activation_regexes += [part.strip() for part in regex.split(",") if part.strip()]
            continue
        for name in debugger_config.rule_collections(rule["name"], rule["parameters"]):
            if name in _SMDEBUG_BUILTIN_COLLECTIONS[run_spec.framework] and name not in names:
                names.append(name)
    configurations: list[dict[str, Any]] = [{"CollectionName": name} for name in names]
    if activation_regexes:
        configurations.append(
            {"CollectionName": "activations",
             "CollectionParameters": {"include_regex": ",".join(dict.fromkeys(activation_regexes))}}
        )
    return configurations


#: Collections smdebug's hooks define without an include_regex.
_SMDEBUG_BUILTIN_COLLECTIONS = {
    "pytorch": ("weights", "biases", "gradients", "losses"),
    "xgboost": debugger_config.XGBOOST_COLLECTION_NAMES,
}


#: The workflow's own defaults for a rule, under the run_spec's parameters (which win): contracts.rule_selection.
product_rule_parameters = rule_selection.product_rule_parameters


def rule_configs(
    job_name: str,
    rules: list[dict[str, Any]] | None = None,
    framework: str = "pytorch",
    objective: Mapping[str, Any] | None = None,
    planned_epochs: int | None = None,
) -> list[dict[str, Any]]:
    """Our debugger's rules (DebugRuleConfigurations shape): the run_spec's ``rules`` (default: the framework's,
    contracts.rule_selection.DEFAULT_RULES_BY_FRAMEWORK). Each stops the job when it finds an issue (the monitor
    would stop it anyway): the job's state change is what ends the workflow's wait. The rules that judge progress
    get the run's ``objective`` (contracts.debugger_config.OBJECTIVE_RULE_PARAMETER): a run that meets it is not
    stopped for a plateau. ObjectiveOutOfReach gets the job's ``planned_epochs`` unless the run_spec set them."""
    stop = stop_training_action_json(job_name)
    objective_text = json.dumps(dict(objective), separators=(",", ":")) if objective else None
    epochs = {debugger_config.PLANNED_EPOCHS_RULE_PARAMETER: str(planned_epochs)} if planned_epochs else {}
    configs = [
        {
            "RuleConfigurationName": rule["name"],
            "RuleParameters": {
                "rule_to_invoke": rule["name"],
                **product_rule_parameters(rule["name"], framework),
                **(epochs if rule["name"] in debugger_config.PLANNED_EPOCHS_RULES else {}),
                **rule["parameters"],
                **(
                    {debugger_config.OBJECTIVE_RULE_PARAMETER: objective_text}
                    if objective_text and rule["name"] in debugger_config.OBJECTIVE_AWARE_RULES
                    else {}
                ),
                "action_json": stop,
            },
        }
        for rule in rule_selection.watching_rules(rules, framework)
    ]
    return debugger_config.validate_rule_configs(configs)


def legacy_debug_hook_config(run_spec: RunSpec) -> dict[str, Any]:
    """SageMaker Debugger's DebugHookConfig. SageMaker appends {job}/debug-output, so its tensors land
    under our debug-output/{job}/ prefix, next to rule-status.json (one prefix to grant and expire)."""
    return {
        "S3OutputPath": bucket_layout.s3_uri(run_spec.bucket, bucket_layout.DEBUG_OUTPUT_PREFIX),
        "HookParameters": {"save_interval": str(run_spec.debugger_save_interval)},
        "CollectionConfigurations": hook_collections(run_spec, LEGACY_COLLECTIONS),
    }


def legacy_debug_rule_configurations(run_spec: RunSpec, job_name: str) -> list[dict[str, Any]]:
    """SageMaker's built-in rules on its own evaluator image; named Sagemaker* so they never clash with ours."""
    image = rule_evaluator_image_uri(run_spec.region)
    stop = stop_training_action_json(job_name)  # as our rules: the job's end is the signal
    configurations = []
    for rule in run_spec.watching_rules():
        if rule["name"] in debugger_config.PRODUCT_ONLY_RULES:
            continue  # ours alone: SageMaker's evaluator has no such rule
        configurations.append(
            {
                "RuleConfigurationName": rule_selection.LEGACY_RULE_PREFIX + rule["name"],
                "RuleEvaluatorImage": image,
                "RuleParameters": {"rule_to_invoke": rule["name"], **rule["parameters"], "action_json": stop},
            }
        )
    debugger_config.validate_rule_configs(configurations)
    return configurations


def tensorboard_output_config(run_spec: RunSpec) -> dict[str, str]:
    """CreateTrainingJob's TensorBoardOutputConfig: the job's hook writes event files under LocalPath (it reads the
    file SageMaker writes from this) and SageMaker uploads them to {S3OutputPath}{job}/tensorboard-output/."""
    return {
        "LocalPath": DEFAULT_TENSORBOARD_LOCAL_PATH,
        "S3OutputPath": run_spec.tensorboard_output_path or bucket_layout.default_tensorboard_output_uri(run_spec.bucket),
    }


# --------------------------------------------------------------------------- the request


def script_mode_hyperparameters(
    run_spec: RunSpec, job_name: str, objective: Mapping[str, Any] | None = None, planned_epochs: int | None = None
) -> dict[str, str]:
    """The user's hyperparameters, the launcher's reserved ones and SageMaker's script-mode ones, every value
    JSON-encoded as the SageMaker Python SDK sends framework hyperparameters."""
    values = {
        **run_spec.hyperparameters,
        ENTRY_POINT_HYPERPARAMETER: run_spec.entry_point,
        HOOK_CONFIG_HYPERPARAMETER: json.dumps(hook_config(run_spec, job_name), separators=(",", ":")),
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
    try:
        encoded = encode_hyperparameters(values)
    except HyperparameterError as error:
        raise JobRequestError(f"run_spec.hyperparameters.{error.field}: {error.problem}") from None
    if len(encoded) > MAX_HYPERPARAMETERS:
        own = len(run_spec.hyperparameters)
        reserved = len(encoded) - own
        raise JobRequestError(
            f"run_spec.hyperparameters: has {own} entries but SageMaker takes at most {MAX_HYPERPARAMETERS} "
            f"hyperparameters in all, and this run's launcher, its {len(run_spec.watching_rules())} rules' "
            f"configuration and its distribution take {reserved}: keep at most {MAX_HYPERPARAMETERS - reserved} "
            "(or select fewer rules)"
        )
    return encoded


def check_hyperparameter_count(state: WorkflowState) -> None:
    """JobRequestError (naming run_spec.hyperparameters) when the state's first request would hold more
    hyperparameters than SageMaker takes: the rules' configuration is split into parts of 2,500 characters and its
    size grows with the job name (their StopTraining action names it), the run's objective and the job's planned
    epochs, so this counts with the longest job name there is and the run's own objective and epochs."""
    run_spec = state.run_spec
    script_mode_hyperparameters(
        run_spec, "a" * MAX_JOB_NAME_LENGTH, state.objective, state.epochs_in(run_spec.hyperparameters)
    )


def build_create_training_job_request(
    state: WorkflowState,
    job_name: str,
    *,
    execution_id: str = "",
    execution_start_time: str = "",
    tags: dict[str, str] | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """The keyword arguments of ``sagemaker.create_training_job`` for the state's current run_spec.

    With the execution's start time, the job's MaxRuntimeInSeconds (and a spot job's MaxWaitTimeInSeconds) end
    before the execution times out (``now``: epoch seconds, default the clock)."""
    run_spec = state.run_spec
    if not JOB_NAME_PATTERN.match(job_name) or len(job_name) > MAX_JOB_NAME_LENGTH:
        raise JobRequestError(f"job_name: {job_name!r} is not a valid SageMaker training job name")
    bucket = run_spec.bucket
    stopping_condition = stopping_condition_within(
        run_spec,
        execution_start_time,
        wall_clock() if now is None else now,
        state.attempt_count + 1,
        instance_seconds_left=state.instance_seconds_left,
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
            run_spec, job_name, state.objective, state.epochs_in(run_spec.hyperparameters)
        ),
        "OutputDataConfig": {"S3OutputPath": bucket_layout.job_output_uri(bucket)},
        "ResourceConfig": {
            "InstanceType": run_spec.instance_type,
            "InstanceCount": run_spec.instance_count,
            "VolumeSizeInGB": VOLUME_SIZE_GB,
        },
        "StoppingCondition": stopping_condition,
        "CheckpointConfig": {
            "S3Uri": bucket_layout.checkpoint_uri(bucket, job_name),
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
) -> dict[str, int]:
    """SageMaker's StoppingCondition for the run_spec, cut to the time the execution has left (when its start time
    is known) minus JOB_END_RESERVE_SECONDS, and to the instance-hours the stack's guardrail leaves it
    (``instance_seconds_left``: InstanceCount x MaxRuntimeInSeconds fits in it). Raises NotEnoughTimeLeft or
    InstanceHoursBudgetSpent when less than a job's shortest run is left."""
    runtime = run_spec.max_run_seconds
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
