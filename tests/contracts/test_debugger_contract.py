import json
import math

import pytest

from contracts import ContractError
from contracts.debugger_config import validate_hook_config, validate_rule_configs
from contracts.rule_status import (
    ISSUES_FOUND,
    NO_ISSUES_FOUND,
    Evidence,
    RuleIssue,
    RuleStatus,
    RuleStatusDocument,
    rule_statuses_from_sagemaker,
)


def test_status_document_round_trip_keeps_non_finite_values():
    document = RuleStatusDocument(
        job_name="job-1",
        updated_at="2026-11-22T00:00:00Z",
        last_step=3,
        rules=[
            RuleStatus("ExplodingTensor", ISSUES_FOUND, issue=RuleIssue(3, "gradients/total_norm", math.inf, "non-finite")),
            RuleStatus("VanishingGradient", NO_ISSUES_FOUND),
        ],
        evidence=Evidence(initial_loss=31.0, initial_gradient_norm=512.0, first_issue_step=3, phase="warmup"),
    )
    text = document.to_json()
    json.loads(text)  # strict JSON: no NaN/Infinity tokens
    back = RuleStatusDocument.from_json(text)
    assert back.issues_found()[0].issue.value == math.inf
    assert back.evidence.initial_gradient_norm == 512.0
    assert [rule.RuleConfigurationName for rule in back.issues_found()] == ["ExplodingTensor"]


def test_status_document_rejects_unknown_status_and_version():
    with pytest.raises(ContractError, match="RuleEvaluationStatus"):
        RuleStatus("ExplodingTensor", "Exploded")
    with pytest.raises(ContractError, match="schema_version"):
        RuleStatusDocument.from_dict({"schema_version": 99, "job_name": "j", "updated_at": "t"})


def test_hook_config_errors_name_the_field():
    validate_hook_config(
        {
            "S3OutputPath": "s3://bucket/debug-output/job/",
            "HookParameters": {"save_interval": "100"},
            "CollectionConfigurations": [{"CollectionName": "gradients", "CollectionParameters": {"save_interval": "10"}}],
        }
    )
    with pytest.raises(ContractError) as caught:
        validate_hook_config({"HookParameters": {"save_interval": 100}})
    assert caught.value.field == "debugger_hook_config.HookParameters.save_interval"
    with pytest.raises(ContractError) as caught:
        validate_hook_config({"S3OutputPath": "bucket/prefix"})
    assert caught.value.field == "debugger_hook_config.S3OutputPath"


def test_rule_config_errors_name_the_field():
    good = [
        {
            "RuleConfigurationName": "ExplodingTensor",
            "RuleParameters": {"rule_to_invoke": "ExplodingTensor", "action_json": json.dumps([{"name": "StopTraining"}])},
        }
    ]
    assert validate_rule_configs(good)[0]["RuleConfigurationName"] == "ExplodingTensor"
    cases = [
        ([{"RuleConfigurationName": "Nope", "RuleParameters": {"rule_to_invoke": "Nope"}}], "debugger_rule_configs[0].RuleParameters.rule_to_invoke"),
        ([{"RuleConfigurationName": "VanishingGradient", "RuleParameters": {"treshold": "1e-7"}}], "debugger_rule_configs[0].RuleParameters.treshold"),
        ([{"RuleConfigurationName": "ExplodingTensor", "RuleParameters": {"action_json": '[{"name": "Reboot"}]'}}], "debugger_rule_configs[0].RuleParameters.action_json[0].name"),
        (good + good, "debugger_rule_configs[1].RuleConfigurationName"),
    ]
    for configs, field in cases:
        with pytest.raises(ContractError) as caught:
            validate_rule_configs(configs)
        assert caught.value.field == field


def test_legacy_sagemaker_statuses_are_normalised():
    statuses = rule_statuses_from_sagemaker(
        [{"RuleConfigurationName": "ExplodingTensor", "RuleEvaluationStatus": "IssuesFound", "StatusDetails": "x"}]
    )
    assert statuses[0].RuleEvaluationStatus == ISSUES_FOUND
