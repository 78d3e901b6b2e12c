"""The in-process dispatch seam: answers, errors, validation, install/uninstall, later clients and threads."""

from __future__ import annotations

import json
import threading

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, ParamValidationError

from local_runtime.botocore_dispatch import LocalDispatch, ServiceError, function_name_from

REGION = "us-east-1"


@pytest.fixture(autouse=True)
def _credentials(monkeypatch, offline_aws_credentials):
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)


def _describe(call):
    return {
        "TrainingJobName": call.params["TrainingJobName"],
        "TrainingJobArn": f"arn:aws:sagemaker:{call.region}:123456789012:training-job/{call.params['TrainingJobName']}",
        "TrainingJobStatus": "InProgress",
        "SecondaryStatus": "Training",
        "AlgorithmSpecification": {"TrainingInputMode": "File", "TrainingImage": "image"},
        "ResourceConfig": {"InstanceType": "ml.m5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
        "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
        "CreationTime": "2026-11-22T00:00:00Z",
        "ModelArtifacts": {"S3ModelArtifacts": "s3://b/jobs/x/output/model.tar.gz"},
    }


def test_a_registered_operation_answers_clients_created_after_install():
    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "DescribeTrainingJob", _describe)
    with dispatch:
        client = boto3.client("sagemaker", region_name=REGION)
        answer = client.describe_training_job(TrainingJobName="remediation-job-1")
    assert answer["TrainingJobStatus"] == "InProgress"
    assert answer["ResponseMetadata"]["HTTPStatusCode"] == 200
    assert [call.params for call in dispatch.calls_to("sagemaker", "DescribeTrainingJob")] == [
        {"TrainingJobName": "remediation-job-1"}
    ]


def test_botocore_validates_parameters_before_the_implementation_runs():
    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "DescribeTrainingJob", _describe)
    with dispatch:
        client = boto3.client("sagemaker", region_name=REGION)
        with pytest.raises(ParamValidationError, match="TrainingJobName"):
            client.describe_training_job()
        with pytest.raises(ParamValidationError, match="Unknown parameter"):
            client.describe_training_job(TrainingJobName="x", Bogus=1)
    assert dispatch.calls == []


def test_validation_holds_even_for_clients_that_switch_it_off():
    """moto's Step Functions interpreter builds its clients with parameter_validation=False."""
    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "DescribeTrainingJob", _describe)
    with dispatch:
        client = boto3.client("sagemaker", region_name=REGION, config=Config(parameter_validation=False))
        with pytest.raises(ParamValidationError, match="TrainingJobName"):
            client.describe_training_job(TrainingJobName=123)
    assert dispatch.calls == []


def test_service_errors_become_the_modelled_client_error():
    def stop(call):
        raise ServiceError("ResourceNotFound", f"Requested resource not found: {call.params['TrainingJobName']}")

    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "StopTrainingJob", stop)
    with dispatch:
        client = boto3.client("sagemaker", region_name=REGION)
        with pytest.raises(client.exceptions.ResourceNotFound) as raised:
            client.stop_training_job(TrainingJobName="missing")
    assert raised.value.response["Error"]["Code"] == "ResourceNotFound"
    assert "missing" in raised.value.response["Error"]["Message"]
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400


def test_an_implementation_bug_answers_internal_failure():
    def broken(call):
        raise KeyError("oops")

    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "StopTrainingJob", broken)
    with dispatch:
        client = boto3.client("sagemaker", region_name=REGION)
        with pytest.raises(ClientError) as raised:
            client.stop_training_job(TrainingJobName="job")
    assert raised.value.response["Error"]["Code"] == "InternalFailure"
    assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500


def test_uninstall_removes_the_registrations_for_new_clients():
    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "DescribeTrainingJob", _describe)
    with dispatch:
        pass
    client = boto3.client(
        "sagemaker", region_name=REGION, endpoint_url="http://127.0.0.1:9", config=Config(retries={"max_attempts": 0})
    )
    with pytest.raises(Exception) as raised:
        client.describe_training_job(TrainingJobName="job")
    assert not isinstance(raised.value, ClientError)  # it tried the (closed) network: nothing answered in-process
    assert dispatch.calls == []


def test_lambda_invoke_runs_the_handler_in_process():
    seen = {}

    def handler(event, context):
        seen["context"] = context
        return {"echo": event, "function": context.function_name}

    dispatch = LocalDispatch()
    dispatch.register_lambda_function("train", handler)
    with dispatch:
        client = boto3.client("lambda", region_name=REGION)
        answer = client.invoke(
            FunctionName="arn:aws:lambda:us-east-1:123456789012:function:train", Payload=json.dumps({"a": 1})
        )
    assert answer["StatusCode"] == 200
    assert "FunctionError" not in answer
    assert json.load(answer["Payload"]) == {"echo": {"a": 1}, "function": "train"}
    assert seen["context"].get_remaining_time_in_millis() > 0


def test_a_raised_exception_becomes_lambdas_function_error_shape():
    class JobLaunchFailed(RuntimeError):
        pass

    def handler(event, context):
        raise JobLaunchFailed("capacity")

    dispatch = LocalDispatch()
    dispatch.register_lambda_function("train", handler)
    with dispatch:
        answer = boto3.client("lambda", region_name=REGION).invoke(FunctionName="train", Payload=b"{}")
    assert answer["FunctionError"] == "Unhandled"
    assert answer["ResponseMetadata"]["HTTPHeaders"]["x-amz-function-error"] == "Unhandled"
    payload = json.load(answer["Payload"])
    assert payload["errorType"] == "JobLaunchFailed"
    assert payload["errorMessage"] == "capacity"


def test_waiting_for_a_functions_invocations_ends_when_the_last_one_returns_or_raises():
    """What the local cleanup's second look waits for: the train Lambda still launching a stopped execution's job."""
    entered, release = threading.Semaphore(0), threading.Event()

    def launching(event, context):
        entered.release()
        assert release.wait(60)
        if event.get("fail"):
            raise RuntimeError("capacity")
        return {}

    dispatch = LocalDispatch()
    dispatch.register_lambda_function("train", launching)
    dispatch.register_lambda_function("monitor", lambda event, context: {})
    with dispatch:
        client = boto3.client("lambda", region_name=REGION)
        assert dispatch.wait_for_invocations("train", timeout=0)  # none runs
        calls = [
            threading.Thread(target=client.invoke, kwargs={"FunctionName": "train", "Payload": json.dumps(payload)})
            for payload in ({}, {"fail": True})
        ]
        for call in calls:
            call.start()
        assert entered.acquire(timeout=60) and entered.acquire(timeout=60)  # both run now
        assert not dispatch.wait_for_invocations("arn:aws:lambda:us-east-1:123456789012:function:train", timeout=0.05)
        assert dispatch.wait_for_invocations("monitor", timeout=0)  # another function's count
        release.set()
        assert dispatch.wait_for_invocations("train", timeout=60)
        for call in calls:
            call.join(60)


def test_unknown_function_is_resource_not_found():
    dispatch = LocalDispatch()
    dispatch.register_lambda_function("train", lambda event, context: {})
    with dispatch:
        client = boto3.client("lambda", region_name=REGION)
        with pytest.raises(client.exceptions.ResourceNotFoundException, match="monitor"):
            client.invoke(FunctionName="monitor", Payload=b"{}")


def test_clients_created_on_worker_threads_inside_moto_are_dispatched():
    from moto import mock_aws

    dispatch = LocalDispatch()
    dispatch.register("sagemaker", "DescribeTrainingJob", _describe)
    results = []
    with mock_aws(), dispatch:
        boto3.client("s3", region_name=REGION).create_bucket(Bucket="artifacts")  # moto still answers the rest

        def worker():
            results.append(boto3.client("sagemaker", region_name=REGION).describe_training_job(TrainingJobName="t"))

        thread = threading.Thread(target=worker)
        thread.start()
        thread.join(10)
        assert boto3.client("s3", region_name=REGION).list_buckets()["Buckets"][0]["Name"] == "artifacts"
    assert results and results[0]["TrainingJobName"] == "t"


def test_function_name_from_arns():
    assert function_name_from("arn:aws:lambda:eu-west-1:123456789012:function:plan:live") == "plan"
    assert function_name_from("123456789012:function:plan") == "plan"
    assert function_name_from("plan") == "plan"
    with pytest.raises(ValueError, match="not a Lambda function ARN"):
        function_name_from("arn:aws:states:::lambda:invoke")


def test_an_operation_registered_while_installed_reaches_the_default_session():
    from moto import mock_aws

    dispatch = LocalDispatch()
    dispatch.register_lambda_function("train", lambda event, context: {})
    with mock_aws(), dispatch:
        boto3.client("s3", region_name=REGION)  # boto3's default session now exists, built before the next line
        dispatch.register("sagemaker", "DescribeTrainingJob", _describe)
        answer = boto3.client("sagemaker", region_name=REGION).describe_training_job(TrainingJobName="late")
    assert answer["TrainingJobStatus"] == "InProgress"  # moto's SageMaker would have said ResourceNotFound
