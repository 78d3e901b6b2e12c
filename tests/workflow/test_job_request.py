"""Job names, images and the request's parts."""

from __future__ import annotations

import re

import pytest

from lambdas.remediation import job_request
from lambdas.remediation.payload import initial_state

NAME = re.compile(r"^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}$")
INPUT = {"bucket": "artifacts-bucket", "region": "us-west-2", "sm_role": "arn:aws:iam::123456789012:role/SageMaker"}


def test_job_names_are_deterministic_valid_and_distinct(monkeypatch):
    monkeypatch.setenv("JOB_NAME_PREFIX", "remediation")
    name = job_request.training_job_name("a" * 80, "b" * 32, 7)
    assert name == job_request.training_job_name("a" * 80, "b" * 32, 7)
    assert len(name) <= 63 and NAME.match(name) and name.startswith("remediation-")
    assert name != job_request.training_job_name("a" * 80, "b" * 32, 8)
    assert name != job_request.training_job_name("a" * 79 + "c", "b" * 32, 7)
    assert NAME.match(job_request.training_job_name("run_1", "-x--y-", 1))
    assert job_request.training_job_name("e", "remediation-resnet", 1).startswith("remediation-resnet-")
    assert job_request.training_job_name("e", "remediation", 1).count("remediation") == 1


def test_job_name_prefix_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("JOB_NAME_PREFIX", "team-a")
    assert job_request.training_job_name("e", "resnet", 1).startswith("team-a-resnet-")
    monkeypatch.setenv("JOB_NAME_PREFIX", "bad prefix!")
    with pytest.raises(job_request.JobRequestError, match="JOB_NAME_PREFIX"):
        job_request.training_job_name("e", "resnet", 1)


def test_training_image_by_region_and_instance_family():
    """The tables and their sources live in training_images (tests/workflow/test_training_images.py)."""
    assert job_request.training_image_uri("us-west-2", "ml.m5.xlarge") == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch:2.13.0-cpu-amzn2023-sagemaker"
    )
    assert job_request.training_image_uri("eu-south-1", "ml.g5.xlarge") == (
        "692866216735.dkr.ecr.eu-south-1.amazonaws.com/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    )
    assert job_request.training_image_uri("cn-north-1", "ml.p4d.24xlarge").endswith(
        ".amazonaws.com.cn/pytorch:2.13.0-cu133-amzn2023-sagemaker"
    )
    with pytest.raises(ValueError, match="instance_type"):
        job_request.training_image_uri("us-east-1", "ml.trn1.2xlarge")


def test_legacy_mode_asks_sagemaker_for_its_builtin_rules():
    state = initial_state({**INPUT, "legacy_sagemaker_debugger": True})
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    rules = request["DebugRuleConfigurations"]
    assert {rule["RuleEvaluatorImage"] for rule in rules} == {
        "895741380848.dkr.ecr.us-west-2.amazonaws.com/sagemaker-debugger-rules:latest"
    }
    exploding = next(rule for rule in rules if rule["RuleParameters"]["rule_to_invoke"] == "ExplodingTensor")
    assert '"StopTraining"' in exploding["RuleParameters"]["action_json"]
    assert request["DebugHookConfig"]["HookParameters"]["save_interval"] == "10"
    assert request["DebugHookConfig"]["S3OutputPath"] == "s3://artifacts-bucket/debug-output/"


def test_legacy_mode_in_a_region_without_the_rule_evaluator_is_refused():
    state = initial_state({**INPUT, "region": "il-central-1", "legacy_sagemaker_debugger": True})
    with pytest.raises(ValueError, match="legacy_sagemaker_debugger"):
        job_request.build_create_training_job_request(state, "remediation-x-001")


def test_request_parts_follow_the_bucket_layout():
    state = initial_state({**INPUT, "max_run_seconds": 7200, "use_spot_instances": True})
    request = job_request.build_create_training_job_request(state, "remediation-x-001", execution_name="exec")
    assert request["OutputDataConfig"] == {"S3OutputPath": "s3://artifacts-bucket/jobs/"}
    assert request["CheckpointConfig"]["S3Uri"] == "s3://artifacts-bucket/checkpoints/remediation-x-001/"
    assert [channel["DataSource"]["S3DataSource"]["S3Uri"] for channel in request["InputDataConfig"]] == [
        "s3://artifacts-bucket/data/train/",
        "s3://artifacts-bucket/data/test/",
    ]
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 7200, "MaxWaitTimeInSeconds": 14400}
    assert request["Environment"] == {"DEBUG_OUTPUT_S3_SYNC": "on"}
    assert {"Key": "remediation:execution", "Value": "exec"} in request["Tags"]
    assert [definition["Name"] for definition in request["AlgorithmSpecification"]["MetricDefinitions"]][
        0
    ] == "train:loss"


@pytest.mark.parametrize(("save_interval", "expected_window"), [(1, 10), (10, 50), (100, 500)])
def test_loss_not_decreasing_compares_losses_several_saved_steps_apart(save_interval, expected_window):
    import json

    from model.hyperparameters import DEBUGGER_RULE_CONFIGS

    state = initial_state({**INPUT, "debugger_save_interval": save_interval})
    request = job_request.build_create_training_job_request(state, "remediation-x-001", execution_name="exec")
    rules = json.loads(json.loads(request["HyperParameters"][DEBUGGER_RULE_CONFIGS]))
    (loss_rule,) = [rule for rule in rules if rule["RuleConfigurationName"] == "LossNotDecreasing"]
    assert loss_rule["RuleParameters"]["num_steps"] == str(expected_window)
