"""The training and rule-evaluator images: every supported version x region is a valid, published image URI."""

from __future__ import annotations

import re
from pathlib import Path

import botocore.session
import pytest
from botocore.validate import validate_parameters

from lambdas.remediation.execution_input import initial_state
from lambdas.remediation.job import job_request, training_images
from lambdas.remediation.job.training_images import (
    DEFAULT_FRAMEWORK_VERSION,
    DLC_ACCOUNT_BY_REGION,
    PYTORCH_IMAGES,
    RULE_EVALUATOR_ACCOUNT_BY_REGION,
    TrainingImageError,
    rule_evaluator_image_uri,
    training_image_uri,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SESSION = botocore.session.get_session()
SAGEMAKER = SESSION.get_service_model("sagemaker")
ECR = SESSION.get_service_model("ecr")
IMAGE_URI = re.compile(
    r"^(?P<account>\d{12})\.dkr\.ecr\.(?P<region>[a-z0-9-]+)\.amazonaws\.com(\.cn)?/(?P<repository>[^:]+):(?P<tag>.+)$"
)
#: aws/deep-learning-containers, docs/reference/region_availability.md: the 36 regions with their accounts.
PUBLISHED_DLC_REGIONS = 36
#: The nine regions the old table left to the default account (763104351884), where no image lives there.
FORMERLY_MISSING = {
    "ap-east-2": "975050140332",
    "ap-south-2": "772153158452",
    "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462",
    "ap-southeast-6": "633930458069",
    "ap-southeast-7": "590183813437",
    "eu-central-2": "380420809688",
    "eu-south-2": "503227376785",
    "mx-central-1": "637423239942",
}
CPU_TYPES = ("ml.m5.xlarge", "ml.c5.2xlarge", "ml.m7i.large", "ml.r6i.xlarge", "ml.t3.medium", "local")
GPU_TYPES = ("ml.g4dn.xlarge", "ml.g5.xlarge", "ml.g6e.2xlarge", "ml.p4d.24xlarge", "ml.p5.48xlarge", "local_gpu")


def _pattern(shape_name: str, member: str) -> re.Pattern:
    return re.compile(SAGEMAKER.shape_for(shape_name).members[member].metadata["pattern"])


def _assert_valid_ecr_image(uri: str) -> re.Match:
    """An image reference ECR itself would accept: BatchGetImage's parameters and their patterns."""
    match = IMAGE_URI.match(uri)
    assert match, uri
    validate_parameters(
        {
            "registryId": match["account"],
            "repositoryName": match["repository"],
            "imageIds": [{"imageTag": match["tag"]}],
        },
        ECR.operation_model("BatchGetImage").input_shape,
    )
    for shape, value in (("RegistryId", match["account"]), ("RepositoryName", match["repository"])):
        assert re.fullmatch(ECR.shape_for(shape).metadata["pattern"], value), (uri, shape)
    return match


@pytest.mark.parametrize("framework_version", sorted(PYTORCH_IMAGES))
@pytest.mark.parametrize("region", sorted(DLC_ACCOUNT_BY_REGION))
def test_every_supported_version_and_region_builds_a_valid_training_image(framework_version, region):
    algorithm = SAGEMAKER.shape_for("AlgorithmSpecification")
    training_image = algorithm.members["TrainingImage"]
    for instance_type, gpu in (("ml.m5.xlarge", False), ("ml.g5.xlarge", True)):
        uri = training_image_uri(region, instance_type, framework_version)
        assert _pattern("AlgorithmSpecification", "TrainingImage").fullmatch(uri)
        assert len(uri) <= training_image.metadata["max"]
        validate_parameters({"TrainingImage": uri, "TrainingInputMode": "File"}, algorithm)  # botocore's check
        match = _assert_valid_ecr_image(uri)
        image = PYTORCH_IMAGES[framework_version]
        assert match["account"] == DLC_ACCOUNT_BY_REGION[region] and match["region"] == region
        assert match["repository"] == image.repository == "pytorch"
        assert match["tag"] == image.tag(gpu)
        assert match["tag"].startswith(image.full_version + "-")
        assert ("-cu1" in match["tag"]) is gpu and ("-cpu-" in match["tag"]) is not gpu
        assert (".amazonaws.com.cn/" in uri) is region.startswith("cn-")


def test_the_account_table_covers_every_region_the_images_are_published_in():
    assert len(DLC_ACCOUNT_BY_REGION) == PUBLISHED_DLC_REGIONS
    for region, account in FORMERLY_MISSING.items():
        assert DLC_ACCOUNT_BY_REGION[region] == account
        assert training_image_uri(region, "ml.m5.xlarge").startswith(f"{account}.dkr.ecr.{region}.")


def test_gpu_types_get_gpu_images_and_cpu_types_cpu_images():
    for instance_type in GPU_TYPES:
        assert "-cu133-amzn2023-sagemaker" in training_image_uri("us-east-1", instance_type)
    for instance_type in CPU_TYPES:
        assert training_image_uri("us-east-1", instance_type).endswith(":2.13.0-cpu-amzn2023-sagemaker")


def test_every_sagemaker_training_instance_type_gets_an_image_or_an_error_naming_the_field():
    for instance_type in SAGEMAKER.shape_for("TrainingInstanceType").enum:
        family = instance_type.split(".")[1]
        try:
            uri = training_image_uri("us-west-2", instance_type)
        except TrainingImageError as error:
            assert str(error).startswith("run_spec.instance_type:"), error
            assert family.startswith(("trn", "p2", "p3", "p6e-gb")), instance_type
            continue
        assert ("-cu13" in uri) is family.startswith(("p", "g")), (instance_type, uri)


def test_the_default_is_explicit_and_the_torch_the_local_loop_trains_with():
    assert training_image_uri("us-west-2", "ml.m5.xlarge") == (
        "763104351884.dkr.ecr.us-west-2.amazonaws.com/pytorch:2.13.0-cpu-amzn2023-sagemaker"
    )
    assert training_image_uri("us-west-2", "ml.m5.xlarge") == training_image_uri(
        "us-west-2", "ml.m5.xlarge", DEFAULT_FRAMEWORK_VERSION
    )
    assert training_image_uri("eu-west-1", "ml.g5.xlarge", "2.11.0").endswith(":2.11.0-cu130-amzn2023-sagemaker")
    pins = dict(line.split("==") for line in (REPO_ROOT / "requirements.txt").read_text().splitlines() if "==" in line)
    assert PYTORCH_IMAGES[DEFAULT_FRAMEWORK_VERSION].full_version == pins["torch"]
    # The train Lambda's request carries the same image.
    state = initial_state(
        {"bucket": "artifacts-bucket", "region": "ap-southeast-7", "sm_role": "arn:aws:iam::123456789012:role/R"}
    )
    request = job_request.build_create_training_job_request(state, "remediation-x-001")
    assert request["AlgorithmSpecification"]["TrainingImage"] == (
        "590183813437.dkr.ecr.ap-southeast-7.amazonaws.com/pytorch:2.13.0-cpu-amzn2023-sagemaker"
    )


def test_every_supported_version_is_within_its_end_of_patch_when_the_tables_were_reviewed():
    for image in PYTORCH_IMAGES.values():
        assert image.general_availability <= training_images.TABLES_REVIEWED < image.end_of_patch, image
    assert "2.8" not in PYTORCH_IMAGES and "2.9" not in PYTORCH_IMAGES  # past their end of patch
    assert max(PYTORCH_IMAGES, key=lambda v: tuple(map(int, v.split(".")))) == DEFAULT_FRAMEWORK_VERSION


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: training_image_uri("us-east-1", "ml.m5.xlarge", "2.8"), "run_spec.framework_version"),
        (lambda: training_image_uri("us-east-1", "ml.m5.xlarge", "1.13.1"), "run_spec.framework_version"),
        (lambda: training_image_uri("us-gov-west-1", "ml.m5.xlarge"), "run_spec.region"),
        (lambda: training_image_uri("xx-nowhere-1", "ml.m5.xlarge"), "run_spec.region"),
        (lambda: training_image_uri("us-east-1", "ml.trn1.2xlarge"), "run_spec.instance_type"),
        (lambda: training_image_uri("us-east-1", "ml.p3.2xlarge"), "run_spec.instance_type"),
        (lambda: training_image_uri("us-east-1", "ml.p6e-gb200.36xlarge"), "run_spec.instance_type"),
        (lambda: training_image_uri("us-east-1", "m5.xlarge"), "run_spec.instance_type"),
        (lambda: rule_evaluator_image_uri("il-central-1"), "run_spec.legacy_sagemaker_debugger"),
    ],
)
def test_unsupported_input_is_refused_naming_the_field_and_what_is_allowed(call, field):
    with pytest.raises(TrainingImageError) as raised:
        call()
    message = str(raised.value)
    assert message.startswith(field + ":"), message
    assert "use " in message or "set " in message, message
    if field == "run_spec.framework_version":
        assert all(version in message for version in PYTORCH_IMAGES)
    if field == "run_spec.region":
        assert "us-east-1" in message and "mx-central-1" in message


@pytest.mark.parametrize("region", sorted(RULE_EVALUATOR_ACCOUNT_BY_REGION))
def test_every_rule_evaluator_region_builds_a_valid_image(region):
    uri = rule_evaluator_image_uri(region)
    assert _pattern("DebugRuleConfiguration", "RuleEvaluatorImage").fullmatch(uri)
    match = _assert_valid_ecr_image(uri)
    assert (match["account"], match["repository"], match["tag"]) == (
        RULE_EVALUATOR_ACCOUNT_BY_REGION[region],
        "sagemaker-debugger-rules",
        "latest",
    )


def test_rule_evaluator_accounts_are_the_published_ones():
    """SDK image_uri_config/debugger.json (sagemaker-core): ap-northeast-3 has a registry of its own."""
    assert RULE_EVALUATOR_ACCOUNT_BY_REGION["ap-northeast-3"] == "479947661362"
    assert RULE_EVALUATOR_ACCOUNT_BY_REGION["ap-northeast-3"] != DLC_ACCOUNT_BY_REGION["ap-northeast-3"]
    assert len(RULE_EVALUATOR_ACCOUNT_BY_REGION) == 24
    assert RULE_EVALUATOR_ACCOUNT_BY_REGION["us-west-2"] == "895741380848"
    assert rule_evaluator_image_uri("cn-north-1") == (
        "618459771430.dkr.ecr.cn-north-1.amazonaws.com.cn/sagemaker-debugger-rules:latest"
    )
