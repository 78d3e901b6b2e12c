"""What the three Lambda handlers share: the task event they get from the ASL, AWS clients
(created per call, so each picks up the environment it runs in: Lambda, or the
local runtime inside moto), SNS notifications and stopping a job."""

from __future__ import annotations

import os
from typing import Any, Literal

import boto3
from aws_lambda_powertools.utilities.parser import parse
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    ReadTimeoutError,
)
from pydantic import BaseModel, ConfigDict

from lambdas.remediation import notifications

SERVICE_NAME = os.environ.get("POWERTOOLS_SERVICE_NAME", "training-remediation")
METRICS_NAMESPACE = os.environ.get("POWERTOOLS_METRICS_NAMESPACE", "TrainingRemediation")
NOTIFICATION_TOPIC_ENV = "NOTIFICATION_TOPIC_ARN"
#: SageMaker's error codes for a job that does not exist or is no longer stoppable.
NO_SUCH_JOB_OR_NOT_STOPPABLE = ("ValidationException", "ResourceNotFound")


class TaskEvent(BaseModel):
    """The Payload the state machine sends (statemachine/remediation.asl.json).

    Loop steps: ``{"state": {...}, "execution_name": ...}``; the first step:
    ``{"action": "initialize", "execution_input": {...}}``; the wait for the job:
    ``{"action": "wait_for_job", "task_token": ..., "state": {...}}``; the Catch path:
    ``{"action": "cleanup", "input": {"state"?: ..., "error": {"Error", "Cause"}}}``.
    """

    model_config = ConfigDict(extra="ignore")

    execution_name: str = ""
    #: The execution's ARN and start time: together they identify it even when a name is reused.
    execution_id: str = ""
    execution_start_time: str = ""
    action: Literal["initialize", "cleanup", "wait_for_job"] | None = None
    #: $$.Task.Token of a .waitForTaskToken task (the wait for the job).
    task_token: str = ""
    state: dict[str, Any] | None = None
    execution_input: Any = None
    input: dict[str, Any] | None = None


def parse_task_event(event: Any) -> TaskEvent:
    return parse(event=event, model=TaskEvent)


#: botocore's standard retry mode retries throttling and transient errors with jittered exponential backoff;
#: a call that still fails is a transient failure the state machine retries later (AwsTransientError).
CLIENT_CONFIG = Config(retries={"mode": "standard", "max_attempts": 8}, connect_timeout=10, read_timeout=60)
#: Error codes AWS services use for throttling and transient faults (botocore's standard retry list and more).
TRANSIENT_ERROR_CODES = frozenset(
    {
        "Throttling",
        "ThrottlingException",
        "ThrottledException",
        "RequestThrottledException",
        "TooManyRequestsException",
        "RequestLimitExceeded",
        "ProvisionedThroughputExceededException",
        "SlowDown",
        "RequestTimeout",
        "RequestTimeoutException",
        "ServiceUnavailable",
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "BandwidthLimitExceeded",
    }
)


class AwsTransientError(RuntimeError):
    """An AWS call kept failing with throttling or a transient fault after the client's own retries; the state
    machine retries the task later (statemachine/remediation.asl.json: Retry on AwsTransientError)."""


def client(service: str, region: str) -> Any:
    return boto3.client(service, region_name=region, config=CLIENT_CONFIG)


def is_transient(error: BaseException) -> bool:
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in TRANSIENT_ERROR_CODES or status in (500, 502, 503, 504)
    return isinstance(error, (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError, ConnectTimeoutError))


def environment_value(name: str, what: str) -> str:
    """The Lambda's environment variable ``name``; RuntimeError saying ``what`` it is for when it is not set."""
    value = os.environ.get(name, "")
    if not value:
        raise RuntimeError(f"{name} is not set: {what} (the CDK stack and the local runtime set it)")
    return value


def notification_topic_arn() -> str:
    return environment_value(NOTIFICATION_TOPIC_ENV, "the handlers publish every step to this SNS topic ARN")


def publish(notification: notifications.Notification) -> str:
    """Publish to env NOTIFICATION_TOPIC_ARN; returns the MessageId."""
    topic = notification_topic_arn()
    request = notifications.publish_request(topic, notification)
    region = topic.split(":")[3]
    try:
        return client("sns", region).publish(**request)["MessageId"]
    except (ClientError, BotoCoreError) as error:
        if is_transient(error):
            raise AwsTransientError(f"SNS Publish to {topic}: {error}") from error
        raise


def stop_training_job(sagemaker: Any, job_name: str) -> bool:
    """StopTrainingJob; False when the job is no longer stoppable (it already ended or is stopping)."""
    try:
        sagemaker.stop_training_job(TrainingJobName=job_name)
        return True
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in NO_SUCH_JOB_OR_NOT_STOPPABLE:
            return False
        raise


def job_tags(sagemaker: Any, job_arn: str) -> list[dict[str, str]]:
    """A training job's tags (SageMaker ListTags, every page)."""
    tags: list[dict[str, str]] = []
    request: dict[str, Any] = {"ResourceArn": job_arn}
    while True:
        response = sagemaker.list_tags(**request)
        tags += response.get("Tags", [])
        if not response.get("NextToken"):
            return tags
        request["NextToken"] = response["NextToken"]
