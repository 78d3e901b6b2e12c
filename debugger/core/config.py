"""Typed settings parsed from the DebugHookConfig / DebugRuleConfigurations JSON.

``contracts.debugger_config`` checks the shapes; this module checks the parameter
names and values and turns them into typed settings, with smdebug's semantics
(save settings per mode, ``include_regex`` feeding the ``default`` collection,
``reductions``). Every error is a ``ContractError`` naming the field and what is
allowed.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from typing import Any

from contracts import ContractError
from contracts.debugger_config import parse_actions, validate_hook_config, validate_rule_configs
from debugger.core.modes import ModeKeys
from debugger.core.reductions import ReductionConfig
from debugger.core.save_config import (
    DEFAULT_SAVE_INTERVAL,
    SaveConfig,
    SaveConfigMode,
    save_config_from_modes,
    save_parameter_keys,
    save_parameters_by_mode,
)

__all__ = ["DEFAULT_SAVE_INTERVAL", "CollectionSpec", "HookSettings", "RuleSpec", "parse_hook_config", "parse_rule_configs"]

#: Hook-level parameters besides the save settings (smdebug's HookParameters).
HOOK_PARAMETERS = (
    "include_regex",
    "reductions",
    "save_raw_tensor",
    "save_shape",
    "save_all",
    "include_workers",
    "dry_run",
    "export_tensorboard",
    "tensorboard_dir",
)
#: Collection-level parameters besides the save settings (smdebug's CollectionParameters).
COLLECTION_PARAMETERS = ("include_regex", "reductions", "save_raw_tensor", "save_shape", "save_histogram")


@dataclasses.dataclass(frozen=True)
class CollectionSpec:
    """One CollectionConfigurations entry, parsed; ``where`` names it in errors."""

    name: str
    where: str
    save_by_mode: dict[ModeKeys, dict[str, Any]]
    reduction_config: ReductionConfig | None
    include_regex: tuple[str, ...]
    save_histogram: bool | None


@dataclasses.dataclass(frozen=True)
class HookSettings:
    out_dir_from_config: str | None
    s3_output_path: str | None
    save_by_mode: dict[ModeKeys, dict[str, Any]]
    reduction_config: ReductionConfig | None
    include_regex: tuple[str, ...]
    save_all: bool
    #: The collections named in CollectionConfigurations, in order; None when the configuration lists none.
    collection_specs: tuple[CollectionSpec, ...] | None
    dry_run: bool = False
    include_workers: str = "one"
    export_tensorboard: bool = False
    tensorboard_dir: str | None = None

    @property
    def save_config(self) -> SaveConfig:
        return save_config_from_modes(self.save_by_mode)

    @property
    def default_save(self) -> SaveConfigMode:
        """The GLOBAL mode's configuration (what a script that never calls set_mode gets)."""
        return self.save_config.get_save_config(ModeKeys.GLOBAL)


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


def _check_keys(parameters: Mapping[str, Any], where: str, extra: tuple[str, ...]) -> None:
    allowed = (*save_parameter_keys(), *extra)
    for key in parameters:
        if key not in allowed:
            raise ContractError(f"{where}.{key}", f"is not a parameter here; allowed: {', '.join(allowed)}")


def _regexes(parameters: Mapping[str, Any], where: str) -> tuple[str, ...]:
    if "include_regex" not in parameters:
        return ()
    value = parameters["include_regex"]
    patterns = split_list(value) if isinstance(value, str) else [str(item) for item in value]
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ContractError(f"{where}.include_regex", f"{pattern!r} is not a valid regular expression: {error}") from None
    return tuple(patterns)


def _reduction_config(parameters: Mapping[str, Any], where: str) -> ReductionConfig | None:
    if not any(key in parameters for key in ("reductions", "save_raw_tensor", "save_shape")):
        return None
    return ReductionConfig.from_parameters(dict(parameters), where)


def _collection_spec(index: int, collection: Mapping[str, Any], hook_by_mode: dict) -> CollectionSpec:
    where = f"debugger_hook_config.CollectionConfigurations[{index}]"
    name = collection["CollectionName"]
    if not name.strip():
        raise ContractError(f"{where}.CollectionName", 'must be a collection name such as "weights"')
    parameters = collection.get("CollectionParameters") or {}
    parameters_where = f"{where}.CollectionParameters"
    _check_keys(parameters, parameters_where, COLLECTION_PARAMETERS)
    histogram = parameters.get("save_histogram")
    return CollectionSpec(
        name=name,
        where=where,
        save_by_mode=save_parameters_by_mode(parameters, parameters_where, base=hook_by_mode),
        reduction_config=_reduction_config(parameters, parameters_where),
        include_regex=_regexes(parameters, parameters_where),
        save_histogram=None if histogram is None else parse_bool(histogram, f"{parameters_where}.save_histogram"),
    )


def parse_hook_config(config: Any) -> HookSettings:
    """DebugHookConfig (mapping, JSON text or None; parameter values as strings) -> HookSettings."""
    loaded = load_json(config, "debugger_hook_config")
    if loaded is None:
        loaded = {}
    validate_hook_config(loaded)
    hook_where = "debugger_hook_config.HookParameters"
    hook_parameters = loaded.get("HookParameters") or {}
    _check_keys(hook_parameters, hook_where, HOOK_PARAMETERS)
    hook_by_mode = save_parameters_by_mode(hook_parameters, hook_where)
    specs = None
    if loaded.get("CollectionConfigurations"):
        specs = tuple(
            _collection_spec(index, collection, hook_by_mode)
            for index, collection in enumerate(loaded["CollectionConfigurations"])
        )
        names = [spec.name for spec in specs]
        for spec in specs:
            if names.count(spec.name) > 1:
                raise ContractError(f"{spec.where}.CollectionName", f"{spec.name!r} is configured twice")
    workers = str(hook_parameters.get("include_workers", "one"))
    if workers not in ("one", "all"):
        raise ContractError(f"{hook_where}.include_workers", f'must be "one" or "all"; got {workers!r}')
    flags = {
        key: parse_bool(hook_parameters[key], f"{hook_where}.{key}") if key in hook_parameters else False
        for key in ("save_all", "dry_run", "export_tensorboard")
    }
    return HookSettings(
        out_dir_from_config=loaded.get("LocalPath") or None,
        s3_output_path=loaded.get("S3OutputPath") or None,
        save_by_mode=hook_by_mode,
        reduction_config=_reduction_config(hook_parameters, hook_where),
        include_regex=_regexes(hook_parameters, hook_where),
        save_all=flags["save_all"],
        collection_specs=specs,
        dry_run=flags["dry_run"],
        include_workers=workers,
        export_tensorboard=flags["export_tensorboard"],
        tensorboard_dir=hook_parameters.get("tensorboard_dir") or None,
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
