"""The debugger's configuration for one job: our hook's (DebugHookConfig shape, with its S3OutputPath under the job's
own evidence prefix) and our in-job rules' (DebugRuleConfigurations shape, each with the StopTraining action), and in
legacy mode SageMaker Debugger's own. The launcher gets ours as reserved hyperparameters (job_request).

Standard library + the shared contracts only: imported by the train Lambda.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contracts import bucket_layout, debugger_config, rule_selection
from lambdas.remediation.job.job_identity import evidence_prefixes
from lambdas.remediation.job.training_images import rule_evaluator_image_uri
from lambdas.remediation.state.run_spec import RunSpec

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


def stop_training_action_json(job_name: str) -> str:
    """smdebug_rulesconfig's serialised StopTraining action (training_job_prefix = this job)."""
    return json.dumps([{"name": STOP_TRAINING_ACTION, "training_job_prefix": job_name}], separators=(",", ":"))


def hook_config(run_spec: RunSpec, job_name: str, evidence_key: str = "") -> dict[str, Any]:
    """Our debugger's hook configuration (DebugHookConfig shape); the job mirrors its output to S3OutputPath, under
    the prefix only its execution can name (job_identity.evidence_prefixes)."""
    interval = str(run_spec.debugger_save_interval)
    parameters = {"save_interval": interval}
    if run_spec.instance_count > 1:  # every rank records its own tensors (smdebug's include_workers), for the post-mortem
        parameters["include_workers"] = "all"
    config = {
        "S3OutputPath": bucket_layout.s3_uri(run_spec.bucket, evidence_prefixes(job_name, evidence_key).debug_output),
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
