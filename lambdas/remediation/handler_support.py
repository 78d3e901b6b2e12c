"""What the Lambda handlers share: the task event they get from the ASL, AWS clients
(created per call, so each picks up the environment it runs in: Lambda, or the
local runtime inside moto) with a time budget inside the invocation's deadline,
SNS notifications and stopping a job."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

import boto3
from aws_lambda_powertools.metrics import MetricUnit
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

from contracts import time_budgets
from lambdas.remediation.state import end_causes
from lambdas.remediation.text import notifications

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


#: botocore's standard retry mode retries throttling and transient errors with jittered exponential backoff, a few
#: short tries (contracts.time_budgets.CALL_BUDGET); a call that still fails is a transient failure the state
#: machine retries later, with its own backoff (AwsTransientError).
CLIENT_CONFIG = Config(
    retries={"mode": "standard", "total_max_attempts": time_budgets.CALL_BUDGET.attempts},
    connect_timeout=time_budgets.CALL_BUDGET.connect_seconds,
    read_timeout=time_budgets.CALL_BUDGET.read_seconds,
)
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
        "ServiceUnavailableException",
        "InternalServerException",
    }
)


class RetriedLater(RuntimeError):
    """An error the state machine (or EventBridge) retries with backoff: a Lambda error, not a fault to alarm on."""


class AwsTransientError(RetriedLater):
    """An AWS call kept failing with throttling or a transient fault after the client's own retries; the state
    machine retries the task later (statemachine/remediation.asl.json: Retry on AwsTransientError)."""


def counting_errors(metrics: Any) -> Any:
    """Decorator (under ``@metrics.log_metrics``, which flushes what is counted here even as the error propagates):
    an exception the handler raises is counted as it happens, so the stack's LambdaErrors alarm sees it in the
    period it happened. A RetriedLater (a transient fault handed back for a retry) is counted as
    end_causes.TRANSIENT_FAULTS_DEFERRED, an expected refusal (InvalidExecutionInput, NotEnoughTimeLeft, ...: an
    Error in end_causes.EXPECTED_ENDS, ended and notified by the workflow) not at all, anything else as
    end_causes.UNHANDLED_ERRORS (alarmed)."""

    def decorate(handler: Any) -> Any:
        @functools.wraps(handler)
        def counted(event: Any, context: Any) -> Any:
            try:
                return handler(event, context)
            except RetriedLater:
                metrics.add_metric(name=end_causes.TRANSIENT_FAULTS_DEFERRED, unit=MetricUnit.Count, value=1)
                raise
            except Exception as error:
                if type(error).__name__ not in end_causes.EXPECTED_ENDS:
                    metrics.add_metric(name=end_causes.UNHANDLED_ERRORS, unit=MetricUnit.Count, value=1)
                raise

        return counted

    return decorate


class DeadlineExceeded(BotoCoreError):
    """The invocation is too close to its timeout for another AWS call (or another try of one): transient."""

    fmt = "{operation}: not attempted, {seconds_left:.1f} s left before the Lambda's deadline"


#: The clock the deadlines are read on (tests replace it).
monotonic = time.monotonic
_invocation = threading.local()


def begin_invocation(context: Any, margin_seconds: float = time_budgets.DEADLINE_MARGIN_SECONDS) -> None:
    """Start this invocation's deadline: its remaining time (Lambda's context) less ``margin_seconds``. Handlers
    run on their own threads (one per invocation), so the deadline is the thread's."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    seconds = remaining() / 1000 if callable(remaining) else None
    _invocation.deadline = None if seconds is None else monotonic() + seconds - margin_seconds


def seconds_left() -> float | None:
    """Seconds before this invocation's deadline (None outside an invocation: no deadline)."""
    deadline = getattr(_invocation, "deadline", None)
    return None if deadline is None else deadline - monotonic()


def check_deadline(operation: str, needed_seconds: float = 0.0) -> None:
    """DeadlineExceeded if less than ``needed_seconds`` are left before the invocation's deadline."""
    left = seconds_left()
    if left is not None and left <= needed_seconds:
        raise DeadlineExceeded(operation=operation, seconds_left=max(left, 0.0))


def _refuse_past_the_deadline(model: Any = None, **_: Any) -> None:
    check_deadline(getattr(model, "name", "AWS call"))


def client(service: str, region: str, read_timeout: float | None = None) -> Any:
    """A client whose every call (and every try of it) is refused once the invocation's deadline has passed, so
    no call runs past the Lambda's timeout; ``read_timeout`` for calls that answer only when their work is done.

    Made once per service, region and read timeout, and kept: as AWS advises for a Lambda, whose warm invocations
    reuse its clients (a client costs 5-20 ms of CPU to make, a workflow test made a dozen; botocore's clients are
    thread-safe, and the deadline is read per call from the invocation's thread). :func:`forget_clients` drops them
    where the account behind them changes: the local runtime's fake account and each test's.
    """
    with _clients_lock:  # boto3's default session is not safe for making clients from several threads at once
        if boto3.DEFAULT_SESSION is None:
            # What boto3.client does first: the key names the session the client is made in (keyed on "no session
            # yet", the first client was never found again).
            boto3.setup_default_session()
        key = (service, region, read_timeout, id(boto3.DEFAULT_SESSION))
        made = _clients.get(key)
        if made is None:
            config = CLIENT_CONFIG if read_timeout is None else CLIENT_CONFIG.merge(Config(read_timeout=read_timeout))
            made = boto3.client(service, region_name=region, config=config)
            # before-parameter-build: before each call (a dispatched one too); before-send: before each try of it.
            made.meta.events.register("before-parameter-build", _refuse_past_the_deadline)
            made.meta.events.register("before-send", _refuse_past_the_deadline)
            _clients[key] = made
        return made


def forget_clients() -> None:
    """The next :func:`client` calls make new clients (they then see the credentials, endpoints and botocore event
    handlers set up since: a new fake account, another in-process dispatch)."""
    with _clients_lock:
        _clients.clear()


_clients: dict[tuple[Any, ...], Any] = {}
_clients_lock = threading.Lock()


def is_transient(error: BaseException) -> bool:
    if isinstance(error, ClientError):
        code = error.response.get("Error", {}).get("Code", "")
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        return code in TRANSIENT_ERROR_CODES or status in (500, 502, 503, 504)
    return isinstance(
        error,
        (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError, ConnectTimeoutError, DeadlineExceeded),
    )


@contextlib.contextmanager
def transient_errors_retried(what: str) -> Iterator[None]:
    """Inside: an AWS call's throttling, 5xx, timeout or the invocation's deadline becomes AwsTransientError (the
    state machine retries the task with backoff); any other error stays as it is."""
    try:
        yield
    except (ClientError, BotoCoreError) as error:
        if is_transient(error):
            raise AwsTransientError(f"{what}: {error}") from error
        raise


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


def publish_best_effort(notification: notifications.Notification, metrics: Any, logger: Any) -> str | None:
    """Publish, but never fail the step for it: a notification that SNS kept refusing (after the client's retries)
    is counted (end_causes.NOTIFICATIONS_NOT_SENT, alarmed by the stack) and logged whole, and the loop goes on. A
    training job's fate must not hang on an e-mail: failing the step would, once its retries ran out, stop a healthy
    job (HandleFailure) or fail a run that succeeded."""
    try:
        return publish(notification)
    except (AwsTransientError, ClientError, BotoCoreError) as error:
        metrics.add_metric(name=end_causes.NOTIFICATIONS_NOT_SENT, unit=MetricUnit.Count, value=1)
        logger.error(
            "notification not sent",
            extra={"error": str(error), "subject": notification.subject, "event_type": notification.event_type},
        )
        return None


def stop_training_job(sagemaker: Any, job_name: str) -> bool:
    """StopTrainingJob; False when the job is no longer stoppable (it already ended or is stopping). A throttled or
    failed stop is an AwsTransientError: the state machine retries the task, which decides and stops again."""
    try:
        sagemaker.stop_training_job(TrainingJobName=job_name)
        return True
    except (ClientError, BotoCoreError) as error:
        code = error.response.get("Error", {}).get("Code") if isinstance(error, ClientError) else ""
        if code in NO_SUCH_JOB_OR_NOT_STOPPABLE:
            return False
        if is_transient(error):
            raise AwsTransientError(f"StopTrainingJob {job_name}: {error}") from error
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
