"""Rules: SageMaker Debugger's built-in rules (documented semantics, parameters, defaults) and custom rules.

A rule is a class in smdebug's style::

    from debugger.rules import Rule

    class LossAbove(Rule):
        def __init__(self, base_trial, threshold="5.0"):
            super().__init__(base_trial)
            self.threshold = float(threshold)      # RuleParameters arrive as strings

        def invoke_at_step(self, step):
            for name in self.base_trial.tensor_names(collection="losses"):
                tensor = self.base_trial.tensor(name)
                if tensor.has_step(step) and float(tensor.value(step)) > self.threshold:
                    self.report(tensor=name, value=float(tensor.value(step)), message="loss above threshold")
                    return True
            return False

The hook calls ``check(step)`` (by default ``invoke_at_step(step)``) on every step, with the global step.
In our own profile the cheap scalars (every loss, ``total_gradient_norm``, ``learning_rate``) exist at
every step; full tensors only at saved steps, so check ``tensor.has_step(step)`` (a
``TensorUnavailableForStep`` raised by ``value`` just skips the step). Return True when the rule finds an
issue; ``report`` adds where and why. The built-in rules live in :mod:`debugger.builtin_rules`;
``smdebug.rules.rule.Rule`` (smdebug's base class, with ``req_tensors``) builds on this one.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
import logging
import os
import re
import sys
from pathlib import Path
from typing import Any

from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS, COLLECTION_NAMES, rule_parameter_names
from debugger.config import RuleSpec, parse_bool, parse_float, parse_int, parse_regex_list, split_list
from debugger.run_objective import parse_objective
from debugger.trial import BaseTrial

#: The scalar the hook records at every step: the L2 norm over all parameter gradients.
TOTAL_GRADIENT_NORM = "total_gradient_norm"
GRADIENT_PREFIX = "gradient/"


@dataclasses.dataclass
class Finding:
    tensor: str
    value: float | None
    message: str
    #: How the condition failed, for rules with more than one way (contracts.rule_status.RuleIssue.kind).
    kind: str | None = None


@dataclasses.dataclass(frozen=True)
class Requirement:
    """A collection a rule needs saved; ``steps`` None means at the configured save steps. ``every``: also every
    this many training (TRAIN or GLOBAL) steps, whatever the save interval (a rule that compares steps so far
    apart, such as WeightUpdateRatio with num_steps)."""

    collection: str
    steps: frozenset[int] | None = None
    include_regex: tuple[re.Pattern[str], ...] = ()
    every: int | None = None


class Rule:
    """Base class of every rule (built-in or custom): ``__init__(self, base_trial, **params)``, ``invoke_at_step``."""

    def __init__(self, base_trial: BaseTrial, **params: Any):
        self.base_trial = base_trial
        self.rule_name = type(self).__name__
        self.logger = logging.getLogger(f"debugger.rules.{self.rule_name}")
        self.finding: Finding | None = None
        self.latest_note = ""

    def invoke_at_step(self, step: int) -> bool:
        raise NotImplementedError

    def check(self, step: int) -> bool:
        """What the hook calls at every step: True when the rule's condition is met at ``step``."""
        return bool(self.invoke_at_step(step))

    def report(self, tensor: str, value: float | None, message: str, kind: str | None = None) -> None:
        self.finding = Finding(tensor=tensor, value=None if value is None else float(value), message=message, kind=kind)

    def note(self, text: str) -> None:
        """Say why the rule did not fire on something it looked at (the status's details; the latest note wins)."""
        self.latest_note = text

    def requirements(self) -> list[Requirement]:
        return []

    def skipped_tensors(self) -> dict[str, str]:
        """Tensors this rule's selections left out because they cannot show its problem (frozen parameters,
        biases a normalization removes: :mod:`debugger.tensor_signal`), with why."""
        skipped: dict[str, str] = {}
        for value in vars(self).values():
            found = getattr(value, "skipped", None)
            if isinstance(found, dict):
                skipped.update(found)
        return skipped


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
    # Training-curve rules (debugger/training_rules.py).
    "threshold_imbalance": lambda text, where: parse_float(text, where, minimum=1.0),
    "threshold_misprediction": parse_fraction,
    "samples": _count,
    "argmax": parse_bool,
    "labels_regex": parse_regex,
    "predictions_regex": parse_regex,
    "stop_training_on_fire": parse_bool,
    "training_job_name_prefix": lambda text, where: str(text).strip(),
    # --- curve and XGBoost rules (debugger/curve_rules.py, debugger/xgboost_rules.py)
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
    # Tensor and activation rules (debugger/tensor_rules.py)
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
    # the workflow's own: the run's objective (contracts.debugger_config.OBJECTIVE_RULE_PARAMETER)
    "objective": parse_objective,
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


def build_rule(spec: RuleSpec, trial: BaseTrial, source_dir: str | Path | None = None) -> Rule:
    """Instantiate a configured rule: built-in by name, or a custom class from ``custom_rule_source``."""
    if spec.custom_rule_source is None:
        if spec.rule_to_invoke not in BUILTIN_RULES:
            raise ContractError(
                f"{spec.where}.rule_to_invoke",
                f"{spec.rule_to_invoke!r} is not a built-in rule ({', '.join(BUILTIN_RULES)}); give custom_rule_source for a custom rule",
            )
        return BUILTIN_RULES[spec.rule_to_invoke](
            trial, **builtin_rule_parameters(spec.rule_to_invoke, spec.parameters, spec.where)
        )
    rule_class = load_rule_class(spec.custom_rule_source, spec.rule_to_invoke, source_dir, spec.where)
    _check_custom_parameters(rule_class, spec)
    return rule_class(trial, **spec.parameters)


def load_rule_class(
    source: str, class_name: str, source_dir: str | Path | None = None, where: str = "RuleParameters"
) -> type[Rule]:
    """Load ``class_name`` (a Rule subclass) from a Python file; relative paths are under ``source_dir`` (default: cwd)."""
    path = Path(source)
    if not path.is_absolute():
        path = Path(source_dir or os.getcwd()) / path
    if not path.is_file():
        raise ContractError(
            f"{where}.custom_rule_source", f"no file at {path} (relative paths are resolved under the job's source dir)"
        )
    module_name = f"debugger_custom_rule_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[module_name]
        raise ContractError(
            f"{where}.custom_rule_source", f"{path} failed to import: {type(error).__name__}: {error}"
        ) from error
    rule_class = getattr(module, class_name, None)
    if not (inspect.isclass(rule_class) and issubclass(rule_class, Rule)):
        found = sorted(
            name
            for name, value in vars(module).items()
            if inspect.isclass(value) and issubclass(value, Rule) and value is not Rule
        )
        raise ContractError(
            f"{where}.rule_to_invoke",
            f"{class_name!r} is not a debugger.rules.Rule subclass in {path}; rule classes there: {', '.join(found) or 'none'}",
        )
    return rule_class


def _check_custom_parameters(rule_class: type[Rule], spec: RuleSpec) -> None:
    signature = inspect.signature(rule_class.__init__)
    parameters = list(signature.parameters.values())[2:]  # self, base_trial
    if any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters):
        return
    accepted = {parameter.name for parameter in parameters}
    for key in spec.parameters:
        if key not in accepted:
            raise ContractError(
                f"{spec.where}.{key}",
                f"is not a parameter of {rule_class.__name__}; allowed: {', '.join(sorted(accepted)) or 'none'}",
            )


# The built-in rules subclass Rule, so they are defined after it; importable from here as before.
from debugger.builtin_rules import (  # noqa: E402
    BUILTIN_RULES,
    ExplodingTensor,
    LossNotDecreasing,
    PoorWeightInitialization,
    VanishingGradient,
    WeightUpdateRatio,
)
from debugger.tensor_rules import (  # noqa: E402
    AllZero,
    CheckInputImages,
    DeadRelu,
    SaturatedActivation,
    TensorVariance,
    UnchangedTensor,
)

__all__ = [
    "BUILTIN_RULES",
    "AllZero",
    "CheckInputImages",
    "DeadRelu",
    "ExplodingTensor",
    "Finding",
    "LossNotDecreasing",
    "PoorWeightInitialization",
    "Requirement",
    "Rule",
    "SaturatedActivation",
    "TensorVariance",
    "UnchangedTensor",
    "VanishingGradient",
    "WeightUpdateRatio",
    "build_rule",
    "builtin_rule_parameters",
    "load_rule_class",
]
