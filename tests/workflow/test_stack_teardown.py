"""A delete that stops what the stack started (finding 3 of issue 45): the stack's teardown custom resource, which
CloudFormation deletes before the state machine, the Lambdas, the rules and the SageMaker role, stops every running
execution (Error StackDeleted: a deliberate stop) and every training job they launched, and answers only once none
runs. It used to be that `cdk destroy` ended the executions and deleted the cleanup Lambda and the role while their
jobs trained on for up to MaxRuntime."""

from __future__ import annotations

import http.server
import json
import threading

import pytest
from workflow_harness import ACCOUNT, BASE_INPUT, REGION, running

from lambdas import stack_teardown_handler
from lambdas.remediation.state import end_causes
from local_runtime.botocore_dispatch import LambdaContext

SLOW = {**BASE_INPUT, "monitor_interval_seconds": 60}


def Context(timeout_seconds: float = 900.0) -> LambdaContext:  # noqa: N802 - reads as the context it makes
    """Lambda's context: 900 s to go, as the teardown's timeout gives it."""
    return LambdaContext(
        function_name="stack-teardown",
        invoked_function_arn=f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:stack-teardown",
        aws_request_id="request-1",
        timeout_seconds=timeout_seconds,
    )


@pytest.fixture
def answers(monkeypatch, workflow):
    sent: list[dict] = []
    monkeypatch.setattr(stack_teardown_handler, "send_response", lambda url, body: sent.append(body))
    monkeypatch.setenv(stack_teardown_handler.STATE_MACHINE_ARN_ENV, workflow.state_machine_arn)
    clock = [1_000_000.0]  # the teardown's own clock: its waits pass at once
    monkeypatch.setattr(stack_teardown_handler, "now", lambda: clock[0])
    monkeypatch.setattr(stack_teardown_handler, "sleep", lambda seconds: clock.__setitem__(0, clock[0] + seconds))
    return sent


def delete_event(request_type: str = "Delete") -> dict:
    return {
        "RequestType": request_type,
        "ResponseURL": "https://cloudformation-custom-resource-response.example/presigned",
        "StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/TrainingRemediation/0a1b2c3d",
        "RequestId": "request-1",
        "LogicalResourceId": "TeardownStopsWhatTheStackStarted",
        "PhysicalResourceId": "teardown",
        "ResourceProperties": {},
    }


def test_the_stacks_delete_stops_its_executions_and_their_jobs_before_it_goes_on(workflow, answers):
    sagemaker = workflow.script([running()], [running()])
    arns = [workflow.start(SLOW), workflow.start(SLOW)]
    # both waiting for their jobs (their train Lambdas have returned: none stops its own job meanwhile)
    wait_for(lambda: all("WaitForJob" in entered(workflow, arn) for arn in arns))
    # another stack's job under the same prefix: its tags name another state machine's execution
    sagemaker.jobs["remediation-elsewhere-0123456789-001"] = {
        "request": {"Tags": [{"Key": "remediation:execution", "Value": f"arn:aws:states:{REGION}:{ACCOUNT}:execution:other:run"}]},
        "timeline": [running()], "current": running(), "polls": 0, "stop": None, "foreign": True,
    }  # fmt: skip

    answer = stack_teardown_handler.handler(delete_event(), Context())

    assert answer["Status"] == "SUCCESS" and answers == [answer]
    assert answer["Data"] == {"ExecutionsStopped": 2, "JobsStopped": 2}
    for arn in arns:
        described = workflow.sfn.describe_execution(executionArn=arn)
        assert described["status"] == "ABORTED"
        (aborted,) = [e for e in workflow.history(arn) if e["type"] == "ExecutionAborted"]
        assert aborted["executionAbortedEventDetails"]["error"] == end_causes.STACK_DELETED
    assert sorted(sagemaker.stopped) == sorted(request["TrainingJobName"] for request in sagemaker.created)
    assert set(sagemaker.final_statuses().values()) == {"Stopped"}
    assert sagemaker.jobs["remediation-elsewhere-0123456789-001"]["stop"] is None  # not this stack's: left alone


def test_a_job_still_running_when_the_teardown_runs_out_of_time_fails_the_delete_naming_it(
    workflow, answers, monkeypatch
):
    """The stop is requested but the job never leaves Stopping in time: the delete answers FAILED with the job's name
    (CloudFormation stops there, the role still in place; running the delete again looks again)."""
    sagemaker = workflow.script([running()])
    workflow.start(SLOW)
    wait_for(lambda: len(sagemaker.created) == 1)
    workflow.dispatch.register("sagemaker", "ListTrainingJobs", lambda call: stuck_stopping(sagemaker, call))

    answer = stack_teardown_handler.handler(delete_event(), Context(timeout_seconds=40))

    job = sagemaker.created[0]["TrainingJobName"]
    assert answer["Status"] == "FAILED" and f"still running: {job}" in answer["Reason"]


def stuck_stopping(self, call):
    return {
        "TrainingJobSummaries": [
            {"TrainingJobName": name, "TrainingJobArn": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/{name}",
             "TrainingJobStatus": "Stopping"}
            for name in self.jobs if call.params.get("StatusEquals") == "Stopping"
        ]
    }  # fmt: skip


def test_create_and_update_do_nothing_but_answer(workflow, answers):
    for request_type in ("Create", "Update"):
        answer = stack_teardown_handler.handler(delete_event(request_type), Context())
        assert answer["Status"] == "SUCCESS" and answer["Data"] == {}
    assert workflow.sfn.list_executions(stateMachineArn=workflow.state_machine_arn)["executions"] == []


def test_the_answer_reaches_cloudformation_as_its_protocol_asks():
    """A PUT of the JSON answer to the presigned URL, with an empty content type (the URL is signed without one):
    sent to a real local HTTP server."""
    received: list[tuple[str, dict, bytes]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_PUT(self):  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.command, dict(self.headers), body))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.handle_request, daemon=True).start()
    try:
        stack_teardown_handler.send_response(
            f"http://127.0.0.1:{server.server_port}/presigned?X-Amz-Signature=abc", {"Status": "SUCCESS", "Data": {}}
        )
    finally:
        server.server_close()
    ((method, headers, body),) = received
    assert method == "PUT" and headers.get("Content-Type") == ""
    assert json.loads(body) == {"Status": "SUCCESS", "Data": {}}


def entered(workflow, arn) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in workflow.history(arn) if "stateEnteredEventDetails" in e]


def wait_for(condition, timeout: float = 120.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def test_every_request_the_teardown_makes_passes_botocores_validation(workflow, answers):
    """ListExecutions, StopExecution, ListTrainingJobs, ListTags and StopTrainingJob, checked one by one against
    botocore's service models, besides the clients' own validation."""
    import botocore.session
    from botocore.validate import validate_parameters

    calls = []
    workflow.dispatch.add_interceptor(lambda call: calls.append(call) if call.service != "lambda" else None)
    sagemaker = workflow.script([running()])
    arn = workflow.start(SLOW)
    wait_for(lambda: "WaitForJob" in entered(workflow, arn))
    before = len(calls)
    stack_teardown_handler.handler(delete_event(), Context())
    session = botocore.session.get_session()
    made = calls[before:]
    for call in made:
        model = session.get_service_model({"sfn": "stepfunctions"}.get(call.service, call.service))
        validate_parameters(call.params, model.operation_model(call.operation).input_shape)
    assert {(call.service, call.operation) for call in made} >= {
        ("sfn", "ListExecutions"),
        ("sfn", "StopExecution"),
        ("sagemaker", "ListTrainingJobs"),
        ("sagemaker", "ListTags"),
        ("sagemaker", "StopTrainingJob"),
    }
    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]
