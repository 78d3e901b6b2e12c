"""The built-in rules' parameters: SageMaker's strings (the AWS guide's defaults filled in) parsed and checked into
the typed keyword arguments of each rule's ``__init__``; a bad one raises ContractError naming the field."""

from __future__ import annotations

import re
from typing import Any

from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS, COLLECTION_NAMES, rule_parameter_names
from debugger.core.config import parse_bool, parse_float, parse_int, parse_regex_list, split_list
from debugger.rules.run_objective import parse_objective

COLLECTION_NAME = re.compile(r"^[A-Za-z0-9_.:/-]+$")


def _collection_list(text: str, where: str) -> list[str]:
    """Collection names: built-in ones or any collection the hook configuration defines."""
    names = split_list(text)
    for name in names:
        if not COLLECTION_NAME.match(name):
            raise ContractError(where, f"{name!r} is not a collection name (built-in: {', '.join(COLLECTION_NAMES)})")
    return names


def _optional_int(text: str, where: str) -> int | None:
    return None if str(text).strip() in ("", "None") else parse_int(text, where, minimum=1)


def parse_regex(text: str, where: str) -> re.Pattern[str]:
    """One regular expression (alternatives with ``|``: a comma may be part of the pattern)."""
    try:
        return re.compile(str(text).strip())
    except re.error as error:
        raise ContractError(where, f"{text!r} is not a valid regular expression: {error}") from None


def parse_fraction(text: str, where: str) -> float:
    value = parse_float(text, where, minimum=0.0)
    if value > 1.0:
        raise ContractError(where, f'is a fraction: must be between 0 and 1, such as "0.7"; got {value:g}')
    return value


def _mode(text: str, where: str) -> str:
    if str(text).strip() not in ("", "TRAIN", "EVAL", "GLOBAL"):
        raise ContractError(where, f"must be TRAIN, EVAL, GLOBAL or empty; got {text!r}")
    return str(text).strip()


def _percent(text: str, where: str) -> float:
    value = parse_float(text, where, minimum=0.0)
    if value > 100.0:
        raise ContractError(where, f"is a percentage: must be between 0 and 100; got {value:g}")
    return value


def _optional_float(text: str, where: str) -> float | None:
    return None if str(text).strip() in ("", "None") else parse_float(text, where)


def _bounds(text: str, where: str) -> tuple[float, float]:
    """"(min, max)" (the guide's spelling) or "min,max" -> (min, max) with min < max."""
    parts = split_list(str(text).strip().strip("()[]"))
    if len(parts) != 2:
        raise ContractError(where, f'must be a pair "(min, max)" such as "(-9.4999, 9.4999)"; got {text!r}')
    low, high = (parse_float(part, where) for part in parts)
    if not low < high:
        raise ContractError(where, f"the minimum must be below the maximum; got ({low:g}, {high:g})")
    return low, high


def _signed_int(text: str, where: str) -> int:
    try:
        return int(str(text).strip())
    except ValueError:
        raise ContractError(where, f'must be a whole number such as "1" (or "-1" for channels last); got {text!r}') from None


def _optional_category_count(text: str, where: str) -> int | None:
    if str(text).strip() in ("", "None"):
        return None  # Confusion infers it from the labels and predictions it sees
    return parse_int(text, where, minimum=2)


def _tensor_name(text: str, where: str) -> str:
    name = str(text).strip()
    if not name or not COLLECTION_NAME.match(name):
        raise ContractError(where, f"must be a tensor or collection name such as 'labels'; got {text!r}")
    return name


def _non_negative(text: str, where: str) -> float:
    return parse_float(text, where, minimum=0.0)


def _count(text: str, where: str) -> int:
    return parse_int(text, where, minimum=1)


#: How each built-in parameter's string is parsed (and checked).
_PARSERS = {
    "collection_names": _collection_list,
    "tensor_regex": parse_regex_list,
    "activation_inputs_regex": parse_regex_list,
    "only_nan": parse_bool,
    "use_losses_collection": parse_bool,
    "threshold": _non_negative,
    "num_steps": _optional_int,
    "diff_percent": _non_negative,
    "increase_threshold_percent": _non_negative,
    "mode": _mode,
    "large_threshold": _non_negative,
    "small_threshold": _non_negative,
    "epsilon": _non_negative,
    "distribution_range": _non_negative,
    "patience": _count,
    "steps": _count,
    # Training-curve rules (debugger/rules/training_rules.py).
    "threshold_imbalance": lambda text, where: parse_float(text, where, minimum=1.0),
    "threshold_misprediction": parse_fraction,
    "samples": _count,
    "argmax": parse_bool,
    "labels_regex": parse_regex,
    "predictions_regex": parse_regex,
    "stop_training_on_fire": parse_bool,
    "training_job_name_prefix": lambda text, where: str(text).strip(),
    # --- curve and XGBoost rules (debugger/rules/curve_rules.py, debugger/rules/xgboost_rules.py)
    "start_step": lambda text, where: parse_int(text, where, minimum=0),
    "ratio_threshold": _non_negative,
    "patience_train": _count,
    "patience_validation": _count,
    "delta": _non_negative,
    "category_no": _optional_category_count,
    "labels": _tensor_name,
    "predictions": _tensor_name,
    "labels_collection": _tensor_name,
    "predictions_collection": _tensor_name,
    "min_diag": parse_fraction,
    "max_off_diag": parse_fraction,
    "nfeatures": _count,
    "depth": _non_negative,
    # --- end of curve and XGBoost rules
    # Tensor and activation rules (debugger/rules/tensor_rules.py)
    "threshold_inactivity": _percent,
    "threshold_layer": _percent,
    "threshold_tanh": _bounds,
    "threshold_sigmoid": _bounds,
    "rtol": _non_negative,
    "atol": _non_negative,
    "equal_nan": parse_bool,
    "max_threshold": _optional_float,
    "min_threshold": _optional_float,
    "threshold_mean": _non_negative,
    "threshold_samples": _count,
    "regex": parse_regex,
    "channel": _signed_int,
    # the workflow's own: the run's objective (contracts.debugger_config.OBJECTIVE_RULE_PARAMETER), and the epochs the
    # job trains (ObjectiveOutOfReach's planned_epochs, wherever the run_spec states them: contracts.planned_epochs)
    "objective": parse_objective,
    "planned_epochs": _optional_int,
}


def builtin_rule_parameters(rule_name: str, parameters: dict[str, str], where: str) -> dict[str, Any]:
    """SageMaker's string parameters (defaults filled in) -> typed keyword arguments. Raises ContractError."""
    defaults = BUILTIN_RULE_DEFAULTS[rule_name]
    allowed = rule_parameter_names(rule_name)
    typed = {}
    for key, text in {**defaults, **parameters}.items():
        if key not in allowed:
            raise ContractError(
                f"{where}.{key}", f"is not a parameter of {rule_name}; allowed: {', '.join(sorted(allowed))}"
            )
        typed[key] = _PARSERS[key](text, f"{where}.{key}")
    if rule_name == "LossNotDecreasing" and typed["num_steps"] is None:
        raise ContractError(f"{where}.num_steps", 'must be a whole number >= 1 such as "10"')
    if rule_name == "StalledTrainingRule" and typed["threshold"] <= 0:
        raise ContractError(f"{where}.threshold", 'must be a number of seconds > 0, such as "1800"')
    if rule_name == "UnchangedTensor" and (typed["num_steps"] is None or typed["num_steps"] < 2):
        raise ContractError(f"{where}.num_steps", 'must be a whole number >= 2 (the steps compared) such as "3"')
    return typed
