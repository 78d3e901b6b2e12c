"""An execution that ends outside its Catch (timed out, aborted, failed) leaves no job running: the stack's rule on
"Step Functions Execution Status Change" reaches the execution-cleanup handler, which reads the execution's last
state from its real history (moto's interpreter ran the ASL), finds the job it launched and stops it, only if the
job's tags prove it is that execution's."""

from __future__ import annotations

import threading
import time

import boto3
import pytest
from moto_stop_points import STOP_LANDS_INSIDE, stop_point
from workflow_harness import BASE_INPUT, FUNCTION_ARNS, REGION, running

SLOW_FALLBACK = {**BASE_INPUT, "monitor_interval_seconds": 60}


def wait_for(condition, timeout: float = 300.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.05)


def current_state(workflow) -> str:
    entered = [e["stateEnteredEventDetails"]["name"] for e in workflow.history() if "stateEnteredEventDetails" in e]
    return entered[-1] if entered else ""


def test_an_aborted_executions_job_is_stopped_by_the_cleanup(workflow):
    sagemaker = workflow.script([running()])
    workflow.add_execution_cleanup_rule(workflow.state_machine_arn)
    arn = workflow.start(SLOW_FALLBACK)
    wait_for(lambda: current_state(workflow) == "WaitForJob")
    workflow.stop(arn, error="UserStop", cause="stopped from the console")
    assert workflow.wait(arn)["status"] == "ABORTED"
    job = sagemaker.created[0]["TrainingJobName"]
    assert sagemaker.stopped == []  # no Catch ran: nothing in the execution stopped the job

    cleanup = workflow.execution_ended(arn)

    assert sagemaker.stopped == [job]
    assert cleanup["stopped"] == [job] and cleanup["notes"] == [f"stopped training job {job}"]
    notification = workflow.drain_notifications()[-1]
    assert notification["event_type"] == "workflow_error"
    assert notification["error"] == "ExecutionAborted"


@pytest.mark.parametrize("moment", STOP_LANDS_INSIDE)
def test_a_stop_that_lands_while_the_wait_is_set_up_aborts_and_the_cleanup_stops_the_job(workflow, monkeypatch, moment):
    """The user stops while the execution enters WaitForJob (the interleaving forced): the execution is ABORTED,
    its history ends there and reads back, and the cleanup stops the job."""
    owner, method = stop_point(moment)  # the stop lands while WaitForJob is being evaluated
    original = getattr(owner, method)
    reached, stopped = threading.Event(), threading.Event()

    def stop_lands_here(self, env, *args, **kwargs):
        if self.name == "WaitForJob" and not stopped.is_set():
            reached.set()
            assert stopped.wait(300), "the test never stopped the execution"
        return original(self, env, *args, **kwargs)

    monkeypatch.setattr(owner, method, stop_lands_here)
    sagemaker = workflow.script([running()])
    workflow.add_execution_cleanup_rule(workflow.state_machine_arn)
    arn = workflow.start(SLOW_FALLBACK)
    assert reached.wait(300)
    workflow.stop(arn, error="UserStop", cause="stopped from the console")
    stopped.set()

    assert workflow.wait(arn)["status"] == "ABORTED"
    cleanup = workflow.execution_ended(arn)

    job = sagemaker.created[0]["TrainingJobName"]
    assert sagemaker.stopped == [job] and cleanup["stopped"] == [job]
    history = workflow.history(arn)
    assert history[-1]["type"] == "ExecutionAborted"
    assert not [event for event in history if event["type"] in ("TaskFailed", "ExecutionFailed")]


def test_a_timed_out_executions_job_is_stopped_by_the_cleanup(workflow):
    sagemaker = workflow.script([running()])
    short = workflow.create_state_machine("remediation-short", {"TimeoutSeconds": 3})
    workflow.add_execution_cleanup_rule(short)
    arn = workflow.start(SLOW_FALLBACK, state_machine_arn=short)
    assert workflow.wait(arn, timeout=300)["status"] == "TIMED_OUT"
    assert sagemaker.stopped == []

    cleanup = workflow.execution_ended(arn)

    assert sagemaker.stopped == [sagemaker.created[0]["TrainingJobName"]]
    assert cleanup["status"] == "TIMED_OUT"
    assert workflow.drain_notifications()[-1]["error"] == "ExecutionTimedOut"


def test_an_execution_aborted_while_launching_has_its_new_job_stopped(workflow):
    """Aborted inside the Train task once the train Lambda has made its job and seen its execution still running (so
    it left the job alone): the job exists, but no state in the history names it yet."""
    from lambdas import train_handler

    sagemaker = workflow.script([running()])
    workflow.add_execution_cleanup_rule(workflow.state_machine_arn)

    def train_then_abort(event, context):
        answer = train_handler.handler(event, context)
        workflow.sfn.stop_execution(executionArn=workflow.execution_arn, error="UserStop", cause="during the launch")
        return answer

    workflow.dispatch.register_lambda_function(FUNCTION_ARNS["TrainFunctionArn"], train_then_abort)
    arn = workflow.start(SLOW_FALLBACK)
    assert workflow.wait(arn)["status"] == "ABORTED"
    assert sagemaker.stopped == []
    assert current_state(workflow) == "Train"

    cleanup = workflow.execution_ended(arn)

    assert cleanup["stopped"] == [sagemaker.created[0]["TrainingJobName"]]


def test_the_cleanup_never_stops_a_job_whose_tags_name_another_execution(workflow):
    sagemaker = workflow.script([running()])
    workflow.add_execution_cleanup_rule(workflow.state_machine_arn)
    arn = workflow.start(SLOW_FALLBACK)
    wait_for(lambda: current_state(workflow) == "WaitForJob")
    job = sagemaker.created[0]["TrainingJobName"]
    sagemaker.jobs[job]["request"]["Tags"] = [{"Key": "remediation:execution", "Value": f"{arn}-someone-else"}]
    workflow.stop(arn)
    workflow.wait(arn)

    cleanup = workflow.execution_ended(arn)

    assert sagemaker.stopped == [] and cleanup["stopped"] == []
    assert cleanup["notes"] == [f"left training job {job} running: its tags name another execution"]


def test_the_rule_takes_only_this_state_machines_executions_that_ended_badly(workflow):
    from lambdas.remediation.job import job_events
    from local_runtime.event_bus import execution_status_change_event

    workflow.add_execution_cleanup_rule(workflow.state_machine_arn)
    other = workflow.create_state_machine("someone-elses")
    base = {"startDate": None, "stopDate": None, "name": "x", "executionArn": f"{workflow.state_machine_arn}:x"}
    for machine, status, matched in (
        (workflow.state_machine_arn, "ABORTED", True),
        (workflow.state_machine_arn, "TIMED_OUT", True),
        (workflow.state_machine_arn, "FAILED", True),
        (workflow.state_machine_arn, "SUCCEEDED", False),
        (workflow.state_machine_arn, "RUNNING", False),
        (other, "ABORTED", False),
    ):
        event = execution_status_change_event({**base, "stateMachineArn": machine, "status": status}, REGION, "1")
        assert bool(workflow.events.matching_rules(event)) is matched, (machine, status)
    assert job_events.ABNORMAL_EXECUTION_STATUSES == ("FAILED", "TIMED_OUT", "ABORTED")
    boto3.client("stepfunctions", region_name=REGION)  # (the harness's moto account is still there)
