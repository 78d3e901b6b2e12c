"""A remedy's ``when`` read from JSON into a :class:`contracts.remedy_conditions.Condition`, each test checked against
the run's starting hyperparameters, with an error naming the field and its fix. Standard library only."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from contracts import ContractError
from contracts.debugger_settings import DEBUGGER_SETTINGS
from contracts.divergence import DIVERGENCE_KINDS
from contracts.hyperparameter_values import Value, describe_kind, fits_kind, is_number, kind_of_value, show
from contracts.loss_history import LOSS_SHAPES
from contracts.remedy_conditions import (
    BOOLEAN_TESTS,
    CONDITION_KEYS,
    LOSS_TRENDS,
    SPIKE_SERIES,
    UNKNOWN_LOSS_SHAPE,
    Condition,
)
from contracts.rule_status import ISSUE_KIND_PATTERN, PHASES
from contracts.suggestions import did_you_mean
from contracts.training_labels import LABEL_FINDINGS


def parse_condition(
    value: Any, hyperparameters: Mapping[str, Value], where: str, kinds: Mapping[str, str] | None = None
) -> Condition:
    """A remedy's ``when``, checked against the run's starting hyperparameters (of ``kinds``,
    ``contracts.hyperparameter_values``). Raises ContractError."""
    kinds = kinds or {}
    if not isinstance(value, Mapping):
        raise ContractError(where, f"must be an object of conditions: {', '.join(CONDITION_KEYS)}")
    for key in value:
        if key not in CONDITION_KEYS:
            raise ContractError(f"{where}.{key}", f"is not a condition{did_you_mean(key, CONDITION_KEYS)}; allowed: {', '.join(CONDITION_KEYS)}")
    phase = value.get("phase")
    if phase is not None and phase not in PHASES:
        raise ContractError(f"{where}.phase", f"must be one of {', '.join(PHASES)} (got {phase!r})")
    early = value.get("early")
    if early is not None and not isinstance(early, bool):
        raise ContractError(f"{where}.early", f"must be true or false (got {early!r})")
    norm = value.get("initial_gradient_norm_above")
    if norm is not None and (not is_number(norm) or not math.isfinite(norm) or norm < 0):
        raise ContractError(f"{where}.initial_gradient_norm_above", f"must be a number >= 0 (got {norm!r})")
    loss = value.get("loss")
    if loss is not None and loss not in LOSS_TRENDS:
        raise ContractError(f"{where}.loss", f"must be one of {', '.join(LOSS_TRENDS)} (got {loss!r})")
    issue_kind = value.get("issue_kind")
    if issue_kind is not None and (not isinstance(issue_kind, str) or not ISSUE_KIND_PATTERN.match(issue_kind)):
        raise ContractError(
            f"{where}.issue_kind", f"must be a rule's issue kind such as \"above_max\" or \"rising\" (got {issue_kind!r})"
        )
    bounds: dict[str, float] = {}
    for key in ("issue_value_above", "issue_value_below"):
        bound = value.get(key)
        if bound is not None:
            if not is_number(bound) or not math.isfinite(bound):
                raise ContractError(f"{where}.{key}", f"must be a finite number (got {bound!r})")
            bounds[key] = float(bound)
    if len(bounds) == 2 and bounds["issue_value_above"] >= bounds["issue_value_below"]:
        raise ContractError(
            f"{where}.issue_value_above",
            f"{show(bounds['issue_value_above'])} is not below issue_value_below {show(bounds['issue_value_below'])}: "
            "no value could pass both",
        )
    spiked_above = value.get("spiked_above")
    if spiked_above is not None and (not is_number(spiked_above) or not math.isfinite(spiked_above) or spiked_above <= 1):
        raise ContractError(
            f"{where}.spiked_above", f"must be a factor above 1 on the initial loss or gradient norm (got {spiked_above!r})"
        )
    # the tests that qualify spiked_above: (allowed values, what the qualifier says of the spike)
    for key, allowed, what in (("spike_phase", PHASES, "whose phase it tests"), ("spike_series", SPIKE_SERIES, "whose series it names")):
        qualifier = value.get(key)
        if qualifier is None:
            continue
        if qualifier not in allowed:
            raise ContractError(f"{where}.{key}", f"must be one of {', '.join(allowed)} (got {qualifier!r})")
        if spiked_above is None:
            raise ContractError(f"{where}.{key}", f"needs spiked_above: the spike {what}")
    spike_phase, spike_series = value.get("spike_phase"), value.get("spike_series")
    diverged = _one_or_list(value, "diverged", DIVERGENCE_KINDS, where)
    target_scale = value.get("target_scale_above")
    if target_scale is not None and (not is_number(target_scale) or not math.isfinite(target_scale) or target_scale < 1):
        raise ContractError(
            f"{where}.target_scale_above", f"must be a factor of at least 1 on the outputs' scale (got {target_scale!r})"
        )
    shapes = _one_or_list(value, "loss_shape", (*LOSS_SHAPES, UNKNOWN_LOSS_SHAPE), where)
    findings = _one_or_list(value, "training_labels", LABEL_FINDINGS, where)
    flags = {}
    for key in BOOLEAN_TESTS:
        flags[key] = value.get(key)
        if flags[key] is not None and not isinstance(flags[key], bool):
            raise ContractError(f"{where}.{key}", f"must be true or false (got {flags[key]!r})")
    equal = value.get("hyperparameters", {})
    if not isinstance(equal, Mapping):
        raise ContractError(f"{where}.hyperparameters", "must be an object of hyperparameter: value")
    for name, expected in equal.items():
        if name not in hyperparameters:
            raise ContractError(f"{where}.hyperparameters.{name}", f"{name!r} is not in run_spec.hyperparameters")
        kind = kinds.get(name) or kind_of_value(hyperparameters[name])
        if not fits_kind(expected, kind):
            raise ContractError(f"{where}.hyperparameters.{name}", f"must be {describe_kind(kind)} like its starting value")
    debugger_tests = {key: _debugger_tests(value, key, hyperparameters, where) for key in ("debugger_settings", "debugger_settings_tried")}
    compared: dict[str, tuple[tuple[str, float], ...]] = {}
    for key in ("hyperparameters_above", "hyperparameters_below"):
        tests = value.get(key, {})
        if not isinstance(tests, Mapping):
            raise ContractError(f"{where}.{key}", "must be an object of hyperparameter: number")
        for name, bound in tests.items():
            if name not in hyperparameters:
                raise ContractError(f"{where}.{key}.{name}", f"{name!r} is not in run_spec.hyperparameters")
            if not is_number(hyperparameters[name]):
                raise ContractError(f"{where}.{key}.{name}", f"{name} is not a number: nothing to compare")
            if not is_number(bound) or not math.isfinite(bound):
                raise ContractError(f"{where}.{key}.{name}", f"must be a finite number (got {bound!r})")
        compared[key] = tuple((name, float(bound)) for name, bound in tests.items())
    return Condition(
        phase=phase,
        early=early,
        initial_gradient_norm_above=float(norm) if norm is not None else None,
        loss=loss,
        issue_kind=issue_kind,
        issue_value_above=bounds.get("issue_value_above"),
        issue_value_below=bounds.get("issue_value_below"),
        hyperparameters=tuple(equal.items()),
        hyperparameters_above=compared["hyperparameters_above"],
        hyperparameters_below=compared["hyperparameters_below"],
        spiked_above=float(spiked_above) if spiked_above is not None else None,
        spike_phase=spike_phase,
        spike_series=spike_series,
        target_scale_above=float(target_scale) if target_scale is not None else None,
        diverged=diverged,
        loss_shape=shapes,
        training_labels=findings,
        debugger_settings=debugger_tests["debugger_settings"],
        debugger_settings_tried=debugger_tests["debugger_settings_tried"],
        **flags,
    )


def _debugger_tests(value: Mapping[str, Any], key: str, hyperparameters: Mapping[str, Value], where: str) -> tuple[tuple[str, Value], ...]:
    """``value[key]`` (debugger setting name -> value) as (run_spec field, value) pairs, each checked."""
    debugger = value.get(key, {})
    if not isinstance(debugger, Mapping):
        raise ContractError(f"{where}.{key}", "must be an object of debugger setting: value")
    tests = []
    for name, expected in debugger.items():
        setting = DEBUGGER_SETTINGS.get(name)
        if setting is None:
            raise ContractError(
                f"{where}.{key}.{name}",
                f"is not a debugger setting{did_you_mean(name, DEBUGGER_SETTINGS)}; allowed: {', '.join(DEBUGGER_SETTINGS)}",
            )
        if setting.field not in hyperparameters:
            raise ContractError(f"{where}.{key}.{name}", "this run's framework has no debugger settings")
        if expected not in setting.values:
            raise ContractError(f"{where}.{key}.{name}", f"must be one of {', '.join(setting.values)} (got {expected!r})")
        tests.append((setting.field, expected))
    return tuple(tests)


def _one_or_list(value: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: str) -> tuple[str, ...]:
    """A condition given as one name or a list of them, each one of ``allowed``."""
    given = value.get(key)
    if given is None:
        return ()
    names = (given,) if isinstance(given, str) else tuple(given) if isinstance(given, list) else None
    if not names or any(name not in allowed for name in names):
        raise ContractError(f"{where}.{key}", f"must be one of {', '.join(allowed)}, or a list of them (got {given!r})")
    return names
