"""Before launch: which built-in rule configurations could never fire, and the collections each rule reads."""

from __future__ import annotations

import pytest

from contracts import ContractError
from contracts.debugger_config import (
    BUILTIN_RULE_DEFAULTS,
    COLLECTION_NAMES,
    RULE_COLLECTIONS,
    XGBOOST_COLLECTION_NAMES,
    rule_collections,
    validate_rule_configs,
)
from contracts.rule_feasibility import check_rule_can_fire

OTHER_ENGINEERS_RULES = ("ClassImbalance", "Overfit", "Overtraining", "StalledTrainingRule")


@pytest.mark.parametrize(
    ("rule", "parameters", "save_interval", "total_steps", "setting", "hint"),
    [
        ("DeadRelu", {"threshold_layer": "100"}, 1, None, "threshold_layer", "below 100"),
        ("DeadRelu", {"threshold_inactivity": "0"}, 1, None, "threshold_inactivity", "above 0"),
        ("SaturatedActivation", {"threshold_layer": "100.0"}, 500, None, "threshold_layer", "below 100"),
        ("AllZero", {"threshold": "100.5"}, 1, None, "threshold", "at most 100"),
        ("UnchangedTensor", {"num_steps": "1"}, 1, None, "num_steps", "at least 2"),
        ("UnchangedTensor", {}, 500, 1000, "num_steps", "saves only 2"),
        ("UnchangedTensor", {"num_steps": "5"}, 10, 40, "num_steps", "save_interval to at most 9"),
        ("TensorVariance", {}, 1, None, "max_threshold", "set at least one bound"),
        ("TensorVariance", {"min_threshold": "0"}, 1, None, "min_threshold", "never below 0"),
        ("VanishingGradient", {"threshold": "0"}, 1, None, "threshold", "never below 0"),
        ("WeightUpdateRatio", {}, 500, 400, "num_steps", "two saved steps"),
        ("LossNotDecreasing", {"num_steps": "50"}, 1, 50, "num_steps", "no loss lies num_steps back"),
    ],
)
def test_impossible_configurations_name_the_rule_and_the_setting(rule, parameters, save_interval, total_steps, setting, hint):
    with pytest.raises(ContractError) as raised:
        check_rule_can_fire(rule, parameters, save_interval, total_steps=total_steps)
    assert raised.value.field == f"{rule}.{setting}"
    assert hint in raised.value.problem and "could never fire" in raised.value.problem


@pytest.mark.parametrize(
    ("rule", "parameters", "save_interval", "total_steps"),
    [
        ("DeadRelu", {}, 500, None),
        ("DeadRelu", {"threshold_layer": "99.9", "threshold_inactivity": "0.1"}, 1, None),
        ("SaturatedActivation", {}, 500, 10),
        ("AllZero", {"threshold": "100"}, 500, None),
        ("UnchangedTensor", {}, 500, 1001),  # saves 0, 500, 1000: three steps
        ("UnchangedTensor", {"num_steps": "5"}, 9, 40),
        ("TensorVariance", {"max_threshold": "10"}, 500, None),
        ("TensorVariance", {"min_threshold": "0.001"}, 500, None),
        ("WeightUpdateRatio", {"num_steps": "10"}, 10, None),
        ("WeightUpdateRatio", {"num_steps": "5"}, 10, None),  # the hook saves the weights every 5 steps for it
        ("WeightUpdateRatio", {}, 500, 501),
        ("LossNotDecreasing", {}, 500, 11),
        ("ExplodingTensor", {}, 500, 1),
        ("PoorWeightInitialization", {}, 500, None),
        ("CheckInputImages", {}, 500, 1),  # read at every step in the job
        ("MyCustomRule", {"anything": "1"}, 7, None),
        ("VanishingGradient", {"threshold": "not a number"}, 1, None),  # malformed: the job's parser names it
    ],
)
def test_possible_configurations_pass(rule, parameters, save_interval, total_steps):
    check_rule_can_fire(rule, parameters, save_interval, total_steps=total_steps)


@pytest.mark.parametrize("save_interval", [0, -5, 2.5, True])
def test_save_interval_must_be_a_positive_whole_number(save_interval):
    with pytest.raises(ContractError) as raised:
        check_rule_can_fire("DeadRelu", {}, save_interval)
    assert raised.value.field == "DeadRelu.save_interval"


def test_every_builtin_rule_says_which_collections_it_reads():
    assert set(BUILTIN_RULE_DEFAULTS) <= set(RULE_COLLECTIONS)
    assert set(OTHER_ENGINEERS_RULES) <= set(RULE_COLLECTIONS)
    for rule, collections in RULE_COLLECTIONS.items():
        if rule not in ("ClassImbalance", "Confusion", "FeatureImportanceOverweight", "TreeDepth"):
            assert set(collections) <= set(COLLECTION_NAMES), rule  # PyTorch's built-in collections
        else:  # the script's own collections (labels, predictions) or XGBoost's
            assert set(collections) <= set(XGBOOST_COLLECTION_NAMES), rule
    assert RULE_COLLECTIONS["DeadRelu"] == ("activations",)
    assert RULE_COLLECTIONS["CheckInputImages"] == ()  # the model input is read at every step, not saved


def test_rule_collections_adds_what_collection_names_says():
    assert rule_collections("AllZero", {"collection_names": "weights, gradients"}) == ("weights", "gradients")
    assert rule_collections("SaturatedActivation", {"collection_names": "activations,biases"}) == ("activations", "biases")
    assert rule_collections("UnchangedTensor") == ()
    assert rule_collections("MyCustomRule", {}) == ()


def test_rule_configurations_accept_the_new_rules_parameters():
    validate_rule_configs(
        [
            {"RuleConfigurationName": "DeadRelu", "RuleParameters": {"rule_to_invoke": "DeadRelu", "threshold_layer": "40"}},
            {
                "RuleConfigurationName": "Inputs",
                "RuleParameters": {"rule_to_invoke": "CheckInputImages", "regex": "Net_input_0", "channel": "-1"},
            },
        ]
    )
    with pytest.raises(ContractError) as raised:
        validate_rule_configs([{"RuleConfigurationName": "AllZero", "RuleParameters": {"threshold_layer": "40"}}])
    assert raised.value.field == "debugger_rule_configs[0].RuleParameters.threshold_layer"
