"""Typed settings parsed from the DebugHookConfig / DebugRuleConfigurations JSON.

``contracts.rule_status`` checks the shapes; this module checks the parameter
names and values (SageMaker passes every parameter as a string) and turns
them into typed settings. Every error is a ``ContractError`` naming the field
and what is allowed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from contracts import ContractError
from contracts.debugger_config import COLLECTION_NAMES, parse_actions, validate_hook_config, validate_rule_configs

#: SageMaker's default save interval (steps) for every collection.
DEFAULT_SAVE_INTERVAL = 500

#: Save-configuration parameters accepted in HookParameters and CollectionParameters (SageMaker's names).
SAVE_PARAMETERS = ("save_interval", "start_step", "end_step", "save_steps", "include_regex")


@dataclasses.dataclass(frozen=True)
class SaveConfig:
    """When a collection is saved: ``save_steps`` if given, else every ``save_interval`` steps in [start_step, end_step)."""

    save_interval: int = DEFAULT_SAVE_INTERVAL
    start_step: int = 0
    end_step: int | None = None
    save_steps: frozenset[int] = frozenset()

    def should_save(self, step: int) -> bool:
        if self.save_steps:
            return step in self.save_steps
        if step < self.start_step or (self.end_step is not None and step >= self.end_step):
            return False
        return step % self.save_interval == 0


@dataclasses.dataclass(frozen=True)
class CollectionSettings:
    name: str
    save: SaveConfig
    include_regex: tuple[re.Pattern[str], ...] = ()

    def includes(self, tensor_name: str) -> bool:
        return not self.include_regex or any(pattern.search(tensor_name) for pattern in self.include_regex)


@dataclasses.dataclass(frozen=True)
class HookSettings:
    out_dir_from_config: str | None
    s3_output_path: str | None
    collections: dict[str, CollectionSettings]
    default_save: SaveConfig


@dataclasses.dataclass(frozen=True)
class RuleSpec:
    """One entry of DebugRuleConfigurations, with its parameters still as strings."""

    name: str
    rule_to_invoke: str
    parameters: dict[str, str]
    actions: tuple[dict[str, str], ...]
    start_step: int | None
    end_step: int | None
    custom_rule_source: str | None
    where: str


def load_json(value: Any, field: str) -> Any:
    """Accept a mapping/list as is, or JSON text; ``None``/"" mean absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise ContractError(field, f"must be JSON text: {error}") from None
    return value


def parse_int(text: str, where: str, *, minimum: int = 0) -> int:
    try:
        value = int(str(text).strip())
    except ValueError:
        raise ContractError(
            where, f'must be a whole number >= {minimum} written as a string, such as "500"; got {text!r}'
        ) from None
    if value < minimum:
        raise ContractError(where, f"must be >= {minimum}; got {value}")
    return value


def parse_float(text: str, where: str, *, minimum: float | None = None) -> float:
    try:
        value = float(str(text).strip())
    except ValueError:
        raise ContractError(where, f'must be a number written as a string, such as "0.1"; got {text!r}') from None
    if value != value:
        raise ContractError(where, "must be a number, not NaN")
    if minimum is not None and value < minimum:
        raise ContractError(where, f"must be >= {minimum}; got {value}")
    return value


def parse_bool(text: str, where: str) -> bool:
    lowered = str(text).strip().lower()
    if lowered in ("true", "1"):
        return True
    if lowered in ("false", "0"):
        return False
    raise ContractError(where, f'must be "True" or "False"; got {text!r}')


def parse_regex_list(text: str, where: str) -> tuple[re.Pattern[str], ...]:
    patterns = []
    for part in split_list(text):
        try:
            patterns.append(re.compile(part))
        except re.error as error:
            raise ContractError(where, f"{part!r} is not a valid regular expression: {error}") from None
    return tuple(patterns)


def split_list(text: str) -> list[str]:
    return [part.strip() for part in str(text).split(",") if part.strip()]


def _parse_save_parameters(
    parameters: Mapping[str, str], where: str, defaults: SaveConfig, default_regex: tuple[re.Pattern[str], ...]
) -> tuple[SaveConfig, tuple[re.Pattern[str], ...]]:
    for key in parameters:
        if key not in SAVE_PARAMETERS:
            raise ContractError(f"{where}.{key}", f"is not a save parameter; allowed: {', '.join(SAVE_PARAMETERS)}")
    save_interval = defaults.save_interval
    if "save_interval" in parameters:
        save_interval = parse_int(parameters["save_interval"], f"{where}.save_interval", minimum=1)
    start_step = defaults.start_step
    if "start_step" in parameters:
        start_step = parse_int(parameters["start_step"], f"{where}.start_step")
    end_step = defaults.end_step
    if "end_step" in parameters:
        end_step = parse_int(parameters["end_step"], f"{where}.end_step")
    if end_step is not None and end_step <= start_step:
        raise ContractError(f"{where}.end_step", f"must be greater than start_step ({start_step}); got {end_step}")
    save_steps = defaults.save_steps
    if "save_steps" in parameters:
        save_steps = frozenset(parse_int(part, f"{where}.save_steps") for part in split_list(parameters["save_steps"]))
        if not save_steps:
            raise ContractError(f"{where}.save_steps", 'must be a comma-separated list of steps such as "0,10,20"')
    regex = default_regex
    if "include_regex" in parameters:
        regex = parse_regex_list(parameters["include_regex"], f"{where}.include_regex")
    return SaveConfig(save_interval, start_step, end_step, save_steps), regex


#: Collections saved when the hook config names none (activations are opt-in).
DEFAULT_COLLECTIONS = ("gradients", "weights", "biases", "losses", "metrics", "learning_rate")


def parse_hook_config(config: Any) -> HookSettings:
    """DebugHookConfig (mapping, JSON text or None) -> HookSettings."""
    loaded = load_json(config, "debugger_hook_config")
    if loaded is None:
        loaded = {}
    validate_hook_config(loaded)
    hook_where = "debugger_hook_config.HookParameters"
    default_save, default_regex = _parse_save_parameters(loaded.get("HookParameters", {}), hook_where, SaveConfig(), ())
    collections: dict[str, CollectionSettings] = {}
    configured = loaded.get("CollectionConfigurations", [])
    for index, collection in enumerate(configured):
        where = f"debugger_hook_config.CollectionConfigurations[{index}]"
        name = collection["CollectionName"]
        if name not in COLLECTION_NAMES:
            raise ContractError(
                f"{where}.CollectionName", f"{name!r} is not a collection; allowed: {', '.join(COLLECTION_NAMES)}"
            )
        if name in collections:
            raise ContractError(f"{where}.CollectionName", f"{name!r} is configured twice")
        save, regex = _parse_save_parameters(
            collection.get("CollectionParameters", {}), f"{where}.CollectionParameters", default_save, default_regex
        )
        collections[name] = CollectionSettings(name, save, regex)
    if not configured:
        for name in DEFAULT_COLLECTIONS:
            collections[name] = CollectionSettings(name, default_save, default_regex)
    return HookSettings(
        out_dir_from_config=loaded.get("LocalPath") or None,
        s3_output_path=loaded.get("S3OutputPath") or None,
        collections=collections,
        default_save=default_save,
    )


def parse_rule_configs(configs: Any) -> list[RuleSpec]:
    """DebugRuleConfigurations (list, JSON text or None) -> RuleSpecs (built-in parameters are checked by the rules)."""
    loaded = load_json(configs, "debugger_rule_configs")
    if loaded is None:
        return []
    validate_rule_configs(loaded)
    specs = []
    for index, rule in enumerate(loaded):
        where = f"debugger_rule_configs[{index}].RuleParameters"
        parameters = dict(rule.get("RuleParameters", {}))
        name = rule["RuleConfigurationName"]
        rule_to_invoke = parameters.pop("rule_to_invoke", name)
        custom_class = parameters.pop("custom_rule_class", None)
        actions = (
            tuple(parse_actions(parameters.pop("action_json"), f"{where}.action_json"))
            if "action_json" in parameters
            else ()
        )
        start_step = (
            parse_int(parameters.pop("start_step"), f"{where}.start_step") if "start_step" in parameters else None
        )
        end_step = parse_int(parameters.pop("end_step"), f"{where}.end_step") if "end_step" in parameters else None
        if start_step is not None and end_step is not None and end_step <= start_step:
            raise ContractError(f"{where}.end_step", f"must be greater than start_step ({start_step}); got {end_step}")
        source = parameters.pop("custom_rule_source", None)
        specs.append(
            RuleSpec(
                name=name,
                rule_to_invoke=custom_class or rule_to_invoke,
                parameters=parameters,
                actions=tuple({**action, "name": _canonical_action(action["name"])} for action in actions),
                start_step=start_step,
                end_step=end_step,
                custom_rule_source=source,
                where=where,
            )
        )
    return specs


def _canonical_action(name: str) -> str:
    return {"stoptraining": "StopTraining", "email": "Email", "sms": "SMS"}.get(name.lower(), name)
