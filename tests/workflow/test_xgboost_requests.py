"""An XGBoost run_spec: SageMaker's XGBoost framework image for the region, script mode with the debugger packed
beside the script, the XGBoost hook's collections and default rules, in a CreateTrainingJob request botocore
accepts; and the bad combinations refused before anything is launched, naming the field."""

from __future__ import annotations

import json
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import validate_parameters

from contracts import debugger_config
from contracts.job import (
    ENTRY_POINT_HYPERPARAMETER,
    HOOK_CONFIG_HYPERPARAMETER,
    RULE_CONFIGS_HYPERPARAMETER,
    script_mode_arguments,
)
from debugger.launcher import split_arguments
from lambdas.remediation.execution_input import InvalidExecutionInput, initial_state
from lambdas.remediation.job import job_identity, job_request, training_images
from lambdas.remediation.job.xgboost_images import DEFAULT_XGBOOST_VERSION, XGBOOST_ACCOUNT_BY_REGION, XGBOOST_IMAGES

REPO = Path(__file__).resolve().parents[2]
SAGEMAKER = botocore.session.get_session().get_service_model("sagemaker")
EXAMPLE_SPEC = json.loads((REPO / "examples" / "xgboost" / "run_spec.json").read_text())
ACCOUNT = {"bucket": "remediation-artifacts", "sm_role": "arn:aws:iam::123456789012:role/SageMakerExecutionRole"}
#: The example's run_spec as `cloud start` sends it: the local source directory and channels uploaded to S3.
XGBOOST_INPUT = {
    **EXAMPLE_SPEC,
    **ACCOUNT,
    "source_dir": "s3://remediation-artifacts/code/xgboost-0123456789abcdef/sourcedir.tar.gz",
    "channels": {
        "train": "s3://remediation-artifacts/data/train-0123456789abcdef/",
        "validation": "s3://remediation-artifacts/data/validation-0123456789abcdef/",
    },
}


def _request(region: str, instance_type: str = "ml.m5.xlarge", **changes) -> dict:
    state = initial_state({**XGBOOST_INPUT, "region": region, "instance_type": instance_type, **changes})
    name = job_identity.training_job_name("execution-1", state.run_spec.base_job_name, 1)
    request = job_request.build_create_training_job_request(
        state, name, execution_id=f"arn:aws:states:{region}:123456789012:execution:m:e-1",
        execution_start_time="2026-11-23T08:00:00Z", now=0,
    )  # fmt: skip
    validate_parameters(request, SAGEMAKER.operation_model("CreateTrainingJob").input_shape)
    return request


@pytest.mark.parametrize(
    ("region", "registry"),
    [
        ("us-east-1", "683313688378.dkr.ecr.us-east-1.amazonaws.com"),
        ("eu-west-1", "141502667606.dkr.ecr.eu-west-1.amazonaws.com"),
        ("ap-southeast-4", "106583098589.dkr.ecr.ap-southeast-4.amazonaws.com"),
        ("cn-north-1", "450853457545.dkr.ecr.cn-north-1.amazonaws.com.cn"),
        ("us-gov-west-1", "414596584902.dkr.ecr.us-gov-west-1.amazonaws.com"),
        ("us-isob-east-1", "281123927165.dkr.ecr.us-isob-east-1.sc2s.sgov.gov"),
    ],
)
def test_the_request_runs_sagemakers_xgboost_image_for_the_region_and_passes_botocores_validation(region, registry):
    request = _request(region)
    assert request["AlgorithmSpecification"]["TrainingImage"] == f"{registry}/sagemaker-xgboost:{DEFAULT_XGBOOST_VERSION}"
    # One image serves CPU and GPU instances (the SDK's table has no processor in the tag).
    gpu = _request(region, "ml.g5.xlarge", framework_version="1.7-1")
    assert gpu["AlgorithmSpecification"]["TrainingImage"] == f"{registry}/sagemaker-xgboost:1.7-1"
    assert [channel["ChannelName"] for channel in request["InputDataConfig"]] == ["train", "validation"]


def test_script_mode_runs_the_example_with_the_xgboost_hooks_collections_and_default_rules(tmp_path):
    request = _request("eu-west-1")
    hyperparameters = request["HyperParameters"]
    assert json.loads(hyperparameters["sagemaker_program"]) == "remediation_launcher.py"
    reserved, user_args = split_arguments(script_mode_arguments(hyperparameters))
    assert reserved[ENTRY_POINT_HYPERPARAMETER] == "train.py"
    assert user_args[:6] == ["--num_round", "100", "--max_depth", "10", "--eta", "0.9"]
    hook = debugger_config.validate_hook_config(json.loads(reserved[HOOK_CONFIG_HYPERPARAMETER]))
    collections = [entry["CollectionName"] for entry in hook["CollectionConfigurations"]]
    assert set(collections) <= set(debugger_config.XGBOOST_COLLECTION_NAMES)
    assert {"metrics", "losses", "predictions", "labels", "feature_importance"} <= set(collections)
    rules = debugger_config.validate_rule_configs(json.loads(reserved[RULE_CONFIGS_HYPERPARAMETER]))
    assert [rule["RuleConfigurationName"] for rule in rules] == ["Overtraining", "LossNotDecreasing"]
    assert "num_steps" not in rules[1]["RuleParameters"]  # rounds are exact: the documented 10, not the networks' 20

    # The job's XGBoost hook takes that configuration as it is (PyTorch's gradients/weights it would refuse).
    from debugger.hook.xgboost.hook import XGBoostHook

    hook_object = XGBoostHook.from_configs(hook, rules, out_dir=tmp_path, job_name="remediation-job-1")
    try:
        assert set(collections) <= set(hook_object.include_collections)
        assert hook_object.rule_names == ["Overtraining", "LossNotDecreasing"]
    finally:
        hook_object.close()


def test_the_run_specs_rules_override_the_xgboost_defaults():
    request = _request("us-east-1", rules=["Overtraining", {"name": "TreeDepth", "parameters": {"depth": "6"}}])
    reserved, _ = split_arguments(script_mode_arguments(request["HyperParameters"]))
    rules = json.loads(reserved[RULE_CONFIGS_HYPERPARAMETER])
    assert [(rule["RuleConfigurationName"], rule["RuleParameters"].get("depth")) for rule in rules] == [
        ("Overtraining", None),
        ("TreeDepth", "6"),
    ]


def test_legacy_mode_asks_sagemaker_debugger_for_xgboost_collections():
    request = _request("us-east-1", legacy_sagemaker_debugger=True)
    assert [entry["CollectionName"] for entry in request["DebugHookConfig"]["CollectionConfigurations"]] == [
        "metrics",
        "losses",
    ]
    assert [rule["RuleParameters"]["rule_to_invoke"] for rule in request["DebugRuleConfigurations"]] == [
        "Overtraining",
        "LossNotDecreasing",
    ]


@pytest.mark.parametrize("framework_version", sorted(XGBOOST_IMAGES))
@pytest.mark.parametrize("region", sorted(XGBOOST_ACCOUNT_BY_REGION))
def test_every_listed_region_and_version_builds_an_image_reference_sagemaker_accepts(region, framework_version):
    uri = training_images.training_image_uri(region, "ml.m5.xlarge", framework_version, "xgboost")
    algorithm = SAGEMAKER.shape_for("AlgorithmSpecification")
    validate_parameters({"TrainingImage": uri, "TrainingInputMode": "File"}, algorithm)
    import re

    assert re.fullmatch(algorithm.members["TrainingImage"].metadata["pattern"], uri)
    assert uri.startswith(f"{XGBOOST_ACCOUNT_BY_REGION[region]}.dkr.ecr.{region}.")
    assert uri.endswith(f"/sagemaker-xgboost:{framework_version}")


def test_the_default_version_is_the_xgboost_the_local_loop_trains_with():
    pins = dict(line.split("==") for line in (REPO / "requirements.txt").read_text().splitlines() if "==" in line)
    xgboost_pin = pins.get("xgboost-cpu") or pins["xgboost"]
    assert XGBOOST_IMAGES[DEFAULT_XGBOOST_VERSION] == xgboost_pin
    assert len(XGBOOST_ACCOUNT_BY_REGION) == 37  # the SDK's xgboost.json lists 37 regions
    assert initial_state({**XGBOOST_INPUT, "region": "us-east-1", "framework_version": None}).run_spec.framework_version == (
        DEFAULT_XGBOOST_VERSION
    )


def test_pytorch_stays_the_default_framework():
    state = initial_state({**ACCOUNT, "region": "us-east-1"})
    assert (state.run_spec.framework, state.run_spec.framework_version) == ("pytorch", "2.13")


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"framework": "tensorflow"}, "framework", "must be one of pytorch, xgboost"),
        ({"framework_version": "2.13"}, "framework_version", "use one of 3.2-0, 3.0-5, 1.7-1 (default 3.2-0)"),
        ({"framework_version": "1"}, "framework_version", "XGBoost '1' has no supported SageMaker framework image"),
        ({"region": "mx-central-1"}, "region", "SageMaker's XGBoost images are not published in 'mx-central-1'"),
        ({"instance_type": "ml.trn1.2xlarge"}, "instance_type", "needs a Neuron image"),
        ({"rules": ["VanishingGradient"]}, "rules[0]", "VanishingGradient reads gradients, weights or activations"),
        (
            {"framework": "pytorch", "framework_version": None, "rules": ["TreeDepth"]},
            "rules[0]",
            'it needs "framework": "xgboost"',
        ),
    ],
)
def test_bad_combinations_are_refused_before_anything_is_launched_naming_the_field(changes, field, message):
    given = {**XGBOOST_INPUT, "region": "us-east-1", **changes}
    given = {key: value for key, value in given.items() if value is not None}
    with pytest.raises(InvalidExecutionInput) as raised:
        initial_state(given)
    assert field in raised.value.problems, raised.value.problems
    assert message in raised.value.problems[field]


def test_the_builtin_example_is_pytorch_only():
    with pytest.raises(InvalidExecutionInput) as raised:
        initial_state({**ACCOUNT, "region": "us-east-1", "framework": "xgboost"})
    assert "needs your own script (source_dir and entry_point" in raised.value.problems["framework"]
