"""Fixtures for the workflow tests; the harness itself is in workflow_harness.py."""

from __future__ import annotations

import time

import boto3
import pytest
from moto import mock_aws
from workflow_harness import BUCKET, FUNCTION_ARNS, REGION, Workflow

from contracts import time_budgets
from lambdas import monitor_handler, plan_handler, train_handler
from local_runtime.botocore_dispatch import LocalDispatch


@pytest.fixture
def workflow(monkeypatch, offline_aws_credentials):
    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "JOB_NAME_PREFIX": "remediation",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "ARTIFACTS_BUCKET": BUCKET,
    }.items():
        monkeypatch.setenv(key, value)
    dispatch = LocalDispatch()
    timeouts = time_budgets.LAMBDA_TIMEOUT_SECONDS
    dispatch.register_lambda_function(FUNCTION_ARNS["TrainFunctionArn"], train_handler.handler, timeouts["train"])
    dispatch.register_lambda_function(FUNCTION_ARNS["MonitorFunctionArn"], monitor_handler.handler, timeouts["monitor"])
    dispatch.register_lambda_function(FUNCTION_ARNS["PlanFunctionArn"], plan_handler.handler, timeouts["plan"])
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), dispatch:
        boto3.client("s3", region_name=REGION).create_bucket(Bucket=BUCKET)
        sns = boto3.client("sns", region_name=REGION)
        sqs = boto3.client("sqs", region_name=REGION)
        topic_arn = sns.create_topic(Name="remediation-notifications")["TopicArn"]
        queue_url = sqs.create_queue(QueueName="notifications")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn)
        monkeypatch.setenv("NOTIFICATION_TOPIC_ARN", topic_arn)
        workflow = Workflow(dispatch, queue_url)
        try:
            yield workflow
        finally:
            workflow.close()


@pytest.fixture(autouse=True)
def _retries_without_their_sleep(monkeypatch):
    """moto's interpreter really sleeps between the ASL's Retry attempts (2-300 s, jittered): the interval is
    recorded and the sleep shortened, so a test exercises the Retry declarations themselves in milliseconds."""
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl

    slept: list[float] = []

    class RetryClock:
        @staticmethod
        def sleep(seconds: float) -> None:
            slept.append(seconds)
            time.sleep(min(seconds, 0.01))

    monkeypatch.setattr(retrier_decl, "time", RetryClock)
    return slept


@pytest.fixture
def faults(workflow):
    """The fault-injection harness (fault_harness.py) on the workflow; the test adds its schedule and aborts."""
    from fault_harness import FaultHarness

    harness = FaultHarness(workflow)
    try:
        yield harness
    finally:
        harness.close()
