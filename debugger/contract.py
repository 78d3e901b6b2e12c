"""The shapes the training job and the workflow agree on. Standard library only.

Three things cross the boundary between the job's debugger and the Lambdas:

* the hook configuration, JSON with the shape of SageMaker's ``DebugHookConfig``
  (``S3OutputPath``, ``LocalPath``, ``HookParameters``,
  ``CollectionConfigurations[CollectionName, CollectionParameters]``);
* the rule configurations, a JSON list with the shape of SageMaker's
  ``DebugRuleConfigurations`` (``RuleConfigurationName``, ``RuleParameters``
  with ``rule_to_invoke`` and string parameters; built-in actions in
  ``RuleParameters.action_json`` as smdebug_rulesconfig serialises them);
* the rule-status document the job writes to ``<debug output>/rule-status.json``
  and the monitor Lambda reads, using SageMaker's ``RuleEvaluationStatus``
  vocabulary plus the evidence the planner needs.

Both sides validate with the functions here, so a shape change breaks both.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

RULE_STATUS_FILE = "rule-status.json"
SCHEMA_VERSION = 1

# SageMaker's RuleEvaluationStatus values.
IN_PROGRESS = "InProgress"
NO_ISSUES_FOUND = "NoIssuesFound"
ISSUES_FOUND = "IssuesFound"
ERROR = "Error"
STOPPING = "Stopping"
STOPPED = "Stopped"
RULE_EVALUATION_STATUSES = (IN_PROGRESS, NO_ISSUES_FOUND, ISSUES_FOUND, ERROR, STOPPING, STOPPED)

PHASES = ("warmup", "main")

BUILTIN_ACTIONS = ("StopTraining", "Email", "SMS")

COLLECTION_NAMES = ("gradients", "weights", "biases", "losses", "metrics", "learning_rate", "activations")

#: The built-in rules we implement, with SageMaker's documented parameter defaults.
BUILTIN_RULE_DEFAULTS: dict[str, dict[str, str]] = {
    "ExplodingTensor": {"collection_names": "", "tensor_regex": "", "only_nan": "False"},
    "VanishingGradient": {"threshold": "0.0000001"},
    "LossNotDecreasing": {
        "tensor_regex": "",
        "use_losses_collection": "True",
        "num_steps": "10",
        "diff_percent": "0.1",
        "increase_threshold_percent": "5",
        "mode": "",
    },
    "WeightUpdateRatio": {
        "num_steps": "500",
        "step": "None",
        "large_threshold": "10.0",
        "small_threshold": "0.00000001",
        "epsilon": "0.000000001",
    },
    "PoorWeightInitialization": {
        "activation_inputs_regex": "",
        "threshold": "10.0",
        "distribution_range": "0.001",
        "patience": "5",
        "steps": "10",
    },
}

#: Parameters SageMaker puts in every rule's RuleParameters besides the rule's own.
COMMON_RULE_PARAMETERS = ("rule_to_invoke", "action_json", "start_step", "end_step", "custom_rule_source", "custom_rule_class")


class ContractError(ValueError):
    """A configuration or status document breaks the shared shape; the message names the field."""

    def __init__(self, field: str, problem: str):
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


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
            known = set(BUILTIN_RULE_DEFAULTS[rule_to_invoke]) | set(COMMON_RULE_PARAMETERS)
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


# --------------------------------------------------------------------------- rule-status document


@dataclasses.dataclass
class RuleIssue:
    """Where and why a rule found an issue."""

    step: int
    tensor: str
    value: float | None
    message: str
    phase: str = "warmup"

    def __post_init__(self) -> None:
        if self.phase not in PHASES:
            raise ContractError("issue.phase", f"must be one of {', '.join(PHASES)}; got {self.phase!r}")


@dataclasses.dataclass
class RuleStatus:
    """One rule's evaluation status, in SageMaker's vocabulary."""

    RuleConfigurationName: str
    RuleEvaluationStatus: str
    StatusDetails: str = ""
    LastModifiedTime: str = ""
    issue: RuleIssue | None = None

    def __post_init__(self) -> None:
        if self.RuleEvaluationStatus not in RULE_EVALUATION_STATUSES:
            raise ContractError(
                f"rules[{self.RuleConfigurationName}].RuleEvaluationStatus",
                f"must be one of {', '.join(RULE_EVALUATION_STATUSES)}; got {self.RuleEvaluationStatus!r}",
            )


@dataclasses.dataclass
class Evidence:
    """What the planner reads to choose a remedy. Absent numbers are None."""

    initial_loss: float | None = None
    initial_gradient_norm: float | None = None
    first_issue_step: int | None = None
    phase: str | None = None
    steps_per_epoch: int | None = None
    last_step: int | None = None
    last_finite_loss: float | None = None
    max_gradient_norm: float | None = None
    learning_rate_at_issue: float | None = None


@dataclasses.dataclass
class ActionRecord:
    """An action a rule triggered: StopTraining is carried out in the job; Email/SMS are for the workflow to send."""

    action: str
    rule: str
    step: int
    at: str
    detail: str = ""


@dataclasses.dataclass
class RuleStatusDocument:
    job_name: str
    updated_at: str
    training_ended: bool = False
    last_step: int = -1
    rules: list[RuleStatus] = dataclasses.field(default_factory=list)
    evidence: Evidence = dataclasses.field(default_factory=Evidence)
    actions: list[ActionRecord] = dataclasses.field(default_factory=list)
    schema_version: int = SCHEMA_VERSION

    def issues_found(self) -> list[RuleStatus]:
        return [rule for rule in self.rules if rule.RuleEvaluationStatus == ISSUES_FOUND]

    def to_dict(self) -> dict[str, Any]:
        return _finite_or_none(dataclasses.asdict(self))

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuleStatusDocument:
        if not isinstance(data, Mapping):
            raise ContractError("rule-status", "must be a JSON object")
        version = data.get("schema_version")
        if version != SCHEMA_VERSION:
            raise ContractError("rule-status.schema_version", f"must be {SCHEMA_VERSION}; got {version!r}")
        try:
            rules = []
            for rule in data.get("rules", []):
                rule = dict(rule)
                issue = rule.pop("issue", None)
                if issue:
                    issue = dict(issue)
                    issue["value"] = parse_number(issue.get("value"))
                rules.append(RuleStatus(**rule, issue=RuleIssue(**issue) if issue else None))
            return cls(
                job_name=data["job_name"],
                updated_at=data["updated_at"],
                training_ended=bool(data.get("training_ended", False)),
                last_step=int(data.get("last_step", -1)),
                rules=rules,
                evidence=Evidence(**data.get("evidence", {})),
                actions=[ActionRecord(**action) for action in data.get("actions", [])],
            )
        except (KeyError, TypeError) as error:
            raise ContractError("rule-status", f"does not have the agreed shape: {error}") from None

    @classmethod
    def from_json(cls, text: str | bytes) -> RuleStatusDocument:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ContractError("rule-status", f"is not JSON: {error}") from None
        return cls.from_dict(data)


def _finite_or_none(value: Any) -> Any:
    """JSON has no NaN or Infinity: non-finite numbers become their string names so nothing is lost."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)  # "nan", "inf", "-inf"
    if isinstance(value, dict):
        return {key: _finite_or_none(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(item) for item in value]
    return value


def parse_number(value: Any) -> float | None:
    """Read back a number written by ``to_dict`` ("nan"/"inf" strings included)."""
    if value is None:
        return None
    return float(value)


def rule_statuses_from_sagemaker(statuses: Sequence[Mapping[str, Any]]) -> list[RuleStatus]:
    """Normalise DescribeTrainingJob's DebugRuleEvaluationStatuses (legacy mode) into RuleStatus."""
    normalised = []
    for status in statuses:
        modified = status.get("LastModifiedTime", "")
        normalised.append(
            RuleStatus(
                RuleConfigurationName=status["RuleConfigurationName"],
                RuleEvaluationStatus=status.get("RuleEvaluationStatus", IN_PROGRESS),
                StatusDetails=status.get("StatusDetails", ""),
                LastModifiedTime=modified.isoformat() if hasattr(modified, "isoformat") else str(modified),
            )
        )
    return normalised
