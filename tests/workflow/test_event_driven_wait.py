"""The event-driven wait through moto's interpreter end to end: a job's "SageMaker Training Job State Change" event,
matched by the stack's rule pattern, reaches the real job-events handler, which finds the wait's task token in
the bucket and completes the WaitForJob task; the monitor runs at once, however long the job trained."""

from __future__ import annotations

import json
import time

import boto3
import pytest
from workflow_harness import BASE_INPUT, BUCKET, FUNCTION_ARNS, REGION, completed, failed, running

from contracts import bucket_layout

#: The fallback poll of these runs: far longer than any job here trains, so only the events can end a wait.
SLOW_FALLBACK = {**BASE_INPUT, "monitor_interval_seconds": 60}


def entered_states(history: list[dict]) -> list[str]:
    return [event["stateEnteredEventDetails"]["name"] for event in history if "stateEnteredEventDetails" in event]


def transitions_per_attempt(history: list[dict]) -> list[list[str]]:
    """The states entered from each Train to the next (the last attempt up to the end)."""
    attempts: list[list[str]] = []
    for name in entered_states(history):
        if name == "Train":
            attempts.append([])
        if attempts:
            attempts[-1].append(name)
    return attempts


def wait_outputs(history: list[dict]) -> list[dict]:
    """What ended each WaitForJob: the SendTaskSuccess output, or the fallback timeout."""
    outcomes = []
    for event in history:
        if event["type"] == "TaskSucceeded" and "waitForTaskToken" in event["taskSucceededEventDetails"]["resource"]:
            outcomes.append(json.loads(event["taskSucceededEventDetails"]["output"]))
        elif event["type"] == "TaskTimedOut":
            outcomes.append({"woken_by": "fallback_timeout"})
    return outcomes


def task_payloads(history: list[dict], function_name: str) -> list[dict]:
    """What each call of the Lambda function returned, in order."""
    entered = {event["id"]: event for event in history}
    payloads = []
    for event in history:
        if event["type"] == "TaskSucceeded":
            scheduled = next(
                entered[ancestor]
                for ancestor in range(event["id"] - 1, 0, -1)
                if entered[ancestor]["type"] == "TaskScheduled"
            )
            if function_name in scheduled["taskScheduledEventDetails"]["parameters"]:
                payloads.append(json.loads(event["taskSucceededEventDetails"]["output"])["Payload"])
    return payloads


def test_a_job_state_change_event_wakes_the_wait_through_its_task_token(workflow):
    sagemaker = workflow.script([completed(after_seconds=2)])
    execution = workflow.run(SLOW_FALLBACK, timeout=300)  # the fallback (60 s) never fires: the event woke the wait

    assert execution.status == "SUCCEEDED", execution.cause
    job = sagemaker.created[0]["TrainingJobName"]
    history = workflow.history()
    assert wait_outputs(history) == [{"woken_by": "job_state_change", "job_name": job, "TrainingJobStatus": "Completed"}]
    assert entered_states(history).count("Monitor") == 1
    (delivery,) = workflow.events.deliveries
    assert delivery.rule == "JobStateChange" and delivery.result == {"job_name": job, "woken": True}
    assert delivery.event["detail-type"] == "SageMaker Training Job State Change"
    # The token was kept under the job's name with the execution that waits for it.
    kept = json.loads(
        boto3.client("s3", region_name=REGION)
        .get_object(Bucket=BUCKET, Key=bucket_layout.task_token_key(job))["Body"]
        .read()
    )
    assert kept["execution_id"] == workflow.execution_arn and kept["job_name"] == job and kept["task_token"]


def test_an_attempt_costs_a_fixed_number_of_transitions_however_long_it_trains(workflow):
    """The figure: 6 state transitions for an attempt that is remediated (Train, WaitForJob, Monitor, AfterMonitor,
    Plan, AfterPlan) and 5 for the one that succeeds (... AfterMonitor, RemediationSucceeded), whether the job trains
    for 0 s or for 50 s (passed at once: nothing else is under way, tests/workflow/workflow_harness.Workflow.quiet);
    the old Wait loop paid 3 transitions per poll of the job instead."""
    stop = "AlgorithmError: StopTraining: rule ExplodingTensor found an issue at step 3"
    costs = {}
    for seconds in (0, 50):
        workflow.script([failed(stop, after_seconds=seconds)], [completed(after_seconds=seconds)])
        execution = workflow.run(SLOW_FALLBACK)
        assert execution.status == "SUCCEEDED", execution.cause
        costs[seconds] = transitions_per_attempt(workflow.history())
    assert costs[0] == costs[50] == [
        ["Train", "WaitForJob", "Monitor", "AfterMonitor", "Plan", "AfterPlan"],
        ["Train", "WaitForJob", "Monitor", "AfterMonitor", "RemediationSucceeded"],
    ]


def test_the_fallback_poll_costs_three_transitions_each_time_it_fires(workflow):
    """With a fallback shorter than the job, each timeout is one more WaitForJob, Monitor, AfterMonitor. The job
    trains through two waits (no state change, so each ends by its 1 s timeout) and completes in the third: counted
    in waits, not in seconds, so it holds on a loaded machine."""
    workflow.script([running(), running(), completed()])
    execution = workflow.run({**BASE_INPUT, "monitor_interval_seconds": 1})
    assert execution.status == "SUCCEEDED", execution.cause
    history = workflow.history()
    (attempt,) = transitions_per_attempt(history)
    waits = wait_outputs(history)
    # at least the two the job trains through (a loaded machine added a third once in five fast-suite runs)
    assert len(waits) >= 3 and {outcome["woken_by"] for outcome in waits[:-1]} == {"fallback_timeout"}
    # each wait asked the 1 s fallback of its input
    assert workflow.callback_timeouts_asked == [1] * len(waits)
    # the last one ends the attempt: woken by the job's state change or, when the two coincide, by a timeout that
    # finds the job completed, or by the wait itself finding it completed
    assert waits[-1]["woken_by"] in ("job_state_change", "fallback_timeout", "job_already_ended")
    assert len(attempt) == 5 + 3 * (len(waits) - 1)


@pytest.mark.parametrize("delivery_seconds", [0.0, 1.0], ids=["event-at-once", "event-delivered-in-1s"])
def test_a_job_that_ends_after_the_fallback_is_polled_by_it_and_then_wakes_the_next_wait(workflow, delivery_seconds):
    """The job ends 60.5 s after the wait began, the fallback is 60 s: the fallback fires first (a job due later is
    never made to end sooner), the monitor finds it training, and the job's state change wakes the next wait.
    Counted in seconds of training, not the machine's (Workflow.quiet): with a 1 s fallback and a real 1.5 s timer,
    a loaded CI machine delivered the event 2.3 s after the first wait began, and the second wait's fallback won.
    Forced here too: the event takes a real second to reach the wait."""
    fallback_seconds = SLOW_FALLBACK["monitor_interval_seconds"]
    workflow.script([completed(after_seconds=fallback_seconds + 0.5)])
    if delivery_seconds:
        workflow.events.wrap_target("JobStateChange", lambda target: _delivered_after(delivery_seconds, target))
    execution = workflow.run(SLOW_FALLBACK)

    assert execution.status == "SUCCEEDED", execution.cause
    outcomes = [outcome["woken_by"] for outcome in wait_outputs(workflow.history())]
    assert outcomes == ["fallback_timeout", "job_state_change"]
    assert workflow.callback_timeouts_asked == [fallback_seconds, fallback_seconds]
    # the monitor between the two waits found the job training
    statuses = [payload["state"]["job_status"] for payload in task_payloads(workflow.history(), "remediation-monitor")]
    assert statuses == ["InProgress", "Completed"]  # the monitor between the two waits found the job training


@pytest.mark.parametrize("late_event", [False, True], ids=["event-at-once", "event-later-than-the-fallback"])
def test_a_wait_whose_token_is_handed_out_slower_than_its_fallback_still_waits_its_fallback(workflow, late_event):
    """The job-events Lambda keeps the token in milliseconds in AWS; on a loaded machine the in-process one once took
    longer than the 1 s fallback. moto's timer around the task then timed the state out before its wait began, and
    its abandoned evaluation read the state's input as the wait's timeout and added a stale TaskSubmitted to the next
    wait (tests/interpreter_clock.py). Forced here: the first hand-out takes longer than the fallback. And (as a
    loaded machine did once) the job's state change that ends the last wait may reach it later than the fallback."""
    fallback_seconds = BASE_INPUT["monitor_interval_seconds"]
    workflow.script([running(), completed()])
    if late_event:
        workflow.events.wrap_target("JobStateChange", lambda target: _delivered_after(fallback_seconds + 0.5, target))
    keep_token = workflow.dispatch.lambda_functions()["remediation-job-events"]
    handed_out = []

    def slow_then_keep(event, context):
        if not handed_out:
            time.sleep(fallback_seconds + 0.5)  # a real second: moto's timer around the task is a real one
        handed_out.append(event["task_token"])
        return keep_token(event, context)

    workflow.dispatch.register_lambda_function(FUNCTION_ARNS["JobEventsFunctionArn"], slow_then_keep)
    execution = workflow.run(BASE_INPUT)

    assert execution.status == "SUCCEEDED", execution.cause
    history = workflow.history()
    assert workflow.callback_timeouts_asked == [fallback_seconds] * len(handed_out)
    assert [outcome["woken_by"] for outcome in wait_outputs(history)][0] == "fallback_timeout"
    # each wait: its token handed out (TaskSubmitted) once, then its end; nothing of an earlier wait in a later one
    waits = [
        event["type"]
        for event in history
        if event["type"] in ("TaskSubmitted", "TaskTimedOut", "TaskSucceeded", "TaskFailed")
        and "waitForTaskToken" in str(event)
    ]
    assert len(handed_out) >= 2  # the job still trained when the slow wait ended
    assert waits[:-2] == ["TaskSubmitted", "TaskTimedOut"] * (len(handed_out) - 1)
    # The last wait is woken by the job's state change, sent at once; on a loaded machine that event can take longer
    # than the real 1 s fallback (the quiet clock ends a wait early only when nothing is under way, and never late),
    # and the fallback then finds the job completed: the same single hand-out and end.
    assert waits[-2:] in (["TaskSubmitted", "TaskSucceeded"], ["TaskSubmitted", "TaskTimedOut"])


def _delivered_after(seconds: float, target):
    def late(event, context):
        time.sleep(seconds)  # a real second: the wait's fallback is a real one while the event is under way
        return target(event, context)

    return late


def test_a_job_that_ended_before_the_wait_began_is_answered_at_once(workflow):
    """Its event came before the token was kept, and found nothing to wake: the wait itself sees the final status."""
    sagemaker = workflow.script([completed(), completed()])
    workflow.on_launch(sagemaker.advance)  # the job is over by the time the workflow waits for it
    execution = workflow.run(SLOW_FALLBACK, timeout=300)

    assert execution.status == "SUCCEEDED", execution.cause
    job = sagemaker.created[0]["TrainingJobName"]
    assert wait_outputs(workflow.history()) == [
        {"woken_by": "job_already_ended", "job_name": job, "TrainingJobStatus": "Completed"}
    ]
