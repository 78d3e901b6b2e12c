"""The Step Functions Data Science SDK (``stepfunctions``) drives our state machine as the AWS sample's users drove
theirs: Workflow.attach(state machine ARN), execute(inputs=run_spec), list_events, get_output, against the state
machine in moto with the real handlers.

The SDK needs sagemaker < 3 and is heavy, so it lives in its own environment: ``make test-sdk`` creates .venv-sdk
(requirements-sdk.txt) and runs this module there; elsewhere it is skipped."""

from __future__ import annotations

import time

import boto3
import pytest
from workflow_harness import BASE_INPUT, REGION, completed, issues_found, running

pytest.importorskip(
    "stepfunctions",
    reason="the Step Functions Data Science SDK is an optional extra: `make test-sdk` runs this in .venv-sdk",
)
from stepfunctions.workflow import Workflow as SdkWorkflow  # noqa: E402


def wait_until_done(execution, timeout: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout
    while (described := execution.describe())["status"] == "RUNNING":
        assert time.monotonic() < deadline, f"execution still running after {timeout} s"
        time.sleep(0.05)
    return described


def test_attach_execute_and_list_events_on_our_state_machine(workflow):
    sagemaker = workflow.script(
        [running(), issues_found("ExplodingTensor", step=2, initial_gradient_norm=512.0)], [running(), completed()]
    )
    client = boto3.client("stepfunctions", region_name=REGION)
    sdk_workflow = SdkWorkflow.attach(workflow.state_machine_arn, client=client)
    assert sdk_workflow.state_machine_arn == workflow.state_machine_arn
    assert "Train" in sdk_workflow.definition.to_json()  # the attached definition is our ASL

    execution = sdk_workflow.execute(name="sdk-run-1", inputs=BASE_INPUT)
    described = wait_until_done(execution)
    assert described["status"] == "SUCCEEDED", described.get("cause")

    events = execution.list_events()
    types = [event["type"] for event in events]
    assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded"
    assert "TaskStateEntered" in types and "TaskSucceeded" in types
    output = execution.get_output()
    attempts = output["state"]["attempts"]
    assert [attempt["outcome"] for attempt in attempts] == ["issues_found", "completed"]
    assert attempts[0]["decision"]["remedy"] == "AddBatchNorm"
    assert len(sagemaker.created) == 2
    assert [listed.execution_arn for listed in sdk_workflow.list_executions()] == [execution.execution_arn]
