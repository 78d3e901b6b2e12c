"""Every AWS request the handlers build passes botocore's parameter validation for its service."""

from __future__ import annotations

import json

import botocore.session
import pytest
from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters
from model.hyperparameters import parse_hyperparameters

from contracts import bucket_layout, debugger_config
from lambdas.remediation import job_request, notifications
from lambdas.remediation.execution_input import initial_state

INPUT = {
    "bucket": "remediation-artifacts",
    "region": "eu-west-1",
    "sm_role": "arn:aws:iam::123456789012:role/SageMakerExecutionRole",
}


def _validate(service: str, operation: str, params: dict) -> None:
    model = botocore.session.get_session().get_service_model(service).operation_model(operation)
    validate_parameters(params, model.input_shape)


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("spot", [False, True])
def test_create_training_job_request_is_valid(legacy, spot):
    state = initial_state({**INPUT, "legacy_sagemaker_debugger": legacy, "use_spot_instances": spot})
    name = job_request.training_job_name("execution-1", state.run_spec.base_job_name, 1)
    request = job_request.build_create_training_job_request(state, name, execution_name="execution-1")
    _validate("sagemaker", "CreateTrainingJob", request)
    assert ("DebugHookConfig" in request) is legacy and ("DebugRuleConfigurations" in request) is legacy
    assert request["EnableManagedSpotTraining"] is spot
    assert ("MaxWaitTimeInSeconds" in request["StoppingCondition"]) is spot


def test_the_validator_would_catch_a_broken_request():
    state = initial_state(INPUT)
    request = job_request.build_create_training_job_request(state, "remediation-x-1")
    request["ResourceConfig"]["InstanceCount"] = "1"
    with pytest.raises(ParamValidationError, match="InstanceCount"):
        _validate("sagemaker", "CreateTrainingJob", request)


def test_stop_and_describe_training_job_requests_are_valid():
    _validate("sagemaker", "StopTrainingJob", {"TrainingJobName": "remediation-resnet-0123456789-001"})
    _validate("sagemaker", "DescribeTrainingJob", {"TrainingJobName": "remediation-resnet-0123456789-001"})


def test_rule_status_get_object_request_is_valid():
    _validate(
        "s3", "GetObject", {"Bucket": INPUT["bucket"], "Key": bucket_layout.rule_status_key("remediation-job-001")}
    )


def test_sns_publish_requests_are_valid():
    state = initial_state(INPUT).with_new_attempt("remediation-resnet-0123456789-001")
    topic = "arn:aws:sns:eu-west-1:123456789012:remediation"
    for notification in (
        notifications.job_launched(state),
        notifications.workflow_error("States.Timeout", "the task timed out", state),
    ):
        _validate("sns", "Publish", notifications.publish_request(topic, notification))


def test_hyperparameters_round_trip_to_what_the_job_parses():
    state = initial_state({**INPUT, "add_batch_norm": True, "init_warmup_learning_rate": 0.05})
    name = job_request.training_job_name("execution-1", state.run_spec.base_job_name, 2)
    hyperparameters = job_request.build_create_training_job_request(state, name)["HyperParameters"]
    parsed = parse_hyperparameters(hyperparameters)  # what model/train.py does with hyperparameters.json
    assert parsed.add_batch_norm is True and parsed.warmup_learning_rate == 0.05
    hook = debugger_config.validate_hook_config(json.loads(parsed.debugger_hook_config))
    assert hook["S3OutputPath"] == bucket_layout.debug_output_uri(INPUT["bucket"], name)
    assert hook["HookParameters"] == {"save_interval": str(state.run_spec.debugger_save_interval)}
    rules = debugger_config.validate_rule_configs(json.loads(parsed.debugger_rule_configs))
    assert [rule["RuleConfigurationName"] for rule in rules] == [
        "ExplodingTensor",
        "VanishingGradient",
        "LossNotDecreasing",
    ]
    actions = debugger_config.parse_actions(rules[0]["RuleParameters"]["action_json"])
    assert actions == [{"name": "StopTraining", "training_job_prefix": name}]
    assert json.loads(hyperparameters["sagemaker_program"]) == "train.py"
    assert json.loads(hyperparameters["sagemaker_submit_directory"]) == f"s3://{INPUT['bucket']}/code/sourcedir.tar.gz"
