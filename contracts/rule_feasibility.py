"""Before launch: refuse a built-in rule configuration that could never fire. Standard library only.

A rule that cannot fire is worse than no rule: the run reads "NoIssuesFound" while nothing was watched.
``check_rule_can_fire`` knows, per rule, which parameter values (and, for rules that compare saved steps,
which save intervals) make its condition impossible; it raises ContractError naming the rule and the
setting. Parameters are SageMaker's strings; defaults come from BUILTIN_RULE_DEFAULTS. Malformed values are
left to the job's parser (``debugger.rules.parameters.builtin_rule_parameters``), which names them.

Impossible configurations, per rule:

* DeadRelu, SaturatedActivation: ``threshold_layer`` >= 100 (a percent of units cannot exceed 100);
  ``threshold_inactivity`` <= 0 (no unit is active in less than 0% of its values).
* AllZero: ``threshold`` > 100 (at most 100% of a tensor's values can be zero).
* UnchangedTensor: ``num_steps`` < 2 (a tensor is compared with itself over at least two saved steps); with
  ``total_steps``, fewer than ``num_steps`` saved steps in the run.
* TensorVariance: no ``max_threshold`` and no ``min_threshold``; or only a ``min_threshold`` <= 0 (a variance is
  never negative).
* VanishingGradient: ``threshold`` <= 0 (a mean of absolute values is never negative).
* WeightUpdateRatio: with ``total_steps``, fewer than two saved steps (a ``num_steps`` below the save interval is
  fine: the rule has the hook save the weights every ``num_steps`` steps).
* LossNotDecreasing: with ``total_steps``, ``num_steps`` >= ``total_steps`` (no loss lies num_steps back).
* ExplodingTensor, PoorWeightInitialization, CheckInputImages (read at every step, or at steps the rule
  asks the hook to save whatever the save interval): none.
Rules not listed (custom rules, rules added later) pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from contracts import ContractError
from contracts.debugger_config import BUILTIN_RULE_DEFAULTS

_NONE = ("", "None")


def _number(parameters: Mapping[str, str], key: str) -> float | None:
    text = str(parameters.get(key, "")).strip()
    if text in _NONE:
        return None
    try:
        return float(text)
    except ValueError:
        return None  # malformed: the job's parser names it


def _saved_steps(total_steps: int, save_interval: int) -> int:
    """Steps 0, save_interval, 2*save_interval, ... below total_steps."""
    return math.ceil(total_steps / save_interval) if total_steps > 0 else 0


def check_rule_can_fire(
    rule_name: str, parameters: Mapping[str, str], save_interval: int, total_steps: int | None = None
) -> None:
    """Raise ContractError(f"{rule_name}.{setting}", why) when ``rule_name`` with these RuleParameters could never
    fire when what it reads is saved every ``save_interval`` steps (of ``total_steps`` when known)."""
    if not isinstance(save_interval, int) or isinstance(save_interval, bool) or save_interval < 1:
        raise ContractError(f"{rule_name}.save_interval", f"must be a whole number >= 1; got {save_interval!r}")
    if rule_name not in BUILTIN_RULE_DEFAULTS:
        return
    values = {**BUILTIN_RULE_DEFAULTS[rule_name], **{key: str(value) for key, value in parameters.items()}}
    check = _CHECKS.get(rule_name)
    if check is not None:
        problem = check(values, save_interval, total_steps)
        if problem is not None:
            setting, why = problem
            raise ContractError(f"{rule_name}.{setting}", f"{why}: the rule could never fire")


Problem = tuple[str, str] | None


def _inactive_units(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    layer = _number(values, "threshold_layer")
    if layer is not None and layer >= 100:
        return "threshold_layer", f"is {layer:g}; a layer fires when more than threshold_layer percent of its units are inactive, so it must be below 100"
    inactivity = _number(values, "threshold_inactivity")
    if inactivity is not None and inactivity <= 0:
        return "threshold_inactivity", f"is {inactivity:g}; a unit is inactive when active in less than this percent of its values, so it must be above 0"
    return None


def _all_zero(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    threshold = _number(values, "threshold")
    if threshold is not None and threshold > 100:
        return "threshold", f"is {threshold:g}; at most 100 percent of a tensor's values can be zero"
    return None


def _unchanged_tensor(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    num_steps = _number(values, "num_steps")
    if num_steps is None:
        return None
    if num_steps < 2:
        return "num_steps", f"is {num_steps:g}; a tensor is compared across at least 2 saved steps"
    if total_steps is not None and _saved_steps(total_steps, save_interval) < num_steps:
        saved = _saved_steps(total_steps, save_interval)
        return "num_steps", (
            f"is {num_steps:g} but saving every {save_interval} steps of {total_steps} saves only {saved}; "
            f"lower num_steps or the save_interval to at most {max(1, (total_steps - 1) // int(num_steps - 1))}"
        )
    return None


def _tensor_variance(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    high, low = _number(values, "max_threshold"), _number(values, "min_threshold")
    if high is None and low is None:
        return "max_threshold", "and min_threshold are both None; set at least one bound"
    if high is None and low is not None and low <= 0:
        return "min_threshold", f"is {low:g} and there is no max_threshold; a variance is never below 0"
    return None


def _vanishing_gradient(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    threshold = _number(values, "threshold")
    if threshold is not None and threshold <= 0:
        return "threshold", f"is {threshold:g}; a mean of absolute gradient values is never below 0"
    return None


def _weight_update_ratio(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    # A num_steps below the save interval is possible: the rule asks the hook to save the weights every num_steps.
    if total_steps is not None and _saved_steps(total_steps, save_interval) < 2:
        return "num_steps", f"needs weights at two saved steps, but saving every {save_interval} of {total_steps} steps saves one"
    return None


def _loss_not_decreasing(values: Mapping[str, str], save_interval: int, total_steps: int | None) -> Problem:
    num_steps = _number(values, "num_steps")
    if total_steps is not None and num_steps is not None and num_steps >= total_steps:
        return "num_steps", f"is {num_steps:g} but the run has {total_steps} steps; no loss lies num_steps back"
    return None


_CHECKS = {
    "DeadRelu": _inactive_units,
    "SaturatedActivation": _inactive_units,
    "AllZero": _all_zero,
    "UnchangedTensor": _unchanged_tensor,
    "TensorVariance": _tensor_variance,
    "VanishingGradient": _vanishing_gradient,
    "WeightUpdateRatio": _weight_update_ratio,
    "LossNotDecreasing": _loss_not_decreasing,
}
