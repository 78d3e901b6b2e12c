"""Malformed hook and rule configurations fail with a ContractError naming the field; custom rules load and fire."""

from __future__ import annotations

import json

import pytest
import torch
from torch import nn

from debugger import ContractError, Hook, StopTrainingRequested
from debugger.core.config import DEFAULT_SAVE_INTERVAL, parse_hook_config
from debugger.core.modes import ModeKeys


def hook_error(tmp_path, hook_config=None, rule_configs=None) -> ContractError:
    with pytest.raises(ContractError) as raised:
        Hook.from_configs(hook_config=hook_config, rule_configs=rule_configs, out_dir=tmp_path, job_name="bad")
    return raised.value


@pytest.mark.parametrize(
    ("hook_config", "field", "hint"),
    [
        (
            {
                "CollectionConfigurations": [
                    {"CollectionName": "weights"},
                    {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "often"}},
                ]
            },
            "debugger_hook_config.CollectionConfigurations[1].CollectionParameters.save_interval",
            "whole number",
        ),
        (
            {
                "CollectionConfigurations": [
                    {"CollectionName": "weights"},
                    {"CollectionName": "gradients", "CollectionParameters": {"save_interval": "0"}},
                ]
            },
            "debugger_hook_config.CollectionConfigurations[1].CollectionParameters.save_interval",
            ">= 1",
        ),
        (
            {
                "CollectionConfigurations": [
                    {"CollectionName": "weights", "CollectionParameters": {"save_intervall": "5"}}
                ]
            },
            "debugger_hook_config.CollectionConfigurations[0].CollectionParameters.save_intervall",
            "allowed: save_interval, start_step, end_step, save_steps, train.save_interval",
        ),
        (
            {"CollectionConfigurations": [{"CollectionName": "weights", "CollectionParameters": {"save_interval": 5}}]},
            "debugger_hook_config.CollectionConfigurations[0].CollectionParameters.save_interval",
            "must be a string",
        ),
        ({"HookParameters": {"save_interval": "-5"}}, "debugger_hook_config.HookParameters.save_interval", ">= 1"),
        (
            {"HookParameters": {"start_step": "10", "end_step": "5"}},
            "debugger_hook_config.HookParameters.end_step",
            "not be less than start_step",
        ),
        ({"HookParameters": {"save_steps": "1,two"}}, "debugger_hook_config.HookParameters.save_steps", "whole number"),
        (
            {"HookParameters": {"include_regex": "conv["}},
            "debugger_hook_config.HookParameters.include_regex",
            "regular expression",
        ),
        (
            {"CollectionConfigurations": [{"CollectionName": "tensors"}]},
            "debugger_hook_config.CollectionConfigurations[0].CollectionName",
            "needs CollectionParameters.include_regex",
        ),
        (
            {"HookParameters": {"reductions": "max,l3_norm"}},
            "debugger_hook_config.HookParameters.reductions",
            "not a reduction",
        ),
        (
            {"HookParameters": {"train.save_interval": "0"}},
            "debugger_hook_config.HookParameters.train.save_interval",
            ">= 1",
        ),
        ({"S3OutputPath": "bucket/prefix"}, "debugger_hook_config.S3OutputPath", "s3://"),
        ({"LocalDir": "/tmp"}, "debugger_hook_config.LocalDir", "allowed keys"),
        ("{not json", "debugger_hook_config", "JSON"),
    ],
)
def test_malformed_hook_config(tmp_path, hook_config, field, hint):
    error = hook_error(tmp_path, hook_config=hook_config)
    assert error.field == field
    assert hint in error.problem
    assert field in str(error)


@pytest.mark.parametrize(
    ("rule_configs", "field", "hint"),
    [
        (
            [{"RuleConfigurationName": "ExplodingTensor", "RuleParameters": {"only_nan": "maybe"}}],
            "debugger_rule_configs[0].RuleParameters.only_nan",
            "True",
        ),
        (
            [
                {
                    "RuleConfigurationName": "x",
                    "RuleParameters": {"rule_to_invoke": "VanishingGradient", "thresold": "1"},
                }
            ],
            "debugger_rule_configs[0].RuleParameters.thresold",
            "not a parameter of VanishingGradient",
        ),
        (
            [
                {
                    "RuleConfigurationName": "x",
                    "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": '[{"name":"Reboot"}]'},
                }
            ],
            "debugger_rule_configs[0].RuleParameters.action_json[0].name",
            "StopTraining",
        ),
        (
            [
                {
                    "RuleConfigurationName": "x",
                    "RuleParameters": {"rule_to_invoke": "LossNotDecreasing", "num_steps": "ten"},
                }
            ],
            "debugger_rule_configs[0].RuleParameters.num_steps",
            "whole number",
        ),
        (
            [
                {
                    "RuleConfigurationName": "x",
                    "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "start_step": "9", "end_step": "3"},
                }
            ],
            "debugger_rule_configs[0].RuleParameters.end_step",
            "greater than start_step",
        ),
        (
            [{"RuleConfigurationName": "x", "RuleParameters": {"rule_to_invoke": "Nope"}}],
            "debugger_rule_configs[0].RuleParameters.rule_to_invoke",
            "not a built-in rule",
        ),
        (
            [
                {
                    "RuleConfigurationName": "x",
                    "RuleParameters": {"rule_to_invoke": "Nope", "custom_rule_source": "missing.py"},
                }
            ],
            "debugger_rule_configs[0].RuleParameters.custom_rule_source",
            "no file",
        ),
        ({"RuleConfigurationName": "x"}, "debugger_rule_configs", "list"),
    ],
)
def test_malformed_rule_configs(tmp_path, rule_configs, field, hint):
    error = hook_error(tmp_path, rule_configs=rule_configs)
    assert error.field == field
    assert hint in error.problem


def test_defaults_follow_sagemaker(tmp_path):
    settings = parse_hook_config(None)
    assert DEFAULT_SAVE_INTERVAL == 500 and settings.collection_specs is None
    assert settings.default_save.save_interval == 500 and settings.default_save.start_step == 0
    hook = Hook.from_configs(out_dir=tmp_path, job_name="defaults")
    assert hook.include_collections == ["gradients", "weights", "biases", "losses", "metrics", "learning_rate"]
    hook.close()
    # smdebug's layering of a configuration file: hook < collection < mode-prefixed keys, mode by mode
    settings = parse_hook_config(
        json.dumps(
            {
                "HookParameters": {"save_interval": "1", "train.save_interval": "2", "eval.save_interval": "3"},
                "CollectionConfigurations": [
                    {"CollectionName": "weights"},
                    {"CollectionName": "losses", "CollectionParameters": {"eval.save_interval": "4", "global.save_interval": "5"}},
                ],
            }
        )
    )
    weights, losses = (spec.save_by_mode for spec in settings.collection_specs)
    intervals = [ModeKeys.TRAIN, ModeKeys.EVAL, ModeKeys.PREDICT, ModeKeys.GLOBAL]
    assert [settings.save_by_mode[mode]["save_interval"] for mode in intervals] == [2, 3, 1, 1]
    assert [weights[mode]["save_interval"] for mode in intervals] == [2, 3, 1, 1]
    assert [losses[mode]["save_interval"] for mode in intervals] == [2, 4, 1, 5]


CUSTOM_RULE = """
from debugger.rules import Rule


class LossAbove(Rule):
    def __init__(self, base_trial, threshold="5.0"):
        super().__init__(base_trial)
        self.threshold = float(threshold)

    def invoke_at_step(self, step):
        for name in self.base_trial.tensor_names(collection="losses"):
            tensor = self.base_trial.tensor(name)
            if tensor.has_step(step) and float(tensor.value(step)) > self.threshold:
                self.report(tensor=name, value=float(tensor.value(step)), message="loss above threshold")
                return True
        return False
"""


def test_custom_rule_from_source_file_fires_and_stops(tmp_path):
    (tmp_path / "my_rules.py").write_text(CUSTOM_RULE)
    rule_configs = json.dumps(
        [
            {
                "RuleConfigurationName": "LossTooHigh",
                "RuleParameters": {
                    "rule_to_invoke": "LossAbove",
                    "custom_rule_source": "my_rules.py",
                    "threshold": "0.0",
                    "start_step": "3",
                    "action_json": '{"name": "StopTraining"}',
                },
            }
        ]
    )
    hook = Hook.from_configs(
        rule_configs=rule_configs, out_dir=tmp_path / "out", job_name="custom", source_dir=tmp_path
    )
    torch.manual_seed(0)
    model, criterion = nn.Linear(4, 3), nn.CrossEntropyLoss()
    hook.register_module(model)
    hook.register_loss(criterion)
    with pytest.raises(StopTrainingRequested) as raised:
        for _ in range(10):
            criterion(model(torch.randn(8, 4)), torch.randint(0, 3, (8,))).backward()
    assert raised.value.rule_name == "LossTooHigh" and raised.value.step == 3  # start_step honoured
    status = hook.status_document().rules[0]
    assert status.RuleEvaluationStatus == "IssuesFound" and status.issue.tensor == "CrossEntropyLoss_output_0"


def test_custom_rule_errors_name_the_field(tmp_path):
    (tmp_path / "my_rules.py").write_text(CUSTOM_RULE)
    base = {
        "RuleConfigurationName": "Mine",
        "RuleParameters": {"rule_to_invoke": "LossAbove", "custom_rule_source": str(tmp_path / "my_rules.py")},
    }
    wrong_class = json.loads(json.dumps(base))
    wrong_class["RuleParameters"]["rule_to_invoke"] = "LossBelow"
    error = hook_error(tmp_path, rule_configs=[wrong_class])
    assert error.field == "debugger_rule_configs[0].RuleParameters.rule_to_invoke" and "LossAbove" in error.problem
    wrong_parameter = json.loads(json.dumps(base))
    wrong_parameter["RuleParameters"]["treshold"] = "1"
    error = hook_error(tmp_path, rule_configs=[wrong_parameter])
    assert error.field == "debugger_rule_configs[0].RuleParameters.treshold" and "threshold" in error.problem
    (tmp_path / "broken.py").write_text("import does_not_exist\n")
    broken = json.loads(json.dumps(base))
    broken["RuleParameters"]["custom_rule_source"] = str(tmp_path / "broken.py")
    error = hook_error(tmp_path, rule_configs=[broken])
    assert (
        error.field == "debugger_rule_configs[0].RuleParameters.custom_rule_source"
        and "ModuleNotFoundError" in error.problem
    )
