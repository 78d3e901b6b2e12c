"""Fixtures for the workflow tests; the harness itself is in workflow_harness.py."""

from __future__ import annotations

import boto3
import pytest
from interpreter_clock import retry_waits_scaled
from moto import mock_aws
from workflow_harness import BUCKET, FUNCTION_ARNS, REGION, Workflow

from lambdas import monitor_handler, plan_handler, train_handler
from local_runtime.botocore_dispatch import LocalDispatch


@pytest.fixture
def workflow(monkeypatch, offline_aws_credentials, asl_parsed_once):
    for key, value in {
        "AWS_DEFAULT_REGION": REGION,
        "JOB_NAME_PREFIX": "remediation",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "ARTIFACTS_BUCKET": BUCKET,
    }.items():
        monkeypatch.setenv(key, value)
    dispatch = LocalDispatch()
    dispatch.register_lambda_function(FUNCTION_ARNS["TrainFunctionArn"], train_handler.handler)
    dispatch.register_lambda_function(FUNCTION_ARNS["MonitorFunctionArn"], monitor_handler.handler)
    dispatch.register_lambda_function(FUNCTION_ARNS["PlanFunctionArn"], plan_handler.handler)
    with mock_aws(config={"stepfunctions": {"execute_state_machine": True}}), dispatch, retry_waits_scaled():
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
