"""Which built-in rules watch a job: the run_spec's ``rules``, as the SageMaker Python SDK's
``Rule.sagemaker(rule_configs.dead_relu(), rule_parameters={...})`` list says it. Standard library only.

    "rules": ["ExplodingTensor", {"name": "DeadRelu", "parameters": {"threshold_layer": "60.0"}}]

A name alone takes the rule's documented defaults; parameters are strings, as SageMaker passes RuleParameters.
Every selected rule stops the job when it finds an issue (the StopTraining action the workflow adds), so the
job's end is the workflow's signal. Left out, the run is watched by its framework's defaults
(:data:`DEFAULT_RULES_BY_FRAMEWORK`: :data:`DEFAULT_RULES` for PyTorch).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from contracts import ContractError
from contracts.debugger_config import (
    BUILTIN_RULE_DEFAULTS,
    COMMON_RULE_PARAMETERS,
    OBJECTIVE_RULE_PARAMETER,
    PRODUCT_ONLY_RULES,
)
from contracts.suggestions import did_you_mean

#: The rules that watch a job whose run_spec selects none: the failures the AWS sample's loop remediates, and a job
#: that can no longer reach the run's objective in its epochs (the product's own rule, contracts.objective_reach;
#: why a default: docs/decisions/013-objective-out-of-reach.md).
DEFAULT_RULES = ("ExplodingTensor", "VanishingGradient", "LossNotDecreasing", "ObjectiveOutOfReach")
#: An XGBoost job's defaults: the validation metric that stops improving (Overtraining: overfitting as boosting goes
#: on) and an evaluation metric that stalls (LossNotDecreasing). Overfit is left out: at its documented
#: ratio_threshold 0.1 it fires on healthy boosting, whose training loss heads to 0
#: (docs/decisions/020-rule-defaults-differing-from-sagemaker.md).
XGBOOST_DEFAULT_RULES = ("Overtraining", "LossNotDecreasing")
DEFAULT_RULES_BY_FRAMEWORK = {"pytorch": DEFAULT_RULES, "xgboost": XGBOOST_DEFAULT_RULES}
#: The rules that read what only a boosted tree model has (trees, feature importance, a confusion matrix of
#: validation predictions) ...
XGBOOST_ONLY_RULES = ("Confusion", "FeatureImportanceOverweight", "TreeDepth")
#: ... and every rule an XGBoost job can feed: SageMaker Debugger's XGBoost rules, and the stall watchdog. The
#: others read gradients, weights or activations, which boosting does not have.
XGBOOST_RULES = (
    "LossNotDecreasing",
    "Overfit",
    "Overtraining",
    "ClassImbalance",
    "StalledTrainingRule",
    *XGBOOST_ONLY_RULES,
)
#: The product's own rule defaults, per framework, where they differ from the AWS guide's
#: (contracts.debugger_config.BUILTIN_RULE_DEFAULTS): what a rule selected by name (or by default) runs with in our
#: debugger; a run_spec's parameters win. Each keeps healthy training from being stopped; the healthy runs the
#: documented value stopped are in docs/decisions/020-rule-defaults-differing-from-sagemaker.md:
#: * LossNotDecreasing num_steps 20 (SageMaker: 10): twenty minibatch losses average out more of their noise.
#:   XGBoost's rounds carry one exact metric each (no batch noise): the documented 10 there.
#: * CheckInputImages threshold_mean 1.0 (SageMaker: 0.2): pictures scaled to [0, 1] train well; raw pixel values
#:   (0-255, or 0-16) still fire.
#: * PoorWeightInitialization threshold 100 (SageMaker: 10): a ReLU after a residual add sees the block's output plus
#:   its input, whose variance grows with the blocks by design.
#: * Overfit patience 3 (SageMaker: 1): early in training batch norm's running statistics can put one evaluation far
#:   above the last.
PRODUCT_RULE_DEFAULTS: dict[str, dict[str, dict[str, str]]] = {
    "pytorch": {
        "LossNotDecreasing": {"num_steps": "20"},
        "CheckInputImages": {"threshold_mean": "1.0"},
        "Overfit": {"patience": "3"},
        "PoorWeightInitialization": {"threshold": "100"},
    },
    "xgboost": {},
}


def product_rule_parameters(rule_name: str, framework: str = "pytorch") -> dict[str, str]:
    """The product's defaults for ``rule_name`` on ``framework`` where they differ from the documented ones."""
    return dict(PRODUCT_RULE_DEFAULTS.get(framework, {}).get(rule_name, {}))


#: CreateTrainingJob's DebugRuleConfigurations holds at most 20 entries.
MAX_RULES = 20
#: Parameters the workflow sets itself on every rule (the action that stops the job, the rule to run).
WORKFLOW_RULE_PARAMETERS = ("rule_to_invoke", "action_json", "custom_rule_source", "custom_rule_class", OBJECTIVE_RULE_PARAMETER)
#: Rule parameters a run_spec may set besides the rule's own (SageMaker's common ones the workflow leaves alone).
COMMON_SETTABLE_PARAMETERS = tuple(name for name in COMMON_RULE_PARAMETERS if name not in WORKFLOW_RULE_PARAMETERS)
#: Findings that describe the data, not the training: (rule, issue kind) -> the rule parameter that bounds the
#: measured value. A remedy answers such a finding without changing it (class weights leave the label counts as
#: they are), so the next job would stop on it again. Once a remedy answers it, the next job's bound is the measured
#: value times DATA_FINDING_MARGIN, and the rule goes on watching the training (ClassImbalance: mispredictions).
DATA_FINDING_BOUNDS = {("ClassImbalance", "imbalance"): "threshold_imbalance"}
#: Room above the measured value: the next job's sample of the same data measures about the same ratio
#: (docs/decisions/026-data-finding-bound.md).
DATA_FINDING_MARGIN = 2.0


def parse_rules(value: Any, where: str = "rules") -> list[dict[str, Any]]:
    """The run_spec's ``rules`` -> ``[{"name": ..., "parameters": {...}}]`` (names unique, parameters strings).

    Raises ContractError naming the entry and the fix."""
    if not isinstance(value, list):
        raise ContractError(
            where, f'must be a JSON list of rule names or {{"name", "parameters"}} objects; got {value!r}'
        )
    if len(value) > MAX_RULES:
        raise ContractError(where, f"selects {len(value)} rules; a training job takes at most {MAX_RULES}")
    selection, seen = [], set()
    for index, entry in enumerate(value):
        rule = _parse_entry(entry, f"{where}[{index}]")
        if rule["name"] in seen:
            raise ContractError(f"{where}[{index}]", f"selects {rule['name']} twice; give it once with its parameters")
        seen.add(rule["name"])
        selection.append(rule)
    return selection


def default_rules(framework: str = "pytorch") -> list[dict[str, Any]]:
    return [{"name": name, "parameters": {}} for name in DEFAULT_RULES_BY_FRAMEWORK[framework]]


def watching_rules(rules: list[dict[str, Any]] | None, framework: str = "pytorch") -> list[dict[str, Any]]:
    """The rules that watch a job: the run_spec's selection, or (None) the framework's defaults."""
    return default_rules(framework) if rules is None else rules


#: Legacy mode: SageMaker Debugger's own evaluation of a selected rule is named this prefix + the rule's name, so it
#: never clashes with ours (both report, under their own names).
LEGACY_RULE_PREFIX = "Sagemaker"


def reporting_rule_names(rules: list[dict[str, Any]] | None, framework: str, legacy: bool) -> list[str]:
    """Every rule configuration that must report on a job: each watching rule (our in-job evaluation), and in
    legacy mode SageMaker's evaluation of it besides. A job is clean only when all of them say NoIssuesFound."""
    names = [rule["name"] for rule in watching_rules(rules, framework)]
    legacy_names = [LEGACY_RULE_PREFIX + name for name in names if name not in PRODUCT_ONLY_RULES]
    return names + legacy_names if legacy else names


def with_rule_parameter(rules: list[dict[str, Any]], name: str, parameter: str, value: str) -> list[dict[str, Any]]:
    """The selection with one rule's parameter set (the rule's other parameters kept; ``name`` must be selected)."""
    if name not in {rule["name"] for rule in rules}:
        raise ContractError("rules", f"{name} is not selected, so its {parameter} cannot be set")
    return [
        {"name": rule["name"], "parameters": {**rule["parameters"], parameter: value}} if rule["name"] == name else rule
        for rule in rules
    ]


def check_rules_for_framework(rules: list[dict[str, Any]], framework: str, where: str = "rules") -> None:
    """Refuse a selected rule the framework's jobs cannot feed (ContractError naming the entry and the choice)."""
    for index, rule in enumerate(rules):
        name = rule["name"]
        if framework == "xgboost" and name not in XGBOOST_RULES:
            raise ContractError(
                f"{where}[{index}]",
                f"{name} reads gradients, weights or activations, which an XGBoost job does not have; for XGBoost "
                f"choose from {', '.join(XGBOOST_RULES)}",
            )
        if framework != "xgboost" and name in XGBOOST_ONLY_RULES:
            raise ContractError(
                f"{where}[{index}]",
                f"{name} reads what a boosted tree model saves (trees, feature importance, validation predictions); "
                f'it needs "framework": "xgboost"',
            )


def _parse_entry(entry: Any, where: str) -> dict[str, Any]:
    if isinstance(entry, str):
        name, parameters = entry, {}
    elif isinstance(entry, Mapping):
        unknown = sorted(set(entry) - {"name", "parameters"})
        if unknown:
            raise ContractError(
                f"{where}.{unknown[0]}",
                f'is not a rule entry key{did_you_mean(unknown[0], ("name", "parameters"))}; allowed: "name", "parameters"',
            )
        if "name" not in entry:
            raise ContractError(f"{where}.name", "is required: the built-in rule's name, e.g. DeadRelu")
        name, parameters = entry["name"], entry.get("parameters", {})
    else:
        raise ContractError(where, f'must be a rule name or a {{"name", "parameters"}} object; got {entry!r}')
    if not isinstance(name, str) or name not in BUILTIN_RULE_DEFAULTS:
        raise ContractError(
            f"{where}.name" if isinstance(entry, Mapping) else where,
            f"{name!r} is not a built-in rule of the debugger{did_you_mean(name, BUILTIN_RULE_DEFAULTS)}; choose from "
            f"{', '.join(sorted(BUILTIN_RULE_DEFAULTS))}",
        )
    if not isinstance(parameters, Mapping):
        raise ContractError(f"{where}.parameters", f"must be a JSON object of string parameters; got {parameters!r}")
    allowed = set(BUILTIN_RULE_DEFAULTS[name]) | set(COMMON_SETTABLE_PARAMETERS)
    for key, text in parameters.items():
        if key in WORKFLOW_RULE_PARAMETERS:
            raise ContractError(
                f"{where}.parameters.{key}", "is set by the workflow (every rule stops the job); leave it out"
            )
        if key not in allowed:
            raise ContractError(
                f"{where}.parameters.{key}",
                f"is not a parameter of {name}{did_you_mean(key, allowed)}; allowed: {', '.join(sorted(allowed))}",
            )
        if not isinstance(text, str):
            raise ContractError(
                f"{where}.parameters.{key}",
                f'must be a string, as SageMaker passes rule parameters (write "{text}" in quotes); got {text!r}',
            )
    return {"name": name, "parameters": dict(parameters)}
