"""Every execution that ends otherwise than by an expected end is notified and alarmed, with its cause named, whatever
state it ended in (finding 1 of issue 45); a deliberate stop is notified, not alarmed (finding 7). The stack's rule on
"Step Functions Execution Status Change" brings every FAILED, TIMED_OUT and ABORTED end to the execution-cleanup
handler, which judges it (end_causes.judge_end) and says what it found, nothing included."""

from __future__ import annotations

import time

import pytest
from workflow_harness import BASE_INPUT, completed, running

from lambdas.remediation.state import end_causes


def cleanup_result(workflow) -> dict:
    (delivery,) = [d for d in workflow.events.deliveries if d.rule.startswith("ExecutionEnded")]
    assert delivery.error is None, delivery.error
    return delivery.result


def test_an_execution_whose_every_loop_lambda_is_throttled_is_notified_and_alarmed(workflow, faults):
    """Every Lambda invoke after Initialize throttled: Train's retries run out, its Catch's HandleFailure is throttled
    too, and the execution fails at CleanupFailed with Lambda.TooManyRequestsException. It used to end with no
    notification, no alarm metric and empty cleanup notes (the cleanup notified a FAILED end only when it stopped a
    job; UnexpectedWorkflowErrors was counted only inside HandleFailure, which never ran)."""
    workflow.script([completed()])
    faults.schedule.add("lambda", "Invoke", "throttle", times=10**6, skip=1)  # the first invoke is Initialize's
    arn = workflow.start(BASE_INPUT)
    described = workflow.wait(arn, timeout=120)
    faults.settle(arn)

    assert described["status"] == "FAILED" and described["error"] == "Lambda.TooManyRequestsException"
    assert entered_states(workflow, arn)[-1] == "CleanupFailed"
    result = cleanup_result(workflow)
    assert result["alarmed"] and result["notified"] and result["error"] == "Lambda.TooManyRequestsException"
    assert result["notes"], "the cleanup says what it found, nothing included"
    assert faults.metric_count(end_causes.UNEXPECTED_WORKFLOW_ERRORS) == 1
    (notification,) = workflow.drain_notifications()
    assert notification["event_type"] == "workflow_error" and notification["error"] == "Lambda.TooManyRequestsException"
    cause = notification["cause"]
    assert "CleanupFailed" in cause and "no one notified" in cause and "Cleanup:" in cause


def test_a_run_that_gives_up_is_not_alarmed_and_not_notified_twice(workflow, faults):
    workflow.script([completed(test_accuracy=0.5)])
    arn = workflow.start({**BASE_INPUT, "max_num_retraining": 1})
    described = workflow.wait(arn)
    faults.settle(arn)
    assert described["status"] == "FAILED" and described["error"] in end_causes.EXPECTED_ENDS
    result = cleanup_result(workflow)
    assert not result["alarmed"] and not result["notified"]
    assert faults.metric_count(end_causes.UNEXPECTED_WORKFLOW_ERRORS) == 0


@pytest.mark.parametrize(
    ("stop", "alarmed"),
    [({"error": end_causes.USER_STOP}, False), ({"error": end_causes.STACK_DELETED}, False), ({}, True)],
)
def test_a_deliberate_stop_is_notified_but_not_alarmed_and_any_other_stop_is_alarmed(workflow, faults, stop, alarmed):
    """`remediate cloud stop` stops with Error UserStop, the stack's delete with StackDeleted: ExecutionsAborted used
    to alarm on every one. A stop without either (the console's) is alarmed."""
    sagemaker = workflow.script([running()])
    arn = workflow.start({**BASE_INPUT, "monitor_interval_seconds": 60})
    deadline = time.monotonic() + 120
    while "WaitForJob" not in entered_states(workflow, arn):
        assert time.monotonic() < deadline, "the execution never waited for its job"
        time.sleep(0.05)
    workflow.stop(arn, cause="stopped by hand", **stop)
    assert workflow.wait(arn)["status"] == "ABORTED"
    faults.settle(arn)

    result = cleanup_result(workflow)
    assert result["notified"] and result["alarmed"] is alarmed and result["error"] == "ExecutionAborted"
    assert result["stopped"] == [sagemaker.created[0]["TrainingJobName"]]
    assert faults.metric_count(end_causes.UNEXPECTED_WORKFLOW_ERRORS) == (1 if alarmed else 0)
    (notification,) = [n for n in workflow.drain_notifications() if n["event_type"] == "workflow_error"]
    assert ("stopped on purpose" in notification["cause"]) is not alarmed


def entered_states(workflow, arn) -> list[str]:
    return [e["stateEnteredEventDetails"]["name"] for e in workflow.history(arn) if "stateEnteredEventDetails" in e]


def test_judging_each_end():
    judge = end_causes.judge_end
    assert judge("FAILED", "NoRemedyLeft", "why", "RemediationGaveUp") == end_causes.EndVerdict(
        "NoRemedyLeft", "the execution failed in state RemediationGaveUp: NoRemedyLeft: why", False, False
    )
    assert judge("FAILED", "AwsTransientError", "x", "WorkflowFailed").alarm
    assert not judge("FAILED", "AwsTransientError", "x", "WorkflowFailed").notify
    inside = judge("FAILED", "InvalidExecutionInput", "x", "CleanupFailed")
    assert inside.notify and inside.alarm  # its own ending failed: no one said it
    assert judge("FAILED", "States.Runtime", "x", "Monitor").notify
    assert judge("TIMED_OUT", None, None, "WaitForJob") == end_causes.EndVerdict(
        "ExecutionTimedOut", "the execution timed out in state WaitForJob (no error given)", True, True
    )
    assert not judge("ABORTED", "StackDeleted", "deleted", "Train").alarm
