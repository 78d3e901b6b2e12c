"""The rules: SageMaker Debugger's built-in rules (documented semantics, parameters, defaults) and the base class
of custom rules. ``from debugger.rules import Rule`` is what a custom rule imports.

    rule.py                 the Rule base class, Finding, Requirement
    parameters.py           the built-in rules' string parameters parsed and checked
    registry.py             BUILTIN_RULES by name; build_rule, load_rule_class (custom rules)
    optimization_rules.py   ExplodingTensor, VanishingGradient, LossNotDecreasing (loss_rule.py), WeightUpdateRatio,
                            PoorWeightInitialization
    tensor_rules.py         DeadRelu, SaturatedActivation, AllZero, UnchangedTensor, TensorVariance, CheckInputImages
    curve_rules.py          Overfit, Overtraining
    training_rules.py       ClassImbalance, StalledTrainingRule
    xgboost_rules.py        Confusion, FeatureImportanceOverweight, TreeDepth
    tensor_selection.py, tensor_signal.py, rule_checks.py, run_objective.py, weight_movement.py   what the rules share

The rules read a trial (debugger.trial) and the shared vocabulary (debugger.core); the hook (debugger.hook)
runs them. No module of this package imports this facade: they import one another by module.
"""

from __future__ import annotations

from debugger.rules.optimization_rules import (
    ExplodingTensor,
    LossNotDecreasing,
    PoorWeightInitialization,
    VanishingGradient,
    WeightUpdateRatio,
)
from debugger.rules.parameters import builtin_rule_parameters
from debugger.rules.registry import BUILTIN_RULES, build_rule, load_rule_class
from debugger.rules.rule import GRADIENT_PREFIX, TOTAL_GRADIENT_NORM, Finding, Requirement, Rule
from debugger.rules.tensor_rules import (
    AllZero,
    CheckInputImages,
    DeadRelu,
    SaturatedActivation,
    TensorVariance,
    UnchangedTensor,
)

__all__ = [
    "BUILTIN_RULES",
    "GRADIENT_PREFIX",
    "TOTAL_GRADIENT_NORM",
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
