"""The debugger's configuration as the workflow writes it and the job reads it. Standard library only.

* the hook configuration, JSON with the shape of SageMaker's ``DebugHookConfig``
  (``S3OutputPath``, ``LocalPath``, ``HookParameters``,
  ``CollectionConfigurations[CollectionName, CollectionParameters]``);
* the rule configurations, a JSON list with the shape of SageMaker's
  ``DebugRuleConfigurations`` (``RuleConfigurationName``, ``RuleParameters``
  with ``rule_to_invoke`` and string parameters; built-in actions in
  ``RuleParameters.action_json`` as smdebug_rulesconfig serialises them).

Both sides validate with the functions here, so a shape change breaks both.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from contracts import ContractError

BUILTIN_ACTIONS = ("StopTraining", "Email", "SMS")

COLLECTION_NAMES = ("gradients", "weights", "biases", "losses", "metrics", "learning_rate", "activations")
#: The collections smdebug's XGBoost hook defines (smdebug.core.collection.DEFAULT_XGBOOST_COLLECTIONS).
XGBOOST_COLLECTION_NAMES = (
    "metrics", "losses", "hyperparameters", "predictions", "labels", "feature_importance", "average_shap", "full_shap",
    "trees",
)  # fmt: skip

#: The built-in rules we implement, with the parameters and defaults the AWS developer guide documents
#: ("List of Debugger built-in rules"); "" and "None" mean no value. LossNotDecreasing's diff_percent
#: default is 0.0 ("checks if the loss is decreasing"), WeightUpdateRatio's num_steps None ("the
#: immediately previous saved step").
BUILTIN_RULE_DEFAULTS: dict[str, dict[str, str]] = {
    "ExplodingTensor": {"collection_names": "", "tensor_regex": "", "only_nan": "False"},
    "VanishingGradient": {"threshold": "0.0000001"},
    "LossNotDecreasing": {
        "collection_names": "",
        "tensor_regex": "",
        "use_losses_collection": "True",
        "num_steps": "10",
        "diff_percent": "0.0",
        "increase_threshold_percent": "5",
        "mode": "",
    },
    "WeightUpdateRatio": {
        "num_steps": "None",
        "large_threshold": "10.0",
        "small_threshold": "0.00000001",
        "epsilon": "0.000000001",
    },
    "PoorWeightInitialization": {
        "activation_inputs_regex": ".*relu_input",
        "threshold": "10.0",
        "distribution_range": "0.001",
        "patience": "5",
        "steps": "10",
    },
    # Training-curve rules (debugger/rules/training_rules.py): ClassImbalance reads the labels and predictions the script
    # saves (hook.save_tensor); StalledTrainingRule's threshold is in seconds without a new step.
    "ClassImbalance": {
        "threshold_imbalance": "10",
        "threshold_misprediction": "0.7",
        "samples": "500",
        "argmax": "False",
        "labels_regex": ".*labels",
        "predictions_regex": ".*predictions",
    },
    "StalledTrainingRule": {"threshold": "1800", "stop_training_on_fire": "False", "training_job_name_prefix": ""},
    # --- curve and XGBoost rules (debugger/rules/curve_rules.py, debugger/rules/xgboost_rules.py)
    "Overfit": {"tensor_regex": "", "start_step": "0", "patience": "1", "ratio_threshold": "0.1"},
    "Overtraining": {"patience_train": "5", "patience_validation": "10", "delta": "0.01"},
    "Confusion": {
        "category_no": "None",
        "labels": "labels",
        "predictions": "predictions",
        "labels_collection": "labels",
        "predictions_collection": "predictions",
        "min_diag": "0.9",
        "max_off_diag": "0.1",
    },
    "FeatureImportanceOverweight": {"threshold": "0.8", "nfeatures": "3", "tensor_regex": ".*feature_importance/weight"},
    "TreeDepth": {"depth": "4"},
    # --- end of curve and XGBoost rules
    # Tensor and activation rules (debugger/rules/tensor_rules.py). SaturatedActivation's bounds are "(min, max)"
    # pairs as the guide writes them; TensorVariance's thresholds default to None (no bound); CheckInputImages'
    # regex default names MXNet's model input, which our hook reads as "the registered model's first input".
    "DeadRelu": {"tensor_regex": ".*relu_output", "threshold_inactivity": "1.0", "threshold_layer": "50.0"},
    "SaturatedActivation": {
        "collection_names": "",
        "tensor_regex": ".*tanh_input, .*sigmoid_input",
        "threshold_tanh": "(-9.4999, 9.4999)",
        "threshold_sigmoid": "(-23, 16.99999)",
        "threshold_inactivity": "1.0",
        "threshold_layer": "50.0",
    },
    "AllZero": {"collection_names": "", "tensor_regex": "", "threshold": "100"},
    "UnchangedTensor": {
        "collection_names": "",
        "tensor_regex": "",
        "num_steps": "3",
        "rtol": "1e-05",
        "atol": "1e-08",
        "equal_nan": "False",
    },
    "TensorVariance": {"collection_names": "", "tensor_regex": "", "max_threshold": "None", "min_threshold": "None"},
    "CheckInputImages": {
        "threshold_mean": "0.2",
        "threshold_samples": "500",
        "regex": ".*hybridsequential0_input_0",
        "channel": "1",
    },
    # The product's own rule (SageMaker Debugger has none like it: no legacy twin, PRODUCT_ONLY_RULES): a job that
    # can no longer reach the run's objective in its planned epochs (contracts.objective_reach). The workflow sets
    # planned_epochs from wherever the run_spec states the epochs (contracts.planned_epochs), as it sets the
    # objective; "None": not judged, and the status says so.
    "ObjectiveOutOfReach": {"planned_epochs": "None"},
}

#: The hook collections each built-in rule reads, so the workflow can build a hook configuration that saves
#: them (as SageMaker adds a built-in rule's collections to DebugHookConfig). AllZero, UnchangedTensor and
#: TensorVariance read what their collection_names / tensor_regex say: see ``rule_collections``.
#: CheckInputImages reads the model's input at every step in the job, without saving it.
RULE_COLLECTIONS: dict[str, tuple[str, ...]] = {
    "ExplodingTensor": ("gradients", "losses"),
    "VanishingGradient": ("gradients",),
    "LossNotDecreasing": ("losses",),
    "WeightUpdateRatio": ("weights",),
    "PoorWeightInitialization": ("activations", "gradients", "losses"),
    "DeadRelu": ("activations",),
    "SaturatedActivation": ("activations",),
    "AllZero": (),
    "UnchangedTensor": (),
    "TensorVariance": (),
    "CheckInputImages": (),
    # ClassImbalance reads the tensors its labels_regex / predictions_regex name (".*labels", ".*predictions"),
    # saved by collections of the script's own (smdebug's examples call them "labels" and "predictions").
    "ClassImbalance": ("labels", "predictions"),
    "Overfit": ("losses",),
    "Overtraining": ("losses",),
    "StalledTrainingRule": (),
    # XGBoost's rules read the collections smdebug's XGBoost hook saves (XGBOOST_COLLECTION_NAMES).
    "Confusion": ("labels", "predictions"),
    "FeatureImportanceOverweight": ("feature_importance",),
    "TreeDepth": ("trees",),
    # the objective's metric, as the script saves or prints it: no collection
    "ObjectiveOutOfReach": (),
}



def rule_collections(rule_name: str, parameters: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The hook collections a built-in rule reads with these (string) parameters: RULE_COLLECTIONS' entry plus
    the collections its ``collection_names`` parameter names. () for a rule we do not know (a custom rule)."""
    named = str((parameters or {}).get("collection_names", "") or "")
    extra = tuple(part.strip() for part in named.split(",") if part.strip())
    return tuple(dict.fromkeys((*RULE_COLLECTIONS.get(rule_name, ()), *extra)))


#: Parameters SageMaker puts in every rule's RuleParameters besides the rule's own.
COMMON_RULE_PARAMETERS = ("rule_to_invoke", "action_json", "start_step", "end_step", "custom_rule_source", "custom_rule_class")
#: The workflow's own parameter for the rules that judge progress: the run_spec's objective (contracts.objective, as
#: JSON), so a run that already meets it is not stopped for a loss that stopped falling or parameters that stopped
#: changing (debugger.rules.run_objective).
#: The workflow sets it; a run_spec does not, and SageMaker's own evaluator (legacy mode) never sees it.
OBJECTIVE_RULE_PARAMETER = "objective"
OBJECTIVE_AWARE_RULES = ("LossNotDecreasing", "Overfit", "Overtraining", "UnchangedTensor", "ObjectiveOutOfReach")
#: Rules of ours that SageMaker Debugger does not have: legacy mode runs no SageMaker evaluation of them.
PRODUCT_ONLY_RULES = ("ObjectiveOutOfReach",)
#: The rule parameter the workflow sets from the run_spec's epochs knob when the run_spec does not set it, and the
#: rules that take it.
PLANNED_EPOCHS_RULE_PARAMETER = "planned_epochs"
PLANNED_EPOCHS_RULES = ("ObjectiveOutOfReach",)


def rule_parameter_names(rule_name: str) -> set[str]:
    """The RuleParameters a built-in rule takes besides the common ones: its documented parameters, and the
    objective for the rules that judge progress."""
    extra = {OBJECTIVE_RULE_PARAMETER} if rule_name in OBJECTIVE_AWARE_RULES else set()
    return set(BUILTIN_RULE_DEFAULTS[rule_name]) | extra


# --------------------------------------------------------------------------- hook configuration


def validate_hook_config(config: Any) -> dict[str, Any]:
    """Check a DebugHookConfig-shaped mapping; return it. Raises ContractError naming the field."""
    if not isinstance(config, Mapping):
        raise ContractError("debugger_hook_config", "must be a JSON object like SageMaker's DebugHookConfig")
    allowed = {"S3OutputPath", "LocalPath", "HookParameters", "CollectionConfigurations"}
    for key in config:
        if key not in allowed:
            raise ContractError(f"debugger_hook_config.{key}", f"is not allowed; allowed keys: {', '.join(sorted(allowed))}")
    for key in ("S3OutputPath", "LocalPath"):
        if key in config and not isinstance(config[key], str):
            raise ContractError(f"debugger_hook_config.{key}", "must be a string")
    if "S3OutputPath" in config and not config["S3OutputPath"].startswith("s3://"):
        raise ContractError("debugger_hook_config.S3OutputPath", "must be an s3:// URI")
    _validate_string_map(config.get("HookParameters", {}), "debugger_hook_config.HookParameters")
    collections = config.get("CollectionConfigurations", [])
    if not isinstance(collections, list):
        raise ContractError("debugger_hook_config.CollectionConfigurations", "must be a list")
    for index, collection in enumerate(collections):
        where = f"debugger_hook_config.CollectionConfigurations[{index}]"
        if not isinstance(collection, Mapping) or not isinstance(collection.get("CollectionName"), str):
            raise ContractError(where, "must be an object with a CollectionName string")
        extra = set(collection) - {"CollectionName", "CollectionParameters"}
        if extra:
            raise ContractError(f"{where}.{sorted(extra)[0]}", "is not allowed; use CollectionName and CollectionParameters")
        _validate_string_map(collection.get("CollectionParameters", {}), f"{where}.CollectionParameters")
    return dict(config)


def normalize_container_hook_config(config: Any) -> dict[str, Any]:
    """The hook configuration file SageMaker writes into the container (smdebug's debughookconfig.json) ->
    the DebugHookConfig shape ``validate_hook_config`` checks, then checked.

    The file may name the S3 path ``S3Path`` (smdebug's spelling) instead of ``S3OutputPath``, hold
    parameter values as JSON numbers or booleans instead of strings (``"save_interval": 100``,
    ``"save_all": false``), and ``null`` for empty parameter maps. Numbers become their decimal text,
    booleans "true"/"false"; anything else that is not a string stays an error naming the field.
    """
    if not isinstance(config, Mapping):
        raise ContractError("debugger_hook_config", "must be a JSON object like SageMaker's DebugHookConfig")
    normalized: dict[str, Any] = {}
    for key, value in config.items():
        if key == "S3Path":
            if "S3OutputPath" in config:
                raise ContractError("debugger_hook_config.S3Path", "give S3Path or S3OutputPath, not both")
            key = "S3OutputPath"
        normalized[key] = value
    if "HookParameters" in normalized:
        normalized["HookParameters"] = _strings(normalized["HookParameters"], "debugger_hook_config.HookParameters")
    collections = normalized.get("CollectionConfigurations")
    if isinstance(collections, list):
        fixed = []
        for index, collection in enumerate(collections):
            if isinstance(collection, Mapping) and "CollectionParameters" in collection:
                where = f"debugger_hook_config.CollectionConfigurations[{index}].CollectionParameters"
                collection = {**collection, "CollectionParameters": _strings(collection["CollectionParameters"], where)}
            fixed.append(collection)
        normalized["CollectionConfigurations"] = fixed
    return validate_hook_config(normalized)


def _strings(parameters: Any, where: str) -> Any:
    if parameters is None:
        return {}
    if not isinstance(parameters, Mapping):
        return parameters  # validate_hook_config names the problem
    return {key: _parameter_text(value) for key, value in parameters.items()}


def _parameter_text(value: Any) -> Any:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    return value


def validate_rule_configs(configs: Any) -> list[dict[str, Any]]:
    """Check a DebugRuleConfigurations-shaped list; return it. Raises ContractError naming the field."""
    if not isinstance(configs, list):
        raise ContractError("debugger_rule_configs", "must be a JSON list like SageMaker's DebugRuleConfigurations")
    seen: set[str] = set()
    for index, rule in enumerate(configs):
        where = f"debugger_rule_configs[{index}]"
        if not isinstance(rule, Mapping):
            raise ContractError(where, "must be an object with RuleConfigurationName and RuleParameters")
        name = rule.get("RuleConfigurationName")
        if not isinstance(name, str) or not name:
            raise ContractError(f"{where}.RuleConfigurationName", "must be a non-empty string")
        if name in seen:
            raise ContractError(f"{where}.RuleConfigurationName", f"{name!r} is used twice; names must be unique")
        seen.add(name)
        parameters = rule.get("RuleParameters", {})
        _validate_string_map(parameters, f"{where}.RuleParameters")
        rule_to_invoke = parameters.get("rule_to_invoke", name)
        if rule_to_invoke not in BUILTIN_RULE_DEFAULTS and "custom_rule_source" not in parameters:
            raise ContractError(
                f"{where}.RuleParameters.rule_to_invoke",
                f"{rule_to_invoke!r} is not a built-in rule ({', '.join(BUILTIN_RULE_DEFAULTS)}) "
                "and no custom_rule_source is given",
            )
        if rule_to_invoke in BUILTIN_RULE_DEFAULTS:
            known = rule_parameter_names(rule_to_invoke) | set(COMMON_RULE_PARAMETERS)
            for key in parameters:
                if key not in known:
                    raise ContractError(
                        f"{where}.RuleParameters.{key}",
                        f"is not a parameter of {rule_to_invoke}; allowed: {', '.join(sorted(known))}",
                    )
        if "action_json" in parameters:
            parse_actions(parameters["action_json"], f"{where}.RuleParameters.action_json")
    return [dict(rule) for rule in configs]


def parse_actions(action_json: str, where: str = "action_json") -> list[dict[str, str]]:
    """Parse smdebug_rulesconfig's serialised action list (a JSON list or one object)."""
    try:
        actions = json.loads(action_json)
    except json.JSONDecodeError as error:
        raise ContractError(where, f"must be JSON text: {error}") from None
    if isinstance(actions, Mapping):
        actions = [actions]
    if not isinstance(actions, list):
        raise ContractError(where, "must be a JSON list of actions")
    for index, action in enumerate(actions):
        if not isinstance(action, Mapping) or action.get("name") not in {name.lower() for name in BUILTIN_ACTIONS} | set(
            BUILTIN_ACTIONS
        ):
            raise ContractError(f"{where}[{index}].name", f"must be one of {', '.join(BUILTIN_ACTIONS)}")
    return [dict(action) for action in actions]


def _validate_string_map(value: Any, where: str) -> None:
    if not isinstance(value, Mapping):
        raise ContractError(where, "must be an object of string values")
    for key, item in value.items():
        if not isinstance(item, str):
            raise ContractError(f"{where}.{key}", f"must be a string (SageMaker passes parameters as strings); got {item!r}")


#: Every debugging rule the AWS developer guide documents ("List of Debugger built-in rules"), whether or not our
#: in-job debugger implements it (BUILTIN_RULE_DEFAULTS): remedies may name any of them, because in legacy mode
#: SageMaker's own rule evaluator runs them.
DOCUMENTED_RULE_NAMES = (
    "DeadRelu",
    "ExplodingTensor",
    "PoorWeightInitialization",
    "SaturatedActivation",
    "VanishingGradient",
    "WeightUpdateRatio",
    "AllZero",
    "ClassImbalance",
    "LossNotDecreasing",
    "Overfit",
    "Overtraining",
    "SimilarAcrossRuns",
    "StalledTrainingRule",
    "TensorVariance",
    "UnchangedTensor",
    "CheckInputImages",
    "NLPSequenceRatio",
    "Confusion",
    "FeatureImportanceOverweight",
    "TreeDepth",
)
