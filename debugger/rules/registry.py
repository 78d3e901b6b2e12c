"""Every built-in rule by name (``BUILTIN_RULES``, gathered from the rule-family modules), and a configured rule
built: a built-in one by name with its parsed parameters, or a custom Rule subclass loaded from
``custom_rule_source``."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
from pathlib import Path

from contracts import ContractError
from debugger.core.config import RuleSpec
from debugger.rules.curve_rules import CURVE_RULES
from debugger.rules.objective_rules import OBJECTIVE_RULES
from debugger.rules.optimization_rules import OPTIMIZATION_RULES
from debugger.rules.parameters import builtin_rule_parameters
from debugger.rules.rule import Rule
from debugger.rules.tensor_rules import TENSOR_RULES
from debugger.rules.training_rules import TRAINING_RULES
from debugger.rules.xgboost_rules import XGBOOST_RULES
from debugger.trial.trial import BaseTrial

#: Every built-in rule by its SageMaker name, in the order the error for an unknown name lists them.
BUILTIN_RULES: dict[str, type[Rule]] = {
    **OPTIMIZATION_RULES,
    **TENSOR_RULES,
    **CURVE_RULES,
    **TRAINING_RULES,
    **XGBOOST_RULES,
    **OBJECTIVE_RULES,
}


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
