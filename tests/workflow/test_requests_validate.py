"""Every AWS request the handlers build passes botocore's parameter validation for its service."""

from __future__ import annotations

import datetime as dt
import json

import botocore.session
import pytest
from botocore.exceptions import ParamValidationError
from botocore.validate import validate_parameters

from contracts import bucket_layout, debugger_config
from contracts.job import (
    ENTRY_POINT_HYPERPARAMETER,
    HOOK_CONFIG_HYPERPARAMETER,
    LAUNCHER_PROGRAM,
    RULE_CONFIGS_HYPERPARAMETER,
    parse_script_mode_arguments,
    script_mode_arguments,
)
from debugger.launcher import class_weighting, metric_definitions, robust_loss, split_arguments
from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.job import job_identity, job_request
from lambdas.remediation.state.validation_messages import InvalidExecutionInput
from lambdas.remediation.text import notifications
from model.hyperparameters import parse_hyperparameters

INPUT = {
    "bucket": "remediation-artifacts",
    "region": "eu-west-1",
    "sm_role": "arn:aws:iam::123456789012:role/SageMakerExecutionRole",
}


def _validate(service: str, operation: str, params: dict) -> None:
    model = botocore.session.get_session().get_service_model(service).operation_model(operation)
    validate_parameters(params, model.input_shape)


def test_a_local_runs_spot_interruptions_reach_the_local_platform_as_a_tag():
    from contracts.spot_interruptions import LOCAL_SPOT_INTERRUPTIONS_TAG

    state = initial_state(
        {**INPUT, "instance_type": "local", "spot_interruptions": [{"at_step": 30}, {"after_seconds": 90}]}
    )
    request = job_request.build_create_training_job_request(state, "remediation-job-1")
    _validate("sagemaker", "CreateTrainingJob", request)
    tags = {tag["Key"]: tag["Value"] for tag in request["Tags"]}
    assert tags[LOCAL_SPOT_INTERRUPTIONS_TAG] == "at_step=30 after_seconds=90"
    assert request["EnableManagedSpotTraining"] is False  # a simulation: SageMaker's spot option stays a cloud one
    plain = job_request.build_create_training_job_request(initial_state(INPUT), "remediation-job-1")
    assert LOCAL_SPOT_INTERRUPTIONS_TAG not in {tag["Key"] for tag in plain["Tags"]}


@pytest.mark.parametrize("legacy", [False, True])
@pytest.mark.parametrize("spot", [False, True])
def test_create_training_job_request_is_valid(legacy, spot):
    state = initial_state({**INPUT, "legacy_sagemaker_debugger": legacy, "use_spot_instances": spot})
    name = job_identity.training_job_name("execution-1", state.run_spec.base_job_name, 1)
    # The execution started a minute before the (injected) clock reads now: the request holds on any date.
    started = dt.datetime(2026, 11, 23, 8, tzinfo=dt.UTC)
    request = job_request.build_create_training_job_request(
        state, name, execution_id="arn:aws:states:eu-west-1:123456789012:execution:m:execution-1",
        execution_start_time=f"{started:%Y-%m-%dT%H:%M:%SZ}", now=started.timestamp() + 60,
    )  # fmt: skip
    _validate("sagemaker", "CreateTrainingJob", request)
    assert ("DebugHookConfig" in request) is legacy and ("DebugRuleConfigurations" in request) is legacy
    assert request["EnableManagedSpotTraining"] is spot
    assert ("MaxWaitTimeInSeconds" in request["StoppingCondition"]) is spot
    # SageMaker uploads LocalPath to {S3OutputPath}{job}/tensorboard-output/: beside the job's debug output
    assert request["TensorBoardOutputConfig"] == {
        "LocalPath": "/opt/ml/output/tensorboard",
        "S3OutputPath": "s3://remediation-artifacts/debug-output/",
    }


def test_the_run_spec_names_the_tensorboard_output_and_a_bad_one_is_refused():
    state = initial_state({**INPUT, "tensorboard_output_path": "s3://remediation-artifacts/jobs/tensorboard"})
    request = job_request.build_create_training_job_request(state, "remediation-x-1")
    _validate("sagemaker", "CreateTrainingJob", request)
    assert request["TensorBoardOutputConfig"]["S3OutputPath"] == "s3://remediation-artifacts/jobs/tensorboard/"
    for bad, problem in (
        ("s3://another-bucket/debug-output/", "must be under s3://remediation-artifacts/debug-output/"),
        ("s3://remediation-artifacts/tensorboard/", "where the stack's SageMaker role lets a job write"),
        ("/tmp/tensorboard", "must be an s3://bucket/key URI"),
    ):
        with pytest.raises(InvalidExecutionInput, match="tensorboard_output_path") as refused:
            initial_state({**INPUT, "tensorboard_output_path": bad})
        assert problem in str(refused.value)


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


def test_hyperparameters_reach_the_script_as_it_parses_them_and_the_launcher_gets_the_debugger():
    """CreateTrainingJob's map -> script mode's argv -> the launcher's split -> the example's own parser."""
    state = initial_state({**INPUT, "add_batch_norm": True, "init_warmup_learning_rate": 0.05})
    name = job_identity.training_job_name("execution-1", state.run_spec.base_job_name, 2)
    hyperparameters = job_request.build_create_training_job_request(state, name)["HyperParameters"]
    reserved, user_args = split_arguments(script_mode_arguments(hyperparameters))
    parsed = parse_hyperparameters(parse_script_mode_arguments(user_args))  # what examples/resnet does
    assert parsed.add_batch_norm is True and parsed.warmup_learning_rate == 0.05
    assert reserved[ENTRY_POINT_HYPERPARAMETER] == "train.py"
    hook = debugger_config.validate_hook_config(json.loads(reserved[HOOK_CONFIG_HYPERPARAMETER]))
    assert hook["S3OutputPath"] == bucket_layout.debug_output_uri(INPUT["bucket"], name)
    assert hook["HookParameters"] == {"save_interval": str(state.run_spec.debugger_save_interval)}
    rules = debugger_config.validate_rule_configs(json.loads(reserved[RULE_CONFIGS_HYPERPARAMETER]))
    assert [rule["RuleConfigurationName"] for rule in rules] == [
        "ExplodingTensor",
        "VanishingGradient",
        "LossNotDecreasing",
        "ObjectiveOutOfReach",
    ]
    # the job's epochs, from the run's num_epochs knob: when the objective is out of reach is judged against them
    epochs = state.run_spec.hyperparameters["num_epochs"]
    assert rules[3]["RuleParameters"]["planned_epochs"] == str(epochs)
    actions = debugger_config.parse_actions(rules[0]["RuleParameters"]["action_json"])
    assert actions == [{"name": "StopTraining", "training_job_prefix": name}]
    assert json.loads(hyperparameters["sagemaker_program"]) == LAUNCHER_PROGRAM
    assert json.loads(hyperparameters["sagemaker_submit_directory"]) == f"s3://{INPUT['bucket']}/code/sourcedir.tar.gz"


def test_a_users_script_gets_exactly_its_own_arguments():
    script = {
        "source_dir": "s3://remediation-artifacts/code/mlp-0123456789abcdef/sourcedir.tar.gz",
        "entry_point": "src/train.py",
        "hyperparameters": {"lr": 0.01, "grad-clip": 0, "optimizer": "adam", "nesterov": True},
        "channels": {"training": "s3://remediation-artifacts/data/training-0123456789abcdef/"},
        "metric_definitions": [{"Name": "val:acc", "Regex": "val_acc=([0-9.]+)"}],
    }
    state = initial_state({**INPUT, **script})
    request = job_request.build_create_training_job_request(state, "remediation-job-0123456789-001")
    _validate("sagemaker", "CreateTrainingJob", request)
    reserved, user_args = split_arguments(script_mode_arguments(request["HyperParameters"]))
    assert user_args == ["--lr", "0.01", "--grad-clip", "0", "--optimizer", "adam", "--nesterov", "true"]
    assert reserved[ENTRY_POINT_HYPERPARAMETER] == "src/train.py"
    assert request["InputDataConfig"][0]["ChannelName"] == "training"
    assert request["AlgorithmSpecification"]["MetricDefinitions"] == script["metric_definitions"]
    assert metric_definitions(reserved) == script["metric_definitions"]  # read in the job too, as it runs
    assert json.loads(request["HyperParameters"]["sagemaker_submit_directory"]) == script["source_dir"]


@pytest.mark.parametrize("weighting", ["balanced", "logit_adjusted", "off"])
def test_the_debuggers_class_weighting_reaches_the_launcher_only_when_it_applies_one(weighting):
    script = {"source_dir": "s3://remediation-artifacts/code/s-0123456789abcdef/sourcedir.tar.gz", "entry_point": "t.py",
              "hyperparameters": {"lr": 0.01}, "debugger_class_weighting": weighting}
    request = job_request.build_create_training_job_request(initial_state({**INPUT, **script}), "remediation-j-001")
    _validate("sagemaker", "CreateTrainingJob", request)
    reserved, user_args = split_arguments(script_mode_arguments(request["HyperParameters"]))
    assert user_args == ["--lr", "0.01"]  # the script never sees it
    assert class_weighting(reserved) == (weighting if weighting in ("balanced", "logit_adjusted") else None)


@pytest.mark.parametrize(
    ("given", "problem"),
    [
        ({"debugger_class_weighting": "inverse"}, "must be one of off, balanced, logit_adjusted (got 'inverse')"),
        ({"debugger_class_weighting": "balanced", "framework": "xgboost", "entry_point": "train.py",
          "source_dir": "s3://remediation-artifacts/code/x/sourcedir.tar.gz"}, "corrects a PyTorch script's cross-entropy"),
        ({"debugger_class_weighting": "logit_adjusted", "framework": "xgboost", "entry_point": "train.py",
          "source_dir": "s3://remediation-artifacts/code/x/sourcedir.tar.gz"}, "corrects a PyTorch script's cross-entropy"),
    ],
)
def test_a_class_weighting_the_debugger_cannot_apply_is_refused_naming_the_field(given, problem):
    with pytest.raises(InvalidExecutionInput, match="debugger_class_weighting") as refused:
        initial_state({**INPUT, **given})
    assert problem in str(refused.value)


@pytest.mark.parametrize("robust", ["generalized_cross_entropy", "off"])
def test_the_debuggers_robust_loss_reaches_the_launcher_only_when_asked_for(robust):
    script = {"source_dir": "s3://remediation-artifacts/code/s-0123456789abcdef/sourcedir.tar.gz", "entry_point": "t.py",
              "hyperparameters": {"lr": 0.01}, "debugger_robust_loss": robust, "debugger_class_weighting": "balanced"}
    request = job_request.build_create_training_job_request(initial_state({**INPUT, **script}), "remediation-j-001")
    _validate("sagemaker", "CreateTrainingJob", request)
    reserved, user_args = split_arguments(script_mode_arguments(request["HyperParameters"]))
    assert user_args == ["--lr", "0.01"]  # the script never sees it
    assert robust_loss(reserved) == ("generalized_cross_entropy" if robust == "generalized_cross_entropy" else None)
    assert class_weighting(reserved) == "balanced"  # both can hold at once


def test_a_robust_loss_the_debugger_does_not_know_is_refused_naming_the_field():
    with pytest.raises(InvalidExecutionInput, match="debugger_robust_loss") as refused:
        initial_state({**INPUT, "debugger_robust_loss": "generalised_cross_entropy"})
    assert "must be one of off, generalized_cross_entropy (got 'generalised_cross_entropy')" in str(refused.value)
    assert "did you mean 'generalized_cross_entropy'" in str(refused.value)


@pytest.mark.parametrize("field", ["debugger_robust_loss", "debugger_class_weighting"])
def test_the_retired_auto_is_refused_naming_the_consent_switch(field):
    """"auto" let the product change the loss without asking; the message says what replaced it."""
    with pytest.raises(InvalidExecutionInput) as refused:
        initial_state({**INPUT, field: "auto"})
    setting = field.removeprefix("debugger_")
    values = {"robust_loss": "generalized_cross_entropy", "class_weighting": "balanced, logit_adjusted"}[setting]
    assert refused.value.problems == {
        field: f"\"auto\" is no longer a value: the product changes the training loss only when you allow it. Set "
        f"allow_loss_changes to true to let the planner turn {setting} on after a miss it would answer, or name the "
        f"value the first job trains with ({values})"
    }


def test_a_script_without_channels_sends_no_input_data_config():
    script = {"source_dir": "s3://remediation-artifacts/code/s-0123456789abcdef/sourcedir.tar.gz", "entry_point": "t.py"}
    request = job_request.build_create_training_job_request(initial_state({**INPUT, **script}), "remediation-j-001")
    _validate("sagemaker", "CreateTrainingJob", request)
    assert "InputDataConfig" not in request


@pytest.mark.parametrize(
    ("distribution", "launcher_hyperparameter"),
    [
        ({"torch_distributed": {"enabled": True}}, "sagemaker_torch_distributed_enabled"),
        ({"pytorchddp": {"enabled": True}}, "sagemaker_pytorch_ddp_enabled"),
        (None, None),
    ],
)
def test_a_multi_instance_request_is_valid_and_carries_the_sdks_distribution_hyperparameters(
    distribution, launcher_hyperparameter
):
    given = {**INPUT, "instance_count": 3, **({"distribution": distribution} if distribution else {})}
    state = initial_state(given)
    request = job_request.build_create_training_job_request(state, "remediation-x-1")
    _validate("sagemaker", "CreateTrainingJob", request)
    assert request["ResourceConfig"]["InstanceCount"] == 3
    hyperparameters = request["HyperParameters"]
    launchers = set(hyperparameters) & {"sagemaker_torch_distributed_enabled", "sagemaker_pytorch_ddp_enabled"}
    if launcher_hyperparameter is None:
        assert not launchers and "sagemaker_instance_type" not in hyperparameters
    else:  # JSON-encoded as the SDK's PyTorch estimator sends them
        assert launchers == {launcher_hyperparameter}
        assert hyperparameters[launcher_hyperparameter] == '"true"'
        assert hyperparameters["sagemaker_instance_type"] == '"ml.m5.xlarge"'
    hook = json.loads(json.loads(hyperparameters[HOOK_CONFIG_HYPERPARAMETER]))
    assert hook["HookParameters"]["include_workers"] == "all"  # every rank's tensors for the post-mortem


def test_every_pytorch_rule_at_once_fits_sagemakers_limits_and_reaches_the_launcher_whole():
    """Fifteen rules' configurations are longer than one hyperparameter may be: they travel in parts."""
    from contracts.job import RULE_CONFIGS_HYPERPARAMETER, decode_hyperparameter, join_long_value
    from contracts.rule_selection import XGBOOST_ONLY_RULES

    names = [name for name in debugger_config.BUILTIN_RULE_DEFAULTS if name not in XGBOOST_ONLY_RULES]
    rules = [{"name": name, "parameters": {"max_threshold": "1e6"}} if name == "TensorVariance" else name for name in names]
    state = initial_state({**INPUT, "entry_point": "train.py", "source_dir": "s3://remediation-artifacts/code/src.tar.gz",
                           "hyperparameters": {"lr": 0.1}, "rules": rules})
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    _validate("sagemaker", "CreateTrainingJob", request)
    hyperparameters = request["HyperParameters"]
    assert f"{RULE_CONFIGS_HYPERPARAMETER}_1" in hyperparameters
    argv = [item for name, value in hyperparameters.items() if not name.startswith("sagemaker_")
            for item in (f"--{name}", decode_hyperparameter(value))]
    reserved, user = split_arguments(argv)
    assert user == ["--lr", "0.1"]
    configs = json.loads(join_long_value(RULE_CONFIGS_HYPERPARAMETER, reserved))
    assert [config["RuleConfigurationName"] for config in configs] == names
